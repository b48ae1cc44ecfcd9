"""Runtime agreement of the vault7 corpus (sealed).

- ``fixtures/vault7/*.py``: single files (writer ``wv7a``);
- ``fixtures/vault7_projects/*/``: multi-file projects (writer ``wv7b``).

Written by independent writers who read neither the analyzer nor the other corpora's
programs, and labelled by running each program with the oracle. The checks are those of the
unseen corpus (``tests/test_unseen_runtime.py``): outcome, prefix and marker codes agree with
each program's label. Size bounds: 40 files and 16 projects, balanced.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("vault7", min_files=40, min_projects=16))
