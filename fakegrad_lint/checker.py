"""One file's source in, findings out: parse once, compute facts once, apply rules.

This is the single entry point shared by the CLI pipeline, the flake8 plugin, the
runtime ``confirm`` command and the tests. It knows nothing of files on disk,
settings, ``# noqa`` or output formats; callers filter what it returns.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import analyze
from fakegrad_lint.findings import Finding, Location
from fakegrad_lint.prefilter import may_contain_fake_region
from fakegrad_lint.rules import rule_for


def check_source(source: str, filename: str = "<string>", *, tree: ast.Module | None = None) -> list[Finding]:
    """Return every finding of every rule (default and opt-in) in ``source``.

    Raises ``SyntaxError`` (and ``ValueError`` for NUL bytes) when the source
    does not parse; callers turn that into a one-line tool error.
    """
    if not may_contain_fake_region(source):
        return []
    if tree is None:
        tree = ast.parse(source, filename=filename)
    leaks = analyze(tree, source)
    findings = []
    seen = set()
    for leak in leaks:
        rule = rule_for(leak)
        if rule is None:
            continue
        # one finding per rule, position and value: `a @ b` leaks two values
        key = (rule.code, leak.start, leak.value)
        if key in seen:
            continue
        seen.add(key)
        fix = None
        if leak.fix is not None:
            from fakegrad_lint.fix_builders import build_fix

            fix = build_fix(leak, source)
        findings.append(
            Finding(
                code=rule.code,
                message=rule.message(leak),
                filename=filename,
                location=Location(*leak.start),
                end_location=Location(*leak.end),
                fix=fix,
            )
        )
    findings.sort(key=lambda f: f.sort_key)
    return findings
