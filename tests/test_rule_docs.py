"""Rule docs come from the catalogue, and the catalogue's examples are true.

Every ``invalid`` example of every rule must produce exactly the findings its
``# FGLxxx`` markers name (row and code, parsed by ``tests/markers.py``); every ``valid`` example must produce
none of its own rule and none of any default-on rule. The docs printed by
``fakegrad-lint rule`` contain the examples verbatim, and ``docs/rules.md`` is
exactly what ``rule --all --output-format markdown`` prints.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fakegrad_lint.cli import rule_docs
from fakegrad_lint.rules import ALL_CODES, DEFAULT_CODES, RULES
from markers import markers_in_source as markers
from markers import strip_markers

ROOT = Path(__file__).resolve().parents[1]


def found(source: str, name: str) -> set[tuple[int, str]]:
    """Every rule's findings after ``# noqa`` (FGL100, unused noqa, is the noqa pass')."""
    from fakegrad_lint.engine.lint import lint_source

    return {(f.location.row, f.code) for f in lint_source(source, name, ALL_CODES)}


INVALID = [(r.code, i, src) for r in RULES for i, src in enumerate(r.invalid)]
VALID = [(r.code, i, src) for r in RULES for i, src in enumerate(r.valid)]


def test_every_rule_has_examples_that_name_it():
    for rule in RULES:
        assert rule.invalid and rule.valid, rule.code
        for src in rule.invalid:
            assert rule.code in {code for _, code in markers(src)}, f"{rule.code}: an invalid example without # {rule.code}"
            compile(src, f"<{rule.code} invalid>", "exec")
        for src in rule.valid:
            assert not markers(src), f"{rule.code}: a valid example with a marker"
            compile(src, f"<{rule.code} valid>", "exec")
        if rule.fixed_example is not None:
            compile(rule.fixed_example, f"<{rule.code} fixed>", "exec")


@pytest.mark.parametrize("code,index,source", INVALID, ids=[f"{c}-invalid-{i}" for c, i, _ in INVALID])
def test_invalid_examples_produce_exactly_their_markers(code, index, source):
    assert found(source, f"{code.lower()}_invalid_{index}.py") == markers(source)


@pytest.mark.parametrize("code,index,source", VALID, ids=[f"{c}-valid-{i}" for c, i, _ in VALID])
def test_valid_examples_produce_nothing(code, index, source):
    codes = {c for _, c in found(source, f"{code.lower()}_valid_{index}.py")}
    assert code not in codes
    assert not codes & DEFAULT_CODES, f"a valid {code} example triggers default rules {sorted(codes & DEFAULT_CODES)}"


def test_fixed_examples_are_clean():
    for rule in RULES:
        if rule.fixed_example is not None:
            codes = {c for _, c in found(rule.fixed_example, f"{rule.code.lower()}_fixed.py")}
            assert not codes & (DEFAULT_CODES | {rule.code}), (rule.code, codes)


# ---------------------------------------------------------------------------
# the `rule` subcommand


def run_main(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = rule_docs.main(list(argv))
        except SystemExit as exc:  # argparse errors
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def indented(code: str, indent: str = "    ") -> str:
    return "\n".join((indent + line).rstrip() for line in code.rstrip("\n").split("\n"))


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_text_has_what_why_example_fix(rule):
    rc, out, err = run_main(rule.code)
    assert (rc, err) == (0, "")
    assert out.startswith(f"{rule.code} ({rule.name})\n")
    flat = " ".join(out.split())
    for part in (rule.summary, rule.what, rule.why, rule.fix_safety):
        assert " ".join(part.split()) in flat
    assert indented(rule.invalid[0]) in out
    if rule.fixed_example is not None:
        assert indented(rule.fixed_example) in out
        assert out.index(indented(rule.invalid[0])) < out.index(indented(rule.fixed_example))
    assert ("Default: on" if rule.default else "Default: off") in out
    assert f"Fix: {rule_docs.fix_label(rule)}" in out
    assert "--unsafe- " not in out and "--extend- " not in out  # no breaks inside flags
    # by name and in lower case too
    assert run_main(rule.name)[1] == out
    assert run_main(rule.code.lower())[1] == out


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_markdown_and_json(rule):
    rc, md, _ = run_main(rule.code, "--output-format", "markdown")
    assert rc == 0 and md.startswith(f"## {rule.code}\n")
    assert "```python\n" + rule.invalid[0] in md
    if rule.fixed_example is not None:
        assert "```python\n" + rule.fixed_example in md
    rc, js, _ = run_main(rule.code, "--output-format", "json")
    data = json.loads(js)
    assert rc == 0
    assert data["code"] == rule.code and data["name"] == rule.name
    assert data["default"] is rule.default
    assert data["example"] == rule.invalid[0]
    assert data["fixed_example"] == rule.fixed_example
    assert data["invalid_examples"] == list(rule.invalid) and data["valid_examples"] == list(rule.valid)
    assert (data["what"], data["why"], data["fix_safety"], data["url"]) == (rule.what, rule.why, rule.fix_safety, rule.url)


def test_rule_all_lists_every_rule():
    rc, out, _ = run_main("--all")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["CODE", "NAME", "DEFAULT", "FIX"]
    assert len(lines) == 1 + len(RULES)
    for rule, line in zip(RULES, lines[1:]):
        assert line.split()[:4] == [rule.code, rule.name, "on" if rule.default else "off", rule_docs.fix_label(rule)]
        assert line.endswith(rule.summary)
    rc, js, _ = run_main("--all", "--output-format", "json")
    assert [d["code"] for d in json.loads(js)] == [r.code for r in RULES]
    assert {d["code"] for d in json.loads(js) if not d["default"]} == ALL_CODES - DEFAULT_CODES


def test_rule_errors():
    rc, out, err = run_main("FGL999")
    assert rc == 2 and out == ""
    assert err.startswith("fakegrad-lint rule: error: unknown rule 'FGL999'") and err.count("\n") == 1
    assert run_main()[0] == 2
    assert run_main("FGL001", "--all")[0] == 2
    assert run_main("FGL001", "--output-format", "yaml")[0] == 2


def test_fix_labels():
    labels = {r.code: rule_docs.fix_label(r) for r in RULES}
    assert set(labels.values()) <= {"safe", "unsafe", "safe/unsafe", "none"}
    for rule in RULES:
        text = rule.fix_safety.lower()
        if text.startswith("no automatic fix"):
            assert labels[rule.code] == "none"
        elif text.startswith("unsafe"):
            assert labels[rule.code] == "unsafe"
        elif text.startswith("safe") and "unsafe" not in text:
            assert labels[rule.code] == "safe"


def test_docs_rules_md_is_up_to_date():
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert page == rule_docs.all_markdown(), (
        "docs/rules.md is stale: run `fakegrad-lint rule --all --output-format markdown > docs/rules.md`"
    )
    for rule in RULES:
        assert f"\n## {rule.code}\n" in page
        assert rule.invalid[0] in page


def test_rule_subcommand_through_the_cli():
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "rule", "FGL001"],
        capture_output=True, text=True, encoding="utf-8", timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == rule_docs.rule_text(RULES[0])
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "rule", "--all", "--output-format", "markdown"],
        capture_output=True, text=True, encoding="utf-8", timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == rule_docs.all_markdown()


# ---------------------------------------------------------------------------
# expected fixes of the invalid examples (like Fixit's expected_replacement)


def _fixed(code: str, source: str) -> str | None:
    from fakegrad_lint.fix.apply import fix_text
    from fakegrad_lint.engine.lint import lint_source

    out = fix_text(source, lambda t: lint_source(t, "example.py", frozenset({code})), unsafe=True)
    return out.text if out.changed else None


def test_every_invalid_example_has_its_expected_fix():
    for rule in RULES:
        assert len(rule.invalid_fixed) == len(rule.invalid), rule.code


@pytest.mark.parametrize("code,index,source", INVALID, ids=[f"{c}-invalid-{i}" for c, i, _ in INVALID])
def test_invalid_example_fixes_to_expected_code(code, index, source):
    rule = next(r for r in RULES if r.code == code)
    want = rule.invalid_fixed[index]
    got = _fixed(code, source)
    assert got == want
    if want is not None:
        assert not {c for _, c in found(want, "fixed.py")} & (DEFAULT_CODES | {code})
        assert _fixed(code, want) is None  # a second --fix changes nothing


def test_fixed_example_is_the_first_expected_fix_without_markers():
    for rule in RULES:
        if rule.fixed_example is not None and rule.code != "FGL003":
            assert rule.fixed_example == strip_markers(rule.invalid_fixed[0]), rule.code
        elif rule.fixed_example is not None:
            assert rule.fixed_example == rule.invalid_fixed[0], rule.code
