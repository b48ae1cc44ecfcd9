"""The rule catalogue. One module per rule; codes are stable once released."""

from __future__ import annotations

from fakegrad_lint.rules import (
    fgl001_fake_grad_hazard,
    fgl002_strict_mode_crash,
    fgl003_leaked_fake_mixed,
    fgl004_forward_only_leak,
)
from fakegrad_lint.rules.base import Rule

RULES: tuple[Rule, ...] = (
    fgl001_fake_grad_hazard.RULE,
    fgl002_strict_mode_crash.RULE,
    fgl003_leaked_fake_mixed.RULE,
    fgl004_forward_only_leak.RULE,
)
RULES_BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}
DEFAULT_CODES: frozenset[str] = frozenset(r.code for r in RULES if r.default)
ALL_CODES: frozenset[str] = frozenset(RULES_BY_CODE)


def rule_for(leak) -> Rule | None:
    for rule in RULES:
        if rule.matches(leak):
            return rule
    return None
