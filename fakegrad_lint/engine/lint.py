"""One file's source in, findings out: parse once, compute facts once, apply rules.

This is the single entry point shared by the CLI pipeline, the flake8 plugin, the
runtime ``confirm`` command and the tests. It knows nothing of files on disk,
settings, ``# noqa`` or output formats; callers filter what it returns.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import analyze
from fakegrad_lint.findings import Finding, Location, TraceStep
from fakegrad_lint.engine.prefilter import may_contain_fake_region
from fakegrad_lint.rules import rule_for

_AUTO = object()


def project_for(filename: str):
    """The project context of a file on disk (its import roots), or None."""
    from fakegrad_lint.analysis.project import Project

    return Project.for_file(filename)


def may_reach_region(source: str, filename: str, project=_AUTO) -> bool:
    """The prefilter with the project: the file names a fake mode, or imports a
    module of its project that can reach one."""
    if may_contain_fake_region(source):
        return True
    if project is None or "import" not in source:
        return False
    if project is _AUTO and project_for(filename) is None:
        return False
    from fakegrad_lint.analysis.project import reaches_region

    return reaches_region(filename, source)


def check_source(source: str, filename: str = "<string>", *, tree: ast.Module | None = None,
                 fixes: bool = True, project=_AUTO, deps: dict | None = None) -> list[Finding]:
    """Return every finding of every rule (default and opt-in) in ``source``.

    ``project``: whole-project analysis context; by default found from
    ``filename`` when it is a file on disk (its import roots, see
    ``fakegrad_lint/analysis/project.py``); None: this file alone. ``deps``, when
    given, receives ``{path: sha256}`` of the project modules that were read.

    Each finding whose leak has a fix plan gets the fix built from it, once the fix
    is proved (:mod:`fakegrad_lint.fix.proof`); otherwise ``no_fix`` says why it has
    none. ``fixes=False`` skips that (the proof's own re-lint).

    Raises ``SyntaxError`` (and ``ValueError`` for NUL bytes) when the source
    does not parse; callers turn that into a one-line tool error.
    """
    if project is _AUTO:
        project = project_for(filename) if not may_contain_fake_region(source) or "import" in source else None
    if not may_reach_region(source, filename, project):
        return []
    if tree is None:
        tree = ast.parse(source, filename=filename)
    leaks = analyze(tree, source, project, filename, deps)
    findings = []
    planned = []
    seen: dict = {}
    for leak in leaks:
        rule = rule_for(leak)
        if rule is None:
            continue
        # one finding per rule, position and value: `a @ b` leaks two values
        key = (rule.code, leak.start, leak.value)
        if key in seen:
            continue  # the same value at the same place by a second route
        finding = Finding(
            code=rule.code,
            message=rule.message(leak),
            filename=filename,
            location=Location(*leak.start),
            end_location=Location(*leak.end),
            extra={"value": leak.value, "values": [leak.value, *leak.also]},
            trace=tuple(
                TraceStep(st.kind, st.message, st.path or filename, Location(*st.start), Location(*st.end))
                for st in leak.trace
            ),
        )
        seen[key] = finding
        findings.append(finding)
        if leak.fix is not None and fixes:
            planned.append((len(findings) - 1, leak))
    if planned:
        findings = _with_fixes(source, filename, findings, planned)
    findings.sort(key=lambda f: f.sort_key)
    return findings


def _with_fixes(source: str, filename: str, findings: list[Finding], planned) -> list[Finding]:
    """Build each planned fix and prove it; a fix that fails is not offered and the
    finding says why."""
    from dataclasses import replace

    from fakegrad_lint.fix.builders import NoFix, build_fix
    from fakegrad_lint.fix.proof import LONG_LINE, long_line, prove

    base = [replace(f, extra=dict(f.extra)) for f in findings]
    too_long = long_line(source)
    proofs: dict = {}

    def relint(text):
        return check_source(text, filename, fixes=False)

    out = list(findings)
    for index, leak in planned:
        finding = findings[index]
        fix, reason = None, None
        if too_long is not None:
            reason = (f"line {too_long} is longer than {LONG_LINE} characters, too long to check a fix "
                      f"with libcst")
        else:
            try:
                fix = build_fix(leak, source)
            except NoFix as exc:
                reason = str(exc)
            if fix is None and reason is None:
                reason = "no fix is known for this shape"
            if fix is not None:
                key = fix.edits
                if key not in proofs:
                    proofs[key] = prove(source, finding, fix, relint, base)
                reason = proofs[key]
                if reason is not None:
                    fix = None
        out[index] = replace(finding, fix=fix, no_fix=reason)
    return out
