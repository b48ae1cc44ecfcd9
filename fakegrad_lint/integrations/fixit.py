"""The rules as a Fixit 2 rule pack: an adapter over the engine's one path
(:func:`fakegrad_lint.engine.lint.lint_and_fix`, the findings and fixes of ``check``).

    # pyproject.toml
    [tool.fixit]
    enable = ["fakegrad_lint.integrations.fixit"]

    fixit lint src/            # the findings `fakegrad-lint` reports (default rules)
    fixit fix --automatic src/ # the file `fakegrad-lint --fix` writes (safe fixes)

One Fixit rule per default-on code (``FakeGradHazard`` FGL001,
``RealTensorInStrictFakeMode`` FGL002, ``LeakedFakeMixedWithRealGrad`` FGL003);
the opt-in FGL004 is ``fakegrad_lint.integrations.fixit_optin:RealGradEntersFakeRegion``.
Each rule visits the module once; the analysis runs once per module for all of
them (the first rule to visit caches it). Positions are the CLI's (Fixit prints
0-based columns, as libcst counts them). ``# noqa: FGL001`` works as in the CLI,
and so does Fixit's own ``# lint-ignore``.

Fixes: Fixit replaces nodes, one per violation; fakegrad-lint's fix is a set of
edits applied in a loop until nothing fixable is left. So every fixable violation
carries the same replacement, the whole module as ``fakegrad-lint --fix`` writes it:
accepting any of them gives exactly the CLI's file. Unsafe fixes are not offered
(Fixit has no safety levels; use ``fakegrad-lint --fix --unsafe-fixes``).
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst
from fixit import Invalid, LintRule, Valid
from libcst.metadata import CodePosition, CodeRange

from fakegrad_lint.findings import applies
from fakegrad_lint.rules import RULES_BY_CODE

__all__ = ["FakeGradHazard", "RealTensorInStrictFakeMode", "LeakedFakeMixedWithRealGrad"]

_CODES = frozenset(code for code, rule in RULES_BY_CODE.items() if rule.default)
_last: list = []  # [(module node, findings, fixed module or None)]: the latest module analysed


def _analyse(module: cst.Module, codes: frozenset):
    for node, key, findings, fixed in _last:
        if node is module and key == codes:
            return findings, fixed
    from fakegrad_lint.engine.lint import lint_and_fix

    findings, outcome = lint_and_fix(module.code, "<fixit>", unsafe=False, codes=codes)
    fixed = None
    if outcome.changed:
        fixed = cst.parse_module(outcome.text.encode(module.encoding))
    _last[:] = [(module, codes, findings, fixed)]
    return findings, fixed


def _examples(code: str):
    """Fixit's VALID/INVALID cases from the rule's own examples; an invalid case
    expects the safe fix (the unsafe ones are not applied by this pack)."""
    from fakegrad_lint.engine.lint import lint_and_fix

    rule = RULES_BY_CODE[code]
    valid = [Valid(src) for src in rule.valid]
    invalid = []
    for src in rule.invalid:
        _, outcome = lint_and_fix(src, "<example>", unsafe=False, codes={code})
        invalid.append(Invalid(src, expected_replacement=outcome.text if outcome.changed else None))
    return valid, invalid


class _FakegradRule(LintRule):
    CODE: ClassVar[str] = ""
    CODES: ClassVar[frozenset] = _CODES

    def visit_Module(self, node: cst.Module) -> bool:
        findings, fixed = _analyse(node, self.CODES)
        for f in findings:
            if f.code != self.CODE:
                continue
            position = CodeRange(CodePosition(f.location.row, f.location.column),
                                 CodePosition(f.end_location.row, f.end_location.column))
            replacement = fixed if fixed is not None and applies(f.fix, unsafe=False) else None
            message = f"{f.code} {f.message}"
            if f.no_fix:
                message += f" (no fix: {f.no_fix})"
            self.report(node, message, position=position, replacement=replacement)
        return False


def _rule(class_name: str, code: str, codes: frozenset = _CODES):
    valid, invalid = _examples(code)
    rule = RULES_BY_CODE[code]
    return type(class_name, (_FakegradRule,), {
        "__doc__": f"{code} ({rule.name}): {rule.summary}",
        "__module__": __name__,
        "CODE": code,
        "CODES": codes,
        "TAGS": {"fakegrad", code},
        "VALID": valid,
        "INVALID": invalid,
    })


FakeGradHazard = _rule("FakeGradHazard", "FGL001")
RealTensorInStrictFakeMode = _rule("RealTensorInStrictFakeMode", "FGL002")
LeakedFakeMixedWithRealGrad = _rule("LeakedFakeMixedWithRealGrad", "FGL003")
