"""Every fix is proved before it is offered.

:func:`prove` takes the source, one finding's fix and a ``relint`` callable (the
analysis without fixes) and returns ``None`` when the fix is proved, else the
reason it is not offered (the finding then says ``no fix: <reason>``):

1. its edits apply (inside the text, not overlapping) and the fixed text parses;
2. re-linted, the finding it targets is gone and no new finding appears
   (findings are compared by rule and the value they name: the fix may clear
   several findings of the same value, never add one);
3. every name read inside the inserted text is bound before that read, in its
   scope or an enclosing one (a use before the hoisted copy, an ``import torch``
   below the region, a mode named only in another function all fail here);
4. it converts only values the analysis proved to be tensors, containers of
   tensors or modules: that is the plan's kind, which the builders trust.

The libcst check of the written text (``fixes._lossless``) is skipped for files
with a line longer than :data:`LONG_LINE`: libcst's parser is quadratic in a
line's length (28 s on a 1 MB line), so such files get no fix, at once.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from collections import Counter
from typing import Callable

from fakegrad_lint.findings import Finding, Fix
from fakegrad_lint.sources.text import NEWLINE_RE as _NEWLINE_RE

__all__ = ["LONG_LINE", "long_line", "prove", "finding_key"]

#: Files with a line longer than this get no fix (see the module docstring).
LONG_LINE = 10_000

_BUILTINS = frozenset(dir(builtins))
_FORWARD_ONLY = "FGL004"  # the opt-in forward-only rule: a downgrade, not a new hazard


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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(new)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        return f"the fixed text does not parse: {getattr(exc, 'msg', exc)}{where}"
    unbound = _unbound_inserted_names(new, tree, spans)
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
    for key, count in now.items():
        if count > was[key]:
            if key[0] == _FORWARD_ONLY and key[1] in values_before:
                continue  # a value leaked at the same place before: now it is only forward
            return f"re-linted, the fix adds a {key[0]} finding"
    return None


# ---------------------------------------------------------------------------
# names bound before use


def _new_spans(spans) -> list[tuple[int, int]]:
    """Where the inserted contents lie in the fixed text."""
    out, delta = [], 0
    for begin, end, content in sorted(spans, key=lambda s: (s[0], s[1])):
        out.append((begin + delta, begin + delta + len(content)))
        delta += len(content) - (end - begin)
    return out


class _Scope:
    def __init__(self, node, parent):
        self.node, self.parent = node, parent
        self.bindings: dict[str, list[tuple[int, int]]] = {}
        self.globals: set[str] = set()

    def bind(self, name, at):
        self.bindings.setdefault(name, []).append(at)


def _unbound_inserted_names(text: str, tree: ast.Module, spans) -> tuple[str, int] | None:
    """The first name read inside inserted text that no binding reaches, as
    ``(name, line)``; None when every such read is bound before it."""
    inserted = [s for s in _new_spans(spans) if s[1] > s[0]]
    if not inserted:
        return None
    line_starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(text)]
    lines = _NEWLINE_RE.split(text)

    def offset(lineno, col):
        line = lines[lineno - 1]
        if not line.isascii():
            col = len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))
        return line_starts[lineno - 1] + col

    def is_inserted(node):
        start = offset(node.lineno, node.col_offset)
        return any(b <= start < e for b, e in inserted)

    reads: list[tuple[ast.Name, _Scope]] = []
    every_binding: set[str] = set()

    def pos_end(node):
        return (node.end_lineno, node.end_col_offset)

    def pos_start(node):
        return (node.lineno, node.col_offset)

    def bind_target(target, scope, at):
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                scope.bind(sub.id, at)
                every_binding.add(sub.id)
            elif isinstance(sub, ast.Starred) and isinstance(sub.value, ast.Name):
                scope.bind(sub.value.id, at)

    def visit(node, scope, stmt_end):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in node.decorator_list:
                visit(d, scope, stmt_end)
            scope.bind(node.name, pos_end(node))
            every_binding.add(node.name)
            if isinstance(node, ast.ClassDef):
                for b in node.bases + [k.value for k in node.keywords]:
                    visit(b, scope, stmt_end)
                inner = _Scope(node, scope)
                for stmt in node.body:
                    visit(stmt, inner, pos_end(stmt))
                return
            args = node.args
            for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
                visit(default, scope, stmt_end)
            inner = _Scope(node, scope)
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None:
                    inner.bind(a.arg, (0, 0))
                    every_binding.add(a.arg)
            for stmt in node.body:
                visit(stmt, inner, pos_end(stmt))
            return
        if isinstance(node, ast.Lambda):
            inner = _Scope(node, scope)
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None:
                    inner.bind(arg.arg, (0, 0))
            visit(node.body, inner, stmt_end)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            inner = _Scope(node, scope)
            for i, gen in enumerate(node.generators):
                visit(gen.iter, scope if i == 0 else inner, stmt_end)
                bind_target(gen.target, inner, (0, 0))
                for cond in gen.ifs:
                    visit(cond, inner, stmt_end)
            for part in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
                visit(part, inner, stmt_end)
            return
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            scope.globals.update(node.names)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                if name != "*":
                    scope.bind(name, pos_end(node))
                    every_binding.add(name)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                visit(item.context_expr, scope, stmt_end)
                if item.optional_vars is not None:
                    bind_target(item.optional_vars, scope, pos_end(item.optional_vars))
            for stmt in node.body:
                visit(stmt, scope, pos_end(stmt))
            return
        if isinstance(node, (ast.For, ast.AsyncFor)):
            visit(node.iter, scope, stmt_end)
            bind_target(node.target, scope, pos_end(node.target))
            for stmt in node.body + node.orelse:
                visit(stmt, scope, pos_end(stmt))
            return
        if isinstance(node, ast.NamedExpr):
            visit(node.value, scope, stmt_end)
            bind_target(node.target, scope, pos_end(node))
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if node.value is not None:
                visit(node.value, scope, stmt_end)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and not isinstance(node, ast.AugAssign):
                    bind_target(t, scope, pos_end(node))
                else:
                    visit(t, scope, stmt_end)
                    if isinstance(t, (ast.Tuple, ast.List)):
                        bind_target(t, scope, pos_end(node))
            return
        if isinstance(node, ast.ExceptHandler) and node.name:
            scope.bind(node.name, pos_start(node))
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                if is_inserted(node):
                    reads.append((node, scope))
            else:
                scope.bind(node.id, pos_end(node))
                every_binding.add(node.id)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, scope, stmt_end)

    module_scope = _Scope(tree, None)
    for stmt in tree.body:
        visit(stmt, module_scope, pos_end(stmt))

    for node, scope in reads:
        name, at = node.id, pos_start(node)
        if not _reaches(name, at, scope):
            if name in _BUILTINS:
                continue
            if name not in every_binding and re.search(rf"\b{re.escape(name)}\b", _original_text(text, inserted)):
                continue  # the code's own name from somewhere the analysis cannot see (a star import)
            return name, node.lineno
    return None


def _original_text(text: str, inserted) -> str:
    out, last = [], 0
    for b, e in sorted(inserted):
        out.append(text[last:b])
        last = e
    out.append(text[last:])
    return "".join(out)


def _reaches(name: str, at: tuple[int, int], scope: _Scope) -> bool:
    """Is ``name`` bound before ``at`` in ``scope``, or (for a function, class or
    comprehension) anywhere in an enclosing scope before it is called?"""
    first = True
    while scope is not None:
        positions = scope.bindings.get(name, [])
        if name in scope.globals:
            scope = _root(scope)
            positions = scope.bindings.get(name, [])
            return any(p <= at for p in positions) or bool(positions)
        if first:
            if any(p <= at for p in positions):
                return True
            if positions and isinstance(scope.node, (ast.Module, ast.ClassDef)):
                return False
            if positions:
                return False  # a local bound only later: UnboundLocalError
        elif positions:
            # an enclosing scope: a nested function runs later, so any binding before
            # the definition counts (bindings after it are a guess: not counted)
            return any(p <= at for p in positions) or not isinstance(scope.node, ast.Module)
        first = False
        scope = scope.parent
        while scope is not None and isinstance(scope.node, ast.ClassDef) and not first:
            scope = scope.parent  # class bodies are not enclosing scopes
    return False


def _root(scope):
    while scope.parent is not None:
        scope = scope.parent
    return scope
