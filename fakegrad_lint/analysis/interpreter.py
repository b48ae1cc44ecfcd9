"""An abstract interpreter over the CPython AST of one file.

It runs the module body in program order, follows calls to functions, methods
and classes defined in the same file (arguments to parameters, closures,
globals, ``self`` attributes), and tracks for every value whether it is a real
tensor that requires grad, a fake tensor (and which real leaves are in its
autograd graph), a FakeTensorMode, or a context manager. Every time a real
requires-grad value becomes an operand of an op while a fake mode dispatches it,
a :class:`LeakRecord` is made; a later ``.backward()`` / ``torch.autograd.grad``
on a value whose graph holds that leak marks it as a hazard.

Top-level functions and methods that can touch a fake region are also analysed
on their own (parameters unknown), so library code with no call site is covered.
Unknown values never produce findings: precision first.
"""

from __future__ import annotations

import ast
import builtins
import os
import re

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.context import CallSite, DispatchContext
from fakegrad_lint.analysis.leaks import Leak, Route, Step, Verdict
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.positions import PositionMap
from fakegrad_lint.analysis import project as P
from fakegrad_lint.analysis import values as _values
from fakegrad_lint.analysis.values import (
    UNKNOWN,
    BoundMethod,
    ClassVal,
    ConstVal,
    CtxVal,
    DecoratorVal,
    ExitStackVal,
    ExportedProgramVal,
    FieldVal,
    FuncVal,
    InstanceVal,
    LeakRecord,
    MaybeVal,
    ModeVal,
    ModRef,
    ModuleVal,
    LazyImport,
    OptimizerVal,
    Origin,
    ProjModVal,
    Region,
    SeqVal,
    SuperVal,
    TracedFn,
    TransformVal,
    TVal,
    Value,
    join,
    join_all,
    union,
    union_all,
)
from fakegrad_lint.sources.lazyparse import LAZY_DEF_TYPES
from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

MAX_DEPTH = 6
STEP_BUDGET = 400_000
_BUILTINS = frozenset(dir(builtins))
_ENTRY_RE = re.compile("|".join(ENTRY_WORDS))


class Crashed(Exception):
    """A strict fake mode met a real tensor: execution stops here."""


class YieldReached(Exception):
    def __init__(self, state, value):
        self.state = state
        self.value = value


class _BlockExit(Exception):
    """return / break / continue / raise: the rest of the block is dead."""


_CALLEE = object()  # call_value's default: the call's own callee expression


class PartialVal(Value):
    """functools.partial(func, *args, **kwargs)."""

    def __init__(self, func, args, kwargs):
        self.func, self.args, self.kwargs = func, args, kwargs


class PseudoWith:
    """The body of a region opened by ``mode.__enter__()`` or
    ``ExitStack.enter_context(mode)``, shaped like a ``with`` for the fix builders."""

    def __init__(self, body, header_end):
        self.body = body
        self.header_end = header_end
        self.items = []
        self.bind_stmt = None


class Scope:
    __slots__ = ("vars", "parent", "module", "global_names", "func_node")

    def __init__(self, parent=None, module=None, func_node=None):
        self.vars: dict[str, Value] = {}
        self.parent = parent
        self.module = module if module is not None else self
        self.global_names: set[str] = set()
        self.func_node = func_node

    def lookup(self, name):
        s = self
        while s is not None:
            v = s.vars.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def assign(self, name, value):
        if name in self.global_names:
            self.module.vars[name] = value
        else:
            self.vars[name] = value


class State:
    """Where the interpreter is: the scope, the dispatch context (one immutable
    value, ``ctx``) and the call stack."""

    __slots__ = ("scope", "ctx", "returns", "depth", "stack", "self_val", "sites", "cur", "fv")

    def __init__(self, scope):
        self.scope = scope
        self.ctx = DispatchContext()
        self.returns: list = []
        self.depth = 0
        self.stack: tuple = ()
        self.self_val = None
        self.sites: tuple[CallSite, ...] = ()  # one per descent into a function
        self.cur = None  # (block, index) of the statement being executed
        self.fv = None  # the FuncVal being run

    def child(self, scope):
        c = State(scope)
        c.ctx = self.ctx
        c.depth = self.depth + 1
        c.stack = self.stack
        c.sites = self.sites
        return c

    # the fields of the context, read (and replaced) by name
    regions = property(lambda self: self.ctx.regions)
    patched = property(lambda self: self.ctx.patched)
    grad_enabled = property(lambda self: self.ctx.grad_enabled,
                            lambda self, v: setattr(self, "ctx", self.ctx.but(grad_enabled=v)))
    dispatch_off = property(lambda self: self.ctx.dispatch_off,
                            lambda self, v: setattr(self, "ctx", self.ctx.but(dispatch_off=v)))
    fake_copy = property(lambda self: self.ctx.fake_copy,
                         lambda self, v: setattr(self, "ctx", self.ctx.but(fake_copy=v)))
    meta_device = property(lambda self: self.ctx.meta_device,
                           lambda self, v: setattr(self, "ctx", self.ctx.but(meta_device=v)))
    may = property(lambda self: self.ctx.may, lambda self, v: setattr(self, "ctx", self.ctx.but(may=v)))

    def active_region(self):
        return self.ctx.active_region()

    def allow_of(self, mode):
        return self.ctx.allow_of(mode)


def _const_kw(call, name, default=None):
    for kw in call.keywords:
        if kw.arg == name:
            if isinstance(kw.value, ast.Constant):
                return kw.value.value
            return _NONCONST
    return default


_NONCONST = object()


def _contains_yield(fn, lines):
    if "yield" not in "\n".join(lines[fn.lineno - 1 : fn.end_lineno]):
        return False
    for n in ast.walk(fn):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
    return False


