"""Every fix is proved before it is offered.

:func:`prove` takes the source, one finding's fix and a ``relint`` callable (the
analysis without fixes) and returns ``None`` when the fix is proved, else the
reason it is not offered (the finding then says ``no fix: <reason>``):

1. its edits apply (inside the text, not overlapping) and the fixed text parses;
2. re-linted, the finding it targets is gone and no new finding appears
   (findings are compared by rule and the value they name: the fix may clear
   several findings of the same value, never add one);
3. every name read inside the inserted text is bound before that read, in its
   scope or an enclosing one, by libcst's scope analysis of the fixed text (a use
   before the hoisted copy, an ``import torch`` below the region, a mode named only
   in another function all fail here);
4. it converts only values the analysis proved to be tensors, containers of
   tensors or modules: that is the plan's kind, which the builders trust.

The libcst check of the written text (``fixes._lossless``) is skipped for files
with a line longer than :data:`LONG_LINE`: libcst's parser is quadratic in a
line's length (28 s on a 1 MB line), so such files get no fix, at once.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import re
from collections import Counter
from typing import Callable

from fakegrad_lint.findings import Finding, Fix
from fakegrad_lint.sources.text import NEWLINE_RE as _NEWLINE_RE
from fakegrad_lint.sources.text import parse_quietly
from fakegrad_lint.rules import FORWARD_ONLY_CODE, fgl002_strict_mode_crash

__all__ = ["LONG_LINE", "long_line", "prove", "finding_key"]

#: Files with a line longer than this get no fix (see the module docstring).
LONG_LINE = 10_000

_BUILTINS = frozenset(dir(builtins))
_FORWARD_ONLY = FORWARD_ONLY_CODE  # a downgrade to forward-only is not a new hazard
_CRASH = fgl002_strict_mode_crash.RULE.code


def long_line(source: str) -> int | None:
    """The 1-based number of the first line longer than :data:`LONG_LINE`, if any."""
    if len(source) <= LONG_LINE:
        return None
    start = 0
    for row, match in enumerate(_NEWLINE_RE.finditer(source), 1):
        if match.start() - start > LONG_LINE:
            return row
        start = match.end()
    if len(source) - start > LONG_LINE:
        return source.count("\n") + 1
    return None


def finding_key(f: Finding) -> tuple:
    return (f.code, f.extra.get("value", f.message))


def _keys(findings: list[Finding]) -> Counter:
    """Rule and value of every leak behind ``findings`` (one finding can stand for
    several values leaking at one place)."""
    out = Counter()
    for f in findings:
        for value in f.extra.get("values") or [f.extra.get("value", f.message)]:
            out[(f.code, value)] += 1
    return out


def prove(source: str, finding: Finding, fix: Fix, relint: Callable[[str], list[Finding]],
          before: list[Finding]) -> str | None:
    """None when ``fix`` is proved for ``finding`` (see the module docstring), else why not."""
    from fakegrad_lint.fix import apply as fixes

    if not fix.edits:
        return None  # nothing to prove: a message only
    newline = fixes.dominant_newline(source)
    try:
        edits = [type(e)(e.start, e.end, fixes._convert_newlines(e.content, newline)) for e in fix.edits]
        starts = fixes.line_starts(source)
        spans = fixes._spans(source, edits, starts)
        fixes._check_disjoint(spans)
    except fixes.EditError as exc:
        return f"its edits do not apply ({exc})"
    new = fixes._apply_spans(source, spans)
    try:
        tree = parse_quietly(new)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        return f"the fixed text does not parse: {getattr(exc, 'msg', exc)}{where}"
    try:
        unbound = _unbound_inserted_names(new, tree, spans)
    except _Unreadable as exc:
        return f"the fixed text does not parse with libcst ({exc})"
    if unbound:
        name, line = unbound
        return f"`{name}` would be read on line {line} before it is bound"
    try:
        after = relint(new)
    except Exception as exc:  # noqa: BLE001 - whatever the analysis raises, the fix is not proved
        return f"the fixed text cannot be re-linted ({type(exc).__name__})"
    was, now = _keys(before), _keys(after)
    target = finding_key(finding)
    if now[target] >= was[target]:
        return "re-linted, the finding is still there"
    values_before = {value for _, value in was}
    same_object = _source_and_region(finding, source)
    for key, count in now.items():
        if count > was[key]:
            if key[0] == _FORWARD_ONLY and key[1] in values_before:
                continue  # a value leaked at the same place before: now it is only forward
            if key[0] == _FORWARD_ONLY and same_object is not None and all(
                    _source_and_region(f, new) == same_object for f in after if finding_key(f) == key):
                # the real object the target leaked (made by the same statement, in the same
                # region), reached now under another name and only forward: `functional_call(
                # model, fake_params)` after the fix, where `dict(model.named_parameters())` leaked
                continue
            if key[0] == _CRASH and finding.code == _CRASH and all(
                    _masked_crash(f, finding, spans, source, new) for f in after if finding_key(f) == key):
                # `bag.cls(bag.emb(ids))` under a strict mode: the op of the target raised first,
                # so the outer op's real input was never reached; it crashes there now (the next
                # pass of the fix loop converts it), one op further than before
                continue
            return f"re-linted, the fix adds a {key[0]} finding"
    return None


def _masked_crash(f: Finding, target: Finding, spans, source: str, new: str) -> bool:
    """Is ``f`` (a strict-mode crash of the fixed text) at an op of the statement where
    ``target`` crashed before the fix (its rows, mapped back through the fix's edits)?"""
    step = next((s for s in f.trace if s.kind == "leak"), None)
    if step is None:
        return False
    starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(new)]
    if not 0 < step.location.row <= len(starts):
        return False
    offset = starts[step.location.row - 1] + step.location.column - 1
    delta = 0
    for begin, end, content in sorted(spans, key=lambda s: (s[0], s[1])):
        if offset < begin + delta:
            break
        if offset < begin + delta + len(content):
            return False  # inside the text the fix inserted
        delta += len(content) - (end - begin)
    old_starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(source)]
    row = bisect.bisect_right(old_starts, offset - delta)
    return target.location.row <= row <= target.end_location.row


