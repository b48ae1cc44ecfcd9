"""Runtime agreement of the vault6 corpus (sealed).

- ``fixtures/vault6/*.py``: single files;
- ``fixtures/vault6_projects/*/``: multi-file projects.

Written by an independent writer (``wg``) who read neither the analyzer nor the other
corpora's programs, and labelled by running each program with the oracle. The checks are
those of the unseen corpus (``tests/test_unseen_runtime.py``): outcome, prefix and marker
codes agree with each program's label. Size bounds: the 20 files written so far (no projects yet), balanced.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("vault6", min_files=40, min_projects=8))
