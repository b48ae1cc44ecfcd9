"""The whole-project side of the interpreter: an ``import`` of a module of the
linted project (found by :mod:`fakegrad_lint.analysis.roots`) runs that module's
body once, in its own scope, with its own file for positions; names imported from
it are bound lazily (the module runs when one is first used). Calls into another
module are recorded as entries so that a leak there is reported where the linted
file's code hands the real value over.
"""

from __future__ import annotations

import ast
import os
import re

from fakegrad_lint.analysis import roots as R
from fakegrad_lint.analysis import values as _values
from fakegrad_lint.analysis.project import hot_names_of
from fakegrad_lint.analysis.state import MAX_DEPTH, Crashed, Scope, State, YieldReached, _BlockExit
from fakegrad_lint.analysis.summaries import summarize
from fakegrad_lint.analysis.values import UNKNOWN, ClassVal, ConstVal, DataFileVal, FuncVal, LazyImport, ModRef, ProjModVal, SeqVal


# a module body that binds names Python sees only at run time
_DYNAMIC_NAMESPACE = re.compile(r"\bglobals\(\)|\bsetattr\(|\bsys\.modules\b|\b__dict__\b|\bvars\(\)")
# top-level statements that bind the same names on every path
_STRAIGHT_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign,
                        ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass)


