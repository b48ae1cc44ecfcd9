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
import re

from fakegrad_lint.analysis import names as N
from fakegrad_lint.analysis.leaks import Leak, Route, Verdict
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.positions import PositionMap
from fakegrad_lint.analysis.values import (
    UNKNOWN,
    BoundMethod,
    ClassVal,
    ConstVal,
    CtxVal,
    ExitStackVal,
    FuncVal,
    InstanceVal,
    LeakRecord,
    MaybeVal,
    ModeVal,
    ModRef,
    ModuleVal,
    OptimizerVal,
    Origin,
    Region,
    SeqVal,
    TracedFn,
    TVal,
    Value,
    join,
)
from fakegrad_lint.lazyparse import LAZY_DEF_TYPES
from fakegrad_lint.prefilter import ENTRY_WORDS

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
    __slots__ = ("scope", "regions", "grad_enabled", "dispatch_off", "patched", "fake_copy", "returns", "depth", "stack", "self_val", "sites", "cur")

    def __init__(self, scope):
        self.scope = scope
        self.regions: list[Region] = []
        self.grad_enabled = True
        self.dispatch_off = 0
        self.patched: set = set()
        self.fake_copy = None
        self.returns: list = []
        self.depth = 0
        self.stack: tuple = ()
        self.self_val = None
        self.sites: tuple = ()  # (caller func node, call node, arg exprs, arg values) per descent
        self.cur = None  # (block, index) of the statement being executed

    def child(self, scope):
        c = State(scope)
        c.regions = self.regions
        c.grad_enabled = self.grad_enabled
        c.dispatch_off = self.dispatch_off
        c.patched = self.patched
        c.fake_copy = self.fake_copy
        c.depth = self.depth + 1
        c.stack = self.stack
        c.sites = self.sites
        return c

    def active_region(self):
        if self.regions and not self.dispatch_off:
            return self.regions[-1]
        return None

    def allow_of(self, mode):
        return True if mode in self.patched else mode.allow




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
    def __init__(self, tree: ast.Module, source: str):
        self.tree = tree
        self.source = source
        self.pos = PositionMap(source)
        self.records: dict = {}  # (id(node), id(origin)) -> LeakRecord
        self.steps = 0
        self.exhausted = False
        self.instances: dict = {}  # ClassVal -> instance for standalone method analysis
        self.module_scope = Scope()
        self.module_scope.func_node = tree
        self._func_contains_yield: dict = {}
        self._capture_gen = None
        self._matter: dict = {}
        self._entry_rx = None

    # ------------------------------------------------------------------ driver
    def run(self) -> list[Leak]:
        st = State(self.module_scope)
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
        units = []  # (FuncVal, ClassVal or None, text)
        for d in self.tree.body:
            val = mvars.get(getattr(d, "name", None))
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(val, FuncVal) and val.node is d:
                units.append((val, None))
            elif isinstance(d, ast.ClassDef) and isinstance(val, ClassVal) and val.node is d:
                units.extend((fv, val) for fv in val.methods.values() if fv.cls is val)
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
        for dec in fv.node.decorator_list:
            if isinstance(dec, ast.Name) and dec.id in ("staticmethod", "classmethod"):
                return True
        return False

    def _leaks(self) -> list[Leak]:
        best: dict = {}
        order = {Verdict.CRASH: 3, Verdict.HAZARD: 2, Verdict.FORWARD_ONLY: 1}
        for rec in self.records.values():
            if rec.crash:
                verdict = Verdict.CRASH
            elif rec.sinks:
                verdict = Verdict.HAZARD
            else:
                verdict = Verdict.FORWARD_ONLY
            node = rec.node
            start = self.pos.char_pos(node.lineno, node.col_offset)
            end = self.pos.char_pos(node.end_lineno, node.end_col_offset)
            sink, sink_line = (rec.sinks[0] if rec.sinks else (None, None))
            route = Route.LEAKED_MIX if rec.route == "leaked-mix" else Route.IN_REGION
            leak = Leak(
                verdict=verdict,
                route=route,
                start=start,
                end=end,
                value=rec.value_text,
                value_kind=rec.value_kind,
                mode=rec.region.mode.desc,
                mode_line=rec.region.mode.line,
                sink=sink,
                sink_line=sink_line,
                fix=rec.fix_plan if verdict is not Verdict.FORWARD_ONLY else None,
            )
            if rec.fix_plan is not None and rec.origin.grad_reads:
                leak.fix = None if verdict is Verdict.FORWARD_ONLY else _with_grad_reads(rec.fix_plan, rec.origin.grad_reads)
            key = (start, route)
            prev = best.get(key)
            if prev is None or order[verdict] > order[prev.verdict]:
                best[key] = leak
        return sorted(best.values(), key=lambda l: l.start)

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
            item = self.iter_item(it)
            self.assign(s.target, item, st, None)
            self.exec_branch(s.body, st)
            if isinstance(it, SeqVal) and isinstance(s.target, ast.Name) and _sets_requires_grad(s.body, s.target.id):
                # `for t in ts: t.requires_grad_()` changes the tensors in the container
                now = st.scope.lookup(s.target.id)
                if now is not None and now is not item and now.real_rg() - item.real_rg():
                    container = s.iter
                    if isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute) and container.func.attr == "values":
                        container = container.func.value  # `for v in d.values()`
                    self.rebind(container, SeqVal(it.items + (now,)), st)
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
                if alias.asname:
                    st.scope.assign(alias.asname, ModRef(alias.name))
                else:
                    top = alias.name.split(".")[0]
                    st.scope.assign(top, ModRef(top))
        elif t is ast.ImportFrom:
            if s.level == 0 and s.module:
                for alias in s.names:
                    if alias.name == "*":
                        for name in _STAR_EXPORTS.get(s.module, ()):
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
        if truth is True:
            self.exec_block(s.body, st)
            return
        if truth is False:
            self.exec_block(s.orelse, st)
            return
        scope = st.scope
        before = dict(scope.vars)
        crashed = 0
        try:
            self.exec_branch(s.body, st)
        except Crashed:
            crashed += 1
        after_body = scope.vars
        scope.vars = dict(before)
        try:
            self.exec_branch(s.orelse, st)
        except Crashed:
            crashed += 1
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
                fn()

    def enter(self, cm, st, undo, with_node=None, index=-1, bound=None, expr=None):
        """Enter a context manager value; push what it changes and its undo on ``undo``."""
        if isinstance(cm, MaybeVal):
            modes = [o for o in cm.options if isinstance(o, (ModeVal, CtxVal, ExitStackVal))]
            if modes:
                # an unknown condition selects a fake mode on some path: enter it
                pick = next((o for o in modes if isinstance(o, ModeVal)), modes[0])
                # (no fix: the block cannot know which one it got)
                return self.enter(pick, st, undo, None, index, None, None)
            return UNKNOWN
        if isinstance(cm, ModeVal):
            name = bound
            if name is None and expr is not None:
                d = dotted_name(expr)
                if d is not None:
                    name = d
            region = Region(cm, cm.allow, with_node, index, name)
            region.func_node = st.scope.func_node  # type: ignore[attr-defined]
            st.regions.append(region)
            regions = st.regions
            undo.append(lambda: regions.remove(region) if region in regions else None)
            return cm
        if isinstance(cm, CtxVal):
            k = cm.kind
            if k == "grad_off" or k == "grad_on":
                old = st.grad_enabled
                st.grad_enabled = k == "grad_on"
                undo.append(lambda: setattr(st, "grad_enabled", old))
            elif k == "unset_fake":
                st.dispatch_off += 1
                undo.append(lambda: setattr(st, "dispatch_off", st.dispatch_off - 1))
            elif k == "fake_copy":
                old = st.fake_copy
                st.fake_copy = cm.target
                undo.append(lambda: setattr(st, "fake_copy", old))
            elif k == "patch_allow":
                if cm.target is not None:
                    target = cm.target
                    added = target not in st.patched
                    st.patched.add(target)
                    if added:
                        undo.append(lambda: st.patched.discard(target))
            elif k == "gen":
                return self.enter_generator(cm, st, undo, with_node, index, bound)
            return UNKNOWN
        if isinstance(cm, ExitStackVal):
            marker = []  # undo actions of the contexts entered through this stack
            cm.pushed.append(marker)

            def close(marker=marker):
                for fn in reversed(marker):
                    fn()
                marker.clear()

            undo.append(close)
            return cm
        return UNKNOWN

    def enter_generator(self, cm, st, undo, with_node=None, index=-1, bound=None):
        """Enter a @contextmanager helper: run it up to its ``yield`` and keep the
        regions and grad state active there for the body of the ``with``."""
        fv, args, kwargs = cm.target
        before = list(st.regions)
        old_grad, old_off, old_patched = st.grad_enabled, st.dispatch_off, set(st.patched)
        prev, self._capture_gen = self._capture_gen, fv.node
        try:
            self.call_function(fv, args, kwargs, st, run_generator=True)
        except YieldReached as y:
            # the generator's own with-blocks were unwound by the exception: re-apply
            for r in y.regions:
                if r not in st.regions:
                    st.regions.append(r)
                    if r.mode is y.value and with_node is not None:
                        # the helper yields its mode: the block can bind and use it
                        r.with_node, r.item_index, r.bound_name = with_node, index, bound
                        r.func_node = st.scope.func_node
            st.grad_enabled = y.grad_enabled
            st.dispatch_off = y.dispatch_off
            st.patched |= y.patched
            regions = st.regions

            def restore():
                for r in list(regions):
                    if r not in before:
                        regions.remove(r)
                st.grad_enabled, st.dispatch_off = old_grad, old_off
                st.patched.intersection_update(old_patched)

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
            elts = val.elts if isinstance(val, SeqVal) and val.elts is not None and len(val.elts) == len(target.elts) else None
            for i, e in enumerate(target.elts):
                if isinstance(e, ast.Starred):
                    self.assign(e.value, SeqVal(items=(self.iter_item(val),)), st, None)
                elif elts is not None:
                    self.assign(e, elts[i], st, None)
                else:
                    self.assign(e, self.iter_item(val), st, None)
        elif t is ast.Attribute:
            obj = self.eval(target.value, st)
            if isinstance(obj, (InstanceVal, ModuleVal)):
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
            self.eval(target.slice, st)
            if isinstance(obj, SeqVal):
                self.rebind(target.value, SeqVal(obj.items + (val,)), st)
        elif t is ast.Starred:
            self.assign(target.value, val, st, value_node)

    def rebind(self, expr, val, st):
        if isinstance(expr, ast.Name):
            st.scope.assign(expr.id, val)
        elif isinstance(expr, ast.Attribute):
            obj = self.eval(expr.value, st)
            if isinstance(obj, (InstanceVal, ModuleVal)):
                obj.attrs[expr.attr] = val

    # -------------------------------------------------------------- functions
    def make_function(self, node, st, cls=None):
        cm = False
        grad_off = False
        for dec in node.decorator_list:
            dv = self.eval(dec.func if isinstance(dec, ast.Call) else dec, st)
            if isinstance(dv, ModRef):
                if dv.qualname in N.CONTEXT_MANAGER:
                    cm = True
                elif dv.qualname in N.GRAD_OFF:
                    grad_off = True
        fv = FuncVal(node, st.scope, cls, cm, grad_off)
        fv.defaults = [self.eval(d, st) for d in node.args.defaults] if not isinstance(node, ast.Lambda) else []  # type: ignore[attr-defined]
        return fv

    def make_class(self, node, st):
        bases = tuple(self.eval(b, st) for b in node.bases)
        is_module = False
        torch_base = False
        for b in bases:
            if isinstance(b, ModRef) and _is_nn_module_class(b.qualname):
                is_module = True
                if b.qualname not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                    torch_base = True
            elif isinstance(b, ClassVal) and b.is_module:
                is_module = True
                torch_base = torch_base or getattr(b, "torch_base", False)
        cv = ClassVal(node, st.scope, is_module, {}, bases)
        cv.torch_base = torch_base  # type: ignore[attr-defined]
        for b in bases:
            if isinstance(b, ClassVal):
                cv.methods.update(b.methods)
        cls_scope = Scope(parent=st.scope, module=st.scope.module, func_node=st.scope.func_node)
        cst = st.child(cls_scope)
        cst.depth = st.depth
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fv = self.make_function(item, cst, cls=cv)
                fv.scope = st.scope  # methods do not see the class body as a closure
                cv.methods[item.name] = fv
        return cv

    def instantiate(self, cls, args, kwargs, st, node):
        region = st.active_region()
        if cls.is_module:
            inst = ModuleVal(None, region.mode if region else None, cls, {})
        else:
            inst = InstanceVal(cls, {})
        init = cls.methods.get("__init__")
        if init is not None:
            try:
                self.call_function(init, [inst] + list(args), kwargs, st)
            except (YieldReached, _BlockExit):
                pass
        else:
            # a dataclass / NamedTuple-style class: annotated fields take the arguments
            fields = [n.target.id for n in cls.node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
            for i, name in enumerate(fields):
                if i < len(args):
                    inst.attrs[name] = args[i]
                elif name in kwargs:
                    inst.attrs[name] = kwargs[name]
        if cls.is_module and region is None:
            has_params = getattr(cls, "torch_base", False) or any(
                v.real_rg() or (isinstance(v, ModuleVal) and v.origin is not None) for v in inst.attrs.values()
            )
            if has_params:
                name = "module"
                inst.origin = Origin(name, "module", getattr(node, "lineno", 0))
        return inst

    def call_function(self, fv, args, kwargs, st, run_generator=False, site=None):
        node = fv.node
        if st.depth >= MAX_DEPTH or self.exhausted or node in st.stack:
            return UNKNOWN
        if fv.contextmanager and not run_generator:
            return CtxVal("gen", (fv, list(args), dict(kwargs)))
        if not (st.regions or self._may_matter(node) or any(_interesting(a) for a in args)
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
            cst.sites = st.sites + ((st.scope.func_node,) + site,)
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
        if is_gen and not run_generator:
            return SeqVal(tuple(cst.returns))
        if not cst.returns:
            return UNKNOWN
        out = cst.returns[0]
        for r in cst.returns[1:]:
            out = join(out, r)
        return out

    def bind_args(self, fv, args, kwargs, scope):
        node = fv.node
        a = node.args
        params = list(a.posonlyargs) + list(a.args)
        defaults = getattr(fv, "defaults", [])
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
            scope.vars[p.arg] = kwargs.get(p.arg, UNKNOWN)
        if a.kwarg is not None:
            scope.vars[a.kwarg.arg] = SeqVal(tuple(v for k, v in kwargs.items() if k not in scope.vars))

    def _entry_aliases(self):
        """Local names bound by imports to a way into a fake region (``FTM`` in
        ``from torch._subclasses.fake_tensor import FakeTensorMode as FTM``, ``ft``
        in ``import torch._subclasses.fake_tensor as ft``)."""
        out = set()
        for name, val in self.module_scope.vars.items():
            if isinstance(val, ModRef) and (
                _ENTRY_RE.search(val.qualname) or val.qualname in ("torch._subclasses", "torch._subclasses.fake_tensor")
            ):
                out.add(name)
        return out

    def _entry_re(self):
        if self._entry_rx is None:
            words = set(ENTRY_WORDS) | self._entry_aliases()
            self._entry_rx = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(words))))
        return self._entry_rx

    def _may_matter(self, node):
        """Can running this function's body outside a region matter? Only if its
        text can open a region or make a real requires-grad value."""
        flag = self._matter.get(node)
        if flag is None:
            lines = self.pos.lines
            text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            flag = bool(self._entry_re().search(text) or _SOURCE_RE.search(text))
            if not flag:
                # calls an in-file function that matters (by name)
                for name in _called_names(text):
                    target = self.module_scope.vars.get(name)
                    if isinstance(target, (FuncVal, ClassVal)) and target.node is not node and self._matter.get(target.node, None) is not False:
                        self._matter[node] = False  # guard recursion
                        if self._may_matter(target.node):
                            flag = True
                            break
            self._matter[node] = flag
        return flag

    # ------------------------------------------------------------- expressions
    def eval(self, e, st) -> Value:
        self._tick()
        t = type(e)
        if t is ast.Name:
            v = st.scope.lookup(e.id)
            if v is None:
                return ModRef("builtins." + e.id) if e.id in _BUILTINS else UNKNOWN
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
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return UNKNOWN
            if any(_is_tensorish(v) for v, _ in vals):
                return self.op(e, vals, st, differentiable=False)
            return UNKNOWN
        if t is ast.BoolOp:
            vals = [self.eval(v, st) for v in e.values]
            out = vals[0]
            for v in vals[1:]:
                out = join(out, v)
            return out
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
            for k, v in zip(e.keys, e.values):
                if k is not None:
                    self.eval(k, st)
                    items.append(self.eval(v, st))
                else:
                    items.append(self.iter_item(self.eval(v, st)))
            return SeqVal(tuple(items))
        if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            return self.eval_comprehension(e, st)
        if t is ast.Subscript:
            obj = self.eval(e.value, st)
            idx = self.eval(e.slice, st)
            return self.subscript(e, obj, idx, st)
        if t is ast.Lambda:
            fv = FuncVal(e, st.scope)
            fv.defaults = [self.eval(d, st) for d in e.args.defaults]  # type: ignore[attr-defined]
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
            for v in e.values:
                if isinstance(v, ast.FormattedValue):
                    self.eval(v.value, st)
            return UNKNOWN
        if t is ast.Slice:
            for part in (e.lower, e.upper, e.step):
                if part is not None:
                    self.eval(part, st)
            return UNKNOWN
        return UNKNOWN

    def on_yield(self, v, st):
        if st.stack and self._capture_gen is st.stack[-1]:
            y = YieldReached(st, v)
            y.regions = list(st.regions)
            y.grad_enabled = st.grad_enabled
            y.dispatch_off = st.dispatch_off
            y.patched = set(st.patched)
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
            v = self.eval(e.value, cst)
        else:
            v = self.eval(e.elt, cst)
        return SeqVal((v,))

    def iter_item(self, v):
        if isinstance(v, SeqVal):
            if not v.items:
                return UNKNOWN
            out = v.items[0]
            for x in v.items[1:]:
                out = join(out, x)
            return out
        if isinstance(v, TVal):
            return v  # iterating a tensor yields slices with the same provenance
        if isinstance(v, ModuleVal):
            return v  # ModuleList / Sequential: submodules of the same kind
        if isinstance(v, MaybeVal):
            out = None
            for o in v.options:
                x = self.iter_item(o)
                out = x if out is None else join(out, x)
            return out or UNKNOWN
        return UNKNOWN

    def subscript(self, e, obj, idx, st):
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

    def eval_attribute(self, e, st):
        obj = self.eval(e.value, st)
        return self.attribute(e, obj, e.attr, st)

    def attribute(self, e, obj, attr, st):
        if isinstance(obj, ModRef):
            return ModRef(f"{obj.qualname}.{attr}")
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
            return UNKNOWN
        if isinstance(obj, (InstanceVal, ModuleVal)):
            if attr in obj.attrs:
                return obj.attrs[attr]
            cls = obj.cls
            if cls is not None and attr in cls.methods:
                m = cls.methods[attr]
                if any(isinstance(d, ast.Name) and d.id in ("property", "cached_property") for d in m.node.decorator_list):
                    return self.call_function(m, [obj], {}, st)
                return BoundMethod(m, obj)
            if isinstance(obj, ModuleVal) and attr in ("weight", "bias", "in_proj_weight", "in_proj_bias", "weight_ih_l0", "weight_hh_l0"):
                if obj.origin is not None and obj.mode is None:
                    return TVal(frozenset([Origin(f"{dotted_name(e) or attr}", "parameter", e.lineno, parent=obj.origin, param=attr)]))
                return TVal(frozenset(), obj.mode)
            return UNKNOWN
        if isinstance(obj, ModeVal):
            if attr == "allow_non_fake_inputs":
                return ConstVal(obj.allow) if obj.allow is not None else UNKNOWN
            return UNKNOWN
        return UNKNOWN

    # ------------------------------------------------------------------ calls
    def eval_call(self, e, st):
        func = e.func
        args = []
        for a in e.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value, st)
                args.append(self.iter_item(v))
            else:
                args.append(self.eval(a, st))
        kwargs = {}
        for kw in e.keywords:
            v = self.eval(kw.value, st)
            if kw.arg is not None:
                kwargs[kw.arg] = v
        if isinstance(func, ast.Attribute):
            recv = self.eval(func.value, st)
            if isinstance(recv, ModRef):
                return self.call_qualname(e, f"{recv.qualname}.{func.attr}", args, kwargs, st)
            return self.call_method(e, recv, func.attr, args, kwargs, st)
        callee = self.eval(func, st)
        return self.call_value(e, callee, args, kwargs, st)

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
                                      site=(e, [None] + _arg_exprs(e), [callee.self_val] + list(args)))
        if isinstance(callee, ClassVal):
            return self.instantiate(callee, args, kwargs, st, e)
        if isinstance(callee, ModuleVal):
            return self.module_call(e, callee, func_expr, args, kwargs, st)
        if isinstance(callee, InstanceVal):
            call = callee.cls.methods.get("__call__")
            if call is not None:
                return self.call_function(call, [callee] + list(args), kwargs, st)
            return UNKNOWN
        if isinstance(callee, TracedFn):
            return self.call_traced(e, callee, args, kwargs, st)
        if isinstance(callee, PartialVal):
            return self.call_value(e, callee.func, list(callee.args) + list(args), {**callee.kwargs, **kwargs}, st,
                                   func_expr=None)
        if isinstance(callee, MaybeVal):
            out = None
            for o in callee.options:
                if isinstance(o, (FuncVal, BoundMethod, ModuleVal, TracedFn, ModRef)):
                    v = self.call_value(e, o, args, kwargs, st)
                    out = v if out is None else join(out, v)
            return out or UNKNOWN
        return UNKNOWN

    def call_traced(self, e, tf, args, kwargs, st):
        mode = tf.mode
        fake_args = [_fake_copy(a, mode) for a in args]
        region = Region(mode, mode.allow, None, -1, None)
        region.func_node = None  # type: ignore[attr-defined]
        st.regions.append(region)
        try:
            if isinstance(tf.func, (FuncVal, BoundMethod, ModuleVal)):
                res = self.call_value(e, tf.func, fake_args, kwargs, st)
            else:
                res = UNKNOWN
        finally:
            if region in st.regions:
                st.regions.remove(region)
        return res

    def module_call(self, e, mod, func_expr, args, kwargs, st):
        operands = [(mod, func_expr)] + _operands(e, args, kwargs)
        return self.op(e, operands, st)

    def call_method(self, e, recv, name, args, kwargs, st):
        if isinstance(recv, MaybeVal):
            out = None
            for o in recv.options:
                if o is UNKNOWN:
                    continue
                v = self.call_method(e, o, name, args, kwargs, st)
                out = v if out is None else join(out, v)
            return out or UNKNOWN
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
                        st.regions.remove(r)
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
            if m is not None:
                if self._is_static(m):
                    return self.call_function(m, args, kwargs, st)
                return self.call_function(m, [recv] + list(args), kwargs, st,
                                          site=(e, [e.func.value] + _arg_exprs(e), [recv] + list(args)))
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
                    new_items.append(self.iter_item(a) if name in ("extend", "update") else a)
                if name == "setdefault" and len(args) > 1:
                    pass
                self.rebind(e.func.value, SeqVal(tuple(new_items)), st)
                return UNKNOWN
            if name in ("items",):
                return SeqVal(tuple(SeqVal((UNKNOWN, v), (UNKNOWN, v)) for v in recv.items))
            if name in ("values", "copy", "__iter__"):
                return SeqVal(recv.items)
            if name in ("get", "pop", "popitem", "__getitem__"):
                return self.iter_item(recv)
            return UNKNOWN
        if isinstance(recv, ClassVal) and name in recv.methods:
            m = recv.methods[name]
            extra = [recv] if any(isinstance(d, ast.Name) and d.id == "classmethod" for d in m.node.decorator_list) else []
            return self.call_function(m, extra + list(args), kwargs, st, site=(e, [None] * len(extra) + _arg_exprs(e), extra + list(args)))
        if isinstance(recv, PartialVal) and name == "__call__":
            return self.call_value(e, recv, args, kwargs, st)
        if isinstance(recv, (FuncVal, BoundMethod)) and name == "__call__":
            return self.call_value(e, recv, args, kwargs, st)
        if isinstance(recv, CtxVal) and name == "__enter__":
            self.enter(recv, st, [])
            return UNKNOWN
        return UNKNOWN

    def module_method(self, e, mod, name, args, kwargs, st):
        real = mod.origin is not None and mod.mode is None
        if name in mod.attrs:
            return self.call_value(e, mod.attrs[name], args, kwargs, st)
        if name == "forward" or name == "__call__":
            return self.module_call(e, mod, e.func.value, args, kwargs, st)
        if mod.cls is not None and name in mod.cls.methods:
            return self.call_function(mod.cls.methods[name], [mod] + list(args), kwargs, st)
        if name in ("parameters", "named_parameters") or (name == "state_dict" and _kw_true(kwargs, "keep_vars")):
            if real:
                p = TVal(frozenset([mod.origin]))  # the module's own provenance: freezing them freezes it
            else:
                p = TVal(frozenset(), mod.mode)
            if name == "parameters":
                return SeqVal((p,))
            return SeqVal((SeqVal((UNKNOWN, p), (UNKNOWN, p)),)) if name == "named_parameters" else SeqVal((p,))
        if name in ("children", "modules"):
            return SeqVal((mod,))
        if name in ("named_children", "named_modules"):
            return SeqVal((SeqVal((UNKNOWN, mod), (UNKNOWN, mod)),))
        if name in ("state_dict", "buffers", "named_buffers"):
            t = TVal(frozenset(), mod.mode)
            return SeqVal((SeqVal((UNKNOWN, t), (UNKNOWN, t)),)) if name == "named_buffers" else SeqVal((t,))
        if name == "to_empty":
            region = st.active_region()
            if region is not None:
                return ModuleVal(None, region.mode, mod.cls, mod.attrs)
            return mod
        if name in ("to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval", "type", "share_memory", "apply"):
            if name == "to" and (_is_meta(args) or _is_meta(list(kwargs.values()))):
                return ModuleVal(None, None, mod.cls, mod.attrs)
            return mod
        if name == "requires_grad_":
            if args and isinstance(args[0], ConstVal) and args[0].value is False or _kw_false(kwargs, "requires_grad"):
                new = ModuleVal(None, mod.mode, mod.cls, mod.attrs)
                self.rebind(e.func.value, new, st)
                return new
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
        if q in N.FAKE_TENSOR_MODE:
            v = kwargs.get("allow_non_fake_inputs", ConstVal(False))
            allow = bool(v.value) if isinstance(v, ConstVal) else None
            desc = "FakeTensorMode(allow_non_fake_inputs=True)" if allow else ("FakeTensorMode()" if allow is False else "FakeTensorMode(...)")
            return ModeVal(allow, e.lineno, desc, e)
        if q in N.DETECT_FAKE_MODE:
            return ModeVal(False, e.lineno, "detect_fake_mode()", e)
        if q in N.FAKE_COPY_MODE:
            return CtxVal("fake_copy", args[0] if args and isinstance(args[0], ModeVal) else None)
        if q in N.UNSET_FAKE:
            return CtxVal("unset_fake")
        if q in N.GRAD_OFF:
            if args and isinstance(args[0], FuncVal):  # used as a plain decorator call
                args[0].grad_off = True
                return args[0]
            if q.endswith("inference_mode") and args and isinstance(args[0], ConstVal) and args[0].value is False:
                return CtxVal("null")
            return CtxVal("grad_off")
        if q in N.GRAD_ON:
            return CtxVal("grad_on")
        if q in N.SET_GRAD_ENABLED:
            if args and isinstance(args[0], ConstVal):
                return CtxVal("grad_on" if args[0].value else "grad_off")
            return CtxVal("null")
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
        if q == "functools.partial" and args:
            return PartialVal(args[0], tuple(args[1:]), dict(kwargs))
        if q in N.DEEPCOPY:
            src = args[0] if args else UNKNOWN
            if st.fake_copy is not None:
                return _fake_copy(src, st.fake_copy)
            return src
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
            region = st.active_region()
            if region is not None:
                return ModuleVal(None, region.mode)
            if _is_meta(list(kwargs.values())):
                return ModuleVal(None, None)
            mod = ModuleVal(Origin("module", "module", e.lineno), None)
            last = q.rsplit(".", 1)[-1]
            mod.origin.param_names = _known_params(last, kwargs)
            if last in _CONTAINER_MODULES:
                children = [x for a in list(args) + list(kwargs.values()) for x in _flatten(a)]
                if not any(x.real_rg() for x in children):
                    mod.origin = None
            elif last in _PARAMLESS_MODULES:
                mod.origin = None
            return mod
        if q.startswith("torch.") and _is_torch_op(q):
            operands = _operands(e, args, {k: v for k, v in kwargs.items() if k != "out"})
            diff = q not in N.NON_DIFFERENTIABLE_FUNCS
            if not any(_is_tensorish(x) for v, _ in operands for x in _flatten(v)):
                # a factory: born fake inside a region, real (maybe requires grad) outside
                region = st.active_region()
                if region is not None:
                    return TVal(frozenset(), region.mode)
                if _kw_true(kwargs, "requires_grad") and not _is_meta(list(kwargs.values())):
                    return TVal(frozenset([Origin("tensor", "tensor", e.lineno)]))
                return TVal()
            res = self.op(e, operands, st, differentiable=diff)
            if _kw_true(kwargs, "requires_grad") and isinstance(res, TVal) and res.mode is None:
                return TVal(res.origins | {Origin("tensor", "tensor", e.lineno)})
            return res
        return UNKNOWN

    def call_builtin(self, e, name, args, kwargs, st):
        if name in ("list", "tuple", "set", "sorted", "reversed", "iter", "frozenset"):
            if not args:
                return SeqVal(())
            a = args[0]
            if isinstance(a, SeqVal):
                return SeqVal(a.items, a.elts if name in ("list", "tuple") else None)
            return SeqVal((self.iter_item(a),))
        if name == "dict":
            items = []
            for a in args:
                it = self.iter_item(a)
                if isinstance(it, SeqVal) and it.elts and len(it.elts) == 2:
                    items.append(it.elts[1])
                else:
                    items.append(self.iter_item(it))
            items += list(kwargs.values())
            return SeqVal(tuple(items))
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
        if name in ("max", "min", "abs") and args and any(_is_tensorish(a) for a in args):
            return self.op(e, [(a, None) for a in args], st, differentiable=name == "abs")
        return UNKNOWN

    # ------------------------------------------------------------------- ops
    def binop(self, e, operands, st):
        if not any(_is_tensorish(v) for v, _ in operands):
            if all(isinstance(v, ConstVal) for v, _ in operands):
                return UNKNOWN
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
        if mode is None and not st.dispatch_off:
            for v, _ in flat:
                m = v.fake_mode()
                if m is not None:
                    mode = m
                    route = "leaked-mix"
                    region = Region(m, m.allow, None, -1, None)
                    region.func_node = None  # type: ignore[attr-defined]
                    break
        leaks = frozenset()
        for v, _ in flat:
            leaks |= v.taint()
        grad = differentiable and st.grad_enabled
        fake_ex = None
        if route == "leaked-mix":
            fake_ex = next((ex for v, ex in flat if ex is not None and v.fake_mode() is mode and dotted_name(ex)), None)
        if mode is not None:
            allow = st.allow_of(mode)
            new = []
            for v, ex in flat:
                for origin in v.real_rg():
                    if origin.disabled:
                        continue
                    rec = self.record(node, origin, whole.get(id(v), v), ex, region, route, allow, st, grad, fake_ex)
                    if rec is not None:
                        new.append(rec)
            return TVal(frozenset(), mode, (leaks | frozenset(new)) if grad else frozenset())
        origins = frozenset()
        if grad:
            for v, _ in flat:
                origins |= v.real_rg()
        return TVal(origins, None, leaks if grad else frozenset(), derived=bool(origins))

    def record(self, node, origin, value, expr, region, route, allow, st, grad, fake_ex=None):
        crash = allow is False
        if not crash and not grad:
            return None
        key = (id(node), id(origin))
        rec = self.records.get(key)
        if rec is None:
            if expr is None and isinstance(node, ast.Call):
                expr = None
                text = self._text(node.func)
            else:
                text = self._text(expr) if expr is not None else origin.name
            rec = LeakRecord(node, origin, text, region, route, crash)
            rec.value_kind = (
                "module" if isinstance(value, ModuleVal)
                else "parameter" if origin.kind in ("module", "parameter")
                else "container" if isinstance(value, SeqVal) else "tensor"
            )
            if route == "leaked-mix":
                rec.fix_plan = self._leaked_fix_plan(node, expr, value, fake_ex)
            else:
                rec.fix_plan = self._fix_plan(node, expr, value, origin, region, st)
            self.records[key] = rec
        if crash:
            raise Crashed()
        return rec

    def _fix_plan(self, node, expr, value, origin, region, st):
        """How to convert the real value at the region's boundary, when that is
        expressible in the ``with`` block that opened the region."""
        if region.with_node is None:
            return None
        from fakegrad_lint.fix_builders import FixPlan

        if getattr(region, "func_node", None) is not st.scope.func_node:
            # the leak is inside a helper called from the block: convert the argument
            # that carries the real value at the call in the block
            site = next((x for x in reversed(st.sites) if x[0] is getattr(region, "func_node", None)), None)
            if site is None:
                return None
            _, call, exprs, values = site
            for ex, val in zip(exprs, values):
                if ex is not None and origin in val.real_rg() and not isinstance(val, ModuleVal):
                    expr, value = ex, val
                    node = call
                    break
            else:
                return None
            kind = None
        else:
            kind = "module" if isinstance(value, ModuleVal) else None
            if kind == "module" and not (isinstance(node, ast.Call) and (node.func is expr or getattr(node.func, "value", None) is expr)):
                return None
        if expr is None:
            return None
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
        uses = region.uses.setdefault((kind, dotted), [])
        if not any(u is target for u in uses):
            uses.append(target)
        return FixPlan(kind=kind, value=dotted, with_node=region.with_node, item_index=region.item_index,
                       mode_name=region.bound_name, uses=uses, module_tree=self.tree,
                       derived=isinstance(value, TVal) and value.derived, conditional=region.mode.conditional)

    def _leaked_fix_plan(self, node, expr, value, fake_ex):
        """Mixing with a leaked fake: convert the real operand with the fake's own mode."""
        if fake_ex is None or expr is None or dotted_name(expr) is None:
            return None
        from fakegrad_lint.fix_builders import FixPlan

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
        if not leaks:
            return
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

    def _text(self, expr):
        seg = self.pos.segment(expr) if hasattr(expr, "lineno") else None
        if not seg:
            return "value"
        seg = " ".join(seg.split())
        return seg if len(seg) <= 40 else seg[:37] + "..."


