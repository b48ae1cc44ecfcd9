"""Runtime agreement of the vault5 corpus (sealed).

- ``fixtures/vault5/*.py``: single files;
- ``fixtures/vault5_projects/*/``: multi-file projects.

Written by an independent writer (``wf``) who read neither the analyzer nor the other
corpora's programs, and labelled by running each program. The checks are those of the
unseen corpus (``tests/test_unseen_runtime.py``): the oracle's outcome equals the
docstring's ``Runtime: ...`` line (or ``project.json`` ``runtime``), the
``hazard_``/``safe_`` prefix agrees with it, and so do the marker codes. The size checks
are lower bounds (60 files, 20 projects, about half of each safe).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("vault5", min_files=60, min_projects=20))
