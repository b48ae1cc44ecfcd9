"""Runtime agreement of the blind corpus (``fixtures/blind/*.py`` and
``fixtures/blind_projects/*/``) and of its sealed half (``fixtures/sealed/*.py``,
``fixtures/sealed_projects/*/``): one writer's set, split in two by alternating
names, so that one half can guide analyzer work while the other stays unread.

Written by an independent writer who read neither the analyzer nor the other corpora'
cases, and labelled by running each program. The same checks as the unseen corpus
(``tests/test_unseen_runtime.py``): the oracle's outcome equals the docstring's
``Runtime: ...`` line (or ``project.json`` ``runtime``), the ``hazard_``/``safe_`` prefix
agrees with it, and so do the marker codes.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from markers import FIXTURES_DIR  # noqa: E402
from test_unseen_runtime import check_project, check_script  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPTS = sorted(p for d in ("blind", "sealed") for p in (FIXTURES_DIR / d).glob("*.py"))
PROJECTS = sorted(
    p
    for d in ("blind_projects", "sealed_projects")
    for p in (FIXTURES_DIR / d).iterdir()
    if (p / "project.json").is_file()
)


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


@pytest.fixture(scope="module")
def project_results():
    return oracle.run_projects(PROJECTS, jobs=2)


def test_blind_corpus_size():
    hazards = [p for p in SCRIPTS if p.name.startswith("hazard_")]
    safes = [p for p in SCRIPTS if p.name.startswith("safe_")]
    assert len(SCRIPTS) >= 40 and len(hazards) + len(safes) == len(SCRIPTS)
    assert abs(len(hazards) - len(safes)) <= len(SCRIPTS) // 5
    assert len(PROJECTS) >= 10
    assert abs(2 * sum(p.name.startswith("safe_") for p in PROJECTS) - len(PROJECTS)) <= 2


@pytest.mark.parametrize("path", SCRIPTS, ids=[f"{p.parent.name}/{p.name}" for p in SCRIPTS])
def test_blind_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])


@pytest.mark.parametrize("folder", PROJECTS, ids=[p.name for p in PROJECTS])
def test_blind_project_outcome(project_results, folder):
    check_project(folder, project_results[str(folder)])
