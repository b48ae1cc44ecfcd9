"""Fixes whose edit lands in another module of the project: the region is opened there.

A helper in ``utils.py`` opens an allow-mode region and backpropagates through the real
model that ``train.py`` hands it: the finding is ``train.py``'s (at the call), but the block
to convert the model in is the helper's. Where the edit lands is chosen by which keeps
every caller working:

- **the region's block is in the linted file** (``with fakeenv.FAKE: train_step(model, ...)``
  with the helper in another module): the value is converted at the call in that block
  (the argument, or a fake copy of a module handed over), as in one file; the helper is
  left as it is for its other callers, which may run it outside any region. That plan is
  an ordinary fix of the linted file (``analysis/fix_plans.py``, ``_other_module_fix_plan``).
- **the region is opened by code of another module** (the helper's own ``with``): the edit
  lands in that module's block, where the region is, so that every caller of the helper is
  fixed by it. Any real value that enters that block is a hazard (or a crash) whoever the
  caller is, and ``from_tensor``/``functional_call`` over fake copies computes the same
  shapes for a real, a frozen or a non-requires-grad argument alike: no caller stops
  working. A conversion at one call could not work at all: the mode does not exist before
  the helper runs. This is :func:`fix_across_modules`, a pass of ``--fix`` (and ``--diff``)
  over the files of the run after each file's own fix loop.

Such a fix is built by the same builders from the plan the analysis makes for the other
module's block (``FixPlan.path``) and proved across the modules it touches: the fixed
helper parses (CPython and libcst), every name its inserted text reads is bound before
the read, and, the project re-linted with the fixed text standing for the helper's
(``analysis.roots.OVERLAY``; the disk is untouched until the proof holds), the targeted
finding of the calling file is gone and no file of the run that reads the helper (nor the
helper itself) gains a finding. The helper must be one of the run's files (``fakegrad-lint
--fix train.py`` alone never rewrites ``utils.py``). Files are written atomically in their
own encoding and newlines; a second ``--fix`` changes nothing (the findings are gone).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from fakegrad_lint.findings import HELPER_OF, Finding, applies

__all__ = ["fix_across_modules", "cross_module_fixes", "offer_across_modules", "place_helper_findings"]


@contextmanager
def _overlay(texts: dict):
    """The analysis reads ``texts`` ({absolute path: text}) instead of those files."""
    from fakegrad_lint.analysis import roots

    saved = dict(roots.OVERLAY)
    roots.OVERLAY.update(texts)
    try:
        yield
    finally:
        roots.OVERLAY.clear()
        roots.OVERLAY.update(saved)


@contextmanager
def _plans_elsewhere():
    from fakegrad_lint.analysis import fix_plans

    was = fix_plans.PLAN_IN_OTHER_MODULES[0]
    fix_plans.PLAN_IN_OTHER_MODULES[0] = True
    try:
        yield
    finally:
        fix_plans.PLAN_IN_OTHER_MODULES[0] = was


def _region_elsewhere(f: Finding) -> bool:
    """A finding of its own file whose region step is in another file."""
    if HELPER_OF in f.extra or f.fix is not None:
        return False
    me = os.path.abspath(f.filename)
    return any(st.kind == "region" and os.path.abspath(st.filename) != me for st in f.trace)


class _Project:
    """The run's Python files, their current texts, and lints under the overlay of the
    texts changed so far (by the per-file loop in ``--diff`` mode, or by this pass)."""

    def __init__(self, results, codes_for, diff: bool, paths=(), deps_known: bool = False):
        from fakegrad_lint.engine.process import FileResult
        from fakegrad_lint.sources.sourcefile import SourceError, read_source

        self.results = {}
        self.files = {}
        self.texts = {}
        self.codes_for = codes_for
        self.added = []  # results made here for run files the prefilter stopped (no result of their own)
        known = {os.path.abspath(r.path) for r in results}
        for path in paths:
            if str(path).endswith(".py") and os.path.abspath(path) not in known:
                known.add(os.path.abspath(path))
                self.added.append(FileResult(str(path)))
        for r in [*results, *self.added]:
            if not r.path.endswith(".py") or r.errors:
                continue
            path = os.path.abspath(r.path)
            try:
                sf = read_source(r.path)
            except SourceError:
                continue
            self.results[path], self.files[path] = r, sf
            self.texts[path] = r.fixed_text if diff and r.fixed_text is not None else sf.text
        self._deps: dict = {}
        if deps_known:
            # a `check` run: each file's lint recorded the project modules it read (a cached
            # result does not say; a file the prefilter stopped read none)
            for path, r in self.results.items():
                if not r.cached:
                    self._deps[(path, self.texts[path])] = {os.path.abspath(p) for p in r.deps}

    def changed(self, extra=None) -> dict:
        out = {p: t for p, t in self.texts.items() if t != self.files[p].text}
        out.update(extra or {})
        return out

    def check(self, path: str, text: str | None = None, extra=None, deps=None) -> list[Finding]:
        """Every finding of ``path`` (all codes, no noqa, no fixes) with the changed texts."""
        from fakegrad_lint.engine.lint import check_source

        text = self.texts[path] if text is None else text
        with _overlay(self.changed(extra)):
            return check_source(text, self.results[path].path, fixes=False, deps=deps)

    def reported(self, path: str, foreign: list | None = None) -> list[Finding]:
        """What the CLI reports for ``path`` now (its codes, ``# noqa`` applied); ``foreign``
        receives its findings at the lines of helpers in other modules (as in ``check``)."""
        from fakegrad_lint.engine.lint import lint_source

        with _overlay(self.changed()):
            name = self.results[path].path
            return lint_source(self.texts[path], name, self.codes_for(name), fixes=False, foreign=foreign)

    def readers(self, helper: str) -> list[str]:
        """The run's files whose analysis reads ``helper`` (by the deps of their lint)."""
        out = []
        for path in self.results:
            if path == helper:
                continue
            key = (path, self.texts[path])
            if key not in self._deps:
                deps: dict = {}
                try:
                    self.check(path, deps=deps)
                except Exception:  # noqa: BLE001 - a file that cannot be linted reads nothing here
                    pass
                self._deps[key] = {os.path.abspath(p) for p in deps}
            if helper in self._deps[key]:
                out.append(path)
        return out


def _planned(project: _Project, path: str) -> list:
    """The leaks of ``path`` whose plan lands in another module's region of the run."""
    from fakegrad_lint.analysis import analyze
    from fakegrad_lint.engine.lint import may_reach_region, parse, project_for

    text, name = project.texts[path], project.results[path].path
    with _overlay(project.changed()), _plans_elsewhere():
        proj = project_for(name)
        if not may_reach_region(text, name, proj):
            return []
        leaks = analyze(parse(text, name), text, proj, name, None)
    return [lk for lk in leaks if lk.fix is not None and getattr(lk.fix, "path", None)
            and getattr(lk.fix, "kind", "none") != "none"]


def _prove(project: _Project, path: str, target: Finding, helper: str, fix) -> tuple[str | None, str | None]:
    """``(fixed text of helper, None)`` when ``fix`` (edits of ``helper``'s text) is proved
    for ``target`` (a finding of ``path``) across the project, else ``(None, why not)``."""
    from fakegrad_lint.fix import apply as fixes
    from fakegrad_lint.fix.proof import _FORWARD_ONLY, _keys, _unbound_inserted_names, _Unreadable, finding_key
    from fakegrad_lint.sources.text import parse_quietly

    source = project.texts[helper]
    newline = fixes.dominant_newline(source)
    try:
        edits = [type(e)(e.start, e.end, fixes._convert_newlines(e.content, newline)) for e in fix.edits]
        spans = fixes._spans(source, edits, fixes.line_starts(source))
        fixes._check_disjoint(spans)
    except fixes.EditError as exc:
        return None, f"its edits do not apply ({exc})"
    new = fixes._apply_spans(source, spans)
    error = fixes._parses(new)
    if error is not None:
        return None, f"the fixed text of {os.path.basename(helper)} does not parse: {error}"
    try:
        unbound = _unbound_inserted_names(new, parse_quietly(new), spans)
    except _Unreadable as exc:
        return None, f"the fixed text does not parse with libcst ({exc})"
    if unbound:
        return None, f"`{unbound[0]}` would be read on line {unbound[1]} of {os.path.basename(helper)} before it is bound"
    others = [helper] + [p for p in project.readers(helper) if p != path]
    try:
        for p in [path, *others]:
            before = project.check(p)
            after = project.check(p, new if p == helper else None, extra={helper: new})
            was, now = _keys(before), _keys(after)
            if p == path and now[finding_key(target)] >= was[finding_key(target)]:
                return None, "re-linted, the finding is still there"
            values_before = {value for _, value in was}
            for key, count in now.items():
                if count > was[key] and not (key[0] == _FORWARD_ONLY and key[1] in values_before):
                    return None, f"re-linted, the fix adds a {key[0]} finding in {os.path.basename(p)}"
    except Exception as exc:  # noqa: BLE001 - whatever the analysis raises, the fix is not proved
        return None, f"the fixed project cannot be re-linted ({type(exc).__name__})"
    return new, None


def _unredirected_grad_read(plan, fix) -> int | None:
    """A gradient read of the converted module inside the edited block or function (the
    analysis' ``grad_reads``, e.g. ``p.grad for p in params`` with ``params`` its parameters)
    on a line the fix does not edit (a read it sends to the fake copy is edited): after the
    fix it would read ``None``."""
    if plan.kind not in ("module", "module-copy") or not plan.grad_reads:
        return None
    edited = {row for e in fix.edits for row in range(e.start.row, e.end.row + 1) if e.start != e.end}
    node = plan.func_node if plan.placement == "function" else plan.with_node
    body = getattr(node, "body", None) or []
    if not body:
        return None
    first, last = body[0].lineno, body[-1].end_lineno
    return next((ln for ln in sorted(plan.grad_reads) if first <= ln <= last and ln not in edited), None)


def _proved_fixes(project: _Project, path: str, unsafe: bool | None, why: dict):
    """Each proved fix of a finding of ``path`` whose edit lands in another module:
    ``(finding, helper path, fix, fixed helper text)``. ``unsafe``: the safety level a fix
    must apply at (None: any, for ``check``, which marks the fixes by their applicability).
    ``why`` receives, by ``(code, row, column, value)``, why a planned fix is not offered."""
    from fakegrad_lint.fix.builders import NoFix, build_fix, for_file
    from fakegrad_lint.rules import rule_for

    leaks = _planned(project, path)
    if not leaks:
        return
    reported = project.reported(path)
    for leak in leaks:
        helper = os.path.abspath(leak.fix.path)
        rule = rule_for(leak)
        if rule is None or helper == path:
            continue
        key = (rule.code, *leak.start, leak.value)
        where = os.path.relpath(helper, os.path.dirname(path)).replace(os.sep, "/")
        if helper not in project.results:
            why[key] = f"the fix would edit {where}, which is not one of the files checked in this run"
            continue
        target = next((f for f in reported if f.code == rule.code and (f.location.row, f.location.column) == leak.start
                       and f.extra.get("value") == leak.value), None)
        if target is None:
            continue  # a code not enabled for the file, or silenced by its `# noqa`
        try:
            with for_file(helper):
                fix = build_fix(leak, project.texts[helper])
        except NoFix as exc:
            why[key] = f"in {where}, where the region is: {exc}"
            continue
        if fix is None or not fix.edits:
            why[key] = f"in {where}, where the region is: no fix is known for this shape"
            continue
        read = _unredirected_grad_read(leak.fix, fix)
        if read is not None:
            why[key] = (f"in {where}, where the region is: line {read} reads the gradients the region makes, "
                        f"which a fake copy of `{leak.fix.value}` would change")
            continue
        if unsafe is not None and not applies(fix, unsafe=unsafe):
            why[key] = f"in {where}, where the region is: {fix.message} ({fix.applicability.value})"
            continue
        new, reason = _prove(project, path, target, helper, fix)
        if new is None:
            why[key] = f"in {where}, where the region is: {reason}"
            continue
        why.pop(key, None)
        yield target, helper, fix, new


def cross_module_fixes(project: _Project, path: str, unsafe: bool, why: dict | None = None):
    """The first proved fix of a finding of ``path`` whose edit lands in another module:
    ``(finding, helper path, fixed helper text)``, or None. ``why`` receives, by
    ``(code, row, column, value)``, why a planned fix of a finding is not applied."""
    for target, helper, _fix, new in _proved_fixes(project, path, unsafe, {} if why is None else why):
        return target, helper, new
    return None


def _file_qualified(fix, project: _Project, helper: str, where: str):
    """``fix`` (edits of ``helper``'s text) as the fix of a finding of another file: each
    edit names ``helper`` (as the run names it), the message says where the edit lands."""
    from dataclasses import replace

    name = project.results[helper].path
    return replace(fix, message=f"{fix.message} (in {where}, where the region is)",
                   edits=tuple(replace(e, filename=name) for e in fix.edits))


def _candidates(results) -> list[str]:
    return sorted({os.path.abspath(r.path) for r in results if r.path.endswith(".py")
                   and any(_region_elsewhere(f) for f in r.findings)})


def offer_across_modules(run, codes_for, options, paths=()) -> None:
    """``check`` (and every report of findings): each finding whose region is opened in
    another file of the run gets as its fix the proved edits of that file, the same fix
    ``--fix`` applies there (:func:`fix_across_modules`): ``[*]`` in the text output, the
    file-qualified edits in JSON and SARIF, the counts. A planned fix that is not proved
    leaves the finding with the reason (``no fix: in utils.py, where the region is: ...``).
    Only files with such a finding pay for it (the fast path never does)."""
    from dataclasses import replace

    from fakegrad_lint.findings import hidden_unsafe

    candidates = _candidates(run.results)
    if not candidates:
        return
    project = _Project(run.results, codes_for, diff=False, paths=paths, deps_known=options.mode == "check")
    for path in candidates:
        if path not in project.results:
            continue
        why: dict = {}
        offered: dict = {}
        try:
            for target, helper, fix, _new in _proved_fixes(project, path, None, why):
                where = os.path.relpath(helper, os.path.dirname(path)).replace(os.sep, "/")
                key = (target.code, target.location.row, target.location.column, target.extra.get("value"))
                offered.setdefault(key, _file_qualified(fix, project, helper, where))
        except Exception:  # noqa: BLE001 - an analyzer bug must not take the run down: no fix
            continue
        result = project.results[path]
        findings = []
        for f in result.findings:
            key = (f.code, f.location.row, f.location.column, f.extra.get("value"))
            if key in offered and f.fix is None and HELPER_OF not in f.extra:
                f = replace(f, fix=offered[key], no_fix=None)
            findings.append(_explained(f, why))
        result.findings = findings
        if not options.unsafe_fixes:
            result.hidden_unsafe = sum(1 for f in findings if hidden_unsafe(f.fix))
        if findings and result.source is None:
            result.source = project.texts[path]


def fix_across_modules(run, codes_for, options, paths=()) -> None:
    """After every file's own fix loop: apply the proved fixes whose edit lands in another
    file of the run (see the module docstring), write those files (``--fix``) or their
    diffs (``--diff``), and update the run's results (findings, fixed counts). ``paths``:
    every file of the run (a helper the prefilter stopped has no result of its own)."""
    if options.mode not in ("fix", "fix-only", "diff"):
        return
    try:
        _fix_across_modules(run, codes_for, options, paths)
    finally:
        if options.mode == "fix":
            place_helper_findings(run, codes_for, paths)


def place_helper_findings(run, codes_for, paths) -> None:
    """``--fix``: the findings left at the lines of helpers in other modules of the run
    (each file's fix loop and this pass keep those of the text they leave, in
    ``FileResult.foreign``) are placed there as ``check`` places them
    (``engine.process._place_foreign``: the helper's codes and ``# noqa``, once per line and
    code), so ``check`` and ``--fix`` report, count and show the same findings."""
    from fakegrad_lint.engine.process import _place_foreign

    _place_foreign(run, [str(p) for p in paths] or [r.path for r in run.results], codes_for)


def _fix_across_modules(run, codes_for, options, paths=()) -> None:
    candidates = _candidates(run.results)
    if not candidates:
        return
    project = _Project(run.results, codes_for, diff=options.mode == "diff", paths=paths)
    project.run_results = run.results
    applied: dict = {}
    why: dict = {}
    for _ in range(max(options.max_fix_iterations, 0)):
        progress = False
        for path in candidates:
            if path not in project.results:
                continue
            try:
                found = cross_module_fixes(project, path, options.unsafe_fixes, why.setdefault(path, {}))
            except Exception:  # noqa: BLE001 - an analyzer bug must not take the run down: no fix
                found = None
            if found is not None:
                _, helper, new = found
                project.texts[helper] = new
                applied[path] = applied.get(path, 0) + 1
                progress = True
        if not progress:
            break
    if applied:
        _finish(project, applied, options, why, candidates)
    for path, reasons in why.items():
        result = project.results[path]
        if reasons and path not in applied:
            result.findings = [_explained(f, reasons) for f in result.findings]


def _explained(f: Finding, reasons: dict) -> Finding:
    """``f`` with the project pass' reason for not fixing it in the region's module."""
    from dataclasses import replace

    why = reasons.get((f.code, f.location.row, f.location.column, f.extra.get("value")))
    return f if why is None or f.fix is not None else replace(f, no_fix=why)


def _finish(project: _Project, applied: dict, options, why: dict, candidates=()) -> None:
    from fakegrad_lint.sources.sourcefile import SourceError, write_atomic

    changed = project.changed()
    run_results = getattr(project, "run_results", None)
    for added in project.added:
        if os.path.abspath(added.path) in changed and run_results is not None:
            run_results.append(added)
    for path, text in changed.items():
        result, sf = project.results[path], project.files[path]
        if options.mode == "diff":
            from fakegrad_lint.fix.apply import unified_diff
            from fakegrad_lint.sources.kind import PythonSource

            result.diff = "".join(unified_diff(*piece) for piece in PythonSource(sf).diffs(sf.text, text))
            result.fixed_text = text  # what --fix would write (nothing is written)
            continue
        try:
            write_atomic(path if os.path.exists(path) else result.path, sf.encode(text), expected=sf.raw)
        except SourceError as exc:
            from fakegrad_lint.findings import ToolError

            result.errors.append(ToolError(result.path, str(exc)))
            project.texts[path] = sf.text
            continue
        result.fixed_text = text
    # the files whose findings the edits can change: those edited, those fixed, and every
    # other file whose region is elsewhere (a helper's edit fixes each of its callers)
    for path in set(changed) | set(applied) | {p for p in candidates if p in project.results}:
        result = project.results[path]
        result.fixed += applied.get(path, 0)
        if options.mode != "fix-only":
            foreign: list = []
            try:
                result.findings = [_explained(f, why.get(path, {})) for f in project.reported(path, foreign)]
                result.foreign = foreign
            except Exception:  # noqa: BLE001 - keep what the per-file loop reported
                pass
        if result.findings:
            result.source = project.texts[path]