class Interpreter:
    def __init__(self, tree: ast.Module, source: str, project=None, filename: str | None = None):
        self.tree = tree
        self.source = source
        self.pos = PositionMap(source)
        self._main_pos = self.pos
        self.main_path = os.path.abspath(filename) if project is not None and filename else None
        # whole-project analysis (see analysis/project.py): imports of project
        # modules run those modules; ``ctx`` is the module whose code runs now
        self.project = project
        self.deps: dict = {}  # path -> content hash of every project module loaded
        self._modules: dict = {}  # path -> ProjModVal
        self._entries: list = []  # (from ctx, call site, statement, is_load) per crossing into another module
        self._ctx_entry_rx: dict = {}
        self._opens_memo: dict = {}
        self._lazy_memo: dict = {}
        self._loaded_bytes = 0  # source of the project modules loaded so far
        self._main_ids = None  # ids of the linted file's nodes (computed when needed)
        self.records: dict = {}  # (id(node), id(origin)) -> LeakRecord
        # id(For node) -> the expression naming the real module its loop draws from
        # (`for layer in model.children()` -> `model`): the fix copies that module
        self.loop_modules: dict = {}
        self._getattr_calls: dict = {}  # (id(call), name) -> (call, `obj.name(...)`)
        self.steps = 0
        self.exhausted = False
        self.instances: dict = {}  # ClassVal -> instance for standalone method analysis
        self.module_scope = Scope()
        self.module_scope.func_node = tree
        self._func_contains_yield: dict = {}
        self._capture_gen = None
        self._manual_undo: dict = {}  # id(context value) -> undo of its explicit __enter__()
        self.method_index: dict = {}  # method name -> def nodes of the classes of the file
        self.defs: dict = {}  # def node -> its FuncVal before decorators (standalone analysis runs it)
        self._matter: dict = {}
        self._entry_rx = None
        name, is_pkg = P.module_name_of(filename) if project is not None and filename else ("__main__", False)
        self.main = ProjModVal(name, is_pkg, None, self.module_scope)
        self.ctx = self.main
        self._scope_ctx: dict = {self.module_scope: self.main}
        _values.CURRENT_FILE[0] = None

    # ------------------------------------------------------------------ driver
    def run(self) -> list[Leak]:
        _values.CURRENT_FILE[0] = None
        st = State(self.module_scope)
        # the file runs as a script (how its hazards show): `if __name__ == "__main__":` is taken
        self.module_scope.vars["__name__"] = ConstVal("__main__")
        stopped = False
        for i, stmt in enumerate(self.tree.body):
            if stopped and not isinstance(stmt, _DEFINITIONS):
                continue  # after a crash only bind what later analysis needs
            st.cur = (self.tree.body, i)
            try:
                self.exec_stmt(stmt, st)
            except (Crashed, _BlockExit, YieldReached):
                stopped = True
        self._standalone()
        return self._leaks()

    def _standalone(self):
        """Analyse, with unknown arguments, the top-level functions and methods that can
        reach a fake region: those whose text opens one or names a module-level mode or
        fake value (or a ``self`` attribute holding one), and their in-file callers."""
        lines = self.pos.lines
        mvars = self.module_scope.vars
        hot = set(ENTRY_WORDS) | self._entry_aliases()
        for name, val in mvars.items():
            if isinstance(val, (ModeVal, CtxVal, TracedFn)) or val.fake_mode() is not None:
                hot.add(name)
            elif isinstance(val, FuncVal) and val.contextmanager:
                hot.add(name)
            elif self.project is not None and self._opens_region(val):
                hot.add(name)  # a function, class or module of the project that can open a region
        units = []  # (FuncVal, ClassVal or None, text)
        for d in self.tree.body:
            val = mvars.get(getattr(d, "name", None))
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d in self.defs:
                units.append((self.defs[d], None))  # the function itself, before its decorators
            elif isinstance(d, ast.ClassDef) and isinstance(val, ClassVal) and val.node is d:
                units.extend((self.defs[m], val) for m in d.body if m in self.defs and self.defs[m].cls is val)
        if not units:
            return

        def text(fv):
            n = fv.node
            first = min([n.lineno] + [dec.lineno for dec in n.decorator_list])
            return "\n".join(lines[first - 1 : n.end_lineno])

        texts = {fv: text(fv) for fv, _ in units}
        hot_re = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(hot))))
        relevant = {fv for fv, _ in units if hot_re.search(texts[fv]) and _hot_in_code(fv.node, texts[fv], hot_re)}
        # self attributes that hold a mode, in classes that have a relevant method
        for cls in {c for fv, c in units if c is not None and fv in relevant}:
            inst = self._instance_for(cls)
            attrs = [a for a, v in inst.attrs.items() if isinstance(v, (ModeVal, CtxVal)) or v.fake_mode() is not None]
            if attrs:
                attr_re = re.compile(r"\bself\.(?:%s)\b" % "|".join(map(re.escape, attrs)))
                relevant |= {fv for fv, c in units if c is cls and attr_re.search(texts[fv])}
        calls = {fv: _called_names(texts[fv]) for fv, _ in units}
        changed = True
        while changed:
            changed = False
            names = {fv.node.name for fv in relevant}
            for fv, _ in units:
                if fv not in relevant and calls[fv] & names:
                    relevant.add(fv)
                    changed = True
        for fv, cls in units:
            if fv in relevant:
                self._run_standalone(fv, self._instance_for(cls) if cls is not None else None)

    def _instance_for(self, cls):
        inst = self.instances.get(cls)
        if inst is None:
            st = State(self.module_scope)
            inst = self.instantiate(cls, [], {}, st, None)
            self.instances[cls] = inst
        return inst

    # ------------------------------------------------------- project modules
    def _switch(self, ctx):
        """Run the code of ``ctx`` (a ProjModVal) from now on: positions and
        texts come from its file."""
        self.ctx = ctx
        self.pos = ctx.mf.pos if ctx.mf is not None else self._main_pos
        _values.CURRENT_FILE[0] = ctx if ctx is not self.main else None

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
        if len(self._modules) >= P.MAX_MODULES or len(self._entries) > MAX_DEPTH or self.exhausted:
            return None
        try:
            size = os.path.getsize(path)
        except OSError:
            return None
        if self._loaded_bytes + size > P.MAX_PROJECT_BYTES:
            return None  # the analysis has read enough of the project: the rest is unknown
        self._loaded_bytes += size
        if "." in name:
            self._load_module(name.rsplit(".", 1)[0])  # a package's __init__ runs first
        mf = P.load(path)
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
        finally:
            self._entries.pop()
            self._switch(prev)
        return mv

    def _module_attr(self, mv, attr):
        v = mv.scope.vars.get(attr)
        if v is not None:
            return self._force(v)
        sub = self._load_module(f"{mv.name}.{attr}")
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
        key = (ctx, local)
        hit = self._lazy_memo.get(key)
        if hit is None:
            hit = self._lazy_memo[key] = _word_count(ctx.mf.source, local, 2) >= 2
        return hit

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

        st.scope.assign(local, LazyImport(resolve) if self._lazy(local) else resolve())
        return True

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
        base = P.absolute_name(ctx.name, ctx.is_pkg, s.module, s.level)
        if base is None:
            return False
        path = self.project.find(base)
        if path is not None and "*" not in [a.name for a in s.names] and all(
                self._lazy(a.asname or a.name) or self.project.find(f"{base}.{a.name}") is None for a in s.names):
            # names of a project module: it runs when one of them is first used
            for a in s.names:
                st.scope.assign(a.asname or a.name,
                                LazyImport(lambda name=a.name: self._from_module(base, name), (path, a.name)))
            return True
        mv = self._load_module(base)
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

    def _from_module(self, base, name):
        mv = self._load_module(base)
        return self._module_attr(mv, name) if mv is not None else UNKNOWN

    def _opens_region(self, val, depth=0):
        """Can this project value (a module, or a function or class of another
        module) open a fake region? By the text of its definition, and of the
        functions of its module it calls."""
        if isinstance(val, LazyImport):
            if val.value is not None:
                return self._opens_region(val.value, depth)
            # not loaded yet: the names its module exports that can reach a region
            return val.hint is not None and val.hint[1] in P._hot_of(val.hint[0], 0)
        if isinstance(val, ProjModVal):
            return val is not self.main and val.mf is not None and bool(self._entry_re(val).search(val.mf.source))
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
        text = "\n".join(ctx.mf.pos.lines[n.lineno - 1 : n.end_lineno])
        hit = bool(self._entry_re(ctx).search(text))
        if not hit:
            for name in _called_names(text):
                target = self._force(ctx.scope.vars.get(name))
                if target is not None and target is not val and self._opens_region(target, depth + 1):
                    hit = True
                    break
        memo[val.node] = hit
        return hit

    def _main_entry(self):
        """The innermost call made by the linted file's code into another module
        of the project (None when the current code was not reached from it)."""
        for prev, site, stmt, is_load, args, kwargs in reversed(self._entries):
            if prev is self.main:
                return None if is_load else (site, stmt, args, kwargs)
        return None

    def _run_standalone(self, fv, self_val):
        st = State(self.module_scope)
        args = []
        if self_val is not None and not self._is_static(fv):
            args = [self_val]
        try:
            self.call_function(fv, args, {}, st)
        except (Crashed, YieldReached, _BlockExit):
            pass

    @staticmethod
    def _is_static(fv):
        if fv.kind in ("static", "class"):
            return True
        for dec in fv.node.decorator_list:
            if isinstance(dec, ast.Name) and dec.id in ("staticmethod", "classmethod"):
                return True
        return False

    def _leaks(self) -> list[Leak]:
        best: dict = {}
        order = {Verdict.CRASH: 3, Verdict.HAZARD: 2, Verdict.FORWARD_ONLY: 1}
        for rec in self.records.values():
            if rec.may:
                continue  # a link is only possible: never a finding
            if rec.crash:
                verdict = Verdict.CRASH
            elif rec.sinks:
                verdict = Verdict.HAZARD
            else:
                verdict = Verdict.FORWARD_ONLY
            node = rec.node
            value_text = rec.value_text
            if rec.file is not None:
                # the op runs in another module: report where this file's code calls into it
                node, value_text = self._entry_node(rec)
            start = self._main_pos.char_pos(node.lineno, node.col_offset)
            end = self._main_pos.char_pos(node.end_lineno, node.end_col_offset)
            sink, sink_line = (rec.sinks[0] if rec.sinks else (None, None))
            route = Route.LEAKED_MIX if rec.route == "leaked-mix" else Route.IN_REGION
            leak = Leak(
                verdict=verdict,
                route=route,
                start=start,
                end=end,
                value=value_text,
                value_kind=rec.value_kind,
                mode=rec.region.mode.desc,
                mode_line=rec.region.mode.line,
                sink=sink,
                sink_line=sink_line,
                fix=rec.fix_plan if verdict is not Verdict.FORWARD_ONLY else None,
                trace=self._trace(rec, node),
                mode_path=self._rel(_path_of(rec.region.mode.file)),
                sink_path=self._rel(_path_of(rec.sink_sites[0][2])) if rec.sink_sites else None,
            )
            if rec.fix_plan is not None and rec.origin.grad_reads:
                leak.fix = None if verdict is Verdict.FORWARD_ONLY else _with_grad_reads(rec.fix_plan, rec.origin.grad_reads)
            if any(desc == ".grad assignment" for desc, _ in rec.sinks):
                leak.fix = None  # the computed gradients are written to the real tensor whatever it is converted to
            # one leak per place, route and value: `a @ b` leaks two values, two
            # findings (issue 14), each with its own fix
            key = (start, route, rec.value_text)
            prev = best.get(key)
            if prev is None or order[verdict] > order[prev.verdict]:
                best[key] = leak
        return sorted(best.values(), key=lambda l: l.start)

    def _in_main(self, block):
        """Is this ``with`` (or the body of a region entered without one) in the linted file?"""
        if self._main_ids is None:
            self._main_ids = {id(n) for n in ast.walk(self.tree)}
        node = block.body[0] if isinstance(block, PseudoWith) and block.body else block
        return id(node) in self._main_ids

    def _rel(self, path):
        """A project module's path for messages: relative to the linted file's folder."""
        if path is None or self.main_path is None:
            return None
        rel = os.path.relpath(path, os.path.dirname(self.main_path))
        return rel.replace(os.sep, "/")

    def _entry_node(self, rec):
        """(node, text of the value) where the linted file's code hands the real
        value to the other module: the call (or statement) that leads there."""
        site, stmt = rec.entry[:2]
        if site is not None:
            call, exprs, values = site
            for ex, val in zip(exprs, values):
                if ex is not None and rec.origin in val.real_rg():
                    return call, self._main_text(ex)
            return call, rec.value_text
        return stmt, rec.value_text

    def _main_text(self, expr):
        pos, self.pos = self.pos, self._main_pos
        try:
            return self._text(expr)
        finally:
            self.pos = pos

    def _trace(self, rec, reported):
        """The chain of a leak as data: source, call into another module, region, leak, sink."""

        def pos_of(ctx):
            return ctx.mf.pos if ctx is not None and ctx.mf is not None else self._main_pos

        def node_step(kind, message, node, ctx):
            pm = pos_of(ctx)
            return Step(kind, message, _path_of(ctx), pm.char_pos(node.lineno, node.col_offset),
                        pm.char_pos(node.end_lineno, node.end_col_offset))

        def line_step(kind, message, line, ctx):
            pm = pos_of(ctx)
            if not 1 <= line <= len(pm.lines):
                return None
            text = pm.lines[line - 1]
            col = len(text) - len(text.lstrip())
            return Step(kind, message, _path_of(ctx), (line, col), (line, len(text.rstrip())))

        steps = []
        o = rec.origin
        src = line_step("source", f"real requires-grad {o.kind} `{o.name}` made here", o.line, o.file)
        if src is not None:
            steps.append(src)
        if rec.file is not None:
            steps.append(node_step("call", f"the real value enters `{_values_name(rec)}` ({rec.file.name}) here", reported, None))
        region = rec.region
        allow = "allows non-fake inputs" if region.allow else "strict: a real input raises" if region.allow is False else "allow_non_fake_inputs unknown"
        rmsg = f"{region.mode.desc} entered here ({allow})"
        w = region.with_node
        rfile = region.file
        if isinstance(w, (ast.With, ast.AsyncWith)):
            item = w.items[region.item_index] if 0 <= region.item_index < len(w.items) else None
            steps.append(node_step("region", rmsg, item.context_expr if item is not None else w, rfile))
        else:
            line = w.header_end if isinstance(w, PseudoWith) else region.mode.line
            step = line_step("region", rmsg, line, rfile)
            if step is not None:
                steps.append(step)
        steps.append(node_step("leak", f"`{rec.value_text}` reaches a fake op", rec.node, rec.file))
        if rec.sink_sites:
            desc, snode, sctx = rec.sink_sites[0]
            steps.append(node_step("sink", f"`{desc}` runs the backward here", snode, sctx))
        return tuple(steps)

    # -------------------------------------------------------------- statements
    def exec_block(self, stmts, st):
        for i, stmt in enumerate(stmts):
            st.cur = (stmts, i)
            self.exec_stmt(stmt, st)

    def _tick(self):
        self.steps += 1
        if self.steps > STEP_BUDGET:
            self.exhausted = True

    def exec_stmt(self, s, st):
        self._tick()
        t = type(s)
        if t is ast.Expr:
            self.eval(s.value, st)
        elif t is ast.Assign:
            val = self.eval(s.value, st)
            if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                _name_origins(val, s.targets[0].id, s.lineno)
            for target in s.targets:
                self.assign(target, val, st, s.value)
        elif t is ast.AnnAssign:
            if s.value is not None:
                self.assign(s.target, self.eval(s.value, st), st, s.value)
        elif t is ast.AugAssign:
            left = self.eval(s.target, st)
            right = self.eval(s.value, st)
            if isinstance(left, SeqVal) and isinstance(right, SeqVal):
                val = SeqVal(left.items + right.items)  # `layers += [nn.Linear(...)]`
            else:
                val = self.binop(s, [(left, s.target), (right, s.value)], st)
            self.assign(s.target, val, st, s)
        elif t in _FUNCTION_DEFS:
            fv = self.make_function(s, st)
            st.scope.assign(s.name, fv)
        elif t is ast.ClassDef:
            st.scope.assign(s.name, self.make_class(s, st))
        elif t in (ast.With, ast.AsyncWith):
            self.exec_with(s, st)
        elif t is ast.If:
            self.exec_if(s, st)
        elif t in (ast.For, ast.AsyncFor):
            it = self.eval(s.iter, st)
            root = s.iter.func.value if (isinstance(s.iter, ast.Call) and isinstance(s.iter.func, ast.Attribute)
                                         and not s.iter.args and s.iter.func.attr in _MODULE_ITERATORS) else s.iter
            if st.regions and dotted_name(root) is not None:
                root_val = self.eval(root, st) if root is not s.iter else it
                if isinstance(root_val, ModuleVal) and root_val.is_real():
                    self.loop_modules[id(s)] = root
            item = self.iter_item(it)
            self.assign(s.target, item, st, None)
            self.exec_branch(s.body, st)
            if isinstance(it, SeqVal) and isinstance(s.target, ast.Name) and _sets_requires_grad(s.body, s.target.id):
                # `for t in ts: t.requires_grad_()` changes the tensors in the container
                now = st.scope.lookup(s.target.id)
                if now is not None and now is not item and now.real_rg() - item.real_rg():
                    container = s.iter
                    is_dict = False
                    if isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute) and container.func.attr == "values":
                        container = container.func.value  # `for v in d.values()`
                        is_dict = True
                    self.rebind(container, SeqVal(it.items + (now,), is_dict=is_dict), st)
            self.exec_branch(s.orelse, st)
        elif t is ast.While:
            self.eval(s.test, st)
            self.exec_branch(s.body, st)
            self.exec_branch(s.orelse, st)
        elif t in (ast.Try, getattr(ast, "TryStar", ast.Try)):
            self.exec_try(s, st)
        elif t is ast.Return:
            if s.value is not None:
                st.returns.append(self.eval(s.value, st))
            raise _BlockExit()
        elif t is ast.Raise:
            if s.exc is not None:
                self.eval(s.exc, st)
            raise _BlockExit()
        elif t in (ast.Break, ast.Continue):
            raise _BlockExit()
        elif t is ast.Import:
            for alias in s.names:
                if self.project is not None and self._import_project(alias, st):
                    continue
                if alias.asname:
                    st.scope.assign(alias.asname, ModRef(alias.name))
                else:
                    top = alias.name.split(".")[0]
                    st.scope.assign(top, ModRef(top))
        elif t is ast.ImportFrom:
            if self.project is not None and self._import_from_project(s, st):
                pass
            elif s.level == 0 and s.module:
                for alias in s.names:
                    if alias.name == "*":
                        for name in N.STAR_EXPORTS.get(s.module, ()):
                            st.scope.assign(name, ModRef(f"{s.module}.{name}"))
                        continue
                    st.scope.assign(alias.asname or alias.name, ModRef(f"{s.module}.{alias.name}"))
            else:
                for alias in s.names:
                    st.scope.assign(alias.asname or alias.name, UNKNOWN)
        elif t is ast.Global or t is ast.Nonlocal:
            if t is ast.Global:
                st.scope.global_names.update(s.names)
        elif t is ast.Delete:
            pass
        elif t is ast.Assert:
            self.eval(s.test, st)
        elif t is getattr(ast, "Match", None):
            self.eval(s.subject, st)
            for case in s.cases:
                self.exec_branch(case.body, st)
        # Pass, etc.: nothing

    def exec_branch(self, stmts, st):
        """A block that may or may not run (loop body, else): dead ends stay local."""
        try:
            self.exec_block(stmts, st)
        except _BlockExit:
            pass

    def exec_if(self, s, st):
        test = self.eval(s.test, st)
        truth = _truth(test)
        if truth is None and self.ctx is not self.main and _is_main_guard(s.test):
            truth = False  # an imported module's `if __name__ == "__main__":` never runs
        if truth is True:
            self.exec_block(s.body, st)
            return
        if truth is False:
            self.exec_block(s.orelse, st)
            return
        scope = st.scope
        before = dict(scope.vars)
        regions_before = list(st.regions)
        crashed = 0
        try:
            self.exec_branch(s.body, st)
        except Crashed:
            crashed += 1
        _mark_may_regions(st.regions, regions_before)
        after_body = scope.vars
        scope.vars = dict(before)
        try:
            self.exec_branch(s.orelse, st)
        except Crashed:
            crashed += 1
        _mark_may_regions(st.regions, regions_before)
        merged = after_body
        for k, b in scope.vars.items():
            a = merged.get(k)
            if a is not b:
                merged[k] = b if a is None else join(a, b)
        scope.vars = merged
        if crashed == 2:
            raise Crashed()

    def exec_try(self, s, st):
        try:
            try:
                self.exec_block(s.body, st)
            except _BlockExit:
                pass
            except Crashed:
                if not s.handlers:
                    raise
            for h in s.handlers:
                if h.name:
                    st.scope.assign(h.name, UNKNOWN)
                self.exec_branch(h.body, st)
            self.exec_branch(s.orelse, st)
        finally:
            try:
                self.exec_block(s.finalbody, st)
            except _BlockExit:
                pass

    def exec_with(self, s, st):
        undo = []
        try:
            for i, item in enumerate(s.items):
                cm = self.eval(item.context_expr, st)
                bound = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
                entered = self.enter(cm, st, undo, with_node=s, index=i, bound=bound, expr=item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, entered, st, None)
            self.exec_block(s.body, st)
        finally:
            for fn in reversed(undo):
                fn(st)

    def enter(self, cm, st, undo, with_node=None, index=-1, bound=None, expr=None, may=False):
        """Enter a context manager value: ``st.ctx`` becomes the context inside it; its undo,
        a function of the state that leaves it, goes on ``undo``.
        ``may``: the value is entered on some paths only (its region proves nothing)."""
        if isinstance(cm, MaybeVal):
            opts = [o for o in cm.options if not _is_none_const(o)]
            modes = [o for o in opts if isinstance(o, ModeVal)]
            if modes:
                # an unknown condition or key selects a fake mode on some path: enter it,
                # as a may region unless every option is a mode (no fix: the block
                # cannot know which one it got)
                pick = modes[0]
                if any(m.allow != pick.allow for m in modes):
                    pick = ModeVal(None, pick.line, pick.desc, pick.node, pick.conditional)
                return self.enter(pick, st, undo, None, index, None, None, may=may or len(modes) < len(opts))
            others = [o for o in opts if isinstance(o, (CtxVal, ExitStackVal, InstanceVal))]
            if len(others) == 1 and len(opts) == 1:
                return self.enter(others[0], st, undo, with_node, index, bound, expr, may=may)
            return UNKNOWN
        if isinstance(cm, InstanceVal):
            return self.enter_instance(cm, st, undo, may)
        if isinstance(cm, ModeVal):
            name = bound
            if name is None and expr is not None:
                d = dotted_name(expr)
                if d is not None:
                    name = d
            region = Region(cm, cm.allow, with_node, index, name, may=bool(may or st.may))
            region.func_node = st.scope.func_node
            st.ctx = st.ctx.entering(region)
            undo.append(lambda s: setattr(s, "ctx", s.ctx.leaving(region)))
            return cm
        if isinstance(cm, CtxVal):
            k = cm.kind
            if k == "grad_off" or k == "grad_on":
                old = st.grad_enabled
                st.grad_enabled = k == "grad_on"
                undo.append(lambda s: setattr(s, "grad_enabled", old))
            elif k == "unset_fake":
                st.dispatch_off += 1
                undo.append(lambda s: setattr(s, "dispatch_off", max(0, s.dispatch_off - 1)))
            elif k == "fake_copy":
                old = st.fake_copy
                st.fake_copy = cm.target
                undo.append(lambda s: setattr(s, "fake_copy", old))
            elif k == "patch_allow":
                if cm.target is not None and cm.target not in st.patched:
                    target = cm.target
                    st.ctx = st.ctx.but(patched=st.patched | {target})
                    undo.append(lambda s: setattr(s, "ctx", s.ctx.but(patched=s.patched - {target})))
            elif k == "meta_device":
                old_meta = st.meta_device
                st.meta_device = True
                undo.append(lambda s: setattr(s, "meta_device", old_meta))
            elif k == "gen":
                return self.enter_generator(cm, st, undo, with_node, index, bound)
            return UNKNOWN
        if isinstance(cm, ExitStackVal):
            marker = []  # undo actions of the contexts entered through this stack
            cm.pushed.append(marker)

            def close(s, marker=marker):
                for fn in reversed(marker):
                    fn(s)
                marker.clear()

            undo.append(close)
            return cm
        return UNKNOWN

    def enter_instance(self, cm, st, undo, may=False):
        """``with obj:`` for an instance of a class of the file: run its ``__enter__`` as a
        method (what it enters stays entered) and its ``__exit__`` when the block ends."""
        enter_fn = cm.cls.lookup_method("__enter__")
        if enter_fn is None:
            return UNKNOWN
        before = list(st.regions)
        if may:
            st.may += 1
        try:
            res = self.call_function(enter_fn, [cm], {}, st, force=True, propagate=True)
        except (YieldReached, _BlockExit):
            res = UNKNOWN
        finally:
            if may:
                st.may -= 1
        for r in st.regions:
            if r not in before:
                r.with_node = None  # opened inside a method: no block of this code to fix
                r.may = r.may or may
        exit_fn = cm.cls.lookup_method("__exit__")

        def leave(s):
            if exit_fn is not None:
                try:
                    self.call_function(exit_fn, [cm, ConstVal(None), ConstVal(None), ConstVal(None)], {}, s,
                                       force=True, propagate=True)
                except (Crashed, YieldReached, _BlockExit):
                    pass
            # what __enter__ opened and __exit__ did not close (unknown to us) ends here
            s.ctx = s.ctx.but(regions=tuple(r for r in s.regions if r in before))

        undo.append(leave)
        return res

    def enter_generator(self, cm, st, undo, with_node=None, index=-1, bound=None):
        """Enter a @contextmanager helper: run it up to its ``yield`` and keep the
        regions and grad state active there for the body of the ``with``."""
        fv, args, kwargs = cm.target
        outer = st.ctx
        prev, self._capture_gen = self._capture_gen, fv.node
        try:
            self.call_function(fv, args, kwargs, st, run_generator=True)
        except YieldReached as y:
            # the context at the yield is the context of the block (the exception
            # unwound the generator's own with-blocks, not what they had entered)
            for r in y.ctx.regions:
                if r not in outer.regions and r.mode is y.value and with_node is not None:
                    # the helper yields its mode: the block can bind and use it
                    r.with_node, r.item_index, r.bound_name = with_node, index, bound
                    r.func_node = st.scope.func_node
            st.ctx = y.ctx.but(patched=outer.patched | y.ctx.patched, may=outer.may)

            def restore(s):
                s.ctx = s.ctx.but(regions=tuple(r for r in s.regions if r in outer.regions),
                                  grad_enabled=outer.grad_enabled, dispatch_off=outer.dispatch_off,
                                  patched=s.patched & outer.patched)

            undo.append(restore)
            return y.value
        except (Crashed, _BlockExit):
            pass
        finally:
            self._capture_gen = prev
        return UNKNOWN

    def _rest_of_block(self, st, exit_call=None):
        """The statements after the current one in its block (up to a matching
        ``mode.__exit__(...)``): the body of a region entered without ``with``."""
        if st.cur is None:
            return None
        block, i = st.cur
        end = len(block)
        if exit_call is not None:
            for j in range(i + 1, len(block)):
                if exit_call in self.pos.segment(block[j]):
                    end = j
                    break
        body = block[i + 1 : end]
        if not body:
            return None
        return PseudoWith(body=body, header_end=block[i].end_lineno)

    # -------------------------------------------------------------- assignment
    def assign(self, target, val, st, value_node):
        t = type(target)
        if t is ast.Name:
            st.scope.assign(target.id, val)
        elif t in (ast.Tuple, ast.List):
            elts = (val.elts if isinstance(val, SeqVal) and val.elts is not None and val.keys is None
                    and len(val.elts) == len(target.elts) else None)
            if isinstance(val, MaybeVal):
                # one of (or each of) several tuples of the same length: element by element
                opts = [o for o in val.options if not _is_none_const(o)]
                n = len(target.elts)
                if opts and all(isinstance(o, SeqVal) and o.elts is not None and o.keys is None and len(o.elts) == n
                                for o in opts):
                    combine = union if val.each else join
                    elts = list(opts[0].elts)
                    for o in opts[1:]:
                        elts = [combine(a, b) for a, b in zip(elts, o.elts)]
            for i, e in enumerate(target.elts):
                if isinstance(e, ast.Starred):
                    self.assign(e.value, SeqVal(items=(self.iter_item(val),)), st, None)
                elif elts is not None:
                    self.assign(e, elts[i], st, None)
                else:
                    self.assign(e, self.iter_item(val), st, None)
        elif t is ast.Attribute:
            obj = self.eval(target.value, st)
            if target.attr == "grad" and isinstance(obj, TVal) and obj.real_rg():
                # `p.grad = g`: a gradient computed under a fake mode (torch.func.grad)
                # becomes the real parameter's grad, with no backward (HAZARD 17)
                self.sink(val, ".grad assignment", target, st)
            if isinstance(obj, (InstanceVal, ModuleVal, ClassVal)):
                obj.attrs[target.attr] = val
            elif isinstance(obj, ModeVal) and target.attr == "allow_non_fake_inputs":
                if isinstance(val, ConstVal):
                    obj.allow = bool(val.value)
            elif target.attr == "requires_grad" and isinstance(obj, TVal) and obj.mode is None:
                if isinstance(val, ConstVal) and val.value is True:
                    new = TVal(obj.origins | {Origin(dotted_name(target.value) or "tensor", "tensor", target.lineno)}, None, obj.leaks)
                    self.rebind(target.value, new, st)
                elif isinstance(val, ConstVal) and val.value is False:
                    _disable_module_origins(obj)
                    self.rebind(target.value, TVal(frozenset(), None, obj.leaks), st)
        elif t is ast.Subscript:
            obj = self.eval(target.value, st)
            key = self.eval(target.slice, st)
            if isinstance(obj, SeqVal) and obj.keys is not None and isinstance(key, ConstVal):
                keys = [k for k in obj.keys if not (k == key.value and type(k) is type(key.value))]
                elts = [v for k, v in zip(obj.keys, obj.elts) if not (k == key.value and type(k) is type(key.value))]
                self.rebind(target.value, _dict_val(keys + [key.value], elts + [val]), st)
            elif isinstance(obj, SeqVal):
                self.rebind(target.value, SeqVal(obj.items + (val,), is_dict=obj.is_dict), st)
        elif t is ast.Starred:
            self.assign(target.value, val, st, value_node)

    def rebind(self, expr, val, st):
        """A change to the object a name holds (``d[k] = v``, ``x.requires_grad_()``):
        the name is updated where it lives (a global or a closure variable too)."""
        if isinstance(expr, ast.Name):
            sc = st.scope
            while sc is not None and expr.id not in sc.vars:
                sc = sc.parent
            if sc is None or sc is st.scope:
                st.scope.assign(expr.id, val)
            else:
                sc.vars[expr.id] = val
        elif isinstance(expr, ast.Attribute):
            obj = self.eval(expr.value, st)
            if isinstance(obj, (InstanceVal, ModuleVal)):
                obj.attrs[expr.attr] = val

    # -------------------------------------------------------------- functions
    def make_function(self, node, st, cls=None):
        fv = FuncVal(node, st.scope, cls)
        if not isinstance(node, ast.Lambda):
            fv.defaults = [self.eval(d, st) for d in node.args.defaults]
            fv.kw_defaults = {a.arg: self.eval(d, st) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None}
            self.defs[node] = fv
        out = fv
        # decorators apply bottom-up, each a call on what the one below returned
        for dec in reversed(getattr(node, "decorator_list", ())):
            out = self.apply_decorator(dec, out, st)
        return out

    def apply_decorator(self, dec, f, st):
        if isinstance(dec, ast.Attribute) and dec.attr in ("setter", "deleter"):
            prop = self.eval(dec.value, st)  # `@prop.setter`: the class keeps the property
            return prop if isinstance(prop, FuncVal) else f
        if isinstance(dec, ast.Call):
            callee = self.eval(dec.func, st)
            args, kwargs = self.eval_args(dec, st)
            if isinstance(callee, ModRef):
                dv = self.call_qualname(dec, callee.qualname, args, kwargs, st)
            else:
                dv = self.call_forced(dec, callee, args, kwargs, st)  # a decorator factory
        else:
            dv = self.eval(dec, st)
        return self.decorate(dv, f, st, dec)

    def decorate(self, dv, f, st, node):
        """``f = dv(f)``: what a decorator returns, evaluated (unknown decorators leave
        the function as it was)."""
        if isinstance(dv, ModRef):
            q = dv.qualname
            if isinstance(f, FuncVal):
                if q in N.CONTEXT_MANAGER:
                    f.contextmanager = True
                elif q in N.GRAD_OFF:
                    f.grad_off = True
                elif q in N.STATIC_DECORATORS:
                    f.kind = "static"
                elif q in N.CLASS_DECORATORS:
                    f.kind = "class"
                elif q in N.PROPERTY_DECORATORS:
                    f.kind = "property"
            return f
        if isinstance(dv, CtxVal):
            if dv.kind == "grad_off" and isinstance(f, FuncVal):
                f.grad_off = True  # `@torch.no_grad()`: a context manager used as a decorator
            return f
        if isinstance(dv, (FuncVal, BoundMethod, PartialVal, ClassVal, InstanceVal)):
            res = self.call_forced(node, dv, [f], {}, st)
            if res is UNKNOWN or res is None:
                return f
            if isinstance(res, FuncVal) and res is not f and isinstance(f, FuncVal):
                res.wrapped = f
                if res.cls is None:
                    res.cls = f.cls
            return res
        return f

    def call_forced(self, node, callee, args, kwargs, st):
        """Call ``callee`` and run its body even when nothing of interest goes in."""
        if isinstance(callee, FuncVal):
            return self.call_function(callee, list(args), kwargs, st, force=True)
        if isinstance(callee, BoundMethod):
            return self.call_function(callee.func, [callee.self_val] + list(args), kwargs, st, force=True)
        if isinstance(callee, PartialVal):
            return self.call_forced(node, callee.func, list(callee.args) + list(args), {**callee.kwargs, **kwargs}, st)
        if isinstance(callee, ClassVal):
            return self.instantiate(callee, list(args), kwargs, st, node, force=True)
        if isinstance(callee, InstanceVal):
            call = callee.cls.lookup_method("__call__")
            if call is not None:
                return self.call_function(call, [callee] + list(args), kwargs, st, force=True)
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self.call_value(node, callee, list(args), kwargs, st, func_expr=None)
        return UNKNOWN

    def make_class(self, node, st):
        bases = tuple(self.eval(b, st) for b in node.bases)
        is_module = False
        torch_base = False
        for b in bases:
            if isinstance(b, ModRef) and _is_nn_module_class(b.qualname):
                is_module = True
                if b.qualname not in N.NN_MODULE_BASE:
                    torch_base = True
            elif isinstance(b, ClassVal) and b.is_module:
                is_module = True
                torch_base = torch_base or b.torch_base
        cv = ClassVal(node, st.scope, is_module, {}, bases)
        cv.torch_base = torch_base
        cv.mro = _c3_mro(cv)
        # the class body runs in its own scope; its names become class attributes
        cls_scope = Scope(parent=st.scope, module=st.scope.module, func_node=st.scope.func_node)
        cst = st.child(cls_scope)
        cst.depth = st.depth
        for i, item in enumerate(node.body):
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fv = self.make_function(item, cst, cls=cv)
                base = self.defs.get(item)
                if base is not None:
                    base.scope = st.scope  # methods do not see the class body as a closure
                cls_scope.vars[item.name] = fv
                cv.own[item.name] = fv
                self.method_index.setdefault(item.name, []).append(item)
                continue
            cst.cur = (node.body, i)
            try:
                self.exec_stmt(item, cst)
            except (Crashed, _BlockExit, YieldReached):
                break
        for name, v in cls_scope.vars.items():
            if name in cv.own:
                continue
            if isinstance(v, FuncVal) and not isinstance(v.node, ast.Lambda):
                cv.own[name] = v  # `__call__ = forward`
            else:
                cv.attrs[name] = v
        for c in reversed(cv.mro):
            cv.methods.update(c.own)
        out = cv
        for dec in reversed(node.decorator_list):
            dv = self.eval(dec.func if isinstance(dec, ast.Call) else dec, st)
            if isinstance(dv, ModRef) and dv.qualname in N.DATACLASS:
                cv.dataclass = True
                continue
            out = self.apply_decorator(dec, out, st)  # `cls = register("name")(cls)`
        return out

    def instantiate(self, cls, args, kwargs, st, node, force=False):
        region = st.active_region()
        if cls.is_module:
            inst = ModuleVal(None, region.mode if region else None, cls, {})
        else:
            inst = InstanceVal(cls, {})
        init = cls.lookup_method("__init__")
        if init is not None:
            try:
                self.call_function(init, [inst] + list(args), kwargs, st, force=force)
            except (YieldReached, _BlockExit):
                pass
        else:
            # a dataclass / NamedTuple-style class: annotated fields take the arguments,
            # else their defaults (``field(default_factory=...)`` is called)
            for i, name in enumerate(cls.fields()):
                if i < len(args):
                    inst.attrs[name] = args[i]
                elif name in kwargs:
                    inst.attrs[name] = kwargs[name]
                else:
                    default = cls.lookup_attr(name)
                    if isinstance(default, FieldVal):
                        if default.factory is not None:
                            default = self.call_forced(node, default.factory, [], {}, st)
                        else:
                            default = default.default
                    inst.attrs[name] = default if default is not None else UNKNOWN
            post = cls.lookup_method("__post_init__")
            if post is not None:
                try:
                    self.call_function(post, [inst], {}, st, force=True)
                except (YieldReached, _BlockExit):
                    pass
        if cls.is_module and region is not None:
            inst.may_fake = region.may or bool(st.may)
            inst.fake_out = _forward_uses_fakes(cls, inst.attrs)
        if cls.is_module and region is None:
            has_params = cls.torch_base or any(
                v.real_rg() or (isinstance(v, ModuleVal) and v.origin is not None) for v in inst.attrs.values()
            )
            if has_params:
                name = "module"
                inst.origin = Origin(name, "module", getattr(node, "lineno", 0), owner=inst)
                inst.meta = st.meta_device
        return inst

    def call_function(self, fv, args, kwargs, st, *more, **options):
        """Run ``fv`` (see ``_call_function``); a function of another project
        module runs with that module's file as the current one."""
        ctx = self._scope_ctx.get(getattr(fv.scope, "module", None)) if self.project is not None else None
        if ctx is None or ctx is self.ctx:
            return self._call_function(fv, args, kwargs, st, *more, **options)
        # the function belongs to another module of the project: run it there
        stmt = st.cur[0][st.cur[1]] if st.cur is not None else None
        site = options.get("site", more[1] if len(more) > 1 else None)
        prev = self.ctx
        self._entries.append((prev, site, stmt, False, args, kwargs))
        self._switch(ctx)
        try:
            return self._call_function(fv, args, kwargs, st, *more, **options)
        finally:
            self._entries.pop()
            self._switch(prev)

    def _call_function(self, fv, args, kwargs, st, run_generator=False, site=None, force=False, propagate=True):
        """Run ``fv`` on the values; ``force``: even when nothing of interest goes in
        (decorators, dunder methods); ``propagate``: contexts it enters and does not
        leave stay entered in the caller, as in Python."""
        node = fv.node
        if st.depth >= MAX_DEPTH or self.exhausted or node in st.stack:
            return UNKNOWN
        if fv.contextmanager and not run_generator:
            return CtxVal("gen", (fv, list(args), dict(kwargs)))
        if not (force or st.regions or self._may_matter(node, self._lines_of(fv)) or self._init_matters(fv)
                or any(_interesting(a) for a in args)
                or any(_interesting(v) for v in kwargs.values())):
            return UNKNOWN  # outside any region, nothing of interest in or out: skip the body
        is_gen = self._func_contains_yield.get(node)
        if is_gen is None:
            is_gen = not isinstance(node, ast.Lambda) and _contains_yield(node, self.pos.lines)
            self._func_contains_yield[node] = is_gen
        scope = Scope(parent=fv.scope, module=fv.scope.module, func_node=node)
        cst = st.child(scope)
        cst.stack = st.stack + (node,)
        if site is not None:
            cst.sites = st.sites + (CallSite(st.scope.func_node, *site),)
        cst.fv = fv
        self.bind_args(fv, args, kwargs, scope)
        if fv.grad_off:
            cst.grad_enabled = False
        if isinstance(node, ast.Lambda):
            return self.eval(node.body, cst)
        if is_gen and not run_generator:
            cst.returns = []  # a plain generator: collect what it yields
        try:
            self.exec_block(node.body, cst)
        except _BlockExit:
            pass
        if not run_generator:
            # what the function entered and did not leave stays entered, as in Python
            # (its own `@torch.no_grad()` ends with it; its may-paths are its own)
            ctx = cst.ctx.but(may=st.may)
            if fv.grad_off or not propagate:
                ctx = ctx.but(grad_enabled=st.grad_enabled)
            st.ctx = ctx
        if is_gen and not run_generator:
            return SeqVal(tuple(cst.returns))
        return join_all(cst.returns)

    def _init_matters(self, fv):
        """``__init__`` of a class whose code can open a region or make a real
        requires-grad value: the attributes it sets decide what its methods do."""
        cls = fv.cls
        if cls is None or getattr(fv.node, "name", None) != "__init__" or not isinstance(cls, ClassVal):
            return False
        return self._may_matter(cls.node, self._lines_of(fv))

    def bind_args(self, fv, args, kwargs, scope):
        node = fv.node
        a = node.args
        params = list(a.posonlyargs) + list(a.args)
        defaults = fv.defaults
        nd = len(defaults)
        for i, p in enumerate(params):
            if i < len(args):
                v = args[i]
            elif p.arg in kwargs:
                v = kwargs[p.arg]
            elif i >= len(params) - nd and nd:
                v = defaults[i - (len(params) - nd)]
            else:
                v = UNKNOWN
            scope.vars[p.arg] = v
        if a.vararg is not None:
            extra = args[len(params):]
            scope.vars[a.vararg.arg] = SeqVal(tuple(extra), tuple(extra))
        for p in a.kwonlyargs:
            scope.vars[p.arg] = kwargs.get(p.arg, fv.kw_defaults.get(p.arg, UNKNOWN))
        if a.kwarg is not None:
            rest = [(k, v) for k, v in kwargs.items() if k not in scope.vars]
            vals = tuple(v for _, v in rest)
            scope.vars[a.kwarg.arg] = SeqVal(vals, vals, tuple(k for k, _ in rest), is_dict=True)

    def _entry_aliases(self, scope=None):
        """Local names bound by imports to a way into a fake region (``FTM`` in
        ``from torch._subclasses.fake_tensor import FakeTensorMode as FTM``, ``ft``
        in ``import torch._subclasses.fake_tensor as ft``)."""
        out = set()
        for name, val in (scope or self.module_scope).vars.items():
            if isinstance(val, ModRef) and (
                _ENTRY_RE.search(val.qualname) or val.qualname in ("torch._subclasses", "torch._subclasses.fake_tensor")
            ):
                out.add(name)
        return out

    def _entry_re(self, ctx=None):
        ctx = ctx or self.ctx
        if ctx is not self.main:
            rx = self._ctx_entry_rx.get(ctx)
            if rx is None:
                words = set(ENTRY_WORDS) | self._entry_aliases(ctx.scope)
                rx = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(words))))
                self._ctx_entry_rx[ctx] = rx
            return rx
        if self._entry_rx is None:
            words = set(ENTRY_WORDS) | self._entry_aliases()
            self._entry_rx = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(words))))
        return self._entry_rx

    def _may_matter(self, node, lines=None, ctx=None):
        """Can running this function's body outside a region matter? Only if its
        text can open a region or make a real requires-grad value."""
        flag = self._matter.get(node)
        if flag is None:
            ctx = ctx or self.ctx
            lines = lines or self.pos.lines
            text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            flag = bool(self._entry_re(ctx).search(text) or _SOURCE_RE.search(text))
            if not flag:
                # names a module-level value of interest (a registry of module classes,
                # or of functions that matter)
                mvars = ctx.scope.vars
                self._matter[node] = False  # guard recursion
                named = [self._force(mvars[w]) for w in set(_WORD_RE.findall(text)) if w in mvars]
                flag = any(_interesting(v) or _module_classes(v) or self._registry_matters(v, node) for v in named)
            if not flag:
                # calls a function of its module that matters (by name)
                for name in _called_names(text):
                    target = self._force(ctx.scope.vars.get(name))
                    # a function or class by that name, or a method of a class of the file
                    cands = []
                    if isinstance(target, (FuncVal, ClassVal)):
                        cands.append((target.node, self._lines_of(target),
                                      self._scope_ctx.get(getattr(target.scope, "module", None), ctx)))
                    if ctx is self.main:
                        cands += [(t, None, ctx) for t in self.method_index.get(name, [])]
                    for t, tlines, tctx in cands:
                        if t is not node and self._matter.get(t, None) is not False:
                            self._matter[node] = False  # guard recursion
                            if self._may_matter(t, tlines, tctx):
                                flag = True
                                break
                    if flag:
                        break
            self._matter[node] = flag
        return flag

    def _registry_matters(self, v, node, depth=0):
        """A container of functions, one of which matters (a registry of model factories)."""
        if isinstance(v, SeqVal) and depth < 2:
            return any(self._registry_matters(x, node, depth + 1) for x in v.items)
        if isinstance(v, MaybeVal) and depth < 2:
            return any(self._registry_matters(x, node, depth + 1) for x in v.options)
        if depth and isinstance(v, FuncVal) and v.node is not node and self._matter.get(v.node, None) is not False:
            return self._may_matter(v.node, self._lines_of(v),
                                    self._scope_ctx.get(getattr(v.scope, "module", None), self.ctx))
        return False

    # ------------------------------------------------------------- expressions
    def eval(self, e, st) -> Value:
        self._tick()
        t = type(e)
        if t is ast.Name:
            v = st.scope.lookup(e.id)
            if v is None:
                return ModRef("builtins." + e.id) if e.id in _BUILTINS else UNKNOWN
            if type(v) is LazyImport:
                return self._force(v)
            return v
        if t is ast.Constant:
            return ConstVal(e.value)
        if t is ast.Attribute:
            return self.eval_attribute(e, st)
        if t is ast.Call:
            return self.eval_call(e, st)
        if t is ast.BinOp:
            left = self.eval(e.left, st)
            right = self.eval(e.right, st)
            if isinstance(left, SeqVal) and isinstance(right, SeqVal):
                return SeqVal(left.items + right.items)
            return self.binop(e, [(left, e.left), (right, e.right)], st)
        if t is ast.UnaryOp:
            v = self.eval(e.operand, st)
            if isinstance(e.op, ast.Not):
                tv = _truth(v)
                return ConstVal(not tv) if tv is not None else UNKNOWN
            return self.binop(e, [(v, e.operand)], st)
        if t is ast.Compare:
            vals = [(self.eval(e.left, st), e.left)] + [(self.eval(c, st), c) for c in e.comparators]
            known = _compare(e.ops, [v for v, _ in vals])
            if known is not None:
                return ConstVal(known)
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return UNKNOWN
            if any(_is_tensorish(v) for v, _ in vals):
                return self.op(e, vals, st, differentiable=False)
            return UNKNOWN
        if t is ast.BoolOp:
            # `a and b` is a when a is falsy, else b; `a or b` is a when a is truthy, else b
            is_and = isinstance(e.op, ast.And)
            out = None
            for i, ve in enumerate(e.values):
                v = self.eval(ve, st)
                tv = _truth(v)
                if i == len(e.values) - 1 or (is_and and tv is False) or (not is_and and tv is True):
                    return v if out is None else join(out, v)
                if tv is None:
                    out = v if out is None else join(out, v)  # may be the result
            return out or UNKNOWN
        if t is ast.IfExp:
            test = _truth(self.eval(e.test, st))
            if test is not None:
                v = self.eval(e.body if test else e.orelse, st)
                if isinstance(v, ModeVal):
                    v.conditional = True  # right for this flag value only
                return v
            return join(self.eval(e.body, st), self.eval(e.orelse, st))
        if t in (ast.List, ast.Tuple, ast.Set):
            items = []
            for el in e.elts:
                if isinstance(el, ast.Starred):
                    items.append(self.iter_item(self.eval(el.value, st)))
                else:
                    items.append(self.eval(el, st))
            elts = tuple(items) if not any(isinstance(el, ast.Starred) for el in e.elts) else None
            return SeqVal(tuple(items), elts)
        if t is ast.Dict:
            items = []
            keys = []
            for k, v in zip(e.keys, e.values):
                if k is not None:
                    kv = self.eval(k, st)
                    items.append(self.eval(v, st))
                    keys.append(kv.value if isinstance(kv, ConstVal) else _NONCONST)
                else:
                    sub = self.eval(v, st)
                    if isinstance(sub, SeqVal) and sub.keys is not None and sub.elts is not None:
                        items.extend(sub.elts)
                        keys.extend(sub.keys)
                    else:
                        items.append(self.iter_item(sub))
                        keys.append(_NONCONST)
            if _NONCONST in keys:
                return SeqVal(tuple(items), is_dict=True)
            return _dict_val(keys, items)
        if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            return self.eval_comprehension(e, st)
        if t is ast.Subscript:
            obj = self.eval(e.value, st)
            idx = self.eval(e.slice, st)
            return self.subscript(e, obj, idx, st)
        if t is ast.Lambda:
            fv = FuncVal(e, st.scope)
            fv.defaults = [self.eval(d, st) for d in e.args.defaults]
            return fv
        if t is ast.NamedExpr:
            v = self.eval(e.value, st)
            self.assign(e.target, v, st, e.value)
            return v
        if t is ast.Starred:
            return self.eval(e.value, st)
        if t in (ast.Await, ast.YieldFrom):
            return self.eval(e.value, st) if e.value is not None else UNKNOWN
        if t is ast.Yield:
            v = self.eval(e.value, st) if e.value is not None else UNKNOWN
            self.on_yield(v, st)
            return UNKNOWN
        if t is ast.JoinedStr:
            return _fold_strings([self._fstring_part(v, st) for v in e.values], "".join)
        if t is ast.Slice:
            for part in (e.lower, e.upper, e.step):
                if part is not None:
                    self.eval(part, st)
            return UNKNOWN
        return UNKNOWN

    def _fstring_part(self, v, st):
        """One part of an f-string as a function of its known value (None: unknown)."""
        if isinstance(v, ast.Constant):
            return ConstVal(v.value)
        val = self.eval(v.value, st)
        spec = self.eval(v.format_spec, st) if v.format_spec is not None else ConstVal("")
        if not isinstance(spec, ConstVal) or not isinstance(spec.value, str):
            return UNKNOWN
        conv = {ord("r"): repr, ord("s"): str, ord("a"): ascii}.get(v.conversion)

        def fmt(x, conv=conv, spec=spec.value):
            return format(conv(x) if conv else x, spec)

        return _FormattedPart(val, fmt)

    def on_yield(self, v, st):
        if st.stack and self._capture_gen is st.stack[-1]:
            y = YieldReached(st, v)
            y.ctx = st.ctx
            raise y
        st.returns.append(v)

    def eval_comprehension(self, e, st):
        scope = Scope(parent=st.scope, module=st.scope.module, func_node=st.scope.func_node)
        cst = st.child(scope)
        cst.depth = st.depth
        cst.stack = st.stack
        cst.returns = st.returns
        for gen in e.generators:
            it = self.eval(gen.iter, cst)
            self.assign(gen.target, self.iter_item(it), cst, None)
            for cond in gen.ifs:
                self.eval(cond, cst)
        if isinstance(e, ast.DictComp):
            self.eval(e.key, cst)
            return SeqVal((self.eval(e.value, cst),), is_dict=True)
        return SeqVal((self.eval(e.elt, cst),))

    def iter_item(self, v):
        if isinstance(v, SeqVal) and v.is_dict:
            # iterating a mapping gives its keys
            return union_all(ConstVal(k) for k in v.keys or ())
        if isinstance(v, SeqVal):
            return union_all(v.items)
        if isinstance(v, TVal):
            return v  # iterating a tensor yields slices with the same provenance
        if isinstance(v, ModuleVal):
            return v  # ModuleList / Sequential: submodules of the same kind
        if isinstance(v, MaybeVal):
            out = None
            for o in v.options:
                x = self.iter_item(o)
                out = x if out is None else (union(out, x) if v.each else join(out, x))
            return out or UNKNOWN
        return UNKNOWN

    def subscript(self, e, obj, idx, st):
        if isinstance(obj, SeqVal) and obj.keys is not None:
            if isinstance(idx, ConstVal):
                v = obj.lookup(idx.value)
                return v if v is not None else UNKNOWN  # a KeyError, or a key added later
            # an unknown key: one of the values
            out = None
            for v in obj.elts or ():
                out = v if out is None else join(out, v)
            return out or UNKNOWN
        if isinstance(obj, MaybeVal):
            return self.over_options(obj, lambda o: self.subscript(e, o, idx, st), st)
        if isinstance(obj, SeqVal) and obj.is_dict:
            return _values_of(obj)
        if isinstance(obj, SeqVal):
            if obj.elts is not None and isinstance(idx, ConstVal) and isinstance(idx.value, int):
                try:
                    return obj.elts[idx.value]
                except IndexError:
                    return UNKNOWN
            return self.iter_item(obj)
        if isinstance(obj, ModuleVal):
            return obj  # nn.Sequential / ModuleList indexing: a submodule of the same kind
        if _is_tensorish(obj):
            return self.op(e, [(obj, e.value)], st)
        return UNKNOWN

    def bind_method(self, m, obj, cls, st):
        """A function found on the class of ``obj``, bound as Python binds it."""
        if not isinstance(m, FuncVal):
            return m
        if m.kind == "property" or any(
            isinstance(d, ast.Name) and d.id in ("property", "cached_property") for d in getattr(m.node, "decorator_list", ())
        ):
            return self.call_function(m, [obj], {}, st)
        if m.kind == "static":
            return m
        if m.kind == "class":
            return BoundMethod(m, cls)
        return BoundMethod(m, obj)

    def eval_attribute(self, e, st):
        obj = self.eval(e.value, st)
        return self.attribute(e, obj, e.attr, st)

    def attribute(self, e, obj, attr, st):
        if isinstance(obj, ModRef):
            return ModRef(f"{obj.qualname}.{attr}")
        if isinstance(obj, ProjModVal):
            return self._module_attr(obj, attr)
        if isinstance(obj, MaybeVal):
            out = None
            for o in obj.options:
                v = self.attribute(e, o, attr, st)
                out = v if out is None else join(out, v)
            return out or UNKNOWN
        if isinstance(obj, TVal):
            if attr in N.METADATA_ATTRS:
                return UNKNOWN
            if attr == "grad":
                for o in obj.real_rg():
                    o.grad_reads.append(e.lineno)
                    if o.parent is not None:
                        o.parent.grad_reads.append(e.lineno)
                return TVal(frozenset(), obj.mode, frozenset())
            if attr == "data":
                return TVal(frozenset(), obj.mode, frozenset())
            if attr in ("T", "mT", "H", "mH", "real", "imag"):
                return self.op(e, [(obj, e.value)], st)
            if attr in N.MODEL_OUTPUT_ATTRS:
                return obj
            return UNKNOWN
        if isinstance(obj, (InstanceVal, ModuleVal)):
            if attr in obj.attrs:
                return obj.attrs[attr]
            cls = obj.cls
            if cls is not None:
                m = cls.methods.get(attr)
                if m is not None:
                    return self.bind_method(m, obj, cls, st)
                a = cls.lookup_attr(attr)
                if a is not None:
                    return (a.default or UNKNOWN) if isinstance(a, FieldVal) else a
            if isinstance(obj, ModuleVal) and obj.cls is None and attr in N.MODULE_WRAPPER_ATTRS:
                return obj  # DataParallel(m).module, torch.compile(m)._orig_mod: the same parameters
            if isinstance(obj, ModuleVal) and attr in N.MODULE_PARAM_ATTRS:
                if obj.is_real():
                    return TVal(frozenset([Origin(f"{dotted_name(e) or attr}", "parameter", e.lineno, parent=obj.origin, param=attr)]))
                return TVal(frozenset(), obj.mode, may_fake=obj.may_fake)
            return UNKNOWN
        if isinstance(obj, ClassVal):
            m = obj.methods.get(attr)
            if m is not None:
                return BoundMethod(m, obj) if isinstance(m, FuncVal) and m.kind == "class" else m
            a = obj.lookup_attr(attr)
            return a if a is not None and not isinstance(a, FieldVal) else UNKNOWN
        if isinstance(obj, SuperVal):
            owner = getattr(obj.self_val, "cls", None)
            mro = owner.mro if isinstance(owner, ClassVal) and owner.mro else obj.cls.mro
            after = False
            for c in mro:
                if after:
                    if attr in c.own:
                        return self.bind_method(c.own[attr], obj.self_val, c, st)
                    if attr in c.attrs:
                        return c.attrs[attr]
                after = after or c is obj.cls
            return UNKNOWN
        if isinstance(obj, ExportedProgramVal):
            return UNKNOWN
        if isinstance(obj, ModeVal):
            if attr == "allow_non_fake_inputs":
                return ConstVal(obj.allow) if obj.allow is not None else UNKNOWN
            return UNKNOWN
        return UNKNOWN

    # ------------------------------------------------------------------ calls
    def eval_args(self, e, st):
        """A call's arguments as Python passes them: ``*seq`` spreads the known elements,
        ``**d`` the known keys of a dict."""
        args = []
        for a in e.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value, st)
                if isinstance(v, SeqVal) and v.elts is not None and v.keys is None:
                    args.extend(v.elts)
                else:
                    args.append(self.iter_item(v))
            else:
                args.append(self.eval(a, st))
        kwargs = {}
        for kw in e.keywords:
            v = self.eval(kw.value, st)
            if kw.arg is not None:
                kwargs[kw.arg] = v
            elif isinstance(v, SeqVal) and v.keys is not None and v.elts is not None:
                for k, x in zip(v.keys, v.elts):
                    if isinstance(k, str):
                        kwargs.setdefault(k, x)
        return args, kwargs

    def eval_call(self, e, st):
        func = e.func
        method_call = self._getattr_method_call(e, st)
        if method_call is not None:
            return method_call
        args, kwargs = self.eval_args(e, st)
        if isinstance(func, ast.Attribute):
            recv = self.eval(func.value, st)
            if isinstance(recv, ModRef):
                return self.call_qualname(e, f"{recv.qualname}.{func.attr}", args, kwargs, st)
            if isinstance(recv, ProjModVal):
                return self.call_value(e, self._module_attr(recv, func.attr), args, kwargs, st)
            return self.call_method(e, recv, func.attr, args, kwargs, st)
        callee = self.eval(func, st)
        return self.call_value(e, callee, args, kwargs, st)

    def _getattr_method_call(self, e, st):
        """``getattr(obj, "name")(...)`` with a known name is ``obj.name(...)`` (a name
        among known strings: each or one of those calls); None when it is not such a
        call (an unknown name stays unknown). Only a name made of names, constants and
        f-strings is looked at, so nothing is evaluated twice for effect."""
        g = e.func
        if not (isinstance(g, ast.Call) and isinstance(g.func, ast.Name) and g.func.id == "getattr"
                and len(g.args) == 2 and not g.keywords and not any(isinstance(a, ast.Starred) for a in g.args)
                and all(isinstance(n, _PURE_NAME_NODES) for n in ast.walk(g.args[1]))):
            return None
        callee = self.eval(g.func, st)
        if not (isinstance(callee, ModRef) and callee.qualname == "builtins.getattr"):
            return None
        name = self.eval(g.args[1], st)
        opts = name.options if isinstance(name, MaybeVal) else (name,)
        if not all(isinstance(o, ConstVal) and isinstance(o.value, str) and o.value.isidentifier() for o in opts):
            return None
        if isinstance(name, ConstVal):
            return self.eval_call(self._method_call_node(e, name.value), st)
        return self.over_options(name, lambda o: self.eval_call(self._method_call_node(e, o.value), st), st)

    def _method_call_node(self, e, name):
        """``obj.name(...)`` for ``e`` = ``getattr(obj, ...)(...)``: one node per call
        site and name, placed where the call is."""
        cached = self._getattr_calls.get((id(e), name))
        if cached is not None:
            return cached[1]
        g = e.func
        attr = ast.copy_location(ast.Attribute(value=g.args[0], attr=name, ctx=ast.Load()), g)
        call = ast.copy_location(ast.Call(func=attr, args=e.args, keywords=e.keywords), e)
        self._getattr_calls[(id(e), name)] = (e, call)  # keeps e alive so its id stays its own
        return call

    def call_value(self, e, callee, args, kwargs, st, func_expr=_CALLEE):
        """Call ``callee``; ``func_expr`` is the expression that names it (``e.func``
        unless the call is indirect, e.g. through ``functools.partial``: None)."""
        if func_expr is _CALLEE:
            func_expr = e.func
        if isinstance(callee, ModRef):
            return self.call_qualname(e, callee.qualname, args, kwargs, st)
        if isinstance(callee, FuncVal):
            return self.call_function(callee, args, kwargs, st, site=(e, _arg_exprs(e), args))
        if isinstance(callee, BoundMethod):
            if callee.func.node.name == "forward" and isinstance(callee.self_val, ModuleVal):
                return self.module_call(e, callee.self_val, func_expr, args, kwargs, st)
            return self.call_function(callee.func, [callee.self_val] + list(args), kwargs, st,
                                      site=(e, [e.func.value if isinstance(e.func, ast.Attribute) else None]
                                            + _arg_exprs(e), [callee.self_val] + list(args)))
        if isinstance(callee, ClassVal):
            return self.instantiate(callee, args, kwargs, st, e)
        if isinstance(callee, ModuleVal):
            return self.module_call(e, callee, func_expr, args, kwargs, st)
        if isinstance(callee, InstanceVal):
            call = callee.cls.lookup_method("__call__")
            if call is not None:
                return self.call_function(call, [callee] + list(args), kwargs, st,
                                          site=(e, [func_expr] + _arg_exprs(e), [callee] + list(args)))
            return UNKNOWN
        if isinstance(callee, TracedFn):
            return self.call_traced(e, callee, args, kwargs, st)
        if isinstance(callee, PartialVal):
            return self.call_value(e, callee.func, list(callee.args) + list(args), {**callee.kwargs, **kwargs}, st,
                                   func_expr=None)
        if isinstance(callee, TransformVal):
            return self.call_transform(e, callee, args, kwargs, st)
        if isinstance(callee, ExportedProgramVal):
            # the program lifts and fakifies its own parameters: no leak by the caller
            region = st.active_region()
            return TVal(frozenset(), region.mode) if region is not None else TVal()
        if isinstance(callee, DecoratorVal):
            return args[0] if args else UNKNOWN
        if isinstance(callee, MaybeVal):
            opts = [o for o in callee.options if not _is_none_const(o)]
            if opts and all(isinstance(o, ModuleVal) for o in opts):
                # one of several modules: a single call with the may value as the operand
                return self.module_call(e, callee, func_expr, args, kwargs, st)
            return self.over_options(callee, lambda o: self.call_value(e, o, args, kwargs, st, func_expr=func_expr), st)
        return UNKNOWN

    def over_options(self, mv, fn, st):
        """Apply ``fn`` to each option of a may value and join the results; a path
        that only may be taken runs with ``st.may`` raised (its leaks prove nothing),
        unless every option is a proven real requires-grad value."""
        opts = [o for o in mv.options if not _is_none_const(o)]
        may = not mv.each and len(opts) > 1 and not all(o.proven_rg() for o in opts)
        out = None
        if may:
            st.may += 1
        try:
            for o in opts:
                v = UNKNOWN if o is UNKNOWN else fn(o)
                out = v if out is None else (union(out, v) if mv.each else join(out, v))
        finally:
            if may:
                st.may -= 1
        return out or UNKNOWN

    def call_transform(self, e, tf, args, kwargs, st):
        """torch.func.grad(f)(*args) and friends: f runs on the arguments; gradients
        (grad, jac) are fake under an active region and carry the leaks of f's result."""
        region = st.active_region()
        mode = region.mode if region is not None else None
        entered = frozenset()
        runnable = isinstance(tf.func, (FuncVal, BoundMethod, PartialVal, ModuleVal, InstanceVal, MaybeVal, TransformVal))
        if mode is not None and not runnable:
            # a function we cannot follow: the real arguments enter the fake computation here
            entered = self.op(e, _operands(e, args, kwargs), st).taint()
        # the function runs on the arguments: a real one is first an operand where its
        # body uses it (functional_call), as a TorchFunctionMode sees it
        res = self.call_value(e, tf.func, args, kwargs, st, func_expr=None) if runnable else UNKNOWN
        if tf.kind == "vmap":
            return _with_taint(res, entered) if entered else res
        leaks = (res.taint() | entered) if st.grad_enabled else frozenset()
        idx = tf.argnums if isinstance(tf.argnums, int) else 0
        wrt = args[idx] if idx < len(args) else UNKNOWN

        def grads_like(v):
            if isinstance(v, SeqVal):
                items = tuple(grads_like(x) for x in v.items)
                elts = tuple(grads_like(x) for x in v.elts) if v.elts is not None else None
                return SeqVal(items, elts, v.keys, v.is_dict)
            return TVal(frozenset(), mode, leaks)

        grads = grads_like(wrt)
        if tf.kind == "grad_and_value":
            return SeqVal((grads, res), (grads, res))
        return grads

    def call_traced(self, e, tf, args, kwargs, st):
        mode = tf.mode
        fake_args = [_fake_copy(a, mode) for a in args]
        region = Region(mode, mode.allow, None, -1, None)
        st.ctx = st.ctx.entering(region)
        try:
            if isinstance(tf.func, (FuncVal, BoundMethod, ModuleVal)):
                res = self.call_value(e, tf.func, fake_args, kwargs, st)
            else:
                res = UNKNOWN
        finally:
            st.ctx = st.ctx.leaving(region)
        return res

    def module_call(self, e, mod, func_expr, args, kwargs, st):
        fwd = mod.cls.lookup_method("forward") if isinstance(mod, ModuleVal) and mod.cls is not None else None
        if (isinstance(fwd, FuncVal) and st.active_region() is None and fwd.node not in st.stack
                and self._forward_opens_region(fwd)):
            # outside any region, a module of the file whose forward opens one: calling it runs forward
            return self.call_function(fwd, [mod] + list(args), kwargs, st,
                                      site=(e, [func_expr] + _arg_exprs(e), [mod] + list(args)))
        operands = [(mod, func_expr)] + _operands(e, args, kwargs)
        return self.op(e, operands, st)

    def _forward_opens_region(self, fv):
        node = fv.node
        text = "\n".join(self._lines_of(fv)[node.lineno - 1 : node.end_lineno])
        return bool(self._entry_re().search(text))

    def call_method(self, e, recv, name, args, kwargs, st):
        if isinstance(recv, MaybeVal):
            opts = [o for o in recv.options if not isinstance(o, ConstVal)]  # a constant has no such method
            if name == "backward" and opts and all(isinstance(o, TVal) for o in opts):
                # the sink reaches what is in the graph on every path
                taints = [o.taint() for o in opts]
                common = frozenset.union(*taints) if recv.each else frozenset.intersection(*taints)
                return self.tensor_method(e, TVal(frozenset(), None, common), name, args, kwargs, st)
            if len(opts) == 1:
                return self.call_method(e, opts[0], name, args, kwargs, st)
            return self.over_options(recv, lambda o: self.call_method(e, o, name, args, kwargs, st), st)
        if isinstance(recv, (SuperVal, ClassVal)):
            return self.call_value(e, self.attribute(e.func, recv, name, st), args, kwargs, st)
        if isinstance(recv, ExportedProgramVal):
            if name == "module":
                return recv.module if isinstance(recv.module, ModuleVal) else UNKNOWN  # keeps the real parameters
            if name in N.EXPORTED_PROGRAM_SELF_METHODS:
                return recv
            if name == "__call__":
                return self.call_value(e, recv, args, kwargs, st)
            return UNKNOWN
        if isinstance(recv, TVal):
            return self.tensor_method(e, recv, name, args, kwargs, st)
        if isinstance(recv, ModeVal):
            if name in N.FROM_REAL_TENSOR_ATTR:
                return _fake_copy(args[-1] if args else UNKNOWN, recv)
            if name == "__enter__":
                name_text = dotted_name(e.func.value)
                self.enter(recv, st, [], with_node=self._rest_of_block(st, exit_call=f"{name_text}.__exit__("),
                           expr=e.func.value)
                return recv
            if name == "__exit__":
                for r in reversed(st.regions):
                    if r.mode is recv:
                        st.ctx = st.ctx.leaving(r)
                        break
                return UNKNOWN
            return UNKNOWN
        if name in N.FROM_REAL_TENSOR_ATTR:
            # fake_tensor_converter.from_real_tensor(mode, x) and friends
            mode = next((a for a in args if isinstance(a, ModeVal)), None)
            src = args[-1] if args else UNKNOWN
            return _fake_copy(src, mode or ModeVal(None, e.lineno, "FakeTensorMode"))
        if isinstance(recv, ModuleVal):
            return self.module_method(e, recv, name, args, kwargs, st)
        if isinstance(recv, InstanceVal):
            if name in recv.attrs:
                return self.call_value(e, recv.attrs[name], args, kwargs, st)
            m = recv.cls.methods.get(name)
            if m is None and recv.cls.lookup_attr(name) is not None:
                return self.call_value(e, self.attribute(e.func, recv, name, st), args, kwargs, st)
            if m is not None and (not isinstance(m, FuncVal) or m.kind == "property"):
                return self.call_value(e, self.bind_method(m, recv, recv.cls, st), args, kwargs, st)
            if m is not None and m.kind == "class":
                return self.call_function(m, [recv.cls] + list(args), kwargs, st)
            if m is not None:
                if self._is_static(m):
                    return self.call_function(m, args, kwargs, st)
                return self.call_function(m, [recv] + list(args), kwargs, st,
                                          site=(e, [e.func.value] + _arg_exprs(e), [recv] + list(args)))
            return UNKNOWN
        if isinstance(recv, OptimizerVal):
            if name == "step" and args:
                return self.call_value(e, args[0], [], {}, st, func_expr=None)  # step(closure) runs the closure
            return UNKNOWN
        if isinstance(recv, ExitStackVal):
            if name == "enter_context" and args:
                undo = []
                pseudo, bound = None, None
                if isinstance(args[0], ModeVal) and st.cur is not None:
                    stmt = st.cur[0][st.cur[1]]
                    pseudo = self._rest_of_block(st)
                    if isinstance(stmt, ast.Assign) and stmt.value is e and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                        bound = stmt.targets[0].id
                    elif isinstance(stmt, ast.Expr) and stmt.value is e and pseudo is not None:
                        pseudo.bind_stmt = stmt  # the fix can bind the mode: `fake_mode = stack.enter_context(...)`
                    else:
                        pseudo = None
                v = self.enter(args[0], st, undo, with_node=pseudo, bound=bound)
                if recv.pushed:
                    recv.pushed[-1].extend(undo)
                return v
            return UNKNOWN
        if isinstance(recv, SeqVal):
            if name in ("append", "add", "insert", "extend", "update", "setdefault"):
                new_items = list(recv.items)
                for a in args:
                    if name == "update":
                        new_items.append(_values_of(a) if isinstance(a, SeqVal) else a)
                    else:
                        new_items.append(self.iter_item(a) if name == "extend" else a)
                new_items.extend(kwargs.values())
                self.rebind(e.func.value, SeqVal(tuple(new_items), is_dict=recv.is_dict), st)
                return UNKNOWN
            if name in ("items",):
                if recv.keys is not None:
                    return SeqVal(tuple(SeqVal((ConstVal(k), v), (ConstVal(k), v)) for k, v in zip(recv.keys, recv.elts)))
                return SeqVal(tuple(SeqVal((UNKNOWN, v), (UNKNOWN, v)) for v in recv.items))
            if name == "copy":
                return recv
            if name == "keys":
                return SeqVal(tuple(ConstVal(k) for k in recv.keys)) if recv.keys is not None else UNKNOWN
            if name == "values":
                return SeqVal(recv.items, recv.elts if recv.keys is not None else None)
            if name == "__iter__":
                return SeqVal((self.iter_item(recv),))
            if name in ("get", "pop", "__getitem__") and recv.keys is not None and args:
                got = self.subscript(e, recv, args[0], st)
                if got is UNKNOWN and len(args) > 1:
                    return args[1]
                return got
            if name in ("get", "pop", "popitem", "__getitem__"):
                return _values_of(recv)
            return UNKNOWN
        if isinstance(recv, PartialVal) and name == "__call__":
            return self.call_value(e, recv, args, kwargs, st)
        if isinstance(recv, (FuncVal, BoundMethod)) and name == "__call__":
            return self.call_value(e, recv, args, kwargs, st)
        if isinstance(recv, CtxVal) and name == "__enter__":
            self._manual_undo[id(recv)] = (st.grad_enabled, st.dispatch_off, st.fake_copy, st.meta_device)
            self.enter(recv, st, [])
            return UNKNOWN
        if isinstance(recv, CtxVal) and name == "__exit__":
            saved = self._manual_undo.pop(id(recv), None)
            if saved is not None:  # restore what this context changed, in the state that leaves it
                k = recv.kind
                if k in ("grad_off", "grad_on"):
                    st.grad_enabled = saved[0]
                elif k == "unset_fake":
                    st.dispatch_off = max(0, st.dispatch_off - 1)
                elif k == "fake_copy":
                    st.fake_copy = saved[2]
                elif k == "meta_device":
                    st.meta_device = saved[3]
            return UNKNOWN
        if isinstance(recv, InstanceVal) and name in ("__enter__", "__exit__"):
            return UNKNOWN
        return UNKNOWN

    def module_method(self, e, mod, name, args, kwargs, st):
        real = mod.is_real()
        if name in mod.attrs:
            return self.call_value(e, mod.attrs[name], args, kwargs, st)
        if name == "forward" or name == "__call__":
            return self.module_call(e, mod, e.func.value, args, kwargs, st)
        if mod.cls is not None and name in mod.cls.methods:
            m = mod.cls.methods[name]
            if not isinstance(m, FuncVal) or m.kind == "property":
                return self.call_value(e, self.bind_method(m, mod, mod.cls, st), args, kwargs, st)
            if m.kind == "static":
                return self.call_function(m, list(args), kwargs, st)
            return self.call_function(m, [mod.cls if m.kind == "class" else mod] + list(args), kwargs, st,
                                      site=(e, [e.func.value] + _arg_exprs(e), [mod] + list(args)))
        if name in ("parameters", "named_parameters") or (name == "state_dict" and _kw_true(kwargs, "keep_vars")):
            if real:
                p = TVal(frozenset([mod.origin]))  # the module's own provenance: freezing them freezes it
            else:
                p = TVal(frozenset(), mod.mode, may_fake=mod.may_fake)
            if name == "parameters":
                return SeqVal((p,))
            if name == "named_parameters":
                return SeqVal((SeqVal((UNKNOWN, p), (UNKNOWN, p)),))
            return SeqVal((p,), is_dict=True)  # state_dict(keep_vars=True)
        if name in ("children", "modules"):
            return SeqVal((mod,))
        if name in ("named_children", "named_modules"):
            return SeqVal((SeqVal((UNKNOWN, mod), (UNKNOWN, mod)),))
        if name in N.MODULE_DETACHING_METHODS and real:
            region = st.active_region()
            if region is not None and st.allow_of(region.mode) is False:
                # it detaches every parameter: an op on real tensors under a strict mode
                # (no fix: the call is not the module's own call that a fix rewrites)
                try:
                    self.op(e, [(mod, e.func.value)], st, differentiable=False)
                finally:
                    for rec in self.records.values():
                        if rec.node is e:
                            rec.fix_plan = None
        if name in ("state_dict", "buffers", "named_buffers"):
            t = TVal(frozenset(), mod.mode, may_fake=mod.may_fake)
            if name == "named_buffers":
                return SeqVal((SeqVal((UNKNOWN, t), (UNKNOWN, t)),))
            return SeqVal((t,), is_dict=name == "state_dict")
        if name == "to_empty":
            # new storage for every parameter, in place: fake under an active region,
            # real (uninitialised) outside it, whatever the module held before
            region = st.active_region()
            if region is not None:
                mod.mode = region.mode
                mod.may_fake = region.may or bool(st.may)
                mod.fake_out = mod.fake_out or (mod.origin is not None and mod.cls is None)
            elif mod.meta or (mod.origin is None and mod.mode is not None):
                if mod.origin is None:
                    mod.origin = Origin("module", "module", e.lineno)
                mod.mode, mod.meta = None, False
            return mod
        if name == "requires_grad_":
            # in place, on every parameter: the module (and what was taken from it) is
            # frozen or unfrozen from here on
            off = (args and isinstance(args[0], ConstVal) and args[0].value is False) or _kw_false(kwargs, "requires_grad")
            _set_requires_grad(mod, not off)
            return mod
        if name in N.MODULE_SELF_METHODS:
            if name == "to" and (_is_meta(args) or _is_meta(list(kwargs.values()))):
                mod.meta = True
            if name == "apply" and args:
                self.call_value(e, args[0], [mod], {}, st, func_expr=None)  # fn(m) for every submodule m
            return mod
        if name in ("register_parameter", "register_buffer") and len(args) >= 2 and isinstance(args[0], ConstVal):
            mod.attrs[str(args[0].value)] = args[1]
            return UNKNOWN
        if name in ("add_module", "register_module") and len(args) >= 2 and isinstance(args[0], ConstVal):
            mod.attrs[str(args[0].value)] = args[1]
            return UNKNOWN
        return UNKNOWN

    def tensor_method(self, e, recv, name, args, kwargs, st):
        if name == "backward":
            inputs = kwargs.get("inputs", args[3] if len(args) > 3 else None)
            self.sink(recv, ".backward()", e, st, inputs=inputs)
            return UNKNOWN
        if name == "requires_grad_":
            flag = True
            if args and isinstance(args[0], ConstVal):
                flag = bool(args[0].value)
            if _kw_false(kwargs, "requires_grad"):
                flag = False
            if recv.mode is None:
                if not flag:
                    _disable_module_origins(recv)
                origins = recv.origins | {Origin(dotted_name(e.func.value) or "tensor", "tensor", e.lineno)} if flag else frozenset()
                new = TVal(origins, None, recv.leaks)
                self.rebind(e.func.value, new, st)
                return new
            return recv
        if name in N.METADATA_METHODS:
            return UNKNOWN
        if name in ("item", "tolist", "numpy", "__repr__", "__str__", "__format__"):
            return UNKNOWN
        if name in ("detach", "detach_"):
            region = st.active_region()
            if region is not None and st.allow_of(region.mode) is False and recv.mode is None and recv.origins:
                return self.op(e, [(recv, e.func.value)], st, differentiable=False)
            # inside a region (or on a leaked fake) the result is fake, with no history
            mode = recv.mode or (region.mode if region is not None else None)
            new = TVal(frozenset(), mode, frozenset())
            if name == "detach_":
                self.rebind(e.func.value, new, st)
            return new
        if name in ("to", "cuda", "cpu") and recv.mode is None and (_is_meta(args) or _is_meta(list(kwargs.values()))):
            return TVal(frozenset(), None)
        diff = name not in N.NON_DIFFERENTIABLE_METHODS
        operands = [(recv, e.func.value)] + _operands(e, args, kwargs)
        return self.op(e, operands, st, differentiable=diff)

    def call_qualname(self, e, q, args, kwargs, st):
        if q.startswith("builtins."):
            return self.call_builtin(e, q[9:], args, kwargs, st)
        known = self.call_table(e, q, args, kwargs, st)
        if known is not None:
            return known
        if q in N.FAKE_TENSOR_MODE:
            v = kwargs.get("allow_non_fake_inputs", ConstVal(False))
            allow = bool(v.value) if isinstance(v, ConstVal) else None
            desc = "FakeTensorMode(allow_non_fake_inputs=True)" if allow else ("FakeTensorMode()" if allow is False else "FakeTensorMode(...)")
            return ModeVal(allow, e.lineno, desc, e)
        if q in N.DETECT_FAKE_MODE:
            # whatever mode the inputs were made in: what it allows is not known here
            # (torch.export's non-strict mode allows non-fake inputs) unless patched
            return ModeVal(None, e.lineno, "detect_fake_mode()", e)
        if q in N.FAKE_COPY_MODE:
            return CtxVal("fake_copy", args[0] if args and isinstance(args[0], ModeVal) else None)
        if q in N.UNSET_FAKE:
            return CtxVal("unset_fake")
        if q in N.GRAD_MODE_CONTEXTS:
            if q in N.GRAD_OFF and args and isinstance(args[0], FuncVal):  # used as a plain decorator call
                args[0].grad_off = True
                return args[0]
            return CtxVal(_grad_mode_kind(q, args, kwargs))
        if q in N.NULL_CONTEXT:
            return CtxVal("null")
        if q in N.EXIT_STACK:
            return ExitStackVal()
        if q in N.CONTEXT_MANAGER:
            if args and isinstance(args[0], FuncVal):
                args[0].contextmanager = True
                return args[0]
            return UNKNOWN
        if q in N.PATCH_OBJECT or q.endswith(".patch.object"):
            if len(args) >= 3 and isinstance(args[1], ConstVal) and args[1].value == "allow_non_fake_inputs":
                if isinstance(args[2], ConstVal) and args[2].value is True:
                    target = args[0]
                    if isinstance(target, MaybeVal):
                        target = next((o for o in target.options if isinstance(o, ModeVal)), None)
                    if isinstance(target, ModeVal):
                        return CtxVal("patch_allow", target)
            return CtxVal("null")
        if q in N.MAKE_FX:
            tm = _const_kw(e, "tracing_mode", "real")
            if tm in ("fake", "symbolic") and args:
                allow = _const_kw(e, "_allow_non_fake_inputs", False)
                if allow is _NONCONST:
                    allow = None
                desc = f'make_fx(tracing_mode="{tm}"' + (", _allow_non_fake_inputs=True)" if allow else ")")
                return TracedFn(args[0], ModeVal(allow, e.lineno, desc, None))
            return UNKNOWN
        if q in N.PARTIAL and args:
            return PartialVal(args[0], tuple(args[1:]), dict(kwargs))
        if q in N.FUNCTIONAL_CALL:
            # the module itself is not an operand: its state comes from the dict
            return self.op(e, _operands(e, args, kwargs)[1:], st)
        if q in N.PARAMETER:
            region = st.active_region()
            data = args[0] if args else UNKNOWN
            if region is not None or (isinstance(data, TVal) and data.mode is not None):
                return TVal(frozenset(), region.mode if region else data.mode)
            if _kw_false(kwargs, "requires_grad") or (len(args) > 1 and isinstance(args[1], ConstVal) and args[1].value is False):
                return TVal()
            return TVal(frozenset([Origin("parameter", "parameter", e.lineno)]))
        if q in N.AUTOGRAD_BACKWARD:
            tensors = args[0] if args else kwargs.get("tensors", UNKNOWN)
            self.sink(tensors, "torch.autograd.backward", e, st, inputs=kwargs.get("inputs"))
            return UNKNOWN
        if q in N.AUTOGRAD_GRAD:
            outputs = args[0] if args else kwargs.get("outputs", UNKNOWN)
            inputs = args[1] if len(args) > 1 else kwargs.get("inputs", UNKNOWN)
            self.sink(outputs, "torch.autograd.grad", e, st, inputs=inputs)
            mode = outputs.fake_mode()
            return SeqVal((TVal(frozenset(), mode),)) if mode is not None else UNKNOWN
        if q.startswith("torch.optim.") and q.rsplit(".", 1)[-1][:1].isupper():
            return OptimizerVal(args[0] if args else UNKNOWN)
        if _is_nn_module_class(q):
            return self.new_module(e, q, args, kwargs, st)
        if q.startswith("torch.") and _is_torch_op(q):
            operands = _operands(e, args, {k: v for k, v in kwargs.items() if k != "out"})
            diff = q not in N.NON_DIFFERENTIABLE_FUNCS
            if not any(_is_tensorish(x) for v, _ in operands for x in _flatten(v)):
                # a factory: born fake inside a region, real (maybe requires grad) outside
                region = st.active_region()
                if region is not None:
                    return TVal(frozenset(), region.mode, may_fake=region.may or bool(st.may))
                if _kw_true(kwargs, "requires_grad"):  # (on the meta device too: not fake)
                    return TVal(frozenset([Origin("tensor", "tensor", e.lineno)]))
                return TVal()
            res = self.op(e, operands, st, differentiable=diff)
            if _kw_true(kwargs, "requires_grad") and isinstance(res, TVal) and res.mode is None:
                return TVal(res.origins | {Origin("tensor", "tensor", e.lineno)})
            return res
        return UNKNOWN

    def call_table(self, e, q, args, kwargs, st):
        """Calls whose meaning is a row of ``torch_tables`` (None: not one of them)."""
        first = args[0] if args else UNKNOWN
        if q in N.DEEPCOPY:
            return self.deepcopy(e, first, st)
        if q in N.IMPORT_MODULE:
            return ModRef(first.value) if isinstance(first, ConstVal) and isinstance(first.value, str) else UNKNOWN
        if q in N.DEVICE_CONTEXT:
            return CtxVal("meta_device") if _is_meta(args[:1] + [kwargs.get("type", UNKNOWN)]) else UNKNOWN
        if q in N.MODULE_KEEPING_TRANSFORMS:
            if isinstance(first, (ModuleVal, FuncVal, BoundMethod, PartialVal, MaybeVal, InstanceVal)):
                return first  # the result runs the same module, with its real parameters
            # `torch.compile(mode=...)`, `torch._dynamo.optimize("eager")`: a decorator that keeps them
            return DecoratorVal() if not args or isinstance(first, ConstVal) else UNKNOWN
        if q in N.EXPORT:
            return ExportedProgramVal(first)
        if q in N.CALL_THROUGH:
            # checkpoint(fn, *args): the function runs on the arguments (its own keywords dropped)
            return self.call_value(e, first, list(args[1:]), {k: v for k, v in kwargs.items() if k not in N.CALL_THROUGH[q]},
                                   st, func_expr=e.args[0] if e.args else None)
        if q in N.SKIP_INIT:
            return self.call_value(e, first, list(args[1:]), kwargs, st, func_expr=None)
        for kind, qs in N.FUNC_TRANSFORMS.items():
            if q in qs:
                argnums = kwargs.get("argnums", args[1] if len(args) > 1 else ConstVal(0))
                return TransformVal(kind, first, argnums.value if isinstance(argnums, ConstVal) else None)
        if _is_module_factory(q):
            return self.new_module(e, q, args, kwargs, st, torch_layer=False)
        if q in N.SIMPLE_NAMESPACE:
            return self.simple_namespace(e, args, kwargs)
        if q in N.DATACLASS_FIELD:
            return FieldVal(kwargs.get("default"), kwargs.get("default_factory"))
        if q in N.DATACLASS:
            if isinstance(first, ClassVal):
                first.dataclass = True
                return first
            return DecoratorVal("dataclass")
        if q in N.WRAPS:
            return DecoratorVal()
        if q in N.UPDATE_WRAPPER:
            return first
        return None

    def simple_namespace(self, e, args, kwargs):
        """``types.SimpleNamespace(mapping, **kw)``: an instance of a class with no
        methods whose attributes are the known keywords (and a known mapping's keys);
        any other attribute stays unknown."""
        attrs = {}
        if args and isinstance(args[0], SeqVal) and args[0].keys is not None and args[0].elts is not None:
            attrs.update((k, v) for k, v in zip(args[0].keys, args[0].elts) if isinstance(k, str))
        attrs.update(kwargs)
        node = ast.ClassDef(name="SimpleNamespace", bases=[], keywords=[], body=[], decorator_list=[], type_params=[])
        ast.copy_location(node, e)
        return InstanceVal(ClassVal(node, None, False), attrs)

    def deepcopy(self, e, src, st):
        """copy.deepcopy: under an active allow-mode region (or FakeCopyMode) the copy
        is fake; a real requires-grad value copied while a default mode is active
        crashes (HAZARD 11)."""
        region = st.active_region()
        if region is not None and src.real_rg():
            if st.allow_of(region.mode) is False:
                return self.op(e, [(src, e.args[0] if e.args else None)], st, differentiable=False)
            return _proven_copy(_fake_copy(src, region.mode), src, region.may or bool(st.may))
        if st.fake_copy is not None:
            return _proven_copy(_fake_copy(src, st.fake_copy), src, bool(st.may))
        if isinstance(src, ModuleVal) and src.origin is not None:
            copy = ModuleVal(Origin(src.origin.name, "module", e.lineno, param_names=src.origin.param_names),
                             src.mode, src.cls, dict(src.attrs), src.meta)
            copy.origin.disabled = src.origin.disabled
            return copy
        return src

    def new_module(self, e, q, args, kwargs, st, torch_layer=True):
        """A module built by a known constructor or factory: fake inside a region, meta
        on the meta device, else real with requires-grad parameters."""
        region = st.active_region()
        if region is not None:
            # fake parameters: its outputs are fake of this mode, also after the block
            # (known for layers with parameters, model factories, and Sequentials of them)
            fake = ModuleVal(None, region.mode, may_fake=region.may or bool(st.may))
            last = q.rsplit(".", 1)[-1]
            if not torch_layer or _known_params(last, kwargs):
                fake.fake_out = True
            elif last == "Sequential":
                children = [x for a in list(args) + list(kwargs.values()) for x in _flatten(a)]
                fake.fake_out = (any(isinstance(x, ModuleVal) and x.proven_fake() for x in children)
                                 and not any(x.real_rg() or (isinstance(x, ModuleVal) and x.meta) for x in children))
            return fake
        mod = ModuleVal(Origin("module", "module", e.lineno), None)
        if st.meta_device or _is_meta(list(kwargs.values())):
            mod.meta = True
        if not torch_layer:
            return mod
        last = q.rsplit(".", 1)[-1]
        mod.origin.param_names = _known_params(last, kwargs)
        if last in N.CONTAINER_MODULES:
            children = [x for a in list(args) + list(kwargs.values()) for x in _flatten(a)]
            if not any(x.real_rg() or (isinstance(x, ModuleVal) and x.meta) for x in children):
                mod.origin = None
        elif last in N.PARAMLESS_MODULES:
            mod.origin = None
        return mod

    def call_builtin(self, e, name, args, kwargs, st):
        if name in ("list", "tuple", "set", "sorted", "reversed", "iter", "frozenset"):
            if not args:
                return SeqVal(())
            a = args[0]
            if isinstance(a, SeqVal) and not a.is_dict:
                return SeqVal(a.items, a.elts if name in ("list", "tuple") else None)
            return SeqVal((self.iter_item(a),))
        if name in ("setattr", "object.__setattr__") and len(args) == 3 and isinstance(args[1], ConstVal):
            if isinstance(args[0], (InstanceVal, ModuleVal, ClassVal)) and isinstance(args[1].value, str):
                args[0].attrs[args[1].value] = args[2]  # (a frozen dataclass's __post_init__)
            return UNKNOWN
        if name == "super":
            fv = st.fv
            cls = args[0] if args and isinstance(args[0], ClassVal) else (fv.cls if fv is not None else None)
            self_val = args[1] if len(args) > 1 else None
            if self_val is None and fv is not None and not isinstance(fv.node, ast.Lambda):
                params = list(fv.node.args.posonlyargs) + list(fv.node.args.args)
                self_val = st.scope.vars.get(params[0].arg) if params else None
            if isinstance(cls, ClassVal) and self_val is not None:
                return SuperVal(cls, self_val)
            return UNKNOWN
        if name == "type" and len(args) == 1 and isinstance(args[0], (InstanceVal, ModuleVal)) and args[0].cls is not None:
            return args[0].cls
        if name == "dict" and not args and kwargs:
            return _dict_val(list(kwargs), list(kwargs.values()))
        if name == "dict" and len(args) == 1 and isinstance(args[0], SeqVal) and args[0].is_dict and not kwargs:
            return args[0]
        if name == "dict":
            items = []
            for a in args:
                it = self.iter_item(a)
                if isinstance(it, SeqVal) and it.elts and len(it.elts) == 2:
                    items.append(it.elts[1])
                else:
                    items.append(self.iter_item(it))
            items += list(kwargs.values())
            return SeqVal(tuple(items), is_dict=True)
        if name == "next" and args:
            return self.iter_item(args[0])
        if name == "enumerate" and args:
            item = self.iter_item(args[0])
            return SeqVal((SeqVal((UNKNOWN, item), (UNKNOWN, item)),))
        if name == "zip":
            elts = tuple(self.iter_item(a) for a in args)
            return SeqVal((SeqVal(elts, elts),))
        if name == "sum" and args:
            item = self.iter_item(args[0])
            if _is_tensorish(item):
                return self.op(e, [(item, e.args[0] if e.args else None)], st)
            return UNKNOWN
        if name in ("getattr",) and len(args) >= 2 and isinstance(args[1], ConstVal) and isinstance(args[1].value, str):
            return self.attribute(e, args[0], args[1].value, st)
        if name in ("getattr",) and len(args) >= 2 and isinstance(args[1], MaybeVal):
            # a name among known strings (a config's entries): each of them, or one of them
            return self.over_options(args[1], lambda o: (
                self.attribute(e, args[0], o.value, st) if isinstance(o, ConstVal) and isinstance(o.value, str) else UNKNOWN), st)
        if name in ("max", "min", "abs") and args and any(_is_tensorish(a) for a in args):
            return self.op(e, [(a, None) for a in args], st, differentiable=name == "abs")
        return UNKNOWN

    # ------------------------------------------------------------------- ops
    def binop(self, e, operands, st):
        if not any(_is_tensorish(v) for v, _ in operands):
            if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and len(operands) == 2:
                # `"a" + name`: string concatenation of known strings
                return _fold_strings([v for v, _ in operands], "".join, only=(str,))
            return UNKNOWN
        return self.op(e, operands, st)

    def op(self, node, operands, st, differentiable=True):
        """A tensor op on ``operands`` ((value, expr) pairs): detect leaks, return the result."""
        region = st.active_region()
        mode = region.mode if region else None
        route = "in-region"
        flat = []
        whole = {}  # id(element) -> the container operand it came from (for messages and fixes)
        for v, ex in operands:
            if isinstance(v, SeqVal):
                for x in _flatten(v):
                    flat.append((x, ex))
                    whole[id(x)] = v
            else:
                flat.append((v, ex))
        if mode is None:  # (a fake operand dispatches to its own mode, even with dispatch off)
            for v, _ in flat:
                m = v.fake_mode()
                if m is not None:
                    mode = m
                    route = "leaked-mix"
                    # a value made fake on some paths only proves no leak
                    region = Region(m, m.allow, None, -1, None, may=not v.proven_fake())
                    break
        leaks = frozenset()
        for v, _ in flat:
            leaks |= v.taint()
        grad = differentiable and st.grad_enabled
        fake_ex = None
        if route == "leaked-mix":
            # the expression that names the leaked fake tensor itself (never a container
            # of it: `inputs.fake_mode` on a tuple does not exist)
            starred = {id(a.value) for a in getattr(node, "args", ()) if isinstance(a, ast.Starred)}
            fake_ex = next((ex for v, ex in flat if ex is not None and id(v) not in whole and isinstance(v, TVal)
                            and id(ex) not in starred
                            and v.fake_mode() is mode and dotted_name(ex)), None)
        if mode is not None:
            allow = st.allow_of(mode)
            # every link known: the region is entered on this path, what it allows is
            # known, and the operand is a real requires-grad value on every path
            region_may = bool(st.may) or region.may or allow is None
            new = []
            for v, ex in flat:
                origins = v.real_rg()
                if not origins:
                    continue
                may = region_may or not v.proven_rg()
                for origin in origins:
                    if origin.disabled:
                        continue
                    rec = self.record(node, origin, whole.get(id(v), v), ex, region, route, allow, st, grad, fake_ex, may)
                    if rec is not None:
                        new.append(rec)
            return TVal(frozenset(), mode, (leaks | frozenset(new)) if grad else frozenset(), may_fake=region_may)
        origins = frozenset()
        if grad:
            for v, _ in flat:
                origins |= v.real_rg()
        return TVal(origins, None, leaks if grad else frozenset(), derived=bool(origins))

    def record(self, node, origin, value, expr, region, route, allow, st, grad, fake_ex=None, may=False):
        crash = allow is False
        if not crash and not grad:
            return None
        key = (id(node), id(origin))
        entry = None
        if self.ctx is not self.main:
            # code of another project module: reported where the linted file calls into it
            entry = self._main_entry()
            if entry is None or not (origin.file is None or _carries(list(entry[2]) + list(entry[3].values()), origin)):
                # not reached from the linted file, or the real value does not come
                # from it: a hazard of the other module, reported when that one is linted
                if crash:
                    raise Crashed()
                return None
            key += (id(entry[0][0]) if entry[0] is not None else id(entry[1]),)
        rec = self.records.get(key)
        if rec is not None and rec.may and not may:
            rec.may = False  # proven on this path
        if rec is None:
            if expr is None and isinstance(node, ast.Call):
                expr = None
                text = self._text(node.func)
            else:
                text = self._text(expr) if expr is not None else origin.name
            rec = LeakRecord(node, origin, text, region, route, crash, may=may)
            rec.value_kind = (
                "module" if _is_module_value(value)
                else "parameter" if origin.kind in ("module", "parameter")
                else "container" if isinstance(value, SeqVal) else "tensor"
            )
            if entry is not None:
                rec.file, rec.entry = self.ctx, entry
                rec.fix_plan = None
            elif route == "leaked-mix":
                rec.fix_plan = self._leaked_fix_plan(node, expr, value, fake_ex)
            else:
                rec.fix_plan = self._fix_plan(node, expr, value, origin, region, st)
                if rec.fix_plan is not None and region.file is not None and not self._in_main(region.with_node):
                    rec.fix_plan = None  # the block to edit is in another module
            self.records[key] = rec
        elif rec.fix_plan is not None and route != "leaked-mix" and expr is not None:
            # the same value leaks again in this op (`w["a"] * w["b"]`): its fix must
            # convert this expression too (the plan's uses are shared per region)
            self._fix_plan(node, expr, value, origin, region, st)
        if crash and not may:
            raise Crashed()
        return rec

    def _fix_plan(self, node, expr, value, origin, region, st):
        """How to convert the real value at the region's boundary, when that is
        expressible in the ``with`` block that opened the region."""
        if region.with_node is None:
            return None
        if isinstance(value, ModuleVal) and value.meta:
            return None  # fake copies of meta parameters stay on the meta device: not proven to run
        from fakegrad_lint.analysis.leaks import FixPlan

        inner = st.scope.func_node
        kind = None
        if inner is not getattr(region, "func_node", None) and _defined_in(inner, region.with_node) \
                and expr is not None and _free_in(expr, inner):
            # a lambda or closure defined in the block reads the real value from outside:
            # the copy hoisted in the block is what it reads instead (it runs in the block)
            pass
        elif region.func_node is not st.scope.func_node:
            # the leak is inside a helper called from the block: convert the argument
            # that carries the real value at the call in the block
            site = next((x for x in reversed(st.sites) if x.caller is region.func_node), None)
            if site is None:
                return None
            _, call, exprs, values = site
            kind = None
            for ex, val in zip(exprs, values):
                if ex is not None and origin in val.real_rg() and not isinstance(val, (ModuleVal, MaybeVal)):
                    expr, value = ex, val
                    node = call
                    break
            else:
                # a method of a real module (`ae.encode(x)`) whose body leaks its parameters:
                # the module itself is converted, as a fake copy, at the call
                recv = exprs[0] if exprs else None
                val = values[0] if values else None
                if not (isinstance(val, ModuleVal) and recv is not None and isinstance(call.func, ast.Attribute)
                        and call.func.value is recv and _owns(val, origin)):
                    return None
                expr, value, node, kind = recv, val, call, "module-copy"
        if kind is None:
            if isinstance(value, MaybeVal):
                return None  # one of several values: no single conversion is proven to fit
            kind = "module" if isinstance(value, ModuleVal) else None
            if kind == "module" and not (isinstance(node, ast.Call) and (node.func is expr or getattr(node.func, "value", None) is expr)):
                return None
        if expr is None:
            return None
        if isinstance(expr, (ast.List, ast.Tuple)) and isinstance(value, SeqVal) and kind is None:
            # `torch.cat([a, b])`: the element that names the real value is converted
            elt = next((e for e in expr.elts if dotted_name(e) == origin.name), None)
            item = next((v for v in value.items if origin in v.real_rg()), None)
            if elt is None or not isinstance(item, TVal):
                return None
            expr, value = elt, item
        dotted = dotted_name(expr)
        base = expr
        if dotted is None and kind == "module":
            # `model[0](x)`, `heads["a"](x)`: a stable expression names the module
            dotted = self._text(expr) if _constant_subscripts(expr) else None
            if dotted is None or "\n" in dotted:
                return None
        elif dotted is None:
            while isinstance(base, ast.Subscript):
                base = base.value
            dotted = dotted_name(base) if base is not expr else None
            if dotted is None:
                return None
            kind = "container"
        if kind is None:
            kind = "container" if isinstance(value, SeqVal) else "tensor"
        # every expression in the block that leaks this value: the fix converts them all
        target = node if kind == "module" else (base if kind == "container" else expr)
        if kind == "module-copy" and dotted is None:
            return None
        uses = region.uses.setdefault((kind, dotted), [])
        if not any(u is target for u in uses):
            uses.append(target)
        return FixPlan(kind=kind, value=dotted, with_node=region.with_node, item_index=region.item_index,
                       mode_name=region.bound_name, uses=uses, module_tree=self.tree, loop_modules=self.loop_modules,
                       derived=isinstance(value, TVal) and value.derived, conditional=region.mode.conditional)

    def _leaked_fix_plan(self, node, expr, value, fake_ex):
        """Mixing with a leaked fake: convert the real operand with the fake's own mode."""
        if fake_ex is None or expr is None or dotted_name(expr) is None:
            return None
        from fakegrad_lint.analysis.leaks import FixPlan

        if isinstance(value, ModuleVal):
            if not (isinstance(node, ast.Call) and node.func is expr):
                return None
            kind = "leaked-module"
        elif isinstance(value, TVal):
            kind = "leaked-tensor"
        else:
            return None
        return FixPlan(kind=kind, value=dotted_name(expr), with_node=None, item_index=-1, mode_name=f"{dotted_name(fake_ex)}.fake_mode",
                       uses=[node if kind == "leaked-module" else expr], module_tree=self.tree,
                       derived=isinstance(value, TVal) and value.derived)

    def sink(self, v, desc, node, st, inputs=None):
        leaks = v.taint()
        if not leaks or st.may:
            return  # (a sink on a path that only may be taken proves no hazard)
        wanted = None
        if inputs is not None and inputs is not UNKNOWN:
            wanted = set()
            for x in (_flatten(inputs) if isinstance(inputs, SeqVal) else [inputs]):
                if x is UNKNOWN:
                    wanted = None
                    break
                wanted |= set(x.real_rg())
                if isinstance(x, TVal) and x.mode is not None and not x.origins:
                    pass
        for rec in leaks:
            if wanted is not None and rec.origin not in wanted:
                continue
            rec.sinks.append((desc, node.lineno))
            rec.sink_sites.append((desc, node, self.ctx if self.ctx is not self.main else None))

    def _text(self, expr):
        seg = self.pos.segment(expr) if hasattr(expr, "lineno") else None
        if not seg:
            return "value"
        seg = " ".join(seg.split())
        return seg if len(seg) <= 40 else seg[:37] + "..."


