"""The command line, in-process, over a fake findings source (see test_cli_support)."""

from __future__ import annotations

import json
import os

import pytest

from fakegrad_lint.cli import main as cli
from test_cli_support import HEADER, fake_checker, write  # noqa: F401  (fixture)


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def proj(tmp_path, monkeypatch, fake_checker):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


def test_version(capsys):
    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out.startswith("fakegrad-lint 0.1.0")


def test_clean_run_exit_0(proj, capsys):
    write(proj / "a.py", "x = 1\n")
    rc, out, err = run(capsys, "check", ".")
    assert rc == 0
    assert "All checks passed!" in out and err == ""


def test_default_path_is_cwd(proj, capsys):
    write(proj / "pkg" / "a.py", "hazard(1)\n")
    rc, out, _ = run(capsys)
    assert rc == 1
    assert out.splitlines()[0] == f"{os.path.join('pkg', 'a.py')}:2:1: FGL001 [*] hazard found"


def test_text_format_and_summary(proj, capsys):
    write(proj / "a.py", "x = 1\ny = hazard(x)\nz = crash(x)\n")
    rc, out, _ = run(capsys, "a.py")
    assert rc == 1
    lines = out.splitlines()
    assert lines[0] == "a.py:3:5: FGL001 [*] hazard found"
    assert lines[1] == "a.py:4:5: FGL002 crash found"  # unsafe fix: no [*] without --unsafe-fixes
    assert "Found 2 errors." in lines
    assert "[*] 1 fixable with the --fix option." in lines
    assert "1 hidden fix can be enabled with the --unsafe-fixes option." in lines
    # piped output: no source snippet, no colour
    assert "|" not in out and "\x1b[" not in out


def test_unsafe_fixes_marks_fixable(proj, capsys):
    write(proj / "a.py", "z = crash(1)\n")
    rc, out, _ = run(capsys, "--unsafe-fixes", "a.py")
    assert "a.py:2:5: FGL002 [*] crash found" in out
    assert "hidden" not in out


def test_color_always_shows_source_and_caret(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "--color", "always", "a.py")
    assert "\x1b[" in out
    import re

    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "2 | y = hazard(x)" in plain
    caret_line = [l for l in plain.splitlines() if "^" in l][0]
    assert "    ^^^^^^" in caret_line


