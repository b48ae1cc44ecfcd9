"""One text in, findings out: the one path every front end takes.

:func:`lint_source` is what ``check`` (:mod:`fakegrad_lint.engine.process`, for
Python files and notebook programs alike), ``confirm``, the flake8 plugin, the
Fixit rule pack, the codemod and the fix loop's re-lints call: prefilter,
parse once (lazily), analyse once, apply the rules, keep the enabled codes,
apply ``# noqa`` (and report unused directives, FGL100). It knows nothing of
files on disk, settings or output formats.

:func:`check_source` is its rules stage: every rule's findings (all codes, no
``# noqa``), with proved fixes. Tests and tools that want the raw findings call
it; it is also the seam a test replaces to drive the engine with made-up
findings (``tests/test_cli_support.py``).
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import analyze
from fakegrad_lint.engine.prefilter import (  # noqa: F401  (may_reach_region, project_for: part of this API)
    _AUTO,
    may_contain_fake_region,
    may_have_fgl_noqa,
    may_reach_region,
    project_for,
)
from fakegrad_lint.findings import HELPER_OF, Finding, Location, TraceStep
from fakegrad_lint.rules import UNUSED_NOQA_CODE, rule_for
from fakegrad_lint.sources.text import ParserLimit, parse_quietly


# ---------------------------------------------------------------------------
# parsing


def parse(text: str, path: str) -> ast.Module:
    """The module's AST, with function bodies parsed when the analysis first reads
    them (:mod:`fakegrad_lint.sources.lazyparse`; the same AST as ``ast.parse`` once read)."""
    from fakegrad_lint.sources import lazyparse

    try:
        return lazyparse.parse(text, path)
    except MemoryError as exc:
        raise _parser_limit(exc) from None


def _parser_limit(exc: MemoryError) -> ParserLimit:
    detail = f": {exc}" if str(exc) else ""
    return ParserLimit(
        f"too complex for Python's parser (CPython stops with MemoryError{detail}: nested too deeply or too large for it)"
    )


# ---------------------------------------------------------------------------
# the one path


def lint_source(
    text: str,
    path: str,
    codes: frozenset[str],
    *,
    tree: ast.Module | None = None,
    deps: dict | None = None,
    noqa: bool = True,
    fixes: bool = True,
    region: bool | None = None,
    foreign: list | None = None,
) -> list[Finding]:
    """The findings to report for ``text``: every rule's findings, restricted to
    ``codes``, minus those a ``# noqa`` silences, plus FGL100 (unused noqa) when
    enabled. Raises SyntaxError/ValueError (and :class:`ParserLimit`) when the
    text does not parse.

    ``deps`` receives ``{path: sha256}`` of the project modules the analysis
    read. ``noqa=False``: the caller applies ``# noqa`` itself (flake8);
    ``fixes=False``: no fixes are built (flake8 shows none). ``region``: the
    caller's prefilter already said whether the text can reach a fake region
    (:func:`may_reach_region`), so it is not run again. ``foreign``, when given,
    receives the findings this analysis makes in *other* project modules (a leak
    inside a helper, at its own line: :func:`helper_findings`), restricted to
    ``codes`` but not to ``# noqa`` (the helper's text decides that: the caller,
    :func:`fakegrad_lint.engine.process.run`, applies it).
    """
    if region is None:
        region = may_reach_region(text, path)
    findings: list[Finding] = []
    if region:
        if tree is None:
            tree = parse(text, path)
        found = check_source(text, path, tree=tree, deps=deps, fixes=fixes, foreign=foreign)
        from fakegrad_lint.sources.lazyparse import raise_deferred

        try:
            raise_deferred(tree)  # a syntax error in a body the analysis read
        except MemoryError as exc:
            raise _parser_limit(exc) from None
        findings = [f for f in found if f.code in codes]
        if foreign:
            foreign[:] = [f for f in foreign if f.code in codes]
    if not noqa:
        return findings
    report_unused = UNUSED_NOQA_CODE in codes and may_have_fgl_noqa(text)
    if not findings and not report_unused:
        return []
    from fakegrad_lint.engine import noqa as noqa_mod

    kept, unused = noqa_mod.apply(text, findings, report_unused=report_unused, filename=path)
    if unused:
        kept = sorted(kept + unused, key=lambda f: f.sort_key)
    return kept


def lint_and_fix(text: str, path: str = "<string>", *, unsafe: bool = False, codes=None):
    """``(findings, fix outcome)``: the findings ``fakegrad-lint`` reports for
    ``text`` (default rules, ``# noqa`` applied) and the outcome of its ``--fix``
    loop at this safety level (:class:`fakegrad_lint.fix.apply.FixOutcome`):
    exactly what the CLI prints and writes, for the Fixit and LibCST adapters."""
    from fakegrad_lint.findings import applies
    from fakegrad_lint.fix.apply import FixOutcome, fix_text
    from fakegrad_lint.rules import DEFAULT_CODES

    wanted = DEFAULT_CODES if codes is None else frozenset(codes)

    def lint(t: str) -> list[Finding]:
        return lint_source(t, path, wanted)

    findings = lint(text)
    if not any(applies(f.fix, unsafe=unsafe) for f in findings):
        return findings, FixOutcome(text=text, remaining=findings)
    return findings, fix_text(text, lint, unsafe=unsafe)


# ---------------------------------------------------------------------------
# the rules stage


def check_source(source: str, filename: str = "<string>", *, tree: ast.Module | None = None,
                 fixes: bool = True, project=_AUTO, deps: dict | None = None,
                 foreign: list | None = None) -> list[Finding]:
    """Return every finding of every rule (default and opt-in) in ``source``.

    ``project``: whole-project analysis context; by default found from
    ``filename`` when it is a file on disk (its import roots, see
    ``fakegrad_lint/analysis/project.py``); None: this file alone. ``deps``, when
    given, receives ``{path: sha256}`` of the project modules that were read.

    Each finding whose leak has a fix plan gets the fix built from it, once the fix
    is proved (:mod:`fakegrad_lint.fix.proof`); otherwise ``no_fix`` says why it has
    none. ``fixes=False`` skips that (the proof's own re-lint).

    ``foreign``, when given, receives a second finding for each leak that happens
    inside a helper of another project module, at the leak's own line there
    (:func:`helper_findings`); the finding at the call in this file stays.

    A caller that gives ``tree`` has run the prefilter (:func:`lint_source`
    does); without it the prefilter runs here and the text is parsed.

    Raises ``SyntaxError`` (and ``ValueError`` for NUL bytes) when the source
    does not parse; callers turn that into a one-line tool error.
    """
    if project is _AUTO:
        project = project_for(filename) if not may_contain_fake_region(source) or "import" in source else None
    if tree is None:
        if not may_reach_region(source, filename, project):
            return []
        tree = parse_quietly(source, filename)
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
        if foreign is not None:
            foreign.extend(helper_findings(finding, leak, rule))
        if leak.fix is not None and fixes:
            planned.append((len(findings) - 1, leak))
    if planned:
        findings = _with_fixes(source, filename, findings, planned)
    findings.sort(key=lambda f: f.sort_key)
    return findings


def helper_findings(finding: Finding, leak=None, rule=None) -> list[Finding]:
    """The finding at the leak line inside the helper of another module that
    ``finding`` (reported at the call in the linted file) goes through: same code,
    same trace (whose ``call`` step points back to the call that hands the real
    value in), no fix, the message's paths relative to the helper's folder.
    Empty when the leak is in the linted file itself."""
    import os
    from dataclasses import replace

    op = next((s for s in finding.trace if s.kind == "leak"), None)
    call = next((s for s in finding.trace if s.kind == "call"), None)
    if op is None or call is None or os.path.abspath(op.filename) == os.path.abspath(finding.filename):
        return []
    message = finding.message
    if leak is not None and rule is not None:
        caller, helper = os.path.dirname(os.path.abspath(finding.filename)), os.path.abspath(op.filename)

        def moved(rel):
            where = os.path.normpath(os.path.join(caller, rel if rel is not None else os.path.basename(finding.filename)))
            return None if where == helper else os.path.relpath(where, os.path.dirname(helper)).replace(os.sep, "/")

        message = rule.message(replace(leak, mode_path=moved(leak.mode_path), sink_path=moved(leak.sink_path)))
    where = f"{os.path.relpath(os.path.abspath(finding.filename), os.path.dirname(os.path.abspath(op.filename)))}"
    where = f"{where.replace(os.sep, '/')} line {call.location.row}"
    return [Finding(
        code=finding.code,
        message=f"{message} (the real value comes from the call at {where})",
        filename=op.filename,
        location=op.location,
        end_location=op.end_location,
        extra={**finding.extra, HELPER_OF: where},
        trace=finding.trace,
    )]


def _with_fixes(source: str, filename: str, findings: list[Finding], planned) -> list[Finding]:
    """Build each planned fix and prove it; a fix that fails is not offered and the
    finding says why."""
    from dataclasses import replace

    from fakegrad_lint.fix.builders import NoFix, build_fix, for_file
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
                with for_file(filename):
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
    if too_long is None:
        from fakegrad_lint.fix.proof import unfixed_enclosing_op

        for index, reason in unfixed_enclosing_op(source, out, relint):
            out[index] = replace(out[index], fix=None, no_fix=reason)
    return out