# ----------------------------------------------------------------- helpers
def _c3_mro(cv):
    """C3 linearization over the in-file classes among the bases (others are opaque)."""
    seqs = [list(b.mro or (b,)) for b in cv.bases if isinstance(b, ClassVal)]
    seqs.append([b for b in cv.bases if isinstance(b, ClassVal)])
    out = [cv]
    while True:
        seqs = [q for q in seqs if q]
        if not seqs:
            return tuple(out)
        for q in seqs:
            head = q[0]
            if not any(any(head is x for x in t[1:]) for t in seqs):
                break
        else:  # inconsistent hierarchy (a TypeError at run time): depth-first order
            rest = []
            for q in seqs:
                rest.extend(c for c in q if not any(c is x for x in out + rest))
            return tuple(out + rest)
        out.append(head)
        for q in seqs:
            if q and q[0] is head:
                q.pop(0)


def _is_none_const(v):
    return isinstance(v, ConstVal) and v.value is None


_KNOWN_OBJECTS = (ModeVal, CtxVal, ExitStackVal, FuncVal, ClassVal, BoundMethod, PartialVal, TracedFn, TransformVal,
                  OptimizerVal, DecoratorVal, InstanceVal, ModuleVal, TVal, SeqVal, ExportedProgramVal, FieldVal)
