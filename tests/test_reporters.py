"""The concise, json-lines and github formats: structure, columns, escaping.

Findings are built directly (the reporters are pure functions of a
ReportContext), then the same formats are checked end to end through the CLI on
a real hazard file against the CLI's own JSON output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fakegrad_lint.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Location,
    ToolError,
)
from fakegrad_lint.report import FORMATS, ReportContext, render
from fakegrad_lint.report import json as json_format
from fakegrad_lint.report import text as text_format

ROOT = Path(__file__).resolve().parents[1]


def finding(code="FGL001", message="real requires-grad tensor `x` enters FakeTensorMode", filename="pkg/train.py",
            start=(6, 9), end=(6, 10), fix=None, cell=None, **extra) -> Finding:
    return Finding(
        code=code,
        message=message,
        filename=filename,
        location=Location(*start),
        end_location=Location(*end),
        fix=fix,
        cell=cell,
        extra=dict(extra),
    )


SAFE_FIX = Fix(
    message="convert `x` with `fake_mode.from_tensor`",
    applicability=Applicability.SAFE,
    edits=(Edit(Location(6, 9), Location(6, 10), "x_fake"), Edit(Location(5, 45), Location(5, 45), " as fake_mode")),
)


def ctx_of(*findings, **kw) -> ReportContext:
    return ReportContext(findings=sorted(findings, key=lambda f: f.sort_key), **kw)


def test_every_format_is_loadable():
    ctx = ctx_of(finding())
    for name in FORMATS:
        assert isinstance(render(name, ctx), str)


# ---------------------------------------------------------------------------
# concise


def test_concise_one_line_per_finding_with_one_based_column():
    ctx = ctx_of(finding(), finding(code="FGL002", message="boom", filename="a.py", start=(3, 0), end=(3, 4)))
    assert render("concise", ctx) == (
        "a.py:3:1: FGL002 boom\n"
        "pkg/train.py:6:10: FGL001 real requires-grad tensor `x` enters FakeTensorMode\n"
    )


def test_concise_has_no_source_and_no_summary_but_keeps_the_fix_mark(tmp_path):
    src = tmp_path / "t.py"
    src.write_text("import torch\n" * 5 + "y = x * 2\n", encoding="utf-8")
    ctx = ctx_of(finding(filename=str(src), fix=SAFE_FIX), show_source=True, color=True)
    out = render("concise", ctx)
    assert out == f"{src}:6:10: FGL001 [*] real requires-grad tensor `x` enters FakeTensorMode\n"  # [*] as ruff
    assert "\x1b[" not in out and "Found" not in out
    # an unsafe fix is not applicable without --unsafe-fixes: no mark
    unsafe = Fix(SAFE_FIX.message, Applicability.UNSAFE, SAFE_FIX.edits)
    out = render("concise", ctx_of(finding(filename=str(src), fix=unsafe)))
    assert "[*]" not in out


def test_concise_empty_and_notebook_cell():
    assert render("concise", ctx_of()) == ""
    ctx = ctx_of(finding(filename="nb.ipynb", cell=3, start=(2, 4), end=(2, 5)))
    assert render("concise", ctx) == "nb.ipynb:cell 3:2:5: FGL001 real requires-grad tensor `x` enters FakeTensorMode\n"


def test_concise_statistics_is_the_text_table_without_summary():
    ctx = ctx_of(finding(), finding(start=(9, 0), end=(9, 1)), finding(code="FGL002", start=(1, 0), end=(1, 1)),
                 statistics=True)
    out = render("concise", ctx)
    assert out == text_format.statistics(ctx)
    assert out.splitlines()[0].split("\t")[:2] == ["2", "FGL001"]


# ---------------------------------------------------------------------------
# json-lines

JSON_KEYS = {"code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row", "cell", "no_fix", "trace"}


def test_json_lines_is_the_json_format_one_object_per_line():
    ctx = ctx_of(
        finding(fix=SAFE_FIX, noqa_row=7),
        finding(code="FGL003", filename="b.py", start=(1, 2), end=(2, 0)),
        finding(code="FGL004", filename="nb.ipynb", cell=2, start=(1, 0), end=(1, 3)),
    )
    lines = render("json-lines", ctx).splitlines()
    assert len(lines) == 3
    objects = [json.loads(line) for line in lines]
    assert objects == json.loads(json_format.render(ctx))
    for obj in objects:
        assert set(obj) == JSON_KEYS
    first = next(o for o in objects if o["code"] == "FGL001")
    assert first["location"] == {"row": 6, "column": 10}
    assert first["end_location"] == {"row": 6, "column": 11}
    assert first["noqa_row"] == 7
    assert first["url"].endswith("#fgl001")
    assert first["fix"]["applicability"] == "safe"
    assert {"content": "x_fake", "location": {"row": 6, "column": 10}, "end_location": {"row": 6, "column": 11}} in first["fix"]["edits"]
    assert next(o for o in objects if o["code"] == "FGL004")["cell"] == 2


def test_json_lines_keeps_unicode_line_separators_inside_one_line():
    msg = "name `α\u2028β` with a line separator\x85 and é"
    out = render("json-lines", ctx_of(finding(message=msg)))
    assert out.count("\n") == 1 and len(out.splitlines()) == 1
    assert json.loads(out)["message"] == msg
    assert "é" in out  # not needlessly escaped


def test_json_lines_empty_and_statistics():
    assert render("json-lines", ctx_of()) == ""
    ctx = ctx_of(finding(fix=SAFE_FIX), finding(start=(8, 0), end=(8, 1)), finding(code="FGL002"), statistics=True)
    rows = [json.loads(line) for line in render("json-lines", ctx).splitlines()]
    assert rows == [
        {"code": "FGL001", "name": "fake-grad-hazard", "count": 2, "fixable": True},
        {"code": "FGL002", "name": "real-tensor-in-strict-fake-mode", "count": 1, "fixable": False},
    ]


# ---------------------------------------------------------------------------
# github


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """Parse ``::kind k=v,k=v::message`` the way the Actions runner does and
    unescape (the runner's ``UnescapeProperty``/``UnescapeData``)."""

    def unescape(s: str) -> str:
        return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")

    assert line.startswith("::")
    head, _, message = line[2:].partition("::")
    kind, _, props = head.partition(" ")
    parsed = {}
    for item in props.split(","):
        key, _, value = item.partition("=")
        parsed[key] = unescape(value)
    return kind, parsed, unescape(message)


def test_github_annotation_exact():
    out = render("github", ctx_of(finding()))
    assert out == (
        "::error title=fakegrad-lint (FGL001),file=pkg/train.py,line=6,col=10,endLine=6,endColumn=11"
        "::real requires-grad tensor `x` enters FakeTensorMode\n"
    )


def test_github_escapes_data_and_properties():
    nasty = "100% sure: line one,\r\nline two"
    f = finding(message=nasty, filename="dir,with:odd%chars/t.py", start=(2, 0), end=(3, 4))
    (line,) = render("github", ctx_of(f)).splitlines()
    assert "\r" not in line and "\n" not in line
    head = line[2:].partition("::")[0]
    assert head.count("::") == 0 and "dir%2Cwith%3Aodd%25chars/t.py" in head
    assert line.endswith("::100%25 sure: line one,%0D%0Aline two")
    kind, props, message = parse_workflow_command(line)
    assert kind == "error"
    assert props == {
        "title": "fakegrad-lint (FGL001)",
        "file": "dir,with:odd%chars/t.py",
        "line": "2",
        "col": "1",
        "endLine": "3",
        "endColumn": "5",
    }
    assert message == nasty


def test_github_opt_in_rules_are_warnings_and_tool_errors_are_annotations():
    ctx = ctx_of(finding(code="FGL004"), errors=[ToolError("broken.py", "SyntaxError: invalid syntax (line 3)")])
    lines = render("github", ctx).splitlines()
    assert lines[0] == "::error title=fakegrad-lint (error),file=broken.py::SyntaxError: invalid syntax (line 3)"
    assert lines[1].startswith("::warning title=fakegrad-lint (FGL004),")
    assert render("github", ctx_of()) == ""


# ---------------------------------------------------------------------------
# end to end through the CLI


HAZARD = textwrap.dedent(
    """\
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(4, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        tag = "é→ü"; y = (x * 2).sum()
        y.backward()
    """
)


def run_cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


@pytest.fixture(scope="module")
def cli_outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e")
    (d / "hazard.py").write_text(HAZARD, encoding="utf-8")
    outs = {}
    for fmt in ("json", "concise", "json-lines", "github"):
        proc = run_cli("--output-format", fmt, "hazard.py", cwd=d)
        assert proc.returncode == 1, (fmt, proc.stdout, proc.stderr)
        outs[fmt] = proc.stdout
    return outs


def test_cli_formats_agree_with_json(cli_outputs):
    diags = json.loads(cli_outputs["json"])
    assert [d["code"] for d in diags] == ["FGL001"]
    d = diags[0]
    # the finding is on `x` after a non-ASCII string: columns count characters
    line = HAZARD.splitlines()[d["location"]["row"] - 1]
    assert line[d["location"]["column"] - 1] == "x"
    assert [json.loads(line) for line in cli_outputs["json-lines"].splitlines()] == diags
    mark = "[*] " if d["fix"] and d["fix"]["applicability"] == "safe" else ""
    assert cli_outputs["concise"] == f"hazard.py:{d['location']['row']}:{d['location']['column']}: FGL001 {mark}{d['message']}\n"
    kind, props, message = parse_workflow_command(cli_outputs["github"].rstrip("\n"))
    assert (kind, props["file"], message) == ("error", "hazard.py", d["message"])
    assert (int(props["line"]), int(props["col"])) == (d["location"]["row"], d["location"]["column"])
    assert (int(props["endLine"]), int(props["endColumn"])) == (d["end_location"]["row"], d["end_location"]["column"])
