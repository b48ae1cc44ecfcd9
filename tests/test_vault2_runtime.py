"""Runtime agreement of the vault2 corpus (sealed).

- ``fixtures/vault2/*.py``: single files;
- ``fixtures/vault2_projects/*/``: multi-file projects.

Written by an independent writer (``wc``) who read neither the analyzer nor the other
corpora's programs, and labelled by running each program. The checks are those of the
unseen corpus (``tests/test_unseen_runtime.py``): the oracle's outcome equals the
docstring's ``Runtime: ...`` line (or ``project.json`` ``runtime``), the
``hazard_``/``safe_`` prefix agrees with it, and so do the marker codes. The size checks
are lower bounds (48 files, 18 projects, about half of each safe).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from test_unseen_runtime import assert_balanced, check_project, check_script, corpus_paths  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPTS, PROJECTS = corpus_paths("vault2")


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


@pytest.fixture(scope="module")
def project_results():
    return oracle.run_projects(PROJECTS, jobs=2)


def test_vault2_corpus_size():
    assert len(SCRIPTS) >= 48, f"fixtures/vault2: {len(SCRIPTS)} programs"
    assert len(PROJECTS) >= 18, f"fixtures/vault2_projects: {len(PROJECTS)} projects"
    assert_balanced([p.name for p in SCRIPTS], "fixtures/vault2")
    assert_balanced([p.name for p in PROJECTS], "fixtures/vault2_projects")


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_vault2_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])


@pytest.mark.parametrize("folder", PROJECTS, ids=[p.name for p in PROJECTS])
def test_vault2_project_outcome(project_results, folder):
    check_project(folder, project_results[str(folder)])