_CMP = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def _is_none_test(v):
    """``v is None``: True, False, or None when not known."""
    if isinstance(v, ConstVal):
        return v.value is None
    if isinstance(v, _KNOWN_OBJECTS):
        return False
    if isinstance(v, MaybeVal):
        answers = {_is_none_test(o) for o in v.options}
        return answers.pop() if len(answers) == 1 else None
    return None


def _compare(ops, vals):
    """A comparison Python can answer from known values (None: not known)."""
    result = True
    for op, a, b in zip(ops, vals, vals[1:]):
        t = type(op)
        if t in (ast.Is, ast.IsNot):
            if _is_none_const(b):
                r = _is_none_test(a)
            elif _is_none_const(a):
                r = _is_none_test(b)
            else:
                return None
            if r is None:
                return None
            r = r if t is ast.Is else not r
        elif t in _CMP and isinstance(a, ConstVal) and isinstance(b, ConstVal):
            try:
                r = bool(_CMP[t](a.value, b.value))
            except Exception:
                return None
        elif t in (ast.In, ast.NotIn) and isinstance(a, ConstVal) and isinstance(b, SeqVal) and b.elts is not None:
            keys = b.keys if b.keys is not None else b.elts
            if b.keys is None and not all(isinstance(x, ConstVal) for x in keys):
                return None
            pool = [k for k in keys] if b.keys is not None else [x.value for x in keys]
            try:
                r = a.value in pool
            except Exception:
                return None
            r = r if t is ast.In else not r
        else:
            return None
        result = result and r
    return result


