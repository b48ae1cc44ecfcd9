"""End to end: ``python -m fakegrad_lint`` in a subprocess over real programs.

The hazardous programs are the rules' own ``invalid`` examples (lines marked
``# FGLxxx`` must be reported); their ``valid`` examples must be clean. These
need the real analyzer (``fakegrad_lint.analysis``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from fakegrad_lint.rules import RULES
from markers import markers_in_source


def cli(*args, cwd, env=None):
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=120
    )


def expected(program: str) -> list[tuple[int, str]]:
    return sorted(markers_in_source(program))


def examples(kind):
    for rule in RULES:
        for i, program in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, program, id=f"{rule.code}-{kind}-{i}")


@pytest.mark.parametrize("rule, program", examples("invalid"))
def test_invalid_examples_are_reported(tmp_path, rule, program):
    (tmp_path / "ex.py").write_text(program)
    proc = cli("--select", rule.code, "--output-format", "json", "ex.py", cwd=tmp_path)
    assert proc.stderr == ""
    # markers are per line: two values leaking on one line (`params[0] * params[1]`) are
    # two findings under one marker
    got = sorted({(d["location"]["row"], d["code"]) for d in json.loads(proc.stdout)})
    assert got == expected(program)
    assert proc.returncode == 1


@pytest.mark.parametrize("rule, program", examples("valid"))
def test_valid_examples_are_clean(tmp_path, rule, program):
    (tmp_path / "ex.py").write_text(program)
    proc = cli("--select", "ALL", "ex.py", cwd=tmp_path)  # FGL100 too: the valid examples leave no noqa unused
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "All checks passed!" in proc.stdout


def test_noqa_silences_a_real_finding(tmp_path):
    program = RULES[0].invalid[0]
    marked = "\n".join(
        line.replace("# FGL001", "# noqa: FGL001") for line in program.splitlines()
    ) + "\n"
    (tmp_path / "ex.py").write_text(marked)
    proc = cli("ex.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout


def test_add_noqa_on_real_finding(tmp_path):
    program = RULES[0].invalid[0].replace("  # FGL001", "")
    p = tmp_path / "ex.py"
    p.write_text(program)
    proc = cli("--add-noqa", "ex.py", cwd=tmp_path)
    assert proc.returncode == 0 and "Added 1 noqa directive." in proc.stdout
    assert "# noqa: FGL001" in p.read_text()
    assert cli("ex.py", cwd=tmp_path).returncode == 0


def test_fix_on_real_finding_matches_fixed_example(tmp_path):
    rule = RULES[0]
    if rule.fixed_example is None:
        pytest.skip("no fixed example")
    p = tmp_path / "ex.py"
    p.write_text(rule.invalid[0])
    diff = cli("--diff", "ex.py", cwd=tmp_path)
    assert diff.returncode == 1 and diff.stdout.startswith("--- ex.py\n+++ ex.py\n")
    assert p.read_text() == rule.invalid[0]
    proc = cli("--fix", "ex.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert p.read_text().replace("  # FGL001", "") == rule.fixed_example


def test_text_output_and_exit_codes_mixed_run(tmp_path):
    (tmp_path / "hazard.py").write_text(RULES[0].invalid[0])
    (tmp_path / "broken.py").write_text("from torch._subclasses import FakeTensorMode\ndef f(:\n")
    (tmp_path / "clean.py").write_text("print('hello')\n")
    proc = cli(".", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "broken.py: error: SyntaxError: invalid syntax (line 2, column 7)\n"
    row = expected(RULES[0].invalid[0])[0][0]
    assert re.search(rf"^hazard\.py:{row}:\d+: FGL001 ", proc.stdout, re.M)
    assert "Found 1 error." in proc.stdout


def test_version_and_empty_folder(tmp_path):
    proc = cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "fakegrad-lint 0.1.0\n"
    proc = cli("check", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "All checks passed!\n"


def test_startup_does_not_import_heavy_modules(tmp_path):
    code = (
        "import sys; from fakegrad_lint.cli import main as cli; rc = cli.main([sys.argv[1]]);"
        "heavy = [m for m in ('torch', 'libcst', 'concurrent.futures', 'multiprocessing') if m in sys.modules];"
        "print(heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
