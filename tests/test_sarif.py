"""The SARIF reporter: validated against the real SARIF 2.1.0 JSON schema
(``tests/data/sarif-2.1.0.json``, the OASIS committee specification schema), and
checked field by field."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from fakegrad_lint import __version__
from fakegrad_lint.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Location,
    ToolError,
)
from fakegrad_lint.report import ReportContext, render
from fakegrad_lint.rules import RULES

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-2.1.0.json"

# jsonschema checks "uri"/"uri-reference" only when rfc3987 is installed; check
# RFC 3986's character set and percent-encoding here so a path with a space or
# a backslash cannot slip through.
_URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _uri_reference(value) -> bool:
    return not isinstance(value, str) or bool(_URI_CHARS.match(value))


def _uri(value) -> bool:
    return not isinstance(value, str) or (bool(_SCHEME.match(value)) and _uri_reference(value))


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker = copy.deepcopy(cls.FORMAT_CHECKER)
    checker.checks("uri")(_uri)
    checker.checks("uri-reference")(_uri_reference)
    return cls(schema, format_checker=checker)


def assert_valid(validator, log: dict) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def finding(code="FGL001", filename="src/train.py", start=(6, 9), end=(6, 10), fix=None, cell=None,
            message="real requires-grad tensor `x` enters FakeTensorMode") -> Finding:
    return Finding(code, message, filename, Location(*start), Location(*end), fix=fix, cell=cell)


FIX = Fix(
    "convert `x` with `fake_mode.from_tensor`",
    Applicability.SAFE,
    (
        Edit(Location(5, 45), Location(5, 45), " as fake_mode"),
        Edit(Location(6, 9), Location(6, 10), "fake_mode.from_tensor(x)"),
    ),
)


def sarif(ctx: ReportContext) -> dict:
    out = render("sarif", ctx)
    assert out.endswith("\n")
    return json.loads(out)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_schema_rejects_a_broken_log(validator, in_tmp):
    """The validator is not a rubber stamp: a 0-based column or a missing
    message is rejected."""
    log = sarif(ReportContext(findings=[finding()]))
    assert_valid(validator, log)
    bad = copy.deepcopy(log)
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    assert list(validator.iter_errors(bad))
    bad = copy.deepcopy(log)
    del bad["runs"][0]["results"][0]["message"]
    assert list(validator.iter_errors(bad))
    bad = copy.deepcopy(log)
    bad["version"] = "2.0.0"
    assert list(validator.iter_errors(bad))
    bad = copy.deepcopy(log)
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "a dir\\x.py"
    assert list(validator.iter_errors(bad))


def test_empty_run_is_valid(validator, in_tmp):
    log = sarif(ReportContext())
    assert_valid(validator, log)
    assert log["version"] == "2.1.0" and log["$schema"].startswith("https://")
    (run,) = log["runs"]
    assert run["results"] == []
    assert run["invocations"] == [{"executionSuccessful": True}]


def test_driver_lists_every_rule_with_docs(validator, in_tmp):
    log = sarif(ReportContext())
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "fakegrad-lint"
    assert driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.code for r in RULES]  # FGL100 (unused noqa) is one of them
    assert len({r["id"] for r in rules}) == len(rules)
    for rule, desc in zip(RULES, rules):
        assert desc["name"] == rule.name
        assert desc["shortDescription"]["text"] == rule.summary
        assert desc["fullDescription"]["text"] == rule.what
        assert desc["helpUri"] == rule.url
        assert rule.invalid[0] in desc["help"]["markdown"]
        assert rule.why in desc["help"]["markdown"]
        assert rule.code in desc["help"]["text"]
        if rule.fixed_example:
            assert rule.fixed_example in desc["help"]["markdown"]
        config = desc["defaultConfiguration"]
        assert config["enabled"] is rule.default
        assert config["level"] == ("error" if rule.default else "warning")
    fgl004 = next(r for r in rules if r["id"] == "FGL004")
    assert fgl004["defaultConfiguration"] == {"enabled": False, "level": "warning"}


def test_results_locations_and_fixes(validator, in_tmp):
    (in_tmp / "src").mkdir()
    findings = [
        finding(fix=FIX),
        finding(code="FGL002", filename="src/other file.py", start=(3, 0), end=(4, 2)),
        finding(code="FGL004", filename="a.py", start=(1, 4), end=(1, 9)),
    ]
    ctx = ReportContext(findings=sorted(findings, key=lambda f: f.sort_key))
    log = sarif(ctx)
    assert_valid(validator, log)
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == in_tmp.resolve().as_uri() + "/"
    rules = run["tool"]["driver"]["rules"]
    by_code = {r["ruleId"]: r for r in run["results"]}
    assert set(by_code) == {"FGL001", "FGL002", "FGL004"}
    for code, result in by_code.items():
        assert rules[result["ruleIndex"]]["id"] == code

    r1 = by_code["FGL001"]
    assert r1["level"] == "error"
    assert r1["message"] == {"text": "real requires-grad tensor `x` enters FakeTensorMode"}
    (loc,) = r1["locations"]
    assert loc["physicalLocation"]["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert loc["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 10, "endLine": 6, "endColumn": 11}
    (fix,) = r1["fixes"]
    assert fix["description"]["text"] == FIX.message
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "src/train.py"
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 5, "startColumn": 46, "endLine": 5, "endColumn": 46},
            "insertedContent": {"text": " as fake_mode"},
        },
        {
            "deletedRegion": {"startLine": 6, "startColumn": 10, "endLine": 6, "endColumn": 11},
            "insertedContent": {"text": "fake_mode.from_tensor(x)"},
        },
    ]

    r2 = by_code["FGL002"]
    assert "fixes" not in r2
    assert r2["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/other%20file.py"
    assert r2["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3, "startColumn": 1, "endLine": 4, "endColumn": 3,
    }
    assert by_code["FGL004"]["level"] == "warning"


def test_paths_outside_the_current_directory_are_absolute_file_uris(validator, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    outside = tmp_path / "elsewhere" / "m.py"
    log = sarif(ReportContext(findings=[finding(filename=str(outside))]))
    assert_valid(validator, log)
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": outside.resolve().as_uri()}
    # an absolute path under the current directory is still relative
    inside = work / "pkg" / "n.py"
    log = sarif(ReportContext(findings=[finding(filename=str(inside))]))
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "pkg/n.py", "uriBaseId": "%SRCROOT%"}


def test_tool_errors_become_notifications(validator, in_tmp):
    ctx = ReportContext(
        findings=[finding()],
        errors=[ToolError("bad.py", "SyntaxError: invalid syntax (line 2, column 5)"), ToolError("gone.py", "No such file")],
    )
    log = sarif(ctx)
    assert_valid(validator, log)
    (inv,) = log["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False
    notes = inv["toolExecutionNotifications"]
    assert [n["message"]["text"] for n in notes] == ["SyntaxError: invalid syntax (line 2, column 5)", "No such file"]
    assert all(n["level"] == "error" for n in notes)
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.py"
    assert len(log["runs"][0]["results"]) == 1


def test_unused_noqa_rule_and_notebook_cells(validator, in_tmp):
    ctx = ReportContext(
        findings=[
            finding(code="FGL100", message="unused `noqa` directive", start=(2, 10), end=(2, 25)),
            finding(filename="nb.ipynb", cell=4, start=(1, 0), end=(1, 1)),
        ]
    )
    log = sarif(ctx)
    assert_valid(validator, log)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    assert rules[results["FGL100"]["ruleIndex"]]["id"] == "FGL100"
    assert rules[results["FGL100"]["ruleIndex"]]["helpUri"].endswith("docs/rules.md#fgl100")
    assert results["FGL100"]["level"] == "warning"
    assert results["FGL001"]["properties"] == {"cell": 4}


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


def test_cli_sarif_matches_json_and_validates(validator, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "hazard.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def f(:\n    with FakeTensorMode():\n        pass\n", encoding="utf-8")

    def run(fmt):
        return subprocess.run(
            [sys.executable, "-m", "fakegrad_lint", "--output-format", fmt, "pkg/hazard.py", "broken.py"],
            cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=120,
        )

    as_json, as_sarif = run("json"), run("sarif")
    assert as_sarif.returncode == as_json.returncode == 2, as_sarif.stderr  # a tool error wins
    log = json.loads(as_sarif.stdout)
    assert_valid(validator, log)
    diags = json.loads(as_json.stdout)
    assert diags, "the analyzer found nothing in a plain FGL001 hazard"
    results = log["runs"][0]["results"]
    got = [
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"],
            r["locations"][0]["physicalLocation"]["region"]["endLine"],
            r["locations"][0]["physicalLocation"]["region"]["endColumn"],
            r["message"]["text"],
        )
        for r in results
    ]
    want = [
        (
            d["code"],
            Path(d["filename"]).resolve().relative_to(tmp_path.resolve()).as_posix(),
            d["location"]["row"],
            d["location"]["column"],
            d["end_location"]["row"],
            d["end_location"]["column"],
            d["message"],
        )
        for d in diags
    ]
    assert got == want
    (inv,) = log["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in inv["toolExecutionNotifications"]] == ["broken.py"]