def _mark_may_regions(regions, before):
    """Regions entered in a branch whose test is unknown, still entered after it:
    after the ``if`` they are entered on some paths only."""
    for r in regions:
        if not any(r is b for b in before):
            r.may = True


def _is_module_value(v):
    if isinstance(v, MaybeVal):
        opts = [o for o in v.options if not _is_none_const(o)]
        return bool(opts) and all(isinstance(o, ModuleVal) for o in opts)
    return isinstance(v, ModuleVal)


def _values_of(seq):
    """The values of a mapping (each of them)."""
    return union_all(seq.items)


def _dict_val(keys, values):
    """A dict with constant keys (later keys win, as in Python)."""
    ks, vs = [], []
    for k, v in zip(keys, values):
        try:
            hash(k)
        except TypeError:
            return SeqVal(tuple(values), is_dict=True)
        if k in ks:
            i = ks.index(k)
            del ks[i], vs[i]
        ks.append(k)
        vs.append(v)
    return SeqVal(tuple(vs), tuple(vs), tuple(ks), is_dict=True)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
# with the function definitions whose bodies are parsed on first use (fakegrad_lint.sources.lazyparse)
_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, *LAZY_DEF_TYPES)


def _defined_in(func, with_node) -> bool:
    """Is ``func`` (a lambda or def) written inside the block of ``with_node``?"""
    body = getattr(with_node, "body", None) or []
    if func is None or not body or not hasattr(func, "lineno"):
        return False
    return body[0].lineno <= func.lineno and func.end_lineno <= body[-1].end_lineno