def _source_and_region(f: Finding, text: str) -> tuple | None:
    """The code that made ``f``'s real value and the expression that entered its region
    (a fix edits neither: it may add `as fake_mode` after the latter), or None when the
    trace lacks either."""
    lines = text.splitlines()
    out = []
    for kind in ("source", "region"):
        step = next((s for s in f.trace if s.kind == kind), None)
        if step is None or not 0 < step.location.row <= len(lines):
            return None
        line = lines[step.location.row - 1]
        if step.end_location.row == step.location.row:
            line = line[step.location.column - 1:step.end_location.column - 1]
        out.append(line.strip())
    return tuple(out)


# ---------------------------------------------------------------------------
# names bound before use


def _new_spans(spans) -> list[tuple[int, int]]:
    """Where the inserted contents lie in the fixed text."""
    out, delta = [], 0
    for begin, end, content in sorted(spans, key=lambda s: (s[0], s[1])):
        out.append((begin + delta, begin + delta + len(content)))
        delta += len(content) - (end - begin)
    return out


class _Unreadable(Exception):
    """libcst cannot parse the fixed text."""


def _unbound_inserted_names(text: str, tree: ast.Module, spans) -> tuple[str, int] | None:
    """The first name read inside inserted text that no binding reaches, as
    ``(name, line)``; None when every such read is bound before it.

    The fixed text's scopes come from libcst (``ScopeProvider``: which bindings a read
    can refer to, through ``global``/``nonlocal``, class bodies and comprehensions) and
    its positions from ``PositionProvider``. A read is bound when one of its referents is
    a builtin, or a binding of its own scope made before it (a binding only later is an
    ``UnboundLocalError``), or a binding of an enclosing function (a closure runs later),
    or a module binding made before it; inside a comprehension or lambda the bindings of
    that comprehension or lambda count wherever they are written."""
    import libcst as cst
    from libcst.metadata import ComprehensionScope, GlobalScope, MetadataWrapper, PositionProvider, ScopeProvider

    inserted = [s for s in _new_spans(spans) if s[1] > s[0]]
    if not inserted:
        return None
    starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(text)]

    def row_col(offset):
        row = bisect.bisect_right(starts, offset)
        return row, offset - starts[row - 1]

    ranges = [(row_col(b), row_col(e)) for b, e in inserted]
    try:
        wrapper = MetadataWrapper(cst.parse_module(_NEWLINE_RE.sub("\n", text)), unsafe_skip_copy=True)
        scopes = wrapper.resolve(ScopeProvider)
        positions = wrapper.resolve(PositionProvider)
    except Exception as exc:  # libcst.ParserSyntaxError and its internal errors
        raise _Unreadable(type(exc).__name__) from None

    def where(node):
        rng = positions.get(node)
        return ((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)) if rng else None

    def reaches(access, at) -> bool:
        for ref in access.referents:
            if not isinstance(ref, cst.metadata.Assignment):
                return True  # a builtin
            if ref.scope is not access.scope and not isinstance(ref.scope, GlobalScope):
                return True  # an enclosing function or comprehension: the inner code runs later
            if ref.scope is access.scope and (isinstance(ref.scope, ComprehensionScope) or isinstance(ref.node, cst.Param)):
                return True  # a comprehension variable, a parameter
            span = where(ref.node)
            if span is not None and span[1] <= at:
                return True  # bound before the read
        return False

    original = None
    all_scopes = {id(sc): sc for sc in scopes.values() if sc is not None}.values()
    found = []
    seen = set()
    for scope in scopes.values():
        if scope is None or id(scope) in seen:
            continue
        seen.add(id(scope))
        for access in scope.accesses:
            node = access.node
            if not isinstance(node, cst.Name):
                continue
            span = where(node)
            if span is None or not any(b <= span[0] < e for b, e in ranges):
                continue
            if reaches(access, span[0]):
                continue
            name = node.value
            if not access.referents and isinstance(access.scope, ComprehensionScope) and \
                    name in access.scope.assignments:
                continue  # libcst gives a later `for` target read in the `if` clause no referent
            if name in _BUILTINS and not access.referents:
                continue
            if not access.referents and not any(name in sc.assignments for sc in all_scopes):
                if original is None:
                    original = _original_text(text, inserted)
                if re.search(rf"\b{re.escape(name)}\b", original):
                    continue  # the code's own name from somewhere the analysis cannot see (a star import)
            found.append((span[0], name))
    if not found:
        return None
    (line, _), name = min(found)
    return name, line