# ----------------------------------------------------------------- helpers
_PARAMLESS_MODULES = frozenset(
    {
        "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "Identity", "Flatten",
        "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "MSELoss",
        "CrossEntropyLoss", "L1Loss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "Softplus", "LeakyReLU",
        "ELU", "Hardtanh", "ReLU6", "Mish", "Hardswish", "Upsample", "PixelShuffle", "Module",
    }
)
_CONTAINER_MODULES = frozenset({"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
# with the function definitions whose bodies are parsed on first use (fakegrad_lint.lazyparse)
_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, *LAZY_DEF_TYPES)


def _is_nn_module_class(q):
    if q in ("torch.nn.Module", "torch.nn.modules.module.Module"):
        return True
    if not q.startswith("torch.nn."):
        return False
    parts = q[len("torch.nn."):].split(".")
    if not parts[-1][:1].isupper():
        return False
    if parts[0] in ("utils", "functional", "init", "parameter", "attention", "common_types"):
        return False
    return parts[-1] not in ("Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer")


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


def _hot_in_code(node, text, hot_re):
    """Does a hot word of ``text`` (the unit's lines, from its first decorator) occur
    where running the unit can evaluate it? Annotations are never evaluated (nor by
    this interpreter), docstrings and comments are not code: a unit that names a
    fake mode only there (``fake_mode: FakeTensorMode | None``) cannot open a region
    by itself, so it is analysed on its own only when it calls one that can."""
    first = min([node.lineno] + [dec.lineno for dec in node.decorator_list])
    spans = []  # (start line, start col, end line, end col): columns in UTF-8 bytes
    for n in ast.walk(node):
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
            spans.append((a.lineno, a.col_offset, a.end_lineno, a.end_col_offset))
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    import bisect

    for m in hot_re.finditer(text):
        i = bisect.bisect_right(starts, m.start()) - 1
        line = lines[i]
        col = m.start() - starts[i]
        prefix = line[:col]
        h = prefix.find("#")
        if h >= 0 and not any(q in prefix[:h] for q in ("'", '"')):
            continue  # in a comment
        lineno = first + i
        bcol = len(prefix.encode("utf-8")) if not prefix.isascii() else col
        bend = bcol + len(m.group().encode("utf-8"))
        if not any(
            (sl, sc) <= (lineno, bcol) and (lineno, bend) <= (el, ec) for sl, sc, el, ec in spans
        ):
            return True
    return False


def _called_names(text):
    """Names a function's text calls, ``f(...)`` and ``self.f(...)`` (a superset is fine:
    it only decides what is worth analysing)."""
    return set(_CALL_RE.findall(text))


def _interesting(v, depth=0):
    """Does this value carry anything the rules care about?"""
    if isinstance(v, TVal):
        return bool(v.origins or v.mode is not None or v.leaks)
    if isinstance(v, (ModuleVal, ModeVal, CtxVal, ExitStackVal, TracedFn, OptimizerVal)):
        return True
    if isinstance(v, (SeqVal, MaybeVal)) and depth < 3:
        items = v.items if isinstance(v, SeqVal) else v.options
        return any(_interesting(x, depth + 1) for x in items)
    if isinstance(v, InstanceVal) and depth < 2:
        return any(_interesting(x, depth + 1) for x in v.attrs.values())
    return False


def _disable_module_origins(v):
    """``p.requires_grad_(False)`` over a module's parameters (a loop over
    ``model.parameters()``), or over each of its known parameters by name
    (``lin.weight.requires_grad = False``): the module no longer brings
    requires-grad values."""
    for o in v.origins:
        if o.kind == "module":
            o.disabled = True
        elif o.parent is not None and o.param is not None:
            o.disabled = True
            parent = o.parent
            parent.frozen.add(o.param)
            if parent.param_names is not None and parent.frozen >= parent.param_names:
                parent.disabled = True


_WEIGHT_AND_BIAS = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                    "ConvTranspose3d", "Bilinear", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
                    "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm")


