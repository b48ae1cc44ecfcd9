"""Runtime agreement of the unseen corpus (``fixtures/unseen/*.py`` and ``fixtures/projects/*/``).

These programs were written without reading the analyzer and labelled by running
them. Here each one runs again with real torch (``tests/oracle.py``):

- a single file named ``hazard_*`` must end ``hazard`` or ``crash``, one named
  ``safe_*`` must end ``clean``; its docstring's ``Runtime: ...`` line names the exact
  outcome, and its markers agree (FGL002 markers for a crash, FGL001/FGL003 for a
  hazard, none in a safe program);
- a project's ``project.json`` ``runtime`` names the outcome, its folder name
  starts with ``hazard_`` or ``safe_`` accordingly, and the markers over all of its
  ``.py`` files agree in the same way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from markers import FIXTURES_DIR, expected_markers  # noqa: E402

pytestmark = pytest.mark.slow

UNSEEN_DIR = FIXTURES_DIR / "unseen"
PROJECTS_DIR = FIXTURES_DIR / "projects"
SCRIPTS = sorted(UNSEEN_DIR.glob("*.py"))
PROJECTS = sorted(p for p in PROJECTS_DIR.iterdir() if (p / "project.json").is_file()) if PROJECTS_DIR.is_dir() else []
RUNTIME_RE = re.compile(r"^Runtime: (hazard|crash|clean)\.", re.MULTILINE)


def docstring_runtime(path: Path) -> str | None:
    m = RUNTIME_RE.search(path.read_text(encoding="utf-8").split('"""')[1])
    return m.group(1) if m else None


def marker_codes(paths) -> set[str]:
    return {code for p in paths for _, code in expected_markers(p)}


def check_labels(name: str, want: str, codes: set[str]) -> None:
    prefix_ok = name.startswith("safe_") if want == "clean" else name.startswith("hazard_")
    assert prefix_ok, f"{name}: the prefix disagrees with the outcome {want}"
    default_codes = codes & {"FGL001", "FGL002", "FGL003"}
    if want == "clean":
        assert not default_codes, f"{name}: a safe program carries markers {sorted(default_codes)}"
    elif want == "crash":
        assert "FGL002" in default_codes, f"{name}: a crash needs an FGL002 marker"
    else:
        assert default_codes & {"FGL001", "FGL003"}, f"{name}: a hazard needs an FGL001/FGL003 marker"
        assert "FGL002" not in default_codes, f"{name}: FGL002 marks a crash, torch says hazard"


def check_script(path: Path, res) -> None:
    """The oracle's result for one script agrees with its docstring, prefix and markers."""
    assert res.outcome != "error", f"{path.name} failed to run:\n{res.detail}"
    want = docstring_runtime(path)
    assert want is not None, f"{path.name}: no 'Runtime: ...' line in the docstring"
    assert res.outcome == want, f"{path.name}: docstring says {want}, torch says {res.outcome} ({res.detail})"
    check_labels(path.name, want, marker_codes([path]))
    if res.outcome != "crash":
        assert res.stdout.strip(), f"{path.name} printed nothing"


def check_project(folder: Path, res) -> None:
    """The oracle's result for one project agrees with its project.json, prefix and markers."""
    meta = json.loads((folder / "project.json").read_text(encoding="utf-8"))
    assert (folder / meta["entry"]).is_file(), f"{folder.name}: entry {meta['entry']} missing"
    assert meta.get("description"), f"{folder.name}: project.json has no description"
    assert res.outcome != "error", f"{folder.name} failed to run:\n{res.detail}"
    want = meta["runtime"]
    assert res.outcome == want, f"{folder.name}: project.json says {want}, torch says {res.outcome} ({res.detail})"
    check_labels(folder.name, want, marker_codes(sorted(folder.rglob("*.py"))))


def corpus_paths(name: str) -> tuple[list[Path], list[Path]]:
    """The single files of ``fixtures/<name>/`` and the projects of ``fixtures/<name>_projects/``."""
    script_dir, project_dir = FIXTURES_DIR / name, FIXTURES_DIR / f"{name}_projects"
    scripts = sorted(script_dir.glob("*.py")) if script_dir.is_dir() else []
    projects = sorted(p for p in project_dir.iterdir() if (p / "project.json").is_file()) if project_dir.is_dir() else []
    return scripts, projects


