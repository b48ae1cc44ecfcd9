"""The Fixit 2 rule pack on multi-file projects, run for real (``python -m fixit``, fixit 2.2):
``fixit lint ROOT`` reports what ``fakegrad-lint check ROOT`` reports (a helper's finding at
its own line included) and ``fixit fix --automatic ROOT`` writes what ``fakegrad-lint --fix
ROOT`` writes, a fix that lands in the module where the region is opened included
(``fakegrad_lint/integrations/project_run.py``). Fixit rewrites only the file it lints: the
caller's violation names the file its fix edits, the helper's violation carries the fix.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fixit")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from markers import FIXTURES_DIR  # noqa: E402
from regen_golden import BASE_ARGS, cli  # noqa: E402
from test_fix_projects import UTILS, TRAIN, WEIGHT_PROJECT, texts, write_project  # noqa: E402

FIXIT_CONFIG = '[tool.fixit]\nroot = true\nenable = ["fakegrad_lint.integrations.fixit"]\ndisable = ["fixit.rules"]\n'
FIXIT_LINE = re.compile(r"^(?P<path>[^@\s]+)@(?P<row>\d+):(?P<col>\d+) (?P<rule>\w+): (?P<code>FGL\d{3}) (?P<rest>.*)$")
PROJECTS = sorted(p.parent for p in (FIXTURES_DIR / "projects").glob("*/project.json"))


def fixit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "fixit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=1200, check=False)


def with_config(root: Path) -> Path:
    (root / "pyproject.toml").write_text(FIXIT_CONFIG, encoding="utf-8")
    return root


def fixit_findings(proc, base: Path) -> dict:
    out = {}
    for line in proc.stdout.splitlines():
        m = FIXIT_LINE.match(line)
        if m:
            path = (base / m["path"]).resolve()
            out[(str(path), int(m["row"]), int(m["col"]), m["code"])] = m["rest"]
    return out


def cli_findings(root: Path, *args: str) -> set:
    proc = cli(*BASE_ARGS, *args, "--output-format", "json", ".", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return {(str(Path(d["filename"]).resolve()), d["location"]["row"], d["location"]["column"] - 1, d["code"])
            for d in json.loads(proc.stdout)}


def test_fixit_reports_and_writes_the_fix_in_the_helper(tmp_path):
    """The safe ``from_tensor`` fix of ``utils.py`` found from ``train.py``: ``fixit lint``
    reports both findings as the CLI does (the caller's names ``utils.py`` as where its fix
    goes, the helper's has the autofix); ``fixit fix`` writes the CLI's ``utils.py``."""
    root = with_config(write_project(tmp_path / "fixit", WEIGHT_PROJECT, "train.py"))
    proc = fixit("lint", ".", cwd=root)
    found = fixit_findings(proc, root)
    assert set(found) == cli_findings(root), proc.stdout + proc.stderr
    caller = next(rest for key, rest in found.items() if key[0].endswith("train.py"))
    assert "its fix edits utils.py" in caller
    assert "has autofix" in next(line for line in proc.stdout.splitlines() if line.startswith("utils.py@"))
    reference = write_project(tmp_path / "cli", WEIGHT_PROJECT, "train.py")
    with_config(reference)
    assert cli(*BASE_ARGS, "--fix", ".", cwd=reference).returncode == 0
    fixit("fix", "--automatic", ".", cwd=root)
    assert texts(root) == texts(reference)
    assert texts(root)["utils.py"] != WEIGHT_PROJECT["utils.py"]
    assert fixit_findings(fixit("lint", ".", cwd=root), root) == {}


def test_fixit_never_writes_an_unsafe_helper_fix(tmp_path):
    """The module fix in the helper is unsafe: Fixit (safe fixes only, as ``--fix``) writes
    nothing, and no violation says it has an autofix."""
    root = with_config(write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN}, "train.py"))
    proc = fixit("fix", "--automatic", ".", cwd=root)
    assert "has autofix" not in proc.stdout and "FGL001" in proc.stdout
    assert texts(root) == {"train.py": TRAIN, "utils.py": UTILS}


def test_fixit_lint_check_and_fix_report_the_same_findings(tmp_path):
    """One data model: ``fixit lint``, ``fakegrad-lint check`` and what ``fakegrad-lint --fix``
    reports as left (the unsafe helper fix is not applied) are the same findings, the one
    at the helper's line included."""
    root = with_config(write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN}, "train.py"))
    found = set(fixit_findings(fixit("lint", ".", cwd=root), root))
    checked = cli_findings(root)
    assert {Path(k[0]).name for k in checked} == {"train.py", "utils.py"}
    assert found == checked == cli_findings(root, "--fix")
    assert texts(root) == {"train.py": TRAIN, "utils.py": UTILS}


@pytest.mark.slow  # every fixture project through fixit and the CLI
def test_fixit_agrees_with_the_cli_on_every_fixture_project(tmp_path):
    """One ``fixit`` run over every fixture project (each its own Fixit root) against the CLI
    run in each project: the same findings, the same files written."""
    top = tmp_path / "fixit"
    for folder in PROJECTS:
        with_config(Path(shutil.copytree(folder, top / folder.name)))
    found = fixit_findings(fixit("lint", ".", cwd=top), top)
    fixit("fix", "--automatic", ".", cwd=top)
    expected, differ = set(), []
    for folder in PROJECTS:
        ref = with_config(Path(shutil.copytree(folder, tmp_path / "cli" / folder.name)))
        mine = str((top / folder.name).resolve())
        expected |= {(k[0].replace(str(ref.resolve()), mine), *k[1:]) for k in cli_findings(ref)}
        assert cli(*BASE_ARGS, "--fix", ".", cwd=ref).returncode in (0, 1)
        if texts(ref) != texts(top / folder.name):
            differ.append(folder.name)
    assert set(found) == expected
    assert not differ, f"fixit fix and fakegrad-lint --fix differ on {differ}"