def _free_in(expr, func) -> bool:
    """Is the root name of ``expr`` free in ``func`` (not a parameter, not assigned,
    not declared global in it)? Then it is read from the block's scope."""
    root = expr
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    a = func.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
    if root.id in params:
        return False
    body = func.body if isinstance(func.body, list) else [func.body]
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == root.id and not isinstance(node.ctx, ast.Load):
                return False
            if isinstance(node, (ast.Global, ast.Nonlocal)) and root.id in node.names:
                return False
    return True


_MODULE_ITERATORS = frozenset({"children", "modules", "named_children", "named_modules", "parameters",
                               "named_parameters", "buffers", "named_buffers", "values", "items"})


def _owns(mod, origin, depth: int = 0) -> bool:
    """Is ``origin`` the origin of module value ``mod``, of one of its parameters, or
    of one of its submodules (known attributes, a few levels down)?"""
    o = origin
    while o is not None:
        if o is mod.origin:
            return True
        o = o.parent
    if depth >= 4:
        return False
    return any(isinstance(v, ModuleVal) and _owns(v, origin, depth + 1) for v in mod.attrs.values())


def _forward_uses_fakes(cls, attrs):
    """A module of the file built in a region: does its ``forward`` read a fake
    parameter or submodule of it (``self.proj``), with no real one among them?"""
    if any(v.real_rg() or (isinstance(v, ModuleVal) and v.meta) for v in attrs.values()):
        return False
    fwd = cls.lookup_method("forward")
    if not isinstance(fwd, FuncVal) or not fwd.node.args.args:
        return False
    me = fwd.node.args.args[0].arg
    fakes = {k for k, v in attrs.items() if isinstance(v, (ModuleVal, TVal)) and v.proven_fake()}
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == me and n.attr in fakes
               for n in ast.walk(fwd.node))


