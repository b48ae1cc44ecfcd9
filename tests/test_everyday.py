"""Everyday use, as a ruff user expects it (issue 14): options anywhere, stdin,
configuration overrides and the nearest configuration per file, the small flags,
two leaked values in one expression, one version, install hints that work.

Most cases run the command line in-process over the fake findings source of
``test_cli_support``; the ones about real findings use the real analyzer.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from fakegrad_lint import __version__
from fakegrad_lint.cli import main as cli
from test_cli_support import HEADER, fake_checker, write  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def proj(tmp_path, monkeypatch, fake_checker):
    monkeypatch.chdir(tmp_path)
    for var in ("NO_COLOR", "FORCE_COLOR", "FAKEGRAD_LINT_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def concise(out: str) -> list[str]:
    return [line for line in out.splitlines() if line]


# -- options and paths in any order -------------------------------------------------


def test_paths_and_options_mix_in_any_order(proj, capsys):
    write(proj / "src" / "a.py", "hazard(1)\n")
    write(proj / "tests" / "b.py", "hazard(2)\n")
    rc, out, err = run(capsys, "src", "--output-format", "concise", "tests")
    assert rc == 1, err
    assert concise(out) == [
        f"{os.path.join('src', 'a.py')}:2:1: FGL001 [*] hazard found",
        f"{os.path.join('tests', 'b.py')}:2:1: FGL001 [*] hazard found",
    ]
    rc, out, err = run(capsys, "src", "--fix", "tests")
    assert rc == 0 and "Found 2 errors (2 fixed, 0 remaining)." in out, err
    assert "safe(2)" in (proj / "tests" / "b.py").read_text()


def test_check_command_after_global_options(proj, capsys):
    write(proj / "a.py", "hazard(1)\n")
    rc, out, err = run(capsys, "-q", "check", "a.py")
    assert rc == 1 and err == "" and out.splitlines() == ["a.py:2:1: FGL001 [*] hazard found"]
    # an option's value is never taken for the command
    rc, out, err = run(capsys, "--output-format", "concise", "check", "a.py")
    assert rc == 1 and concise(out) == ["a.py:2:1: FGL001 [*] hazard found"], err


def test_diff_with_exit_zero_exits_0(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "--diff", "--exit-zero", "a.py")
    assert rc == 0 and "+y = safe(x)" in out
    rc, _, _ = run(capsys, "--diff", "a.py")
    assert rc == 1


# -- configuration ---------------------------------------------------------------------


def test_config_dev_null_and_empty_file_are_empty_configurations(proj, capsys):
    (proj / "pyproject.toml").write_text('[tool.fakegrad-lint]\nignore = ["FGL001"]\n')
    write(proj / "a.py", "hazard(1)\n")
    assert run(capsys, "a.py")[0] == 0
    rc, out, err = run(capsys, "--config", os.devnull, "a.py")
    assert rc == 1 and "FGL001" in out, err
    (proj / "empty.toml").write_text("")
    rc, out, err = run(capsys, "--config", "empty.toml", "a.py")
    assert rc == 1 and "FGL001" in out, err


def test_config_key_value_overrides(proj, capsys):
    (proj / "pyproject.toml").write_text('[tool.fakegrad-lint]\nignore = ["FGL002"]\n')
    write(proj / "a.py", "hazard(1)\ncrash(2)\nleak(3)\n")
    rc, out, _ = run(capsys, "--output-format", "concise", "--config", 'extend-select = ["FGL004"]', "a.py")
    assert [line.split()[1] for line in concise(out)] == ["FGL001", "FGL004"]
    # an override wins over the file, whichever order they are given in
    rc, out, _ = run(capsys, "--config", "ignore = []", "--config", "pyproject.toml", "--output-format", "concise", "a.py")
    assert [line.split()[1] for line in concise(out)] == ["FGL001", "FGL002"]
    rc, out, _ = run(capsys, "--config", 'output-format = "concise"', "--config", "unsafe-fixes = true", "a.py")
    assert concise(out) == ["a.py:2:1: FGL001 [*] hazard found"]  # FGL002 ignored by the file
    for bad, reason in (("selec = []", "unknown key 'selec'"), ("select = 1", "expected a list"), ("nope.toml", "no such configuration file")):
        rc, out, err = run(capsys, "--config", bad, "a.py")
        assert rc == 2 and out == "" and len(err.splitlines()) == 1 and reason in err, (bad, err)


def test_nearest_configuration_governs_each_file(proj, capsys):
    (proj / "pyproject.toml").write_text('[tool.fakegrad-lint]\nextend-select = ["FGL004"]\n')
    (proj / "sub").mkdir()
    (proj / "sub" / "pyproject.toml").write_text(
        '[tool.fakegrad-lint]\nignore = ["FGL001"]\nextend-exclude = ["generated"]\n'
    )
    write(proj / "a.py", "hazard(1)\nleak(2)\n")
    write(proj / "sub" / "b.py", "hazard(1)\nleak(2)\n")
    write(proj / "sub" / "generated" / "c.py", "hazard(1)\n")
    rc, out, _ = run(capsys, "--output-format", "concise", ".")
    b = os.path.join("sub", "b.py")
    assert concise(out) == ["a.py:2:1: FGL001 [*] hazard found", "a.py:3:1: FGL004 leak found"]  # sub/ has no FGL004
    rc, out, _ = run(capsys, "--output-format", "concise", "sub")
    assert concise(out) == []
    # --config names one file for every file
    rc, out, _ = run(capsys, "--output-format", "concise", "--config", "pyproject.toml", ".")
    assert f"{b}:2:1: FGL001 [*] hazard found" in concise(out)
    assert f"{b}:3:1: FGL004 leak found" in concise(out)
    rc, out, _ = run(capsys, "--show-settings", "sub/b.py")
    assert f"Settings path: {proj / 'sub' / 'pyproject.toml'}" in out and '"FGL001"' not in out.split("enabled = ")[1].splitlines()[0]


def test_extend_ignore_and_per_file_ignores_on_the_command_line(proj, capsys):
    write(proj / "a.py", "hazard(1)\ncrash(2)\n")
    write(proj / "tests" / "t.py", "hazard(1)\ncrash(2)\n")
    rc, out, _ = run(capsys, "--output-format", "concise", "--ignore", "FGL002", "--extend-ignore", "FGL001", ".")
    assert rc == 0 and out == ""
    rc, out, _ = run(capsys, "--output-format", "concise", "--per-file-ignores", "tests/*:FGL001,FGL002", ".")
    assert [line.split(":")[0] for line in concise(out)] == ["a.py", "a.py"]
    rc, out, _ = run(capsys, "--output-format", "concise", "--per-file-ignores", "a.py:FGL001", "a.py")
    assert [line.split()[1] for line in concise(out)] == ["FGL002"]
    rc, _, err = run(capsys, "--per-file-ignores", "FGL001", ".")
    assert rc == 2 and "PATTERN:CODES" in err


# -- output ------------------------------------------------------------------------------


def test_output_file_silent_and_exit_non_zero_on_fix(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "--output-file", "report.txt", "a.py")
    assert rc == 1 and out == ""
    assert (proj / "report.txt").read_text().startswith("a.py:2:5: FGL001 [*] hazard found\n")
    rc, out, err = run(capsys, "--silent", "a.py")
    assert rc == 1 and out == "" and err == ""
    rc, out, _ = run(capsys, "--fix", "a.py")
    assert rc == 0  # fixed, nothing left
    write(proj / "b.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "--fix", "--exit-non-zero-on-fix", "b.py")
    assert rc == 1 and "(1 fixed, 0 remaining)" in out
    rc, out, _ = run(capsys, "--fix", "--exit-non-zero-on-fix", "b.py")
    assert rc == 0  # nothing left to fix


def test_show_files_and_show_fixes_without_fix(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\nz = crash(x)\n")
    write(proj / "pkg" / "b.py", "x = 1\n")
    (proj / "notes.txt").write_text("no\n")
    rc, out, _ = run(capsys, "--show-files", ".")
    assert rc == 0 and out.splitlines() == ["a.py", os.path.join("pkg", "b.py")]
    rc, out, _ = run(capsys, "--show-fixes", "a.py")
    assert rc == 1
    tail = out.split("2 fixes available:\n")[1].splitlines()
    assert tail == [
        "- a.py:2:5: FGL001 (safe) use safe(",
        "- a.py:3:5: FGL002 (unsafe, needs --unsafe-fixes) use ok(",
    ]
    assert (proj / "a.py").read_text() == HEADER + "y = hazard(x)\nz = crash(x)\n"


def test_force_color(proj, capsys, monkeypatch):
    write(proj / "a.py", "y = hazard(x)\n")
    assert "\x1b[" not in run(capsys, "a.py")[1]
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = run(capsys, "a.py")[1]
    assert "\x1b[" in out
    assert "\x1b[" not in run(capsys, "--color", "never", "a.py")[1]


def test_file_level_noqa(proj, capsys):
    write(proj / "a.py", "# fakegrad-lint: noqa\nhazard(1)\ncrash(2)\n")
    write(proj / "b.py", "# fakegrad-lint: noqa: FGL001\nhazard(1)\ncrash(2)\n")
    write(proj / "c.py", "hazard(1)  # fakegrad-lint: noqa is not a line directive\n# flake8: noqa\n")
    write(proj / "d.py", "x = '# fakegrad-lint: noqa'\nhazard(1)\n")
    rc, out, _ = run(capsys, "--output-format", "concise", ".")
    assert concise(out) == ["b.py:4:1: FGL002 crash found", "d.py:3:1: FGL001 [*] hazard found"]


def test_concise_keeps_the_fixable_mark(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\nz = crash(x)\n")
    _, out, _ = run(capsys, "--output-format", "concise", "a.py")
    assert concise(out) == ["a.py:2:5: FGL001 [*] hazard found", "a.py:3:5: FGL002 crash found"]
    _, out, _ = run(capsys, "--output-format", "concise", "--unsafe-fixes", "a.py")
    assert concise(out)[1] == "a.py:3:5: FGL002 [*] crash found"


# -- standard input (real analyzer, real process) -------------------------------------

HAZARD = textwrap.dedent(
    """\
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    a = torch.randn(3, 3, requires_grad=True)
    b = torch.randn(3, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = (a @ b).sum()
        y.backward()
    print(tuple(y.shape))
    """
)


def lint(*args, stdin: str | None = None, cwd=None, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("FORCE_COLOR", None)
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", *args],
        input=stdin, capture_output=True, text=True, cwd=cwd, env=e, timeout=120,
    )


def test_stdin_check_fix_and_diff(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fakegrad-lint.per-file-ignores]\n"gen/*" = ["FGL001"]\n')
    proc = lint("check", "-", "--stdin-filename", "src/train.py", "--output-format", "concise", "--no-cache",
                stdin=HAZARD, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["src/train.py", "src/train.py"]
    assert not (tmp_path / "src").exists()  # nothing read or written on disk
    # the per-file-ignores of the configuration apply to the stdin file name
    proc = lint("-", "--stdin-filename", "gen/train.py", stdin=HAZARD, cwd=tmp_path)
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout, proc.stdout + proc.stderr
    # --fix: the fixed text on stdout, the report on stderr
    proc = lint("-", "--fix", "--stdin-filename", "train.py", stdin=HAZARD, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "a_fake = fake_mode.from_tensor(a)" in proc.stdout and "b_fake = fake_mode.from_tensor(b)" in proc.stdout
    assert "Found 2 errors (2 fixed, 0 remaining)." in proc.stderr
    again = lint("-", "--stdin-filename", "train.py", stdin=proc.stdout, cwd=tmp_path)
    assert again.returncode == 0, again.stdout
    # nothing to fix: the text comes back unchanged
    clean = "x = 1\n"
    proc = lint("-", "--fix", stdin=clean, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == clean
    proc = lint("-", "--diff", "--stdin-filename", "train.py", stdin=HAZARD, cwd=tmp_path)
    assert proc.returncode == 1 and "--- train.py" in proc.stdout and "+    a_fake" in proc.stdout
    proc = lint("--stdin-filename", "t.py", "--output-format", "concise", stdin=HAZARD, cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.count("t.py:7:10: FGL001") == 2, proc.stdout + proc.stderr
    proc = lint("-", "other.py", stdin=HAZARD, cwd=tmp_path)
    assert proc.returncode == 2 and "standard input" in proc.stderr


# -- two values in one expression (real analyzer) -------------------------------------

MODULE_AND_TENSOR = textwrap.dedent(
    """\
    import torch
    from torch import nn
    from torch._subclasses.fake_tensor import FakeTensorMode

    model = nn.Linear(3, 3)
    w = torch.randn(3, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = (model(torch.randn(2, 3)) @ w).sum()
        y.backward()
    print(tuple(y.shape))
    """
)


@pytest.fixture
def real(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


@pytest.mark.parametrize("source, values", [(HAZARD, ["a", "b"]), (MODULE_AND_TENSOR, ["model", "w"])])
def test_two_leaked_values_in_one_expression_are_two_findings(real, capsys, source, values):
    (real / "t.py").write_text(source)
    rc, out, _ = run(capsys, "--no-cache", "t.py")
    assert [re.search(r"`(\w+)`", line).group(1) for line in out.splitlines() if line.startswith("t.py:")] == values
    assert "Found 2 errors." in out
    for fmt in ("concise", "json", "json-lines", "sarif", "github"):
        _, out, _ = run(capsys, "--no-cache", "--output-format", fmt, "t.py")
        for v in values:
            assert f"`{v}`" in out, (fmt, out)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "json", "t.py")
    assert len(json.loads(out)) == 2
    unsafe = ["--unsafe-fixes"] if "model" in values else []
    _, out, _ = run(capsys, "--no-cache", "--diff", *unsafe, "t.py")
    assert "Would fix 2 errors." in out
    rc, out, _ = run(capsys, "--no-cache", "--fix", *unsafe, "t.py")
    assert rc == 0 and "Found 2 errors (2 fixed, 0 remaining)." in out
    assert run(capsys, "--no-cache", "t.py")[0] == 0


# -- notebooks in CI formats ----------------------------------------------------------


def test_sarif_and_github_say_which_notebook_cell(real, capsys):
    cells = [["import torch\n", "from torch._subclasses.fake_tensor import FakeTensorMode\n"], ["# notes\n"],
             ["x = torch.randn(2, requires_grad=True)\n", "with FakeTensorMode(allow_non_fake_inputs=True):\n",
              "    y = (x * 2).sum()\n", "    y.backward()\n"]]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
          "cells": [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}
                    for src in cells]}
    (real / "nb.ipynb").write_text(json.dumps(nb))
    _, out, _ = run(capsys, "--no-cache", "--output-format", "sarif", "nb.ipynb")
    (result,) = json.loads(out)["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 3 and region["properties"] == {"cell": 3}
    assert result["message"]["text"].startswith("cell 3: real requires-grad tensor `x`")
    _, out, _ = run(capsys, "--no-cache", "--output-format", "github", "nb.ipynb")
    assert "file=nb.ipynb,line=3," in out and "::cell 3: real requires-grad tensor `x`" in out


# -- one version, install commands that work from this repository ---------------------


def test_version_is_written_in_one_place():
    from importlib import metadata

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and re.search(r"^version\s*=\s*\"", pyproject, re.M) is None
    assert 'version = { attr = "fakegrad_lint.__version__" }' in pyproject
    assert metadata.version("fakegrad-lint") == __version__
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"^\s*rev: (\S+)", readme, re.M) == [f"v{__version__}"]  # the release tag of this version
    assert set(re.findall(r"git\+REPO_URL@(v[0-9][^'`\s]*)", readme)) == {f"v{__version__}"}  # git install URLs
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert re.findall(r"rev: (\S+)", hooks) == [f"v{__version__}"]


def test_install_commands_work_from_the_repository():
    from fakegrad_lint.runtime import RUNTIME_EXTRA_HINT

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (extra,) = re.findall(r'^runtime = \["([^"]+)"\]', pyproject, re.M)
    assert RUNTIME_EXTRA_HINT == f"pip install '{extra}'"  # the extra is torch: no package index needs fakegrad-lint
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # no command asks an index for fakegrad-lint itself
    bare = re.compile(r"pip install (?:-U )?'?fakegrad-lint(?:\[[a-z,]+\])?(?! @)['\s`]")
    assert not bare.search(readme), "README installs from an index"
    assert bare.search("pip install fakegrad-lint flake8") and bare.search("pip install 'fakegrad-lint[runtime]'")
    assert "pip install . && fakegrad-lint fixtures/" in readme


def test_fgl004_page_enables_it_with_extend_select():
    from fakegrad_lint.cli.rule_docs import rule_text
    from fakegrad_lint.rules import RULES_BY_CODE

    text = rule_text(RULES_BY_CODE["FGL004"])
    assert "--extend-select FGL004" in text
    assert not re.search(r"(?<!extend-)select FGL004`? for", text)
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert "Select it with `--select FGL004`" not in page


# -- the pre-commit test's wheels come from this environment ----------------------------


def test_wheelhouse_repacks_the_installed_distribution(tmp_path):
    from importlib import metadata

    import wheelhouse

    wheels = wheelhouse.build(tmp_path, ["libcst"])
    names = {w.name.split("-")[0].lower(): w for w in wheels}
    version = metadata.version("libcst")
    assert names["libcst"].name.startswith(f"libcst-{version}-")  # the version installed here
    assert "pyyaml" in names  # and what it requires, as installed here
    with zipfile.ZipFile(names["libcst"]) as zf:
        files = set(zf.namelist())
        record = zf.read(f"libcst-{version}.dist-info/RECORD").decode()
    assert "libcst/__init__.py" in files and f"libcst-{version}.dist-info/METADATA" in files
    assert not any(f.endswith(".pyc") or f.endswith("/INSTALLER") for f in files)
    listed = {line.split(",")[0] for line in record.splitlines()}
    assert listed == files


def test_precommit_env_ignores_the_base_interpreter():
    source = (ROOT / "tests" / "test_precommit.py").read_text(encoding="utf-8")
    assert 'VIRTUALENV_SYSTEM_SITE_PACKAGES="0"' in source and "PIP_FIND_LINKS=str(wheels)" in source


# -- confirm on a project (real torch) ---------------------------------------------------


@pytest.mark.skipif(__import__("importlib").util.find_spec("torch") is None, reason="torch not installed")
@pytest.mark.slow  # real torch runs of a whole project: the slow tier (CI runs it)
def test_confirm_checks_the_project_the_script_belongs_to(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "models.py").write_text(textwrap.dedent(
        """\
        import torch
        from torch import nn
        from torch._subclasses.fake_tensor import FakeTensorMode


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))

            def forward(self, x):
                return self.net(x)  # inner

            def shapes(self, batch):
                with FakeTensorMode(allow_non_fake_inputs=True):
                    out = self(torch.randn(batch, 3))  # handed in
                    out.sum().backward()
                return tuple(out.shape)
        """))
    (tmp_path / "utils.py").write_text(textwrap.dedent(
        """\
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode

        scale = torch.ones(2, requires_grad=True)


        def memory(batch):
            with FakeTensorMode(allow_non_fake_inputs=True):
                y = (torch.randn(batch, 2) * scale).sum()  # util
                y.backward()
            return batch * 8
        """))
    (tmp_path / "unused.py").write_text(HAZARD)  # never imported: not reported
    (tmp_path / "train.py").write_text("from models import Net\nfrom utils import memory\n\nprint(Net().shapes(8), memory(4))\n")
    proc = lint("confirm", "train.py", "--output-format", "json", cwd=tmp_path, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 1, proc.stderr
    objs = json.loads(proc.stdout)
    got = {(o["status"], o["filename"], o["line"], o["code"]) for o in objs}
    # the project's modules are checked: their findings are confirmed, not missed
    assert {("confirmed", "models.py", 16, "FGL001"), ("confirmed", "utils.py", 9, "FGL001")} <= got, proc.stdout
    assert {o["status"] for o in objs} == {"confirmed"}, proc.stdout  # (the call sites in train.py may be flagged too)
    assert "unused.py" not in {o["filename"] for o in objs}  # never run: not reported
    model = next(o for o in objs if o["filename"] == "models.py")
    assert (model["op_filename"], model["op_line"]) == ("models.py", 12)  # the inner frame, kept
    assert model["runtime"].startswith("4 real requires-grad Parameters (")
    for name in ("self.net[0].weight", "self.net[0].bias", "self.net[2].weight", "self.net[2].bias"):
        assert f"`{name}`" in model["runtime"]
    assert "net.2" not in model["runtime"]


@pytest.mark.skipif(__import__("importlib").util.find_spec("torch") is None, reason="torch not installed")
def test_confirm_script_that_fails_before_a_region_is_a_script_error(tmp_path):
    (tmp_path / "train.py").write_text("import not_installed_anywhere\n" + HAZARD)
    proc = lint("confirm", "train.py", cwd=tmp_path, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert sum("FGL001 script-error (hazard)" in line for line in lines) == 2, proc.stdout
    assert "train.py:1: script-error (error): ModuleNotFoundError: No module named 'not_installed_anywhere'" in lines
    assert lines[-1].startswith("0 confirmed, 0 not reproduced, 0 missed, 3 script-error; train.py failed with ModuleNotFoundError")


def test_python_spelling_of_parameter_names():
    pytest.importorskip("torch")
    from fakegrad_lint.runtime.watcher import python_path

    assert "self" + python_path("net.2.weight") == "self.net[2].weight"
    assert "m" + python_path("blocks.a-b.bias") == "m.blocks['a-b'].bias"
    assert "m" + python_path("fc.weight") == "m.fc.weight"


def test_stdin_in_process_keeps_the_encoding(proj, capsys, monkeypatch):
    raw = ("# coding: latin-1\n" + HEADER + "y = hazard('\xe9')\n").encode("latin-1")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="latin-1"))
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    rc = cli.main(["-", "--fix", "--stdin-filename", "x.py"])
    out.flush()
    assert rc == 0
    assert out.buffer.getvalue() == raw.replace(b"hazard(", b"safe(")
