from fakegrad_lint.cli import main

raise SystemExit(main())
