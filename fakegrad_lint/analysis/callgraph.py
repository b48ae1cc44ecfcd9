"""A function-level call graph of a module, from its AST: per top-level statement
(a def, a class with its methods, an assignment, a registration) the names it binds
and what its code calls or reads, resolved through the module's own imports.

It replaces the text-level summary of :mod:`fakegrad_lint.analysis.project`
(every word of a top-level statement's text, every ``name =`` inside it counted as
a binding), which saturates on large packages: a def that names a hot class only in
an annotation, or a statement that binds a local ``device`` somewhere in a method,
made every statement that mentions it hot (lightning-thunder: ``thunder.core.prims``
669 of 669 names). Here a def is hot only if its *code* opens a region, names a
mode, or calls or reads a hot def (:func:`fakegrad_lint.analysis.project.hot_names`
follows these to a fixed point across the project's modules):

- annotations, docstrings and the class of a type test (``isinstance(m, Mode)``)
  are not code that can open a region (as :func:`code_text._hot_in_code`);
- names bound inside a def or a class are not bindings of the module (``global X``
  in a def binds ``X`` there);
- ``m.f`` where ``m`` is bound by an import is kept as the dotted chain
  ``"m.f"``: it is hot only when ``f`` is a hot name of that module (or ``m.f``
  a submodule with one), not when anything of ``m`` is;
- what cannot be resolved stays conservative: a bare module name (passed around,
  ``getattr(m, name)``) is hot when its module holds any hot name; ``globals()``,
  ``vars()``, ``eval``, ``exec``, ``__import__`` and ``import_module`` of a computed
  name read as the word :data:`DYNAMIC`, hot when the module holds or imports any hot
  name. ``getattr(obj, name)`` on anything else reads a member of a value the
  code already got from somewhere (a parameter, a call that is resolved itself),
  and ``self.x`` a member of its class, whose code is part of the class's.

The result has the shape of the text-level one (``(statements, registrations)``,
only tuples, frozensets and strings, so it keeps by content in the summary store),
and the text-level summary is the fallback for a module that does not parse.
"""

from __future__ import annotations

import ast
import sys

from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

DYNAMIC = "<dynamic>"  # a word no identifier can be: code that reads names computed at run time
_DYNAMIC_CALLS = frozenset({"globals", "vars", "eval", "exec", "__import__"})
_ENTRY = frozenset(ENTRY_WORDS)
_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_intern = sys.intern


