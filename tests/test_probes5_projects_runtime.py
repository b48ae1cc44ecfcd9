"""Runtime agreement of ``fixtures/probes5_projects/*/`` (an11): multi-file project layouts
no other corpus had (plugins imported by importlib from a registry module, adapters attached
by a helper of another module, a trainer re-exported by a package ``__init__``, a config
module that picks the mode, a tests/ folder driving a helper, a context-manager class and a
decorator factory of another module that open the region, a module-level estimator
singleton, an import cycle read at call time, a factory in a subpackage, a fixture registry
module), each hazard with a safe look-alike, labelled by running them (the checks of
``tests/test_unseen_runtime.py``). The single files of ``fixtures/probes5/`` have their own
test (an10's); only the project tests are kept here."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

_TESTS = corpus_runtime_tests("probes5", min_files=0, min_projects=16)
PROJECTS = _TESTS["PROJECTS"]
project_results = _TESTS["project_results"]
test_probes5_projects_corpus_size = _TESTS["test_probes5_corpus_size"]
test_probes5_project_outcome = _TESTS["test_probes5_project_outcome"]