def _known_params(cls_name, kwargs):
    """The parameter names of common torch.nn layers (None when not known)."""
    if cls_name in ("Embedding", "EmbeddingBag", "PReLU"):
        return frozenset({"weight"})
    if cls_name in _WEIGHT_AND_BIAS:
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


_STAR_EXPORTS = {
    "torch._subclasses.fake_tensor": ("FakeTensorMode", "FakeCopyMode", "unset_fake_temporarily"),
    "torch._subclasses": ("FakeTensorMode",),
    "torch.fx.experimental.proxy_tensor": ("make_fx",),
}


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
    if isinstance(v, ConstVal):
        try:
            return bool(v.value)
        except Exception:
            return None
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


def _fake_copy(v, mode):
    if isinstance(v, ModuleVal):
        return ModuleVal(None, mode, v.cls, dict(v.attrs))
    if isinstance(v, SeqVal):
        items = tuple(_fake_copy(x, mode) for x in v.items)
        elts = tuple(_fake_copy(x, mode) for x in v.elts) if v.elts is not None else None
        return SeqVal(items, elts)
    if isinstance(v, (TVal, MaybeVal)) or v is UNKNOWN:
        return TVal(frozenset(), mode)
    return v


def _with_grad_reads(plan, lines):
    plan.grad_reads = list(lines)
    return plan


def analyze_module(tree: ast.Module, source: str) -> list[Leak]:
    return Interpreter(tree, source).run()