def _is_nn_module_class(q):
    if q in N.NN_MODULE_BASE:
        return True
    if not q.startswith("torch.nn."):
        return False
    parts = q[len("torch.nn."):].split(".")
    if not parts[-1][:1].isupper():
        return False
    if parts[0] in N.NN_NON_MODULE_SUBPACKAGES:
        return False
    return parts[-1] not in N.NN_NON_MODULE_CLASSES


def _is_module_factory(q):
    """A third-party call that returns a real module (torchvision.models.resnet18,
    timm.create_model, transformers' from_pretrained / from_config)."""
    for prefix, how in N.MODULE_FACTORIES:
        if how == "exact":
            if q == prefix:
                return True
        elif q.startswith(prefix):
            rest = q[len(prefix):].split(".")
            if how == "lower" and len(rest) == 1 and rest[0][:1].islower():
                return True
            if how == "loader" and len(rest) == 2 and rest[0][:1].isupper() and rest[1] in N.LOADER_METHODS:
                return True
    return False


def _is_torch_op(q):
    if q in N.TORCH_NON_OPS or any(q.startswith(p) for p in N.TORCH_NON_OPS_PREFIX):
        return False
    last = q.rsplit(".", 1)[-1]
    if last[:1].isupper():
        return False  # classes: torch.Size, torch.Generator, torch.nn.X (handled before)
    if q.startswith(("torch.func.", "torch.vmap", "torch.autograd.", "torch._")):
        return False
    return True


