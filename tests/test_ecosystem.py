"""The Fixit 2 rule pack and the LibCST codemod agree with the CLI, run for real.

On every fixture (``fixtures/*.py`` and ``fixtures/unseen/*.py``), copied to a
temporary folder:

- ``fixit lint`` reports exactly the CLI's findings (file, row, column, code);
- ``fixit fix --automatic`` writes exactly the bytes ``fakegrad-lint --fix`` writes;
- ``python -m libcst.tool codemod -x fakegrad_lint.integrations.codemod.FixFakeGrad`` writes
  exactly what ``--fix`` writes, and with ``--unsafe-fixes`` what
  ``--fix --unsafe-fixes`` writes.

The rules' own examples also run through Fixit's test harness
(``fixit.testing``), with the expected replacements (the safe fixes).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

import pytest

fixit = pytest.importorskip("fixit")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from markers import FIXTURES_DIR, fixture_paths  # noqa: E402
from regen_golden import BASE_ARGS, cli  # noqa: E402

FIXTURES = fixture_paths() + sorted((FIXTURES_DIR / "unseen").glob("*.py"))
FIXIT_CONFIG = '[tool.fixit]\nroot = true\nenable = ["fakegrad_lint.integrations.fixit"]\ndisable = ["fixit.rules"]\n'
RULE_CODES = {"FakeGradHazard": "FGL001", "RealTensorInStrictFakeMode": "FGL002", "LeakedFakeMixedWithRealGrad": "FGL003"}
FIXIT_LINE = re.compile(r"^(?P<path>[^@\s]+)@(?P<row>\d+):(?P<col>\d+) (?P<rule>\w+): (?P<code>FGL\d{3}) ")


def _copy(folder: Path, *, config: str | None = None) -> Path:
    folder.mkdir(parents=True)
    for p in FIXTURES:
        shutil.copyfile(p, folder / p.name)
    if config is not None:
        (folder / "pyproject.toml").write_text(config, encoding="utf-8")
    return folder


def _run(*args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=1200, check=False)


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: (folder / p.name).read_bytes() for p in FIXTURES}


@pytest.fixture(scope="module")
def cli_findings(tmp_path_factory):
    folder = _copy(tmp_path_factory.mktemp("cli") / "check")
    proc = cli(*BASE_ARGS, "--output-format", "json", *[p.name for p in FIXTURES], cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    return {(Path(d["filename"]).name, d["location"]["row"], d["location"]["column"] - 1, d["code"])
            for d in json.loads(proc.stdout)}


@pytest.fixture(scope="module")
def cli_fixed(tmp_path_factory):
    out = {}
    for name, flags in (("safe", ("--fix",)), ("unsafe", ("--fix", "--unsafe-fixes"))):
        folder = _copy(tmp_path_factory.mktemp("cli") / name)
        proc = cli(*BASE_ARGS, *flags, *[p.name for p in FIXTURES], cwd=folder)
        assert proc.returncode in (0, 1), proc.stderr
        out[name] = _contents(folder)
    return out


@pytest.mark.slow  # the whole fixture corpus through fixit / libcst.tool and the CLI
def test_fixit_lint_reports_what_the_cli_reports(tmp_path, cli_findings):
    folder = _copy(tmp_path / "lint", config=FIXIT_CONFIG)
    proc = _run("-m", "fixit", "lint", ".", cwd=folder)
    got = set()
    for line in proc.stdout.splitlines():
        m = FIXIT_LINE.match(line)
        assert m, f"unexpected fixit output: {line!r}\n{proc.stderr}"
        assert RULE_CODES[m["rule"]] == m["code"]
        got.add((Path(m["path"]).name, int(m["row"]), int(m["col"]), m["code"]))
    assert cli_findings, "the CLI found nothing: the comparison would be empty"
    assert got == cli_findings


@pytest.mark.slow  # the whole fixture corpus through fixit / libcst.tool and the CLI
def test_fixit_fix_writes_what_the_cli_writes(tmp_path, cli_fixed):
    folder = _copy(tmp_path / "fix", config=FIXIT_CONFIG)
    proc = _run("-m", "fixit", "fix", "--automatic", ".", cwd=folder)
    assert "Traceback" not in proc.stderr, proc.stderr
    got = _contents(folder)
    differ = sorted(n for n in got if got[n] != cli_fixed["safe"][n])
    assert not differ, f"fixit fix and fakegrad-lint --fix differ on {differ}"
    assert any(got[p.name] != p.read_bytes() for p in FIXTURES), "nothing was fixed: the comparison is empty"


@pytest.mark.slow  # the whole fixture corpus through fixit / libcst.tool and the CLI
@pytest.mark.parametrize("level", ["safe", "unsafe"])
def test_codemod_writes_what_the_cli_writes(tmp_path, cli_fixed, level):
    folder = _copy(tmp_path / level)
    flags = ["--unsafe-fixes"] if level == "unsafe" else []
    proc = _run("-m", "libcst.tool", "codemod", "-x", "fakegrad_lint.integrations.codemod.FixFakeGrad", "--no-format",
                "--hide-progress", *flags, ".", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    got = _contents(folder)
    differ = sorted(n for n in got if got[n] != cli_fixed[level][n])
    assert not differ, f"the codemod and fakegrad-lint differ on {differ}"


@pytest.mark.slow  # the whole fixture corpus through fixit / libcst.tool and the CLI
def test_codemod_is_found_through_the_libcst_config(tmp_path, cli_fixed):
    folder = tmp_path / "configured"
    folder.mkdir()
    name = "hazard_parameter.py"
    shutil.copyfile(FIXTURES_DIR / name, folder / name)
    (folder / ".libcst.codemod.yaml").write_text(
        "generated_code_marker: '@generated'\nformatter: ['cat']\nblacklist_patterns: []\n"
        "modules:\n- 'fakegrad_lint.integrations'\nrepo_root: '.'\n", encoding="utf-8")
    proc = _run("-m", "libcst.tool", "codemod", "codemod.FixFakeGrad", "--no-format", "--hide-progress", name,
                cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert (folder / name).read_bytes() == cli_fixed["safe"][name] != (FIXTURES_DIR / name).read_bytes()


# Fixit's own harness over the rules' examples (VALID / INVALID with expected_replacement).
def _fixit_cases():
    from fixit.testing import generate_lint_rule_test_cases

    from fakegrad_lint.integrations import fixit as pack
    from fakegrad_lint.integrations import fixit_optin

    rules = [pack.FakeGradHazard(), pack.RealTensorInStrictFakeMode(), pack.LeakedFakeMixedWithRealGrad(),
             fixit_optin.RealGradEntersFakeRegion()]
    loader = unittest.TestLoader()
    return [case for cls in generate_lint_rule_test_cases(rules) for case in loader.loadTestsFromTestCase(cls)]


FIXIT_CASES = _fixit_cases()


@pytest.mark.parametrize("case", FIXIT_CASES, ids=[c.id().rsplit(".", 2)[-2] + "." + c.id().rsplit(".", 1)[-1]
                                                   for c in FIXIT_CASES])
def test_fixit_harness_on_the_rule_examples(case):
    result = unittest.TestResult()
    case.run(result)
    assert not result.failures and not result.errors, (result.failures + result.errors)[0][1]


def test_fixit_examples_expect_the_safe_fixes():
    from fakegrad_lint.integrations import fixit as pack

    replacements = [c.expected_replacement for c in pack.FakeGradHazard.INVALID]
    assert replacements[0] is not None and "from_tensor(x)" in replacements[0]
    assert replacements[1] is None  # the module fix is unsafe: not applied by the pack
