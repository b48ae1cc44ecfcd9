"""Runtime agreement of the vault4 corpus (sealed).

- ``fixtures/vault4/*.py``: single files;
- ``fixtures/vault4_projects/*/``: multi-file projects.

Written by an independent writer (``we``) who read neither the analyzer nor the other
corpora's programs, and labelled by running each program. The checks are those of the
unseen corpus (``tests/test_unseen_runtime.py``): the oracle's outcome equals the
docstring's ``Runtime: ...`` line (or ``project.json`` ``runtime``), the
``hazard_``/``safe_`` prefix agrees with it, and so do the marker codes. The size checks
are lower bounds (60 files, 20 projects, about half of each safe).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from test_unseen_runtime import assert_balanced, check_project, check_script, corpus_paths  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPTS, PROJECTS = corpus_paths("vault4")


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


@pytest.fixture(scope="module")
def project_results():
    return oracle.run_projects(PROJECTS, jobs=2)


def test_vault4_corpus_size():
    assert len(SCRIPTS) >= 60, f"fixtures/vault4: {len(SCRIPTS)} programs"
    assert len(PROJECTS) >= 20, f"fixtures/vault4_projects: {len(PROJECTS)} projects"
    assert_balanced([p.name for p in SCRIPTS], "fixtures/vault4")
    assert_balanced([p.name for p in PROJECTS], "fixtures/vault4_projects")


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_vault4_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])


@pytest.mark.parametrize("folder", PROJECTS, ids=[p.name for p in PROJECTS])
def test_vault4_project_outcome(project_results, folder):
    check_project(folder, project_results[str(folder)])