def assert_balanced(names, what):
    """Every name has a hazard_/safe_ prefix, and the two halves are about even."""
    safes = [n for n in names if n.startswith("safe_")]
    hazards = [n for n in names if n.startswith("hazard_")]
    assert len(safes) + len(hazards) == len(names), f"{what}: a name without a hazard_/safe_ prefix"
    assert abs(len(safes) - len(hazards)) <= max(2, len(names) // 4), f"{what}: {len(safes)} safe, {len(hazards)} hazard"


def corpus_runtime_tests(name: str, min_files: int, min_projects: int = 0) -> dict:
    """The runtime agreement tests of corpus ``name`` (``fixtures/<name>/``,
    ``fixtures/<name>_projects/``), for a test module's namespace
    (``globals().update(corpus_runtime_tests(...))``): its module-scoped oracle runs,
    a size and balance check, and one outcome test per program and per project, named
    ``test_<name>_...``."""
    scripts, projects = corpus_paths(name)

    @pytest.fixture(scope="module")
    def script_results():
        return oracle.run_fixtures(scripts, jobs=2)

    @pytest.fixture(scope="module")
    def project_results():
        return oracle.run_projects(projects, jobs=2)

    def test_corpus_size():
        names = [p.name for p in scripts]
        assert len(names) >= min_files, f"fixtures/{name}: {len(names)} programs"
        assert len(projects) >= min_projects, f"fixtures/{name}_projects: {len(projects)} projects"
        assert_balanced(names, f"fixtures/{name}")
        if projects:
            assert_balanced([p.name for p in projects], f"fixtures/{name}_projects")

    @pytest.mark.parametrize("path", scripts, ids=[p.name for p in scripts])
    def test_script_outcome(script_results, path):
        check_script(path, script_results[str(path)])

    @pytest.mark.parametrize("folder", projects, ids=[p.name for p in projects])
    def test_project_outcome(project_results, folder):
        check_project(folder, project_results[str(folder)])

    tests = {"SCRIPTS": scripts, "PROJECTS": projects, "script_results": script_results,
             f"test_{name}_corpus_size": test_corpus_size, f"test_{name}_script_outcome": test_script_outcome}
    if projects:
        tests.update({"project_results": project_results, f"test_{name}_project_outcome": test_project_outcome})
    return tests


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


@pytest.fixture(scope="module")
def project_results():
    return oracle.run_projects(PROJECTS, jobs=2)


def test_corpus_size():
    hazards = [p for p in SCRIPTS if p.name.startswith("hazard_")]
    assert len(SCRIPTS) >= 48 and len(hazards) >= len(SCRIPTS) // 3
    assert len(PROJECTS) >= 16
    assert sum(p.name.startswith("safe_") for p in PROJECTS) >= len(PROJECTS) // 2 - 1


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_unseen_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])


@pytest.mark.parametrize("folder", PROJECTS, ids=[p.name for p in PROJECTS])
def test_unseen_project_outcome(project_results, folder):
    check_project(folder, project_results[str(folder)])


def test_project_runner_isolates_sys_path(tmp_path):
    """The oracle's project runner puts the folder first on sys.path and makes it the cwd."""
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "__init__.py").write_text("from .mod import VALUE\n")
    (proj / "pkg" / "mod.py").write_text("VALUE = 41\n")
    (proj / "markers.py").write_text("WHO = 'project'\n")  # shadows tests/markers.py in the runner
    (proj / "main.py").write_text(
        "import os, pkg, markers\nprint(pkg.VALUE + 1, markers.WHO, os.path.basename(os.getcwd()))\n"
    )
    (proj / "project.json").write_text(json.dumps({"entry": "main.py", "runtime": "clean"}))
    res = oracle.run_project(proj)
    assert (res.outcome, res.stdout) == ("clean", "42 project proj\n"), res.detail