def _original_text(text: str, inserted) -> str:
    out, last = [], 0
    for b, e in sorted(inserted):
        out.append(text[last:b])
        last = e
    out.append(text[last:])
    return "".join(out)


# ---------------------------------------------------------------------------
# a conversion inside an op that stays a hazard


def _step(f: Finding, kind: str):
    step = next((s for s in f.trace if s.kind == kind), None)
    return None if step is None else (step.location.row, step.location.column)


def _contains(outer: Finding, inner: Finding) -> bool:
    """Does ``outer``'s range hold ``inner``'s, and more?"""
    a, b = (outer.location.row, outer.location.column), (outer.end_location.row, outer.end_location.column)
    c, d = (inner.location.row, inner.location.column), (inner.end_location.row, inner.end_location.column)
    return a <= c and d <= b and (a, b) != (c, d)


def fixed_text(source: str, fix: Fix) -> str | None:
    """The text ``fix`` makes of ``source`` the way :func:`prove` applies it (None if it does not apply)."""
    from fakegrad_lint.fix import apply as fixes

    newline = fixes.dominant_newline(source)
    try:
        edits = [type(e)(e.start, e.end, fixes._convert_newlines(e.content, newline)) for e in fix.edits]
        spans = fixes._spans(source, edits, fixes.line_starts(source))
        fixes._check_disjoint(spans)
    except fixes.EditError:
        return None
    return fixes._apply_spans(source, spans)


def unfixed_enclosing_op(source: str, findings: list[Finding], relint: Callable[[str], list[Finding]]
                         ) -> list[tuple[int, str]]:
    """The fixes among ``findings`` (each with its ``fix`` or ``no_fix`` decided) that leave
    the hazard they target, as ``(index, reason)``.

    ``self.out(self.emb(tokens) * table)`` with a leaked fake ``table``: the analysis
    reports the real ``self.emb(tokens)`` at the inner op and the real module ``self.out``
    at the op that holds it, both from the same region to the same backward. Converting
    ``self.emb(tokens)`` makes the inner op's result fake, and ``self.out`` still mixes a
    fake with its real requires-grad parameters: the backward still leaves a FakeTensor
    ``.grad``. Such a fix is only a step when the enclosing finding is fixed too; where
    that finding has no fix, and re-linted the fixed text still has it, the conversion
    alone is not a fix (and on a program where the leak does not happen it only touches
    working code). Repeated until nothing more is withdrawn: a withdrawn enclosing fix
    leaves its inner ones alone in turn."""
    memo: dict[str, list[Finding]] = {}

    def after(fix: Fix) -> list[Finding] | None:
        new = fixed_text(source, fix)
        if new is None:
            return None
        if new not in memo:
            try:
                memo[new] = relint(new)
            except Exception:  # noqa: BLE001 - not re-lintable: prove() already refused it
                memo[new] = []
        return memo[new]

    unfixed = {i for i, f in enumerate(findings) if f.fix is None}
    out: list[tuple[int, str]] = []
    changed = True
    while changed:
        changed = False
        for i, f in enumerate(findings):
            if i in unfixed or not f.fix.edits:
                continue
            region, sink = _step(f, "region"), _step(f, "sink")
            if region is None or sink is None:
                continue
            outers = [g for j, g in enumerate(findings) if j in unfixed and g.code == f.code
                      and _step(g, "region") == region and _step(g, "sink") == sink and _contains(g, f)]
            if not outers:
                continue
            now = after(f.fix)
            if now is None:
                continue
            keys = _keys(now)
            left = next((g for g in outers if keys[finding_key(g)] >= _keys([g])[finding_key(g)]), None)
            if left is None:
                continue
            value = left.extra.get("value", "the enclosing value")
            out.append((i, f"the op that holds it still mixes the leaked fake with the real requires-grad "
                           f"`{value}` (line {left.location.row}), which has no fix: converting "
                           f"`{f.extra.get('value', 'this value')}` alone leaves the hazard"))
            unfixed.add(i)
            changed = True
    return out
