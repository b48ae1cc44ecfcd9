"""Every fact about a rule is on its Rule, and the rest of the package reads it there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fakegrad_lint
from fakegrad_lint.cli import confirm
from fakegrad_lint.integrations.flake8_plugin import FakegradChecker
from fakegrad_lint.rules import DEFAULT_CODES, LEAK_RULES, OPT_IN_CODES, RULES, RULES_BY_CODE, UNUSED_NOQA_CODE
from fakegrad_lint.rules.base import FIX_KINDS, RUNTIME_KINDS, Rule

PACKAGE = Path(fakegrad_lint.__file__).parent


def test_unused_noqa_is_a_catalogue_rule():
    rule = RULES_BY_CODE[UNUSED_NOQA_CODE]
    assert (rule.code, rule.name, rule.default, rule.fix) == ("FGL100", "unused-noqa", False, "safe")
    assert rule.reported_by == "noqa" and rule.matches is None and rule not in LEAK_RULES
    assert rule.runtime_kind is None and rule.level == "warning"
    assert UNUSED_NOQA_CODE not in DEFAULT_CODES and UNUSED_NOQA_CODE in OPT_IN_CODES


def test_every_rule_states_its_facts():
    for rule in RULES:
        assert rule.fix in FIX_KINDS and rule.level == ("error" if rule.default else "warning")
        assert rule.runtime_kind is None or rule.runtime_kind in RUNTIME_KINDS
        assert rule.url.endswith(f"docs/rules.md#{rule.code.lower()}")
        assert (rule.reported_by == "analysis") == (rule in LEAK_RULES)


def test_confirm_matches_by_the_rules_runtime_kinds():
    assert confirm._kind_of_code() == {"FGL001": "hazard", "FGL002": "crash", "FGL003": "hazard", "FGL004": "entry"}


def test_flake8_default_ignore_is_the_opt_in_rules():
    class Parser:
        ignored: list = []

        def extend_default_ignore(self, codes):
            self.ignored = list(codes)

    parser = Parser()
    FakegradChecker.add_options(parser)
    assert parser.ignored == [r.code for r in RULES if not r.default]


def test_a_rule_with_bad_facts_is_refused():
    base = dict(code="FGL999", name="x", summary="s", what="w", why="y", fix_safety="f",
                invalid=(), valid=(), fixed_example=None, matches=lambda leak: True, message=str)
    Rule(**base)
    for bad in ({"fix": "maybe"}, {"runtime_kind": "boom"}, {"reported_by": "magic"}, {"matches": None}):
        with pytest.raises(ValueError):
            Rule(**{**base, **bad})


def _string_constants(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value


def test_the_unused_noqa_code_is_written_once():
    own = PACKAGE / "rules" / "fgl100_unused_noqa.py"
    places = [
        str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
        if p != own and any("FGL100" in s for s in _string_constants(p))
    ]
    assert places == []
