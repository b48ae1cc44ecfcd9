"""The flake8 plugin, through the real ``flake8`` executable.

flake8's positions must equal the CLI's JSON output exactly (row, 1-based
character column, code), over the fixture corpus and over files written here;
flake8's own ``# noqa``, ``--select``/``--extend-select``, ``--per-file-ignores``
and ``-j`` must work on our codes; the opt-in rule is off by default; the plugin
reuses flake8's AST and imports nothing heavy.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fakegrad_lint.rules import ALL_CODES, DEFAULT_CODES, RULES, RULES_BY_CODE

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted((ROOT / "fixtures").glob("*.py"))
LINE = re.compile(r"^(?P<path>.*?):(?P<row>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<text>.*)$")

HAZARD = textwrap.dedent(
    """\
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(4, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = (x * 2).sum()
        y.backward()
    """
)
# the flagged `x` sits after a string of multi-byte characters on its line
HAZARD_NON_ASCII = HAZARD.replace("    y = (x * 2).sum()", '    tag = "é→ü漢"; y = (x * 2).sum()')


def flake8(*args, cwd=ROOT, stdin=None) -> tuple[int, list[dict], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        assert m, line
        out.append(m.groupdict())
    return proc.returncode, out, proc.stderr


def fgl(results: list[dict], cwd=ROOT) -> set[tuple[str, int, int, str]]:
    return {
        (str((Path(cwd) / r["path"]).resolve()), int(r["row"]), int(r["col"]), r["code"])
        for r in results
        if r["code"].startswith("FGL")
    }


def cli(*args, cwd=ROOT) -> set[tuple[str, int, int, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "--output-format", "json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {
        (str(Path(d["filename"]).resolve()), d["location"]["row"], d["location"]["column"], d["code"])
        for d in json.loads(proc.stdout)
    }


@pytest.fixture(scope="module")
def fixture_paths():
    assert FIXTURES, "no fixtures/*.py"
    return [str(p.relative_to(ROOT)) for p in FIXTURES]


def test_plugin_is_registered_with_flake8():
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "fakegrad-lint" in proc.stdout


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
def test_fixture_corpus_default_selection_matches_cli(fixture_paths):
    _, results, stderr = flake8("-j", "1", *fixture_paths)
    assert "error" not in stderr, stderr
    got = fgl(results)
    want = cli(*fixture_paths)
    assert got == want
    assert want, "the CLI found nothing in the fixture corpus"
    assert not {code for *_, code in got} - DEFAULT_CODES  # opt-in rules stay off


@pytest.mark.slow
def test_fixture_corpus_all_rules_and_parallel_match_cli(fixture_paths):
    _, serial, _ = flake8("--select", "FGL", "-j", "1", *fixture_paths)
    _, parallel, _ = flake8("--select", "FGL", "-j", "2", *fixture_paths)
    assert fgl(parallel) == fgl(serial)
    assert fgl(serial) == cli("--select", "FGL", *fixture_paths)


def write(tmp_path: Path, name: str, source: str) -> Path:
    p = tmp_path / name
    p.write_text(source, encoding="utf-8")
    return p


def test_columns_are_characters_not_bytes(tmp_path):
    write(tmp_path, "h.py", HAZARD_NON_ASCII)
    _, results, _ = flake8("--select", "FGL", "h.py", cwd=tmp_path)
    got = fgl(results, tmp_path)
    assert got == cli("h.py", cwd=tmp_path)
    (( _, row, col, code),) = got
    line = HAZARD_NON_ASCII.splitlines()[row - 1]
    assert code == "FGL001"
    assert line[col - 1] == "x", (line, col)  # 1-based character column
    assert line.encode("utf-8")[col - 1:col] != b"x"  # and not a byte offset


def test_noqa_is_flake8s(tmp_path):
    flagged = "    y = (x * 2).sum()"
    write(tmp_path, "plain.py", HAZARD)
    write(tmp_path, "coded.py", HAZARD.replace(flagged, flagged + "  # noqa: FGL001"))
    write(tmp_path, "bare.py", HAZARD.replace(flagged, flagged + "  # noqa"))
    write(tmp_path, "other.py", HAZARD.replace(flagged, flagged + "  # noqa: E501"))
    _, results, _ = flake8("--select", "FGL", "plain.py", "coded.py", "bare.py", "other.py", cwd=tmp_path)
    assert {Path(p).name for p, *_ in fgl(results, tmp_path)} == {"plain.py", "other.py"}
    _, results, _ = flake8("--select", "FGL", "--disable-noqa", "coded.py", cwd=tmp_path)
    assert len(fgl(results, tmp_path)) == 1


def test_opt_in_rule_needs_extend_select(tmp_path):
    # the opt-in rule of the analysis (FGL100, unused noqa, is the engine's: flake8 has its own noqa)
    (opt_in,) = [r for r in RULES if not r.default and r.reported_by == "analysis"]
    write(tmp_path, "fwd.py", opt_in.invalid[0])
    rc, results, _ = flake8("fwd.py", cwd=tmp_path)
    assert not fgl(results, tmp_path)
    rc, results, _ = flake8("--extend-select", opt_in.code, "fwd.py", cwd=tmp_path)
    got = fgl(results, tmp_path)
    assert {code for *_, code in got} == {opt_in.code} and rc == 1
    assert got == cli("--extend-select", opt_in.code, "fwd.py", cwd=tmp_path)
    # and --ignore turns a default rule off
    write(tmp_path, "h.py", HAZARD)
    _, results, _ = flake8("--ignore", "FGL001", "h.py", cwd=tmp_path)
    assert not fgl(results, tmp_path)


def test_per_file_ignores(tmp_path):
    write(tmp_path, "a.py", HAZARD)
    write(tmp_path, "b.py", HAZARD)
    _, results, _ = flake8("--select", "FGL", "--per-file-ignores", "a.py:FGL001", "a.py", "b.py", cwd=tmp_path)
    assert {Path(p).name for p, *_ in fgl(results, tmp_path)} == {"b.py"}


def test_stdin(tmp_path):
    _, results, _ = flake8("--select", "FGL", "--stdin-display-name", "train.py", "-", cwd=tmp_path, stdin=HAZARD)
    assert [(r["path"], r["code"]) for r in results] == [("train.py", "FGL001")]


def test_message_is_the_finding_message(tmp_path):
    write(tmp_path, "h.py", HAZARD)
    _, results, _ = flake8("--select", "FGL", "h.py", cwd=tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "--output-format", "json", "h.py"],
        cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=120,
    )
    (diag,) = json.loads(proc.stdout)
    (res,) = results
    assert res["text"] == diag["message"]


# ---------------------------------------------------------------------------
# in process


def test_plugin_reuses_flake8s_tree_and_yields_zero_based_columns(monkeypatch):
    from fakegrad_lint.integrations.flake8_plugin import FakegradChecker

    lines = HAZARD_NON_ASCII.splitlines(keepends=True)
    tree = ast.parse(HAZARD_NON_ASCII)

    # a first run imports the analyzer (pytest's assertion rewriting parses the
    # modules of this distribution on import, which is not the plugin's doing)
    list(FakegradChecker(tree=tree, filename="h.py", lines=lines).run())
    calls = []
    real_parse = ast.parse

    def counting_parse(source, *a, **k):
        calls.append(source)
        return real_parse(source, *a, **k)

    monkeypatch.setattr(ast, "parse", counting_parse)
    try:
        out = list(FakegradChecker(tree=tree, filename="h.py", lines=lines).run())
    finally:
        monkeypatch.undo()
    assert calls == [], "the plugin parsed the source again"
    assert len(out) == 1
    row, col, text, cls = out[0]
    assert cls is FakegradChecker
    assert text.startswith("FGL001 ")
    assert lines[row - 1][col] == "x"  # 0-based character column: flake8 adds 1


def test_plugin_options_and_opt_in_codes():
    from fakegrad_lint.integrations import flake8_plugin
    from fakegrad_lint.rules import OPT_IN_CODES

    assert set(OPT_IN_CODES) == ALL_CODES - DEFAULT_CODES == {r.code for r in RULES_BY_CODE.values() if not r.default}
    assert "FGL004" in OPT_IN_CODES

    class Parser:
        def __init__(self):
            self.ignored = []

        def extend_default_ignore(self, codes):
            self.ignored.extend(codes)

    parser = Parser()
    flake8_plugin.FakegradChecker.add_options(parser)
    assert parser.ignored == list(OPT_IN_CODES)


def test_importing_and_running_the_plugin_imports_nothing_heavy(tmp_path):
    code = textwrap.dedent(
        f"""\
        import ast, sys
        import fakegrad_lint.integrations.flake8_plugin as p
        assert not [m for m in sys.modules if m.split('.')[0] in ('torch', 'libcst', 'numpy')], 'heavy import at load'
        src = {HAZARD!r}
        out = list(p.FakegradChecker(ast.parse(src), 'h.py', src.splitlines(True)).run())
        assert len(out) == 1, out
        heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')]
        assert not heavy, heavy
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