def statements(text: str, imported=frozenset()):
    """``(statements, registrations)`` of a module's top level, or None when its
    text does not parse (the caller falls back to the text-level summary).
    ``imported``: the names the module's import statements bind (at any depth),
    whose attribute chains are kept whole.

    statements: ``(names bound, words, line)`` per top-level statement, ``words`` being
    the names its code reads or calls (and the dotted chains ``m.f`` of names bound
    by imports); registrations: ``(dotted name, names bound, words)`` for each
    decorator, top-level call (``register(...)``, ``REG.update(...)``) and top-level
    store into a subscript or attribute (``REG["fake"] = cls``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    info: list = []
    regs: list = []
    try:
        _top(tree.body, imported, info, regs, True)
    except RecursionError:
        return None
    return tuple(info), tuple(regs)


def _top(body, imported, info, regs, module_level):
    for i, stmt in enumerate(body):
        if module_level and i == 0 and _is_docstring(stmt):
            continue
        t = type(stmt)
        if t is ast.Import or t is ast.ImportFrom:
            names = {a.name for a in stmt.names} | {a.asname or "" for a in stmt.names}
            if t is ast.ImportFrom and stmt.module:
                names |= set(stmt.module.split("."))
            if t is ast.Import:
                names |= {p for a in stmt.names for p in a.name.split(".")}
            if not names.isdisjoint(_ENTRY) or (t is ast.ImportFrom and stmt.module
                                                 and stmt.module.startswith("torch._subclasses")):
                # `from torch._subclasses.fake_tensor import FakeTensorMode as FTM`: FTM is a way in
                bound = {a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*"}
                info.append((frozenset(bound), _ENTRY, stmt.lineno))
            continue  # the project import bindings say what the others bind
        if t in _FUNCS or t is ast.ClassDef:
            refs = _Refs(imported)
            words = refs.of_def(stmt)
            bound = frozenset({stmt.name} | refs.globals)  # `global X` in a def binds X there
            info.append((bound, words, stmt.lineno))
            for dec in stmt.decorator_list:
                name = _dotted(dec.func if type(dec) is ast.Call else dec)
                if name is not None:
                    regs.append((name, bound, words))
            continue
        if t in (ast.If, ast.Try, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith) \
                or t.__name__ == "TryStar" or t is getattr(ast, "Match", None):
            # the header binds its targets (`for x in`, `with m as x`); the bodies are
            # top-level statements of their own
            refs = _Refs(imported)
            targets = set()
            for field, value in ast.iter_fields(stmt):
                if field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    continue
                for node in value if isinstance(value, list) else [value]:
                    if isinstance(node, ast.AST):
                        if field == "target":
                            targets |= _stored(node)
                            refs.visit_store(node)
                        elif field == "items":
                            refs.visit(node.context_expr)
                            if node.optional_vars is not None:
                                targets |= _stored(node.optional_vars)
                                refs.visit_store(node.optional_vars)
                        else:
                            refs.visit(node)
            if t is ast.Try or t.__name__ == "TryStar":
                for h in stmt.handlers:
                    if h.type is not None:
                        refs.visit(h.type)
                    if h.name:
                        targets.add(h.name)
            words = refs.words()
            info.append((frozenset(targets), words, stmt.lineno))
            first_info, first_reg = len(info), len(regs)
            for field in ("body", "orelse", "finalbody"):
                _top(getattr(stmt, field, None) or [], imported, info, regs, False)
            for h in getattr(stmt, "handlers", None) or []:
                _top(h.body, imported, info, regs, False)
            for c in getattr(stmt, "cases", None) or []:
                _top(c.body, imported, info, regs, False)
            if words:
                # what the body binds is made under its header (`with FakeTensorMode():
                # x = f()` at import time binds a fake `x`): the header's words are its too
                info[first_info:] = [(b, w | words, line) for b, w, line in info[first_info:]]
                regs[first_reg:] = [(n, b, w | words) for n, b, w in regs[first_reg:]]
            continue
        refs = _Refs(imported)
        bound = set()
        stores = []  # dotted bases of subscript / attribute stores (`REG["fake"] = cls`)
        if t is ast.Assign or t is ast.AugAssign or t is ast.AnnAssign:
            targets = stmt.targets if t is ast.Assign else [stmt.target]
            for tg in targets:
                bound |= _stored(tg)
                refs.visit_store(tg)
                stores += _store_bases(tg)
            if stmt.value is not None:
                refs.visit(stmt.value)
        else:
            refs.visit(stmt)
        bound |= refs.walrus
        words = refs.words()
        bound = frozenset(bound)
        if bound:
            info.append((bound, words, stmt.lineno))
        head = None
        if t is ast.Expr and type(stmt.value) is ast.Call:
            head = _dotted(stmt.value.func, 2)
        if head is not None:
            regs.append((head, bound, words))
        for s in stores:
            regs.append((s, bound, words))
        if head is None and not stores and not bound:
            regs.append(("", bound, words))  # code run at import (`_MODE.__enter__()`), binds nothing


def _is_docstring(stmt) -> bool:
    return type(stmt) is ast.Expr and type(stmt.value) is ast.Constant and isinstance(stmt.value.value, str)


def _stored(target) -> set:
    """Names a store target binds (``a``, ``a, b``, ``*rest``), not ``a[k]`` / ``a.x``."""
    t = type(target)
    if t is ast.Name:
        return {target.id}
    if t in (ast.Tuple, ast.List):
        out = set()
        for e in target.elts:
            out |= _stored(e)
        return out
    if t is ast.Starred:
        return _stored(target.value)
    return set()


def _store_bases(target) -> list:
    """The dotted base of a subscript or attribute store (``REG`` in ``REG[k] = v``)."""
    t = type(target)
    if t in (ast.Tuple, ast.List):
        return [b for e in target.elts for b in _store_bases(e)]
    if t is ast.Subscript or t is ast.Attribute:
        base = target.value
        while type(base) is ast.Subscript:
            base = base.value
        name = _dotted(base, 2)
        return [name] if name is not None else []
    return []


def _dotted(node, limit=2):
    """``a`` or ``a.b`` (at most ``limit`` parts) of a name or attribute chain."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    parts.reverse()
    return ".".join(parts[:limit])


