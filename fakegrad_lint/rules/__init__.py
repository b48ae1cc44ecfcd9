"""The rule catalogue. One module per rule; codes are stable once released.

Add a rule: write ``fglNNN_<name>.py`` with a :class:`~fakegrad_lint.rules.base.Rule`
named ``RULE`` (code, docs, examples, and its facts: default on/off, fix kind,
runtime kind, SARIF level) and list it in :data:`RULES`. Everything else (the
selectors of the settings, ``fakegrad-lint rule``, the reporters' rule metadata,
SARIF's ``tool.driver.rules``, the flake8 plugin's default-off codes,
``confirm``'s matching) reads it from here.
"""

from __future__ import annotations

from fakegrad_lint.rules import (
    fgl001_fake_grad_hazard,
    fgl002_strict_mode_crash,
    fgl003_leaked_fake_mixed,
    fgl004_forward_only_leak,
    fgl100_unused_noqa,
)
from fakegrad_lint.rules.base import Rule

RULES: tuple[Rule, ...] = (
    fgl001_fake_grad_hazard.RULE,
    fgl002_strict_mode_crash.RULE,
    fgl003_leaked_fake_mixed.RULE,
    fgl004_forward_only_leak.RULE,
    fgl100_unused_noqa.RULE,
)
RULES_BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}
ALL_CODES: frozenset[str] = frozenset(RULES_BY_CODE)
DEFAULT_CODES: frozenset[str] = frozenset(r.code for r in RULES if r.default)
OPT_IN_CODES: tuple[str, ...] = tuple(r.code for r in RULES if not r.default)
#: The rules over the analysis' leaks, in catalogue order (the first match wins).
LEAK_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.reported_by == "analysis")
#: The rule code the engine's ``# noqa`` pass reports unused directives under.
UNUSED_NOQA_CODE: str = fgl100_unused_noqa.RULE.code
#: The opt-in forward-only rule (a real leaf enters a region, no backward follows).
FORWARD_ONLY_CODE: str = fgl004_forward_only_leak.RULE.code


def rule_for(leak) -> Rule | None:
    for rule in LEAK_RULES:
        if rule.matches(leak):
            return rule
    return None
