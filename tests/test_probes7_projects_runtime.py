"""Runtime agreement of ``fixtures/probes7_projects/*/`` (an15): multi-file layouts around
the vault7 project misses (a dict of defaults copied and updated with an empty
``**overrides``, a wrapper assigned to a module's instance attribute ``forward``, a forward
hook whose returned value replaces the output), each hazard with a safe look-alike,
labelled by running them (the checks of ``tests/test_unseen_runtime.py``). The unit tests
are in ``tests/test_project_vault7.py``."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

_TESTS = corpus_runtime_tests("probes7", min_files=0, min_projects=6)
PROJECTS = _TESTS["PROJECTS"]
project_results = _TESTS["project_results"]
test_probes7_projects_corpus_size = _TESTS["test_probes7_corpus_size"]
test_probes7_project_outcome = _TESTS["test_probes7_project_outcome"]
