"""``python -m fakegrad_lint``.

``python -m`` puts the current folder first on ``sys.path``, so a linted tree
holding ``argparse.py`` (or any other name the tool imports) would run that
file inside the tool. The folder is taken off ``sys.path`` before anything
else is imported (as ``python -P`` would); the tool never needs it.
"""

import os
import sys


def _drop_current_folder() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    first = sys.path[0]
    if first == "" or (cwd is not None and os.path.abspath(first) == cwd):
        del sys.path[0]


_drop_current_folder()

from fakegrad_lint.cli.main import main  # noqa: E402

raise SystemExit(main())
