"""Startup stays light: what ``--version`` and a run over an empty folder import.

Not a timed test (timings on a shared machine are noise): it checks, in a fresh
interpreter, that nothing heavy is in ``sys.modules`` afterwards. The time
itself is measured by hand with ``python -X importtime`` (see bench/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Never needed to print the version or to find that there is nothing to check.
HEAVY = (
    "torch",
    "numpy",
    "libcst",
    "concurrent.futures",
    "concurrent.futures.process",
    "multiprocessing",
    "multiprocessing.pool",
    "fakegrad_lint.engine.lint",
    "fakegrad_lint.analysis.interpreter",
    "fakegrad_lint.analysis.values",
    "fakegrad_lint.fix.apply",
    "fakegrad_lint.fix.builders",
    "fakegrad_lint.fix.cst",
    "fakegrad_lint.engine.noqa",
    "fakegrad_lint.runtime",
    "fakegrad_lint.report.sarif",
    "jsonschema",
    "hashlib",
    "difflib",
)
# Not even the argument parser or the settings for --version.
VERSION_ONLY_HEAVY = HEAVY + ("argparse", "fakegrad_lint.config.settings", "fakegrad_lint.engine.process", "fakegrad_lint.rules")


def loaded_after(argv: list[str], cwd) -> tuple[int, str, list[str]]:
    code = (
        "import sys, json, io, contextlib\n"
        "from fakegrad_lint.cli import main as cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    rc = cli.main(json.loads(sys.argv[1]))\n"
        "print(json.dumps([rc, out.getvalue(), sorted(sys.modules)]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], cwd=cwd, capture_output=True, text=True, check=True)
    rc, out, mods = json.loads(proc.stdout.splitlines()[-1])
    return rc, out, mods


def test_version_imports_almost_nothing(tmp_path):
    rc, out, mods = loaded_after(["--version"], tmp_path)
    assert (rc, out) == (0, "fakegrad-lint 0.1.0\n")
    assert [m for m in VERSION_ONLY_HEAVY if m in mods] == []


@pytest.mark.parametrize("argv", [["."], ["check", "."], ["--output-format", "json", "."]])
def test_empty_folder_run_imports_nothing_heavy(tmp_path, argv):
    (tmp_path / "empty").mkdir()
    rc, out, mods = loaded_after(argv, tmp_path / "empty")
    assert rc == 0 and out.strip() in ("All checks passed!", "[]")
    assert [m for m in HEAVY if m in mods] == []


def test_a_clean_small_run_needs_no_pool_and_no_analyzer(tmp_path):
    # files that fail the prefilter are read, never parsed: no analyzer import
    for i in range(20):
        (tmp_path / f"m{i}.py").write_text(f"import torch\nx{i} = torch.ones(2, requires_grad=True)\n")
    rc, out, mods = loaded_after(["."], tmp_path)
    assert rc == 0
    assert [m for m in HEAVY if m in mods] == []


def test_the_check_catches_a_heavy_import(tmp_path):
    # the check itself can fail: a run that does analyze imports the analyzer
    (tmp_path / "a.py").write_text("from torch._subclasses import FakeTensorMode\nx = 1\n")
    rc, out, mods = loaded_after(["--no-cache", "."], tmp_path)
    assert "fakegrad_lint.analysis.interpreter" in mods and "fakegrad_lint.engine.lint" in mods


def test_a_fix_that_adds_no_import_needs_no_codemod(tmp_path):
    """libcst.codemod (its AddImportsVisitor) costs as much to import as libcst itself:
    it is imported only when a fix adds an import."""
    from pathlib import Path

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "hazard_allow_set_later.py"
    (tmp_path / "a.py").write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    rc, out, mods = loaded_after(["--no-cache", "--output-format", "json", "."], tmp_path)
    fixes = [d["fix"] for d in json.loads(out)]
    assert rc == 1 and fixes and all(fixes)  # fixes were built (with libcst) ...
    assert "libcst" in mods and "fakegrad_lint.fix.cst" in mods
    assert "libcst.codemod" not in mods  # ... and none added an import
