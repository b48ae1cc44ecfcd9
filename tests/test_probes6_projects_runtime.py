"""Runtime agreement of ``fixtures/probes6_projects/*/`` (an13): multi-file layouts around
what one module does to the values of another (a helper that freezes a model by parameter
name or unfreezes a submodule by name, a module-level mode of a config module entered by a
decorator of a third, a class attribute set by another module at import,
``setattr(model, name, nn.Parameter(...))`` from a helper, a plugin imported by
``importlib.import_module(f"pkg.{name}")`` with a constant name, ``from . import x as y``,
a package ``__getattr__`` (PEP 562)), each hazard with a safe look-alike, labelled by
running them (the checks of ``tests/test_unseen_runtime.py``). The single files of
``fixtures/probes6/`` have their own test (an12's)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

_TESTS = corpus_runtime_tests("probes6", min_files=0, min_projects=16)
PROJECTS = _TESTS["PROJECTS"]
project_results = _TESTS["project_results"]
test_probes6_projects_corpus_size = _TESTS["test_probes6_corpus_size"]
test_probes6_project_outcome = _TESTS["test_probes6_project_outcome"]
