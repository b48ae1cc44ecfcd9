"""Runtime agreement of the probes3 corpus (``fixtures/probes3/*.py``): for each Python
feature around a region, a hazard and its safe look-alike, labelled by running them.

The checks are those of the unseen corpus (``tests/test_unseen_runtime.py``): the oracle's
outcome equals the docstring's ``Runtime: ...`` line, and the ``hazard_``/``safe_`` prefix
and the marker codes agree with it. Every hazard has a safe look-alike (the same suffix but
for one pair, ``raise_after``/``raise_before_backward_caught``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("probes3", min_files=60, min_projects=0))