def _is_main_guard(s):
    """``if __name__ == "__main__":`` (not taken in an imported module)."""
    t = s.test if isinstance(s, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__" and isinstance(t.ops[0], ast.Eq))


DATA_SUFFIXES = (".json",)  # project data files read as configuration (what json.load parses)
MAX_DATA_FILE = 65536

class ProjectLinkMixin:
    """Imports of project modules: run them once, bind their names lazily."""

    _importer_st = None  # the state of the import statement that runs a module's body now
    _complete_modules = None  # paths of the project modules whose body ran to its end

    def module_namespace(self, mv):
        """``vars(mod)`` of a project module: its globals as a dict with known keys, in
        Python's order (the module attributes the import system sets first, then each
        name as its body first bound it), when its body ran to its end and writes no
        name Python binds at run time (``globals()[...]``, ``setattr``, ``del``,
        ``sys.modules``); else unknown."""
        mf = mv.mf
        if mf is None or mv is self.main or self._complete_modules is None or mf.path not in self._complete_modules:
            return UNKNOWN
        if _DYNAMIC_NAMESPACE.search(mf.source) or not all(
                isinstance(x, _STRAIGHT_STATEMENTS) or _is_main_guard(x) for x in mf.tree.body):
            return UNKNOWN  # (a name bound on some paths only: whether it is there is not known)
        keys = ["__name__", "__doc__", "__package__", "__loader__", "__spec__"] + (["__path__"] if mv.is_pkg else [])
        keys += ["__file__", "__cached__", "__builtins__"]
        if any(isinstance(x, ast.AnnAssign) for x in mf.tree.body):
            keys.append("__annotations__")
        names = dict.fromkeys(keys)
        for k in mv.scope.vars:
            if not isinstance(k, str) or not k.isidentifier():
                return UNKNOWN
            names.setdefault(k, None)
        keys = tuple(names)
        elts = tuple(self._force(mv.scope.vars[k]) if k in mv.scope.vars else UNKNOWN for k in keys)
        return SeqVal(elts, elts, keys, is_dict=True)

    def _switch(self, ctx):
        """Run the code of ``ctx`` (a ProjModVal) from now on: positions and
        texts come from its file."""
        self.ctx = ctx
        self.pos = ctx.mf.pos if ctx.mf is not None else self._main_pos
        _values.CURRENT_FILE[0] = ctx if ctx is not self.main else None
        _values.CURRENT_ENTRY[0] = self._entry_token()

    def _entry_token(self):
        """:data:`values.CURRENT_ENTRY` for the code running now: the innermost call
        made by the linted file's code into another module, ``MODULE_BODY`` inside
        the body of an imported module (its values are its own), None outside."""
        for entry in reversed(self._entries):
            if entry[3]:
                return _values.MODULE_BODY
            if entry[0] is self.main:
                return entry
        return None

    def _lines_of(self, fv):
        ctx = self._scope_ctx.get(getattr(fv.scope, "module", None))
        if ctx is None or ctx is self.main or ctx.mf is None:
            return self._main_pos.lines
        return ctx.mf.pos.lines

    def _load_module(self, name):
        """The namespace of project module ``name`` after running its body once
        (None when ``name`` is not a module of the project)."""
        path = self.project.find(name)
        if path is None:
            return None
        if self.main_path is not None and os.path.abspath(path) == self.main_path:
            return self.main
        mv = self._modules.get(path)
        if mv is not None:
            return mv
        if len(self._modules) >= R.MAX_MODULES or len(self._entries) > MAX_DEPTH or self.exhausted:
            return None
        try:
            size = os.path.getsize(path)
        except OSError:
            return None
        if self._loaded_bytes + size > R.MAX_PROJECT_BYTES:
            return None  # the analysis has read enough of the project: the rest is unknown
        self._loaded_bytes += size
        if "." in name:
            self._load_module(name.rsplit(".", 1)[0])  # a package's __init__ runs first
        mf = R.load(path)
        if mf is None:
            return None
        scope = Scope()
        scope.func_node = mf.tree
        scope.vars["__name__"] = ConstVal(name)
        mv = ProjModVal(name, os.path.basename(path) == "__init__.py", mf, scope)
        self._modules[path] = mv
        self._scope_ctx[scope] = mv
        self.deps[path] = mf.sha
        if "." in name:
            parent = self._modules.get(self.project.find(name.rsplit(".", 1)[0]) or "")
            if parent is not None and name.rsplit(".", 1)[1] not in parent.scope.vars:
                parent.scope.vars[name.rsplit(".", 1)[1]] = mv
        prev = self.ctx
        importer, self._importer_st = self._importer_st, None  # (its own imports are its own)
        self._entries.append((prev, None, None, True, (), {}))
        self._switch(mv)
        try:
            st = State(scope)
            st.depth = len(self._entries)
            for i, stmt in enumerate(mf.tree.body):
                st.cur = (mf.tree.body, i)
                try:
                    self.exec_stmt(stmt, st)
                except (Crashed, _BlockExit, YieldReached):
                    break
            else:
                if not self.exhausted and not st.may:
                    if self._complete_modules is None:
                        self._complete_modules = set()
                    self._complete_modules.add(path)  # its body ran to its end on a known path
            mv.loaded = dict(scope.vars)
            if importer is not None and st.regions and not st.may:
                # a mode its body entered and did not leave (`_MODE.__enter__()` at import
                # time) stays entered for the code after the import statement
                importer.ctx = importer.ctx.but(regions=importer.regions + st.regions)
        finally:
            self._importer_st = importer
            self._entries.pop()
            self._switch(prev)
        return mv

    def _module_attr(self, mv, attr, names=None):
        """``mv.attr`` (``names``: the namespace to read it from, by default the
        module's as it is now)."""
        v = (mv.scope.vars if names is None else names).get(attr)
        if v is not None:
            lazy = type(v) is LazyImport
            v = self._force(v)
            if v is not UNKNOWN or not lazy or not mv.is_pkg:
                return v
            # `from . import settings` in a package's __init__, read back through the
            # package while that import is still being resolved (the lazy binding
            # reads itself): Python's `from pkg import x` then imports `pkg.x`
            sub = self._load_module(f"{mv.name}.{attr}")
            return sub if sub is not None else v
        sub = self._load_module(f"{mv.name}.{attr}")
        if sub is None and self.project.is_namespace(f"{mv.name}.{attr}"):
            sub = self._namespace(f"{mv.name}.{attr}")  # `import ns.sub.mod`: ns.sub has no __init__
        if sub is None and mv.loaded is not None and not attr.startswith("__"):
            hook = self._force(mv.scope.vars.get("__getattr__"))
            if isinstance(hook, FuncVal):
                # a module `__getattr__` (PEP 562, lazy modules): Python calls it with the name
                st = State(mv.scope)
                st.stack = (mv.mf.tree,) if mv.mf is not None else ()
                return self.call_function(hook, [ConstVal(attr)], {}, st, force=True)
        return sub if sub is not None else UNKNOWN

    def _force(self, v):
        """The value behind a lazy import (loading its module now), else ``v``."""
        if type(v) is not LazyImport:
            return v
        if v.value is None:
            v.value = UNKNOWN  # an import cycle sees an unknown value
            v.value = v.thunk()
        return v.value

    def _lazy(self, local):
        """Can this import of the running (imported) module be loaded lazily? Yes
        when the module's code names ``local`` again (it is used); an import of a
        module made for its side effects (``from . import cnn, mlp`` filling a
        registry) runs now. A name imported from a module (``from .x import a``)
        is always lazy: its module runs when the name is first used."""
        ctx = self.ctx
        if ctx is self.main or ctx.mf is None:
            return False
        return summarize(ctx.mf).used_again(local)

    def _import_project(self, alias, st):
        """``import a.b.c [as m]`` of a project module: True when bound here."""
        if self.project.find(alias.name) is None:
            return False
        local = alias.asname or alias.name.split(".")[0]

        def resolve():
            full = self._load_module(alias.name)
            if full is None or alias.asname:
                return full or UNKNOWN
            top = alias.name.split(".")[0]
            return self._load_module(top) or self._namespace(top)

        if self._lazy(local):
            st.scope.assign(local, LazyImport(resolve))
        else:
            st.scope.assign(local, self._importing(st, resolve))
        return True

    def _importing(self, st, load):
        """``load()`` for an import statement run now, in state ``st`` (what the
        module's body enters and does not leave stays entered there)."""
        prev, self._importer_st = self._importer_st, st
        try:
            return load()
        finally:
            self._importer_st = prev

    def _namespace(self, name):
        """A namespace package (a folder without ``__init__.py``): its attributes
        are its submodules."""
        ns = self._modules.get(("namespace", name))
        if ns is None:
            ns = self._modules[("namespace", name)] = ProjModVal(name, True, None, Scope())
        return ns

    def _import_from_project(self, s, st):
        """``from X import a, b`` where X (absolute or relative) is a project
        module or package: True when bound here."""
        ctx = self.ctx
        base = R.absolute_name(ctx.name, ctx.is_pkg, s.module, s.level)
        if base is None:
            return False
        path = self.project.find(base)
        if path is not None and "*" not in [a.name for a in s.names] and all(
                self._lazy(a.asname or a.name) or self.project.find(f"{base}.{a.name}") is None for a in s.names):
            # names of a project module: it runs when one of them is first used (and
            # they are what its body bound, as at this import); of one already run,
            # what it holds now
            done = self._modules.get(path)
            done = done if done is not None and done.loaded is not None else None
            for a in s.names:
                now = done.scope.vars.get(a.name) if done is not None else None
                st.scope.assign(a.asname or a.name, now if now is not None else
                                LazyImport(lambda name=a.name: self._from_module(base, name, True), (path, a.name)))
            return True
        mv = self._importing(st, lambda: self._load_module(base))
        if mv is None:
            # a namespace package (no __init__.py): `from pkg import mod`
            subs = {a.name: self._load_module(f"{base}.{a.name}") for a in s.names if a.name != "*"}
            if not subs or any(v is None for v in subs.values()):
                return False
            for a in s.names:
                st.scope.assign(a.asname or a.name, subs[a.name])
            return True
        for a in s.names:
            if a.name == "*":
                for k, v in list(mv.scope.vars.items()):
                    if not k.startswith("_"):
                        st.scope.assign(k, v)
                continue
            st.scope.assign(a.asname or a.name, self._module_attr(mv, a.name))
        return True

    def imports_cannot_fail(self, body) -> bool:
        """Is ``body`` (of a ``try``) only imports of project modules whose own
        top-level imports are of the standard library, torch or the project, or of
        torch's fake-mode API that the tables know (``from
        torch._subclasses.fake_tensor import FakeTensorMode``: torch is what is
        analysed)? Then it cannot raise ImportError and its handlers never run. A
        module that imports a third-party package (which may be missing: the
        fallback then runs) or cannot be read keeps the handlers."""
        if not body or not all(isinstance(x, (ast.Import, ast.ImportFrom)) for x in body):
            return False
        from fakegrad_lint.analysis import torch_tables as T

        known = T.FAKE_TENSOR_MODE | T.FAKE_COPY_MODE | T.DETECT_FAKE_MODE | T.UNSET_FAKE
        ctx = self.ctx
        files = []
        for x in body:
            if isinstance(x, ast.ImportFrom) and x.level == 0 and x.module and x.module.split(".")[0] == "torch":
                if all(f"{x.module}.{a.name}" in known for a in x.names):
                    continue
                return False
            if isinstance(x, ast.Import):
                names = [a.name for a in x.names]
                if all(n == "torch" for n in names):
                    continue
            else:
                base = R.absolute_name(ctx.name, ctx.is_pkg, x.module, x.level)
                if base is None:
                    return False
                names = [base]
            for name in names:
                path = self.project.find(name)
                if path is None:
                    return False
                files.append(path)
        for path in files:
            mf = R.load(path)
            if mf is None or not self._imports_present(mf):
                return False
        return True

    def _imports_present(self, mf) -> bool:
        """Every top-level import of a project module names the standard library,
        torch or a module of the project."""
        project = R.Project(R.roots_for(mf.path))
        for x in mf.tree.body:
            if isinstance(x, ast.Import):
                names = [a.name for a in x.names]
            elif isinstance(x, ast.ImportFrom):
                names = [R.absolute_name(mf.name, mf.is_pkg, x.module, x.level) or ""]
            else:
                continue
            for name in names:
                top = name.split(".", 1)[0]
                if not (top in R._STDLIB or top in ("torch", "functorch", "__future__") or project.find(name) is not None
                        or project.find(top) is not None):
                    return False
        return True

    def open_data_file(self, args, kwargs):
        """``open(path)`` for reading, with a constant relative path, in a project
        analysis: the project's data file it names, read as the program run from the
        project reads it. Found relative to the running module's folder or a project
        root; it must be one file (or several with the same text), small, and not one
        the linted file writes itself (``open(path, "w")``, ``json.dump``): else unknown.
        See the README (whole-project analysis) for why a checked-in configuration is
        taken as the one that runs."""
        path = args[0] if args else kwargs.get("file", UNKNOWN)
        mode = args[1] if len(args) > 1 else kwargs.get("mode", ConstVal("r"))
        if (self.project is None or not isinstance(path, ConstVal) or not isinstance(path.value, str)
                or not isinstance(mode, ConstVal) or mode.value not in ("r", "rt", "rb")):
            return UNKNOWN
        rel = path.value
        if not rel or os.path.isabs(rel) or ".." in rel.replace("\\", "/").split("/") or not rel.endswith(DATA_SUFFIXES):
            return UNKNOWN
        if re.search(r"(?:\bjson\.dump\b|\bwrite_text\b|\bopen\([^)]*[\"'][wax+]b?[\"'])", self.source):
            return UNKNOWN  # the program may write its configuration before reading it
        here = self.ctx.mf.path if self.ctx is not None and getattr(self.ctx, "mf", None) is not None else self.main_path
        folders = ([os.path.dirname(here)] if here else []) + list(self.project.roots)
        texts = {}
        for d in folders:
            f = os.path.join(d, rel)
            if os.path.isfile(f) and f not in texts:
                try:
                    if os.path.getsize(f) > MAX_DATA_FILE:
                        return UNKNOWN
                    with open(f, encoding="utf-8") as fh:
                        texts[f] = fh.read()
                except (OSError, UnicodeDecodeError):
                    return UNKNOWN
        if not texts or len(set(texts.values())) != 1:
            return UNKNOWN  # no such file, or which one is read depends on where the program runs
        for f in texts:
            self.deps[f] = R.file_sha(f)  # (editing it invalidates the cached findings)
        f, text = next(iter(texts.items()))
        return DataFileVal(text, f)

    def import_module_call(self, args, kwargs):
        """``importlib.import_module(name[, package])`` with a constant name: the
        project module it names (a relative name against ``package``, or the running
        module's package for ``__package__``), else the module as a reference."""
        first = args[0] if args else kwargs.get("name", UNKNOWN)
        if not (isinstance(first, ConstVal) and isinstance(first.value, str) and first.value):
            return UNKNOWN
        name = first.value
        if name.startswith("."):
            level = len(name) - len(name.lstrip("."))
            pkg = args[1] if len(args) > 1 else kwargs.get("package", UNKNOWN)
            ctx = self.ctx
            if isinstance(pkg, ConstVal) and isinstance(pkg.value, str) and pkg.value:
                base = R.absolute_name(pkg.value, True, name[level:] or None, level)
            elif ctx is not None and ctx.name:
                # `__package__` (or an unknown package): the running module's own
                base = R.absolute_name(ctx.name, ctx.is_pkg, name[level:] or None, level)
            else:
                base = None
            if base is None:
                return UNKNOWN
            name = base
        if self.project is not None and self.project.find(name) is not None:
            mv = self._load_module(name)
            return mv if mv is not None else UNKNOWN
        return UNKNOWN if name.startswith(".") else ModRef(name)

    def _from_module(self, base, name, as_loaded=False):
        mv = self._load_module(base)
        if mv is None:
            return UNKNOWN
        if as_loaded and mv.loaded is not None and mv.loaded.get(name) is not None:
            # `from base import name` when base's body ran: the value its body bound
            # (a later `global` reassignment by a setter does not reach this name)
            return self._module_attr(mv, name, mv.loaded)
        return self._module_attr(mv, name)

    def _opens_region(self, val, depth=0):
        """Can this project value (a module, or a function or class of another
        module) open a fake region? By the text of its definition, and of the
        functions of its module it calls."""
        if isinstance(val, LazyImport):
            if val.value is not None:
                return self._opens_region(val.value, depth)
            # not loaded yet: the names its module exports that can reach a region
            return val.hint is not None and val.hint[1] in hot_names_of(val.hint[0], 0)
        if isinstance(val, ProjModVal):
            return val is not self.main and val.mf is not None and self._names_entry(val.mf.source, val)
        if not isinstance(val, (FuncVal, ClassVal)) or depth > 4:
            return False
        ctx = self._scope_ctx.get(getattr(val.scope, "module", None))
        if ctx is None or ctx is self.main or ctx.mf is None:
            return False
        memo = self._opens_memo
        if val.node in memo:
            return memo[val.node]
        memo[val.node] = False
        n = val.node
        summary = summarize(ctx.mf)
        hit = self._names_entry(summary.text(n), ctx)
        if not hit:
            for name in summary.calls(n):
                target = self._force(ctx.scope.vars.get(name))
                if target is not None and target is not val and self._opens_region(target, depth + 1):
                    hit = True
                    break
        memo[val.node] = hit
        return hit

    def _module_hot_names(self, ctx):
        """The names of a project module (not the linted file) that can reach a fake
        region (:func:`~fakegrad_lint.analysis.project.hot_names_of`: a mode imported
        from another module, ``FAKE`` in ``from ..runtime import FAKE``): ways into a
        region in its code, as its own imports of FakeTensorMode are."""
        if ctx is self.main or ctx is None or ctx.mf is None:
            return frozenset()
        return hot_names_of(ctx.mf.path, 0)

    def _module_methods_named(self, ctx, name):
        """(def node, lines, ctx) of the methods called ``name`` of the classes a
        project module defines at its top level (``self.build(...)`` calls one)."""
        lines = ctx.mf.pos.lines
        return [(node, lines, ctx) for node in summarize(ctx.mf).methods_named(name)]

    def _main_entry(self):
        """The innermost call made by the linted file's code into another module
        of the project (None when the current code was not reached from it)."""
        for prev, site, stmt, is_load, args, kwargs in reversed(self._entries):
            if prev is self.main:
                return None if is_load else (site, stmt, args, kwargs)
        return None