_SOURCE_RE = re.compile(r"requires_grad|Parameter|parameters\(|\bnn\.|Module\b|torch\.nn|backward|autograd")


_CALL_RE = re.compile(r"\b(\w+)\s*\(")
_WORD_RE = re.compile(r"\b[A-Za-z_]\w*\b")


def _module_classes(v, depth=0):
    """A module class of the file, or a container of them (a registry)."""
    if isinstance(v, ClassVal):
        return v.is_module
    if isinstance(v, (SeqVal, MaybeVal)) and depth < 2:
        return any(_module_classes(x, depth + 1) for x in (v.items if isinstance(v, SeqVal) else v.options))
    return False


def _hot_in_code(node, text, hot_re):
    """Does a hot word of ``text`` (the unit's lines, from its first decorator) occur
    where running the unit can evaluate it? Annotations are never evaluated (nor by
    this interpreter), docstrings and comments are not code: a unit that names a
    fake mode only there (``fake_mode: FakeTensorMode | None``) cannot open a region
    by itself, so it is analysed on its own only when it calls one that can.
    The signature's annotations are checked first, so that a unit that names a
    fake mode only there does not need its body (parsed on first use)."""
    import bisect

    first = min([node.lineno] + [dec.lineno for dec in node.decorator_list])
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    hits = []  # (line, start col, end col) of the matches in code, columns in UTF-8 bytes
    for m in hot_re.finditer(text):
        i = bisect.bisect_right(starts, m.start()) - 1
        line = lines[i]
        col = m.start() - starts[i]
        prefix = line[:col]
        h = prefix.find("#")
        if h >= 0 and not any(q in prefix[:h] for q in ("'", '"')):
            continue  # in a comment
        bcol = len(prefix.encode("utf-8")) if not prefix.isascii() else col
        hits.append((first + i, bcol, bcol + len(m.group().encode("utf-8"))))

    def outside(hits, spans):
        return [
            (ln, c0, c1)
            for ln, c0, c1 in hits
            if not any((sl, sc) <= (ln, c0) and (ln, c1) <= (el, ec) for sl, sc, el, ec in spans)
        ]

    def span(a):
        return (a.lineno, a.col_offset, a.end_lineno, a.end_col_offset)

    args = node.args
    header = [span(x.annotation) for x in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
              if x is not None and x.annotation is not None]
    if node.returns is not None:
        header.append(span(node.returns))
    hits = outside(hits, header)
    if not hits:
        return False
    spans = []
    for n in ast.walk(node):  # the body too: annotations of locals and nested defs, docstrings
        t = type(n)
        if t is ast.arg or t is ast.AnnAssign:
            a = n.annotation
        elif t in _FUNCTION_DEFS:
            a = n.returns
        elif t is ast.Expr and type(n.value) is ast.Constant and isinstance(n.value.value, str):
            a = n.value
        else:
            continue
        if a is not None:
            spans.append(span(a))
    return bool(outside(hits, spans))


def _called_names(text):
    """Names a function's text calls, ``f(...)`` and ``self.f(...)`` (a superset is fine:
    it only decides what is worth analysing)."""
    return set(_CALL_RE.findall(text))


def _interesting(v, depth=0):
    """Does this value carry anything the rules care about?"""
    if isinstance(v, TVal):
        return bool(v.origins or v.mode is not None or v.leaks)
    if isinstance(v, (ModuleVal, ModeVal, CtxVal, ExitStackVal, TracedFn, OptimizerVal, TransformVal, ExportedProgramVal)):
        return True
    if isinstance(v, ClassVal):
        return v.is_module  # calling it makes a module
    if isinstance(v, (SeqVal, MaybeVal)) and depth < 3:
        items = v.items if isinstance(v, SeqVal) else v.options
        return any(_interesting(x, depth + 1) for x in items)
    if isinstance(v, InstanceVal) and depth < 2:
        return any(_interesting(x, depth + 1) for x in v.attrs.values())
    return False


def _set_requires_grad(v, on, depth=0):
    """``module.requires_grad_(on)``: every parameter of the module, its submodules'
    included (attributes of modules of the file), is switched."""
    if isinstance(v, ModuleVal):
        if v.origin is not None:
            v.origin.disabled = not on
            if on:
                v.origin.frozen.clear()
        if depth < 4:
            for x in v.attrs.values():
                if isinstance(x, (ModuleVal, TVal, SeqVal)):
                    _set_requires_grad(x, on, depth + 1)
    elif isinstance(v, TVal):
        for o in v.origins:
            if o.kind in ("parameter", "module"):
                o.disabled = not on
    elif isinstance(v, SeqVal) and depth < 4:
        for x in v.items:
            _set_requires_grad(x, on, depth + 1)


def _disable_module_origins(v):
    """``p.requires_grad_(False)`` over a module's parameters (a loop over
    ``model.parameters()``), or over each of its known parameters by name
    (``lin.weight.requires_grad = False``): the module no longer brings
    requires-grad values."""
    for o in v.origins:
        if o.kind == "module":
            o.disabled = True
            if o.owner is not None:
                _set_requires_grad(o.owner, False)
        elif o.parent is not None and o.param is not None:
            o.disabled = True
            parent = o.parent
            parent.frozen.add(o.param)
            if parent.param_names is not None and parent.frozen >= parent.param_names:
                parent.disabled = True


def _known_params(cls_name, kwargs):
    """The parameter names of common torch.nn layers (None when not known)."""
    if cls_name in N.WEIGHT_ONLY_MODULES:
        return frozenset({"weight"})
    if cls_name in N.WEIGHT_AND_BIAS_MODULES:
        names = {"weight", "bias"}
        for flag in ("bias", "elementwise_affine", "affine"):
            v = kwargs.get(flag)
            if isinstance(v, ConstVal) and v.value is False:
                names = set() if flag != "bias" else names - {"bias"}
        if cls_name == "RMSNorm":
            names.discard("bias")
        return frozenset(names)
    return None


def _name_origins(val, name, line):
    """``x = torch.randn(..., requires_grad=True)``: the origin made on this line is ``x``."""
    origins = val.real_rg() if isinstance(val, (TVal, ModuleVal)) else ()
    for o in origins:
        if o.line == line and o.name in ("tensor", "module", "parameter"):
            o.name = name


def _constant_subscripts(node):
    """``a.b[0]["k"]``: names and constant indexes only (the same object each time)."""
    while isinstance(node, ast.Subscript):
        if not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return dotted_name(node) is not None


def _arg_exprs(e):
    """The expressions of a call's positional arguments, aligned with evaluated args."""
    if not isinstance(e, ast.Call):
        return []
    return [a.value if isinstance(a, ast.Starred) else a for a in e.args]


# nodes a getattr name may be made of to be looked at before the call runs
_PURE_NAME_NODES = (ast.Constant, ast.Name, ast.Attribute, ast.JoinedStr, ast.FormattedValue, ast.BinOp,
                    ast.expr_context, ast.operator)


class _FormattedPart:
    """An f-string's ``{value!conv:spec}``: ``fmt`` turns a known value into its text."""

    __slots__ = ("value", "fmt")

    def __init__(self, value, fmt):
        self.value = value
        self.fmt = fmt


_FOLD_TYPES = (str, int, float, bool, type(None))


def _fold_strings(parts, combine, only=_FOLD_TYPES):
    """Fold a string built from ``parts`` (ConstVals, may values of ConstVals, or
    _FormattedParts of those) when every part is known: a ConstVal, or, when a single
    may value takes part, a may value of the strings for each of its options (two
    different may values would pair options that never meet). Else UNKNOWN."""
    inner = [p.value if isinstance(p, _FormattedPart) else p for p in parts]
    maybes = []
    for v in inner:
        if isinstance(v, MaybeVal) and not any(v is m for m in maybes):
            maybes.append(v)
    if len(maybes) > 1:
        return UNKNOWN
    choices = list(maybes[0].options) if maybes else [None]
    if not choices or any(not isinstance(o, ConstVal) for o in choices if o is not None):
        return UNKNOWN
    out = []
    for choice in choices:
        texts = []
        for p, v in zip(parts, inner):
            c = choice if isinstance(v, MaybeVal) else v
            if not isinstance(c, ConstVal) or type(c.value) not in only:
                return UNKNOWN
            if isinstance(p, _FormattedPart):
                try:
                    texts.append(p.fmt(c.value))
                except Exception:
                    return UNKNOWN
            elif isinstance(c.value, str):
                texts.append(c.value)
            else:
                return UNKNOWN
        out.append(ConstVal(combine(texts)))
    if not maybes:
        return out[0]
    return MaybeVal(tuple(out), maybes[0].each)


def _grad_mode_kind(q, args, kwargs):
    """The context a grad-mode constructor builds, from torch_tables' meaning of its
    constant argument: "grad_on" or "grad_off" (an unknown argument: grad may be off)."""
    without, by_arg = N.GRAD_MODE_CONTEXTS[q]
    arg = args[0] if args else kwargs.get(N.GRAD_MODE_ARGUMENT)
    if (arg is None or not by_arg) and without is not None:
        mode = without
    elif isinstance(arg, ConstVal) and isinstance(arg.value, (bool, int)) and bool(arg.value) in by_arg:
        mode = by_arg[bool(arg.value)]
    else:
        mode = "off"
    return "grad_on" if mode == "on" else "grad_off"


def _operands(e, args, kwargs):
    exprs = _arg_exprs(e)
    out = [(a, exprs[i] if i < len(exprs) and len(exprs) == len(args) else None) for i, a in enumerate(args)]
    kw_exprs = {kw.arg: kw.value for kw in getattr(e, "keywords", ()) if kw.arg is not None}
    out += [(v, kw_exprs.get(k)) for k, v in kwargs.items()]
    return out


def _flatten(v, depth=0):
    if isinstance(v, SeqVal) and depth < 4:
        out = []
        for x in v.items:
            out.extend(_flatten(x, depth + 1))
        return out
    return [v]


def _sets_requires_grad(body, name):
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "requires_grad_":
            if isinstance(n.func.value, ast.Name) and n.func.value.id == name:
                return True
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Attribute) and t.attr == "requires_grad" and isinstance(t.value, ast.Name) and t.value.id == name:
                    return True
    return False


def _is_tensorish(v):
    if isinstance(v, (TVal, ModuleVal)):
        return True
    if isinstance(v, MaybeVal):
        return any(_is_tensorish(o) for o in v.options)
    return False


def _truth(v):
    """bool(v) when Python's answer is known: constants, objects without
    ``__bool__``/``__len__`` (modes, context managers, functions, classes), literals."""
    if isinstance(v, ConstVal):
        try:
            return bool(v.value)
        except Exception:
            return None
    if isinstance(v, (ModeVal, CtxVal, ExitStackVal, FuncVal, ClassVal, BoundMethod, PartialVal, TracedFn,
                      TransformVal, OptimizerVal, DecoratorVal)):
        return True
    if isinstance(v, InstanceVal):
        cls = v.cls
        if all(isinstance(b, ClassVal) for c in cls.mro for b in c.bases) and not (
            cls.lookup_method("__bool__") or cls.lookup_method("__len__")
        ):
            return True
        return None
    if isinstance(v, SeqVal) and v.elts is not None:
        return bool(v.elts)
    return None


def _kw_true(kwargs, name):
    v = kwargs.get(name)
    return isinstance(v, ConstVal) and v.value is True


def _kw_false(kwargs, name):
    v = kwargs.get(name)
    return isinstance(v, ConstVal) and v.value is False


def _is_meta(vals):
    for v in vals:
        if isinstance(v, ConstVal) and isinstance(v.value, str) and v.value.startswith("meta"):
            return True
    return False


def _with_taint(v, leaks):
    if isinstance(v, TVal):
        return TVal(v.origins, v.mode, v.leaks | leaks, v.derived)
    if isinstance(v, SeqVal):
        items = tuple(_with_taint(x, leaks) for x in v.items)
        elts = tuple(_with_taint(x, leaks) for x in v.elts) if v.elts is not None else None
        return SeqVal(items, elts, v.keys, v.is_dict)
    return v


def _fake_copy(v, mode, depth=0):
    """What ``from_tensor`` / a deepcopy under a fake mode gives: the same structure,
    every tensor (and every submodule's parameter) fake."""
    if isinstance(v, ModuleVal):
        attrs = {k: (_fake_copy(x, mode, depth + 1) if depth < 4 and isinstance(x, (ModuleVal, TVal, SeqVal)) else x)
                 for k, x in v.attrs.items()}
        return ModuleVal(None, mode, v.cls, attrs)
    if isinstance(v, SeqVal):
        items = tuple(_fake_copy(x, mode, depth + 1) for x in v.items)
        elts = tuple(_fake_copy(x, mode, depth + 1) for x in v.elts) if v.elts is not None else None
        return SeqVal(items, elts, v.keys, v.is_dict)
    if isinstance(v, (TVal, MaybeVal)) or v is UNKNOWN:
        return TVal(frozenset(), mode)
    return v


def _proven_copy(copy, src, may):
    """A fake deep copy of a real torch module: its outputs are fake (its forward
    uses the copied parameters); a copy of a module of the file, when its forward reads them."""
    if isinstance(copy, ModuleVal) and isinstance(src, ModuleVal) and src.origin is not None:
        copy.may_fake = may
        copy.fake_out = src.cls is None or _forward_uses_fakes(src.cls, copy.attrs)
    return copy


def _with_grad_reads(plan, lines):
    plan.grad_reads = list(lines)
    return plan


def _carries(values, origin, depth=0):
    """Does one of ``values`` hold the real value ``origin`` (directly, in a
    container, or in an attribute of an object)?"""
    for v in values:
        if origin in v.real_rg():
            return True
        if depth < 3:
            if isinstance(v, (InstanceVal, ModuleVal)) and _carries(list(v.attrs.values()), origin, depth + 1):
                return True
            if isinstance(v, SeqVal) and _carries(list(v.items), origin, depth + 1):
                return True
            if isinstance(v, MaybeVal) and _carries(list(v.options), origin, depth + 1):
                return True
            if isinstance(v, BoundMethod) and _carries([v.self_val], origin, depth + 1):
                return True
    return False


def _word_count(text, word, limit):
    """Occurrences of ``word`` as a whole word in ``text``, counting up to ``limit``
    (``str.find``: a regex with word boundaries is slow on large texts)."""
    n, i, size = 0, text.find(word), len(word)
    while i >= 0 and n < limit:
        before = text[i - 1] if i else " "
        after = text[i + size] if i + size < len(text) else " "
        if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
            n += 1
        i = text.find(word, i + 1)
    return n


def _path_of(ctx):
    """The file of a project module context (None: the linted file)."""
    return ctx.mf.path if ctx is not None and getattr(ctx, "mf", None) is not None else None


def _values_name(rec):
    site = rec.entry[0] if rec.entry else None
    if site is not None and isinstance(site[0], ast.Call):
        return dotted_name(site[0].func) or rec.value_text
    return rec.value_text


def _is_main_guard(test):
    """``__name__ == "__main__"``"""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def analyze_module(tree: ast.Module, source: str, project=None, filename: str | None = None, deps: dict | None = None) -> list[Leak]:
    interp = Interpreter(tree, source, project, filename)
    try:
        return interp.run()
    finally:
        _values.CURRENT_FILE[0] = None
        if deps is not None:
            deps.update(interp.deps)