def test_no_color_env_wins_over_auto(proj, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    write(proj / "a.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "a.py")
    assert "\x1b[" not in out


def test_select_ignore_extend_select(proj, capsys):
    write(proj / "a.py", "hazard(1)\ncrash(2)\nleak(3)\n")
    _, out, _ = run(capsys, "--output-format", "concise", "a.py")
    assert [l.split()[1] for l in out.splitlines()] == ["FGL001", "FGL002"]  # FGL004 is opt-in
    _, out, _ = run(capsys, "--output-format", "concise", "--extend-select", "FGL004", "a.py")
    assert [l.split()[1] for l in out.splitlines()] == ["FGL001", "FGL002", "FGL004"]
    _, out, _ = run(capsys, "--output-format", "concise", "--select", "FGL002,FGL004", "a.py")
    assert [l.split()[1] for l in out.splitlines()] == ["FGL002", "FGL004"]
    _, out, _ = run(capsys, "--output-format", "concise", "--select", "ALL", "--ignore", "FGL00", "a.py")
    assert out == ""
    rc, out, _ = run(capsys, "--output-format", "concise", "--ignore", "FGL001", "--ignore", "FGL002", "a.py")
    assert rc == 0 and out == ""


def test_unknown_selector_is_an_error(proj, capsys):
    write(proj / "a.py", "hazard(1)\n")
    rc, out, err = run(capsys, "--select", "XYZ9", "a.py")
    assert rc == 2
    assert err.strip() == "fakegrad-lint: error: unknown rule selector 'XYZ9' in --select"


def test_exit_zero(proj, capsys):
    write(proj / "a.py", "hazard(1)\n")
    rc, out, _ = run(capsys, "--exit-zero", "a.py")
    assert rc == 0 and "FGL001" in out


def test_statistics(proj, capsys):
    write(proj / "a.py", "hazard(1)\nhazard(2)\ncrash(3)\n")
    rc, out, _ = run(capsys, "--statistics", "a.py")
    assert rc == 1
    lines = out.splitlines()
    assert lines[0].split("\t") == ["2", "FGL001", "[*] fake-grad-hazard"]
    assert lines[1].split("\t")[:2] == ["1", "FGL002"]
    assert lines[1].endswith("strict-mode-crash") or "FGL002" in lines[1]
    rc, out, _ = run(capsys, "--statistics", "--output-format", "json", "a.py")
    data = json.loads(out)
    assert data[0] == {"code": "FGL001", "name": "fake-grad-hazard", "count": 2, "fixable": True}
    assert data[1]["count"] == 1 and data[1]["fixable"] is False


def test_json_format_shape(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "--output-format", "json", "a.py")
    assert rc == 1
    (d,) = json.loads(out)
    assert d["code"] == "FGL001"
    assert d["filename"] == str(proj / "a.py")
    assert d["location"] == {"row": 2, "column": 5}
    assert d["end_location"] == {"row": 2, "column": 11}
    assert d["noqa_row"] == 2 and d["cell"] is None
    assert d["url"].endswith("#fgl001")
    assert d["fix"] == {
        "applicability": "safe",
        "message": "use safe(",
        "edits": [{"content": "safe(", "location": {"row": 2, "column": 5}, "end_location": {"row": 2, "column": 12}}],
    }


def test_json_empty_list_when_clean(proj, capsys):
    write(proj / "a.py", "x = 1\n")
    rc, out, _ = run(capsys, "--output-format", "json", ".")
    assert rc == 0 and json.loads(out) == []


def test_fix_writes_and_reports(proj, capsys):
    p = write(proj / "a.py", "y = hazard(x)\nz = crash(x)\n")
    rc, out, _ = run(capsys, "--fix", "a.py")
    assert p.read_text() == HEADER + "y = safe(x)\nz = crash(x)\n"
    assert rc == 1  # the unsafe one remains
    assert "Found 2 errors (1 fixed, 1 remaining)." in out
    rc, out, _ = run(capsys, "--fix", "--unsafe-fixes", "a.py")
    assert p.read_text() == HEADER + "y = safe(x)\nz = ok(x)\n"
    assert rc == 0 and "(1 fixed, 0 remaining)" in out


def test_fix_keeps_crlf(proj, capsys):
    p = proj / "a.py"
    p.write_bytes(b"FakeTensorMode = None\r\ny = hazard(x)\r\n")
    run(capsys, "--fix", "a.py")
    assert p.read_bytes() == b"FakeTensorMode = None\r\ny = safe(x)\r\n"


def test_diff_writes_nothing_and_exits_1(proj, capsys):
    p = write(proj / "a.py", "y = hazard(x)\n")
    before = p.read_text()
    rc, out, _ = run(capsys, "--diff", "a.py")
    assert rc == 1
    assert p.read_text() == before
    assert "--- a.py\n+++ a.py\n" in out
    assert "-y = hazard(x)\n+y = safe(x)\n" in out
    # nothing to fix: exit 0
    write(proj / "b.py", "x = 1\n")
    rc, out, _ = run(capsys, "--diff", "b.py")
    assert rc == 0 and "---" not in out


def test_fix_only(proj, capsys):
    p = write(proj / "a.py", "y = hazard(x)\nz = crash(x)\n")
    rc, out, _ = run(capsys, "--fix-only", "a.py")
    assert rc == 0
    assert "FGL002" not in out and "Fixed 1 error." in out
    assert "safe(x)" in p.read_text()


def test_show_fixes(proj, capsys):
    write(proj / "a.py", "y = hazard(x)\n")
    rc, out, _ = run(capsys, "--fix", "--show-fixes", "a.py")
    assert "- a.py: 1 fixed" in out


def test_noqa_silences(proj, capsys):
    write(proj / "a.py", "hazard(1)  # noqa\ncrash(1)  # NOQA:FGL002\nhazard(2)  # noqa: FGL002\n")
    rc, out, _ = run(capsys, "--output-format", "concise", "a.py")
    assert out.splitlines() == ["a.py:4:1: FGL001 [*] hazard found"]


def test_add_noqa_then_clean(proj, capsys):
    p = write(proj / "a.py", "hazard(1)\ncrash(2)  # noqa: E501\nx = 1\n")
    rc, out, _ = run(capsys, "--add-noqa", "a.py")
    assert rc == 0 and "Added 2 noqa directives." in out
    assert p.read_text() == HEADER + "hazard(1)  # noqa: FGL001\ncrash(2)  # noqa: E501, FGL002\nx = 1\n"
    rc, out, _ = run(capsys, "a.py")
    assert rc == 0


def test_report_unused_noqa(proj, capsys):
    write(proj / "a.py", "hazard(1)  # noqa: FGL001, FGL003\nx = 1  # noqa: FGL002\ny = 2  # noqa: E501\n")
    rc, out, _ = run(capsys, "--output-format", "concise", "a.py")
    assert rc == 0
    rc, out, _ = run(capsys, "--output-format", "concise", "--report-unused-noqa", "a.py")
    assert rc == 1
    assert out.splitlines() == [
        "a.py:2:12: FGL100 [*] Unused `noqa` directive (unused: FGL003)",
        "a.py:3:8: FGL100 [*] Unused `noqa` directive (unused: FGL002)",
    ]
    # and its fix removes them
    rc, out, _ = run(capsys, "--extend-select", "FGL100", "--fix", "a.py")
    assert (proj / "a.py").read_text() == HEADER + "hazard(1)  # noqa: FGL001\nx = 1\ny = 2  # noqa: E501\n"
    assert rc == 0


def test_syntax_error_is_one_line_and_others_still_checked(proj, capsys):
    write(proj / "bad.py", "def f(:\n    pass\n")
    write(proj / "good.py", "hazard(1)\n")
    rc, out, err = run(capsys, ".")
    assert rc == 2  # 2 wins over 1
    assert err == "bad.py: error: SyntaxError: invalid syntax (line 2, column 7)\n"
    assert "good.py:2:1: FGL001" in out


def test_bad_inputs_each_one_line(proj, capsys):
    (proj / "nul.py").write_bytes(b"FakeTensorMode = None\nx = 1\x00\n")
    (proj / "latin.py").write_bytes(b"FakeTensorMode = None\nx = '\xe9'\n")
    (proj / "dir.py").mkdir()
    os.mkfifo(proj / "fifo.py")
    write(proj / "good.py", "hazard(1)\n")
    rc, out, err = run(capsys, "nul.py", "latin.py", "missing.py", "fifo.py", "good.py")
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 4, err
    assert any(l.startswith("missing.py: error: No such file or directory") for l in lines)
    assert any(l.startswith("fifo.py: error: ") for l in lines)
    assert any(l.startswith("nul.py: error: ") and "NUL" in l for l in lines)
    assert any(l.startswith("latin.py: error: ") for l in lines)
    assert "Traceback" not in err
    assert "good.py:2:1: FGL001" in out


def test_unreadable_file(proj, capsys):
    if os.geteuid() == 0:
        pytest.skip("root can read everything")
    p = write(proj / "a.py", "hazard(1)\n")
    p.chmod(0)
    try:
        rc, out, err = run(capsys, "a.py")
    finally:
        p.chmod(0o644)
    assert rc == 2 and err.startswith("a.py: error: ") and "Permission denied" in err


def test_analyzer_crash_is_a_tool_error(proj, capsys, monkeypatch):
    from fakegrad_lint.engine import lint as checker

    def boom(source, filename="<string>", **options):
        raise KeyError("oops")

    monkeypatch.setattr(checker, "check_source", boom)
    write(proj / "a.py", "x = 1\n")
    rc, out, err = run(capsys, "a.py")
    assert rc == 2 and err == "a.py: error: internal error: KeyError: 'oops'\n"


def test_recursion_error_is_a_tool_error(proj, capsys, monkeypatch):
    from fakegrad_lint.engine import lint as checker

    def deep(source, filename="<string>", **options):
        return deep(source, filename, **options)

    monkeypatch.setattr(checker, "check_source", deep)
    write(proj / "a.py", "x = 1\n")
    write(proj / "b.py", "hazard(1)\n")
    rc, out, err = run(capsys, "a.py")
    assert rc == 2 and "a.py: error: too deeply nested to analyze (RecursionError)" in err


def test_timeout_per_file(proj, capsys, monkeypatch):
    from fakegrad_lint.engine import lint as checker

    def slow(source, filename="<string>", **options):
        if "slow" in source:
            while True:
                pass
        return []

    monkeypatch.setattr(checker, "check_source", slow)
    write(proj / "a.py", "slow = 1\n")
    write(proj / "b.py", "x = 1\n")
    rc, out, err = run(capsys, "--timeout-per-file", "0.2", ".")
    assert rc == 2
    assert err == "a.py: error: timed out after 0.2 s (see --timeout-per-file); file skipped\n"


def test_bad_flag_values(proj, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--jobs", "0"])
    assert exc.value.code == 2
    # validated with the configuration's output-format, by the settings
    assert cli.main(["--output-format", "xml"]) == 2
    assert capsys.readouterr().err.endswith(
        "error: --output-format: expected one of text, concise, json, json-lines, sarif, github, got 'xml'\n"
    )


def test_config_from_pyproject_and_cli_override(proj, capsys):
    (proj / "pyproject.toml").write_text(
        '[tool.fakegrad-lint]\nselect = ["FGL002"]\nextend-select = ["FGL004"]\noutput-format = "concise"\n'
        '[tool.fakegrad-lint.per-file-ignores]\n"tests/*" = ["FGL004"]\n'
    )
    write(proj / "a.py", "hazard(1)\ncrash(2)\nleak(3)\n")
    write(proj / "tests" / "t.py", "crash(2)\nleak(3)\n")
    rc, out, _ = run(capsys, ".")
    assert out.splitlines() == [
        "a.py:3:1: FGL002 crash found",
        "a.py:4:1: FGL004 leak found",
        f"{os.path.join('tests', 't.py')}:2:1: FGL002 crash found",
    ]
    rc, out, _ = run(capsys, "--select", "FGL001", ".")
    assert out.splitlines() == ["a.py:2:1: FGL001 [*] hazard found", "a.py:4:1: FGL004 leak found"]
    rc, out, _ = run(capsys, "--isolated", "--output-format", "concise", ".")
    assert [l.split()[1] for l in out.splitlines()] == ["FGL001", "FGL002", "FGL002"]


def test_bad_config_is_one_line_exit_2(proj, capsys):
    (proj / "pyproject.toml").write_text('[tool.fakegrad-lint]\nselcet = ["FGL001"]\n')
    write(proj / "a.py", "hazard(1)\n")
    rc, out, err = run(capsys, ".")
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1 and "unknown key 'selcet'" in err


def test_explicit_config_path(proj, capsys):
    cfg = proj / "cfg" / "pyproject.toml"
    cfg.parent.mkdir()
    cfg.write_text('[tool.fakegrad-lint]\nignore = ["FGL001"]\n')
    write(proj / "a.py", "hazard(1)\n")
    rc, out, _ = run(capsys, "--config", str(cfg), "a.py")
    assert rc == 0
    rc, out, err = run(capsys, "--config", "nope.toml", "a.py")
    assert rc == 2 and "nope.toml" in err


def test_unavailable_subcommand_or_format_is_one_line(proj, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "fakegrad_lint.cli.rule_docs", None)  # import fails
    rc = cli.main(["rule", "FGL001"])
    _, err = capsys.readouterr()
    # ModuleNotFoundError from a None entry names the module: one line, exit 2
    assert rc == 2 and err.strip() == "fakegrad-lint: error: the `rule` command is not available in this build"


def test_parallel_matches_sequential(proj, capsys, monkeypatch):
    # the fake checker is monkeypatched in this process only, so the parallel
    # run uses a forked pool (Linux) that inherits it
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("fork start method only on Linux")
    from fakegrad_lint.engine import process as pipeline

    monkeypatch.setattr(pipeline, "PARALLEL_MIN_BYTES", 0)
    used = []
    real_parallel = pipeline._parallel
    monkeypatch.setattr(pipeline, "_parallel", lambda *a: used.append(1) or real_parallel(*a))
    for i in range(12):
        write(proj / f"m{i:02}.py", "x = 1\n" * i + "hazard(1)\n")
    rc1, out1, _ = run(capsys, "--no-cache", "-j", "1", "--output-format", "concise", ".")
    rc2, out2, err2 = run(capsys, "--no-cache", "-j", "3", "--output-format", "concise", ".")
    assert (rc1, rc2, err2) == (1, 1, '')
    assert out1 == out2 and len(out1.splitlines()) == 12
    assert used == [1]  # the second run went through the pool
