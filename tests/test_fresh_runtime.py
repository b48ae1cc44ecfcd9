"""Runtime agreement of the fresh corpus and of its sealed half, the vault.

- ``fixtures/fresh/*.py`` and ``fixtures/vault/*.py``: single files (writer ``wa``);
- ``fixtures/fresh_projects/*/`` and ``fixtures/vault_projects/*/``: multi-file projects
  (writer ``wb``).

Written by independent writers who read neither the analyzer nor the other corpora's
cases, and labelled by running each program. The checks are those of the unseen corpus
(``tests/test_unseen_runtime.py``): the oracle's outcome equals the docstring's
``Runtime: ...`` line (or ``project.json`` ``runtime``), the ``hazard_``/``safe_`` prefix
agrees with it, and so do the marker codes. The corpora may still grow: the size checks
are loose lower bounds.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from markers import FIXTURES_DIR  # noqa: E402
from test_unseen_runtime import check_project, check_script  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPT_DIRS = ("fresh", "vault")
PROJECT_DIRS = ("fresh_projects", "vault_projects")


def _scripts(name: str):
    folder = FIXTURES_DIR / name
    return sorted(folder.glob("*.py")) if folder.is_dir() else []


def _projects(name: str):
    folder = FIXTURES_DIR / name
    return sorted(p for p in folder.iterdir() if (p / "project.json").is_file()) if folder.is_dir() else []


SCRIPTS = [p for d in SCRIPT_DIRS for p in _scripts(d)]
PROJECTS = [p for d in PROJECT_DIRS for p in _projects(d)]


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


@pytest.fixture(scope="module")
def project_results():
    return oracle.run_projects(PROJECTS, jobs=2)


def test_fresh_project_corpus_size():
    assert (FIXTURES_DIR / PROJECT_DIRS[0]).is_dir(), "fixtures/fresh_projects is missing"
    for name in PROJECT_DIRS:
        if not (FIXTURES_DIR / name).is_dir():
            continue  # the sealed half is written after the guide half
        found = _projects(name)
        safes = [p for p in found if p.name.startswith("safe_")]
        hazards = [p for p in found if p.name.startswith("hazard_")]
        assert len(found) >= 8, f"{name}: {len(found)} projects"
        assert len(safes) + len(hazards) == len(found), f"{name}: a project without a hazard_/safe_ prefix"
        assert abs(len(safes) - len(hazards)) <= max(2, len(found) // 4), f"{name}: {len(safes)} safe, {len(hazards)} hazard"


def test_fresh_script_names():
    """Whatever the single-file folders hold so far is named hazard_*/safe_*."""
    for path in SCRIPTS:
        assert path.name.startswith(("hazard_", "safe_")), f"{path.parent.name}/{path.name}: no hazard_/safe_ prefix"


@pytest.mark.parametrize("path", SCRIPTS, ids=[f"{p.parent.name}/{p.name}" for p in SCRIPTS])
def test_fresh_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])


@pytest.mark.parametrize("folder", PROJECTS, ids=[f"{p.parent.name}/{p.name}" for p in PROJECTS])
def test_fresh_project_outcome(project_results, folder):
    check_project(folder, project_results[str(folder)])
