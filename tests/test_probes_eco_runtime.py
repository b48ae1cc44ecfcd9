"""Runtime agreement of the probes_eco corpus (``fixtures/probes_eco/*.py``): modules
returned by calls the analyzer cannot follow (the autoparallel ``apply_placement`` +
``to_empty`` hazard of the ecosystem check) and their safe look-alikes.

The checks are those of the unseen corpus (``tests/test_unseen_runtime.py``): the
oracle's outcome equals the docstring's ``Runtime: ...`` line, the ``hazard_``/``safe_``
prefix agrees with it, and so do the marker codes.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("probes_eco", min_files=14, min_projects=0))
