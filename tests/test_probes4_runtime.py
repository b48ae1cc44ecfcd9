"""Runtime agreement of the probes4 corpus (``fixtures/probes4/*.py``, an8): torch and Python
semantics near vault4's misses, each hazard with its safe look-alike, labelled by running them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("probes4", min_files=40, min_projects=0))
