"""One file's source in, findings out: parse once, compute facts once, apply rules.

This is the single entry point shared by the CLI pipeline, the flake8 plugin, the
runtime ``confirm`` command and the tests. It knows nothing of files on disk,
settings, ``# noqa`` or output formats; callers filter what it returns.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import analyze
from fakegrad_lint.findings import Finding, Location, TraceStep
from fakegrad_lint.prefilter import may_contain_fake_region
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


def check_source(
    source: str,
    filename: str = "<string>",
    *,
    tree: ast.Module | None = None,
    project=_AUTO,
    deps: dict | None = None,
) -> list[Finding]:
    """Return every finding of every rule (default and opt-in) in ``source``.

    ``project``: whole-project analysis context; by default found from
    ``filename`` when it is a file on disk (its import roots, see
    ``fakegrad_lint/analysis/project.py``); None: this file alone. ``deps``, when
    given, receives ``{path: sha256}`` of the project modules that were read.

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
    seen = set()
    for leak in leaks:
        rule = rule_for(leak)
        if rule is None:
            continue
        key = (rule.code, leak.start)
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
                trace=tuple(
                    TraceStep(st.kind, st.message, st.path or filename, Location(*st.start), Location(*st.end))
                    for st in leak.trace
                ),
            )
        )
    findings.sort(key=lambda f: f.sort_key)
    return findings