class _Refs:
    """The words of code: names read, chains ``m.f`` of import-bound names, entry
    words wherever they stand in code (an attribute, a keyword, a string), not
    annotations, docstrings or the classes of type tests."""

    __slots__ = ("imported", "out", "globals", "walrus")

    def __init__(self, imported):
        self.imported = imported
        self.out = set()
        self.globals = set()  # names declared `global` in the defs visited
        self.walrus = set()  # names bound by `:=` outside any def

    def words(self) -> frozenset:
        return frozenset(map(_intern, self.out))

    def of_def(self, node) -> frozenset:
        self.visit_def(node)
        return self.words()

    def visit_def(self, node):
        for dec in node.decorator_list:
            self.visit(dec)
        if type(node) is ast.ClassDef:
            for b in node.bases:
                self.visit(b)
            for k in node.keywords:
                self.visit(k.value)
            body = node.body
        else:
            a = node.args
            for d in (*a.defaults, *(x for x in a.kw_defaults if x is not None)):
                self.visit(d)
            body = node.body
        for i, stmt in enumerate(body):
            if i == 0 and _is_docstring(stmt):
                continue
            self.visit(stmt)

    def visit_store(self, target):
        """The parts of a store target that are read (``a`` in ``a[k] = v``, ``k``)."""
        t = type(target)
        if t is ast.Name:
            return
        if t in (ast.Tuple, ast.List):
            for e in target.elts:
                self.visit_store(e)
        elif t is ast.Starred:
            self.visit_store(target.value)
        elif t is ast.Subscript:
            self.visit(target.value)
            self.visit(target.slice)
        elif t is ast.Attribute:
            self.visit(target.value)
            if target.attr in _ENTRY:
                self.out.add(target.attr)
        else:
            self.visit(target)

    def visit(self, node):
        out = self.out
        todo = [node]
        pop, push = todo.pop, todo.append
        while todo:
            n = pop()
            t = type(n)
            if t is ast.Name:
                out.add(n.id)
                continue
            if t is ast.Attribute:
                chain = []
                base = n
                while type(base) is ast.Attribute:
                    chain.append(base.attr)
                    base = base.value
                out.update(a for a in chain if a in _ENTRY)
                if type(base) is ast.Name:
                    if base.id in self.imported:
                        chain.append(base.id)
                        chain.reverse()
                        out.add(".".join(chain))
                    else:
                        out.add(base.id)
                    continue
                push(base)
                continue
            if t in _FUNCS or t is ast.ClassDef:
                self.visit_def(n)
                continue
            if t is ast.Lambda:
                a = n.args
                todo.extend(a.defaults)
                todo.extend(x for x in a.kw_defaults if x is not None)
                push(n.body)
                continue
            if t is ast.arg:
                continue  # its annotation is never evaluated
            if t is ast.AnnAssign:
                if n.value is not None:
                    push(n.value)
                if type(n.target) is not ast.Name:
                    self.visit_store(n.target)
                continue
            if t is ast.Expr and type(n.value) is ast.Constant and isinstance(n.value.value, str):
                continue  # a docstring (or a bare string): not code
            if t is ast.Constant:
                v = n.value
                if type(v) is str:
                    if v.isidentifier():
                        out.add(v)  # `getattr(obj, "helper")`, `REGISTRY["fake"]`: a name by its string
                    elif any(w in v for w in _ENTRY):
                        out.update(w for w in _ENTRY if w in v)  # `"torch._subclasses.FakeTensorMode"`
                continue
            if t is ast.keyword:
                if n.arg in _ENTRY:
                    out.add(n.arg)  # make_fx(f, tracing_mode="fake")
                push(n.value)
                continue
            if t is ast.Call:
                f = n.func
                if type(f) is ast.Name and f.id in _TYPE_TESTS and len(n.args) == 2 and not n.keywords:
                    push(f)
                    push(n.args[0])
                    continue  # the class of a type test is only compared
                fname = f.id if type(f) is ast.Name else f.attr if type(f) is ast.Attribute else None
                if (fname in _DYNAMIC_CALLS and (fname != "vars" or not n.args)) \
                        or (fname == "import_module" and n.args and type(n.args[0]) is not ast.Constant):
                    out.add(DYNAMIC)
            if t is ast.Global:
                self.globals.update(n.names)
                continue
            if t is ast.NamedExpr:
                if type(n.target) is ast.Name:
                    self.walrus.add(n.target.id)
                push(n.value)
                continue
            if t is ast.ImportFrom or t is ast.Import:
                for a in n.names:
                    if a.name in _ENTRY or (a.asname or "") in _ENTRY:
                        out.update(w for w in (a.name, a.asname) if w in _ENTRY)
                if t is ast.ImportFrom and n.module and n.module.startswith("torch._subclasses"):
                    out.update(_ENTRY)
                continue
            for f in n._fields:
                v = getattr(n, f, None)
                if type(v) is list:
                    todo.extend(x for x in v if isinstance(x, ast.AST))
                elif isinstance(v, ast.AST):
                    push(v)
