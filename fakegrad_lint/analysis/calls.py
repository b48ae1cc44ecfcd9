"""Calls as Python makes them: arguments evaluated and spread (``*args``,
``**kwargs``), the callee dispatched by its kind (function, bound method, class,
instance with ``__call__``, partial, may value, module, traced or transformed
function, torch qualified name), and a user function's body run with its
parameters bound (skipped when nothing of interest goes in or out). Builtins with
known meaning (``list``, ``dict``, ``super``, ``getattr``, ``zip``...) are here too.
"""

from __future__ import annotations

import ast
import copy
import weakref

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.code_text import _contains_yield
from fakegrad_lint.analysis.context import CallSite
from fakegrad_lint.analysis.heap import heap_field, heap_set
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.state import MAX_DEPTH, Crashed, Scope, YieldReached, _BlockExit
from fakegrad_lint.analysis.valueops import (_PURE_NAME_NODES, known_iteration as _known_iteration, _arg_exprs, _one_of, _dict_val, _interesting, _is_none_const,
    _is_tensorish)
from fakegrad_lint.analysis.values import (UNKNOWN, AutogradApply, BoundMethod, ChildName, ClassVal, ConstVal, CtxVal, ModeVal, DecoratorVal,
    ExportedProgramVal, FuncVal, GeneratorVal, GetterVal, InstanceVal, MaybeVal, MethodRef, ModRef, ModuleVal, PartialVal, ProjModVal, ReturnsVal, SeqVal, SingleDispatchVal, DispatchRegister, LibraryMethod,
    SuperVal, TracedFn, TransformVal, TVal, join, join_all, union)

_CALLEE = object()  # call_value's default: the call's own callee expression


class OpenKwargs(dict):
    """The known keywords of a call that also spreads a mapping of unknown keys
    (``f(**opts)``): a keyword missing here may still be passed."""


# facts of one def node (a pure function of its subtree), kept as long as the node
# lives: an imported project module's tree serves every linted file of the process
# (analysis/roots.load), so its defs are walked once, not once per importing file
_SMALL: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # def node -> small enough to always run
_CONFIG: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # def node -> builds a configuration


class CallsMixin:
    """Calls of every kind of callee; functions run with bound arguments."""

    @property
    def _ran_by_program(self):
        ran = self.__dict__.get("_ran_nodes")
        if ran is None:
            ran = self.__dict__["_ran_nodes"] = set()  # def nodes whose body the program's own calls ran
        return ran

    def _small(self, node):
        """Is this function small enough to run whenever it is called?"""
        memo = self.__dict__.setdefault("_small_defs", {})
        v = memo.get(node)
        if v is None:
            v = _SMALL.get(node)  # (a project module's def: its tree is the process's)
            if v is None:
                n = 0
                for _ in ast.walk(node):
                    n += 1
                    if n > SMALL_BODY_NODES:
                        break
                v = _SMALL[node] = n <= SMALL_BODY_NODES and not isinstance(node, ast.Lambda)
            memo[node] = v
        return v

    def _makes_config(self, node):
        """Does this function build a configuration the analysis evaluates exactly (an
        ``argparse`` parser and its parse, ``json.loads``)? Its result can decide which
        context a later ``with`` enters, so it runs whenever it is called, whatever
        its size."""
        memo = self.__dict__.setdefault("_config_defs", {})
        v = memo.get(node)
        if v is None:
            v = _CONFIG.get(node)
            if v is None:
                v = _CONFIG[node] = any(
                    isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name))
                    and ((n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in CONFIG_MAKERS
                         or dotted_name(n.func) in CONFIG_READERS)
                    for n in ast.walk(node))
            memo[node] = v
        return v

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

    def call_function(self, fv, args, kwargs, st, *more, **options):
        """Run ``fv`` (see ``_call_function``); a function of another project
        module runs with that module's file as the current one."""
        if fv.memo:
            return self._call_memoised(fv, args, kwargs, st, *more, **options)
        return self._call_in_module(fv, args, kwargs, st, *more, **options)

    def _call_memoised(self, fv, args, kwargs, st, *more, **options):
        """``@functools.lru_cache``: a call whose arguments equal (as known constants)
        those of an earlier call returns that call's result object, made wherever it
        was made (a fake computed in a region comes back outside it)."""
        key = None
        keys = [_value_key(a) for a in args]
        kw_keys = {k: _value_key(v) for k, v in kwargs.items()}
        if None not in keys and None not in kw_keys.values():
            key = (tuple(keys), tuple(sorted(kw_keys.items())))
        seen = self._memo_results.setdefault(fv.node, {})
        if key is not None and key in seen:
            return seen[key]
        res = self._call_in_module(fv, args, kwargs, st, *more, **options)
        if key is not None:
            seen[key] = res
        return res

    def _call_in_module(self, fv, args, kwargs, st, *more, **options):
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

    def _call_function(self, fv, args, kwargs, st, run_generator=False, site=None, force=False, propagate=True,
                       consume=False):
        """Run ``fv`` on the values; ``force``: even when nothing of interest goes in
        (decorators, dunder methods); ``propagate``: contexts it enters and does not
        leave stay entered in the caller, as in Python. A generator function's call
        makes a generator object (its body runs as it is consumed: ``consume``)."""
        node = fv.node
        if st.depth >= MAX_DEPTH or self.exhausted or node in st.stack:
            return UNKNOWN
        if fv.contextmanager and not run_generator:
            return CtxVal("gen", (fv, list(args), dict(kwargs)))
        is_gen = not isinstance(node, ast.Lambda) and _contains_yield(node, self.pos.lines)
        if is_gen and not consume and not run_generator and (st.cur is not None or st.stack):
            # nothing of the body runs at the call (a run with no caller, library code
            # analysed on its own, runs it as if consumed; one the program made is what
            # the program's consumption makes it do)
            self._ran_by_program.add(node)
            return GeneratorVal(fv, list(args), kwargs, site)
        if not (force or st.regions or self._may_matter(node, self._lines_of(fv)) or self._init_matters(fv)
                or any(_interesting(a) for a in args)
                or any(_interesting(v) for v in kwargs.values()) or _returns_at_once(node)
                or self._small(node) or self._makes_config(node)):
            # outside any region, nothing of interest in or out: skip the body (a small
            # helper still runs: what it returns, a configuration's defaults, can decide
            # which context a later `with` enters)
            return UNKNOWN
        if st.cur is None and not st.stack and getattr(node, "name", None) != "__init__":
            # a run with unknown arguments (no caller): a function the program itself
            # called is what those calls made it do; unknown arguments would only add
            # paths the program does not take (unless those calls ran with the
            # command line of the plain run: the user may give another, program_argv)
            if node in self._ran_by_program and not self.__dict__.get("_argv_read"):
                return UNKNOWN
        else:
            self._ran_by_program.add(node)
        scope = Scope(parent=fv.scope, module=fv.scope.module, func_node=node)
        cst = st.child(scope)
        cst.stack = st.stack + (node,)
        if site is not None:
            cst.sites = st.sites + (CallSite(st.scope.func_node, *site, st.regions),)
        cst.fv = fv
        self.bind_args(fv, args, kwargs, scope)
        if fv.grad_off:
            cst.grad_enabled = False
        # a ContextDecorator's function runs inside its contexts (outermost first),
        # left in reverse when the body ends
        undo = []
        try:
            for cm in fv.contexts:
                self.enter(cm, cst, undo)
            if isinstance(node, ast.Lambda):
                return self.eval(node.body, cst)
            if is_gen and not run_generator:
                cst.returns = []  # a plain generator: collect what it yields
                cst.yield_regions = []
            paths = self.may_paths
            try:
                self.exec_block(node.body, cst)
            except _BlockExit:
                pass
            exact = self.may_paths == paths and not self.exhausted
        finally:
            for fn in reversed(undo):
                fn(cst)
        if not run_generator:
            # what the function entered and did not leave stays entered, as in Python
            # (its own `@torch.no_grad()` ends with it; its may-paths are its own)
            ctx = cst.ctx.but(may=st.may)
            if fv.grad_off or not propagate:
                ctx = ctx.but(grad_enabled=st.grad_enabled)
            st.ctx = ctx
        if is_gen and not run_generator:
            # a run that took no may path yielded exactly these, in this order: a loop
            # over it runs once per yielded value (`for name in names: yield name`)
            items = tuple(cst.returns)
            gen = SeqVal(items, items if exact and len(items) <= MAX_EXACT_YIELDS else None)
            self._note_yield_regions(gen, cst.yield_regions, st)
            return gen
        return join_all(cst.returns)

    def _note_yield_regions(self, gen, seen, st):
        """A generator that yields inside regions it entered itself (every yield in
        the same ones, none of them a may region): whoever iterates it runs each
        step of the loop while the generator is suspended in them."""
        if any(regs is None for regs in seen):
            return  # a yield with dispatch off: the consumer's steps run outside the regions
        entered = [tuple(r for r in regs if not any(r is o for o in st.regions)) for regs in seen]
        first = entered[0] if entered else ()
        if first and all(len(x) == len(first) and all(a is b for a, b in zip(x, first)) for x in entered) \
                and not any(r.may for r in first):
            self._gen_regions[id(gen)] = (gen, first)

    def call_getter(self, e, getter, args, kwargs, st):
        """``attrgetter("a.b")(obj)`` is ``obj.a.b``; ``itemgetter(k)(obj)`` is ``obj[k]``;
        several names give a tuple."""
        if len(args) != 1 or kwargs:
            return UNKNOWN
        out = []
        for key in getter.keys:
            v = args[0]
            if getter.kind == "attr":
                if not isinstance(key, str):
                    return UNKNOWN
                for part in key.split("."):
                    v = self.attribute(e, v, part, st)
            else:
                v = self.subscript(e, v, ConstVal(key), st)
            out.append(v)
        return out[0] if len(out) == 1 else SeqVal(tuple(out), tuple(out))

    # -- generator objects: the body runs as far as it is consumed --------------

    def gen_consume(self, g, st):
        """Iterate the generator ``g`` to its end (a ``for``, ``list()``, ``yield from``):
        the rest of its body runs here, in the consumer's context; what it yields (a
        SeqVal whose loop steps run in the regions it yields inside), or UNKNOWN."""
        if g.state == "new":
            g.state = "done"
            res = self.call_function(g.fv, g.args, g.kwargs, st, site=g.site, consume=True)
            return res if isinstance(res, SeqVal) else UNKNOWN
        if g.state != "suspended":
            return SeqVal(()) if g.state == "done" else UNKNOWN  # (an exhausted generator yields nothing)
        frame, before = g.frame, st.regions
        g.state = "done"
        frame.returns, frame.yield_regions = [], []
        if not self._resume_generator(g.fv, frame, st):
            g.state = "unknown"
        self._gen_release(g, st, before)
        if g.state == "unknown":
            return UNKNOWN
        gen = SeqVal(tuple(frame.returns))
        self._note_yield_regions(gen, frame.yield_regions, st)
        return gen

    def gen_next(self, g, st, temporary=False):
        """``next(g)`` / ``g.send(v)``: run the generator up to its next ``yield`` and
        return what it yields; the regions it is suspended inside stay active for its
        consumer until it resumes (a ``temporary`` generator, ``next(gen())``, is
        closed at once). UNKNOWN where it ends or cannot be followed."""
        if g.state not in ("new", "suspended"):
            return UNKNOWN
        outer, before = st.ctx, st.regions
        prev, self._capture_gen = self._capture_gen, g.fv.node
        try:
            if g.state == "new":
                self.call_function(g.fv, g.args, g.kwargs, st, site=g.site, consume=True, run_generator=True)
                ran = True
            else:
                ran = self._resume_generator(g.fv, g.frame, st, to_yield=True)
        except YieldReached as y:
            own = tuple(r for r in before if not any(r is h for h in g.held))  # the consumer's own regions
            g.state, g.frame = "suspended", y.state
            g.held = tuple(r for r in y.ctx.regions if not any(r is o for o in own))
            st.ctx = y.ctx.but(patched=outer.patched | y.ctx.patched, may=outer.may)
            if temporary:
                g.state = "done"  # nothing else holds it: closed where the call ends
                self._gen_release(g, st, st.regions)
            return y.value
        finally:
            self._capture_gen = prev
        g.state = "done" if ran else "unknown"  # (ran off its end: StopIteration)
        self._gen_release(g, st, before)
        return UNKNOWN

    def _gen_release(self, g, st, before):
        """The generator finished (or is closed, or lost): the regions it was
        suspended inside, and any it entered since, are no longer active."""
        keep = tuple(r for r in before if not any(r is h for h in g.held))
        st.ctx = st.ctx.but(regions=tuple(r for r in st.regions if any(r is k for k in keep)))
        g.held = ()

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
            if isinstance(kwargs, OpenKwargs):
                scope.vars[a.kwarg.arg] = SeqVal(vals, is_dict=True)  # its keys are not all known
            else:
                scope.vars[a.kwarg.arg] = SeqVal(vals, vals, tuple(k for k, _ in rest), is_dict=True)

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
                    args.append(self.iter_item(v, st))
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
            else:
                kwargs = OpenKwargs(kwargs)  # `**d` with keys not known: any keyword may be passed
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
        if isinstance(callee, GetterVal):
            return self.call_getter(e, callee, args, kwargs, st)
        if isinstance(callee, PartialVal):
            return self.call_value(e, callee.func, list(callee.args) + list(args), {**callee.kwargs, **kwargs}, st,
                                   func_expr=None)
        if isinstance(callee, TransformVal):
            return self.call_transform(e, callee, args, kwargs, st)
        if isinstance(callee, ExportedProgramVal):
            # the program lifts and fakifies its own parameters: no leak by the caller
            region = st.active_region()
            return TVal(frozenset(), region.mode) if region is not None else TVal()
        if isinstance(callee, MethodRef):
            return self.call_method_ref(e, callee, args, kwargs, st)
        if isinstance(callee, DecoratorVal):
            return args[0] if args else UNKNOWN
        if isinstance(callee, ReturnsVal):
            return callee.result
        if isinstance(callee, LibraryMethod):
            res = self.library_method(e, callee.recv, callee.name, args, kwargs, st)
            return UNKNOWN if res is None else res
        if isinstance(callee, SingleDispatchVal):
            return self.single_dispatch(e, callee, args, kwargs, st)
        if isinstance(callee, DispatchRegister):
            if callee.cls is None and len(args) == 2 and not kwargs:
                callee.sd.registry.append((args[0], args[1]))  # `sd.register(cls, fn)`
                return args[1]
            if len(args) == 1 and not kwargs:
                return self.register_dispatch(callee, args[0], st)
            return UNKNOWN
        if isinstance(callee, CtxVal) and len(args) == 1 and not kwargs and isinstance(args[0], FuncVal):
            return self.context_decorate(callee, args[0])  # `torch.no_grad()(fn)`, `helper()(fn)`
        if isinstance(callee, AutogradApply):
            exprs = list(e.args) if len(e.args) == len(args) else [None] * len(args)
            ops = [(a, x) for a, x in zip(args, exprs) if _is_tensorish(a)]
            return self.op(e, ops, st) if ops else UNKNOWN
        if isinstance(callee, MaybeVal):
            opts = [o for o in callee.options if not _is_none_const(o)]
            if opts and all(isinstance(o, ModuleVal) for o in opts):
                # one of several modules: a single call with the may value as the operand
                return self.module_call(e, callee, func_expr, args, kwargs, st)
            return self.over_options(callee, lambda o: self.call_value(e, o, args, kwargs, st, func_expr=func_expr), st)
        return UNKNOWN

    def call_method_ref(self, e, ref, args, kwargs, st):
        """``ref(...)`` for ``ref = recv.name``: ``recv.name(...)``, with the receiver
        named by no expression of this code (no fix converts it)."""
        if not isinstance(e, ast.Call):
            return UNKNOWN
        cached = self._getattr_calls.get((id(e), "<ref>" + ref.name))
        if cached is None:
            recv = ast.copy_location(ast.Name(id="__fgl_receiver__", ctx=ast.Load()), e.func)
            attr = ast.copy_location(ast.Attribute(value=recv, attr=ref.name, ctx=ast.Load()), e.func)
            call = ast.copy_location(ast.Call(func=attr, args=e.args, keywords=e.keywords), e)
            cached = self._getattr_calls[(id(e), "<ref>" + ref.name)] = (e, call)
        call = cached[1]
        try:
            return self.call_method(call, ref.recv, ref.name, args, kwargs, st)
        finally:
            for rec in self.records.values():
                if rec.node is call:
                    rec.fix_plan = None

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

    def single_dispatch(self, e, sd, args, kwargs, st):
        """A call of a ``functools.singledispatch`` function: the implementation for the
        type of the dispatch argument runs (the most derived of those that match, the
        default when none does). When the answer is not known for some type, the call is
        one of those that may run (a may value)."""
        pos = 1 if sd.method else 0
        if len(args) <= pos:
            return UNKNOWN
        x = args[pos]
        sure, maybe = [], []
        for cls, impl in sd.registry:
            if isinstance(cls, ModRef) and cls.qualname in N.OBJECT_TYPES:
                continue  # (`object` matches everything: the default's place)
            known = self._isinstance(x, cls)
            if known is True:
                sure.append((cls, impl))
            elif known is None:
                maybe.append(impl)
        if sure:
            # (a class of the file over a base it derives from: the most derived)
            best = [c for c in sure if not any(o is not c and isinstance(o[0], ClassVal) and isinstance(c[0], ClassVal)
                                               and any(k is c[0] for k in o[0].mro[1:]) for o in sure)]
            chosen = [impl for _, impl in best] + maybe
        else:
            chosen = maybe + [sd.default]
        fn = chosen[0] if len(chosen) == 1 else MaybeVal(tuple(chosen))
        return self.call_value(e, fn, args, kwargs, st, func_expr=None)

    def _isinstance(self, x, c):
        """``isinstance(x, c)`` when Python's answer is known (None: not known)."""
        if isinstance(c, SeqVal) and c.elts is not None and c.keys is None:
            answers = [self._isinstance(x, k) for k in c.elts]
            return True if True in answers else (False if answers and all(a is False for a in answers) else None)
        if isinstance(c, ModRef):
            q = c.qualname
            if q in N.NN_MODULE_BASE:
                return True if isinstance(x, ModuleVal) else (False if isinstance(x, (TVal, ConstVal)) else None)
            if isinstance(x, ModuleVal) and x.torch_class is not None and x.cls is None and q.startswith("torch.nn."):
                # a torch layer built by its constructor against a torch.nn class
                last = q.rsplit(".", 1)[-1]
                if last == x.torch_class:
                    return True
                return False if x.torch_class in N.KNOWN_LAYER_CLASSES and not last.startswith("_") else None
            if q in N.TENSOR_CLASSES:
                return True if isinstance(x, TVal) else (False if isinstance(x, (ModuleVal, ConstVal)) else None)
            builtin = N.PYTHON_TYPES.get(q)
            if builtin is not None and isinstance(x, ConstVal):
                return isinstance(x.value, builtin)
            if builtin is not None and isinstance(x, (TVal, ModuleVal, SeqVal)):
                return False
            if q in N.MAPPING_TYPES:
                if isinstance(x, SeqVal):
                    return x.is_dict if q in ("builtins.dict", "typing.Dict") or x.is_dict else False
                return False if isinstance(x, (TVal, ModuleVal, ConstVal)) else None
            if q in N.OBJECT_TYPES:
                return True
            if q in N.GENERATOR_TYPES:
                if isinstance(x, GeneratorVal):
                    return True
                return False if isinstance(x, (TVal, ModuleVal, ConstVal, FuncVal, ClassVal)) else None
            return None
        if isinstance(c, ClassVal):
            cls = x.cls if isinstance(x, (InstanceVal, ModuleVal)) else None
            if not isinstance(cls, ClassVal):
                return False if isinstance(x, (TVal, ConstVal, ModuleVal)) else None
            if any(k is c for k in cls.mro or (cls,)):
                return True
            return False if _all_bases_known(cls) else None
        return None

    def _call_on_items(self, e, fn, items, st, exprs=None):
        """``fn(*items)`` as an iterable function calls it (on each item: the items'
        union stands for all of them)."""
        if _is_none_const(fn):
            return UNKNOWN
        if isinstance(fn, FuncVal):
            exprs = exprs if exprs is not None and len(exprs) == len(items) else [None] * len(items)
            return self.call_function(fn, list(items), {}, st, site=(e, list(exprs), list(items)))
        return self.call_value(e, fn, list(items), {}, st, func_expr=None)

    def iterable_call(self, e, kind, args, kwargs, st):
        """A function over iterables (``ITERABLE_FUNCS``): what its items are, with the
        function it is given called on them where Python calls it (lazily, but whoever
        consumes the iterator does so where it is consumed: sum/list/for right here)."""
        if kwargs and kind not in ("reduce", "accumulate", "zip", "product", "groupby", "enumerate"):
            return UNKNOWN
        items = [self.iter_item(a, st) for a in args]
        exprs = list(e.args) if isinstance(e, ast.Call) and len(e.args) == len(args) else [None] * len(args)
        if kind == "first" and args:
            if isinstance(args[0], SeqVal) and not args[0].is_dict:
                return SeqVal(args[0].items)
            return SeqVal((items[0],))
        if kind == "second" and len(args) > 1:
            return SeqVal((items[1],))
        if kind == "chain":
            return SeqVal(tuple(items)) if items else SeqVal(())
        if kind == "chain_from" and args:
            return SeqVal((self.iter_item(items[0]),))
        if kind == "map" and len(args) >= 2:
            return SeqVal((self._call_on_items(e, args[0], items[1:], st, exprs[1:]),))
        if kind == "filter_fn" and len(args) >= 2:
            self._call_on_items(e, args[0], items[1:2], st, exprs[1:2])
            return SeqVal((items[1],))
        if kind == "starmap" and len(args) == 2:
            row = items[1]
            spread = list(row.elts) if isinstance(row, SeqVal) and row.elts is not None and row.keys is None else None
            if spread is None:
                return SeqVal((UNKNOWN,))
            return SeqVal((self._call_on_items(e, args[0], spread, st),))
        if kind in ("reduce", "accumulate") and len(args) >= 2:
            item = items[1]
            start = args[2] if len(args) > 2 else kwargs.get("initial", item)
            out = self._call_on_items(e, args[0], [start, item], st)
            if kind == "accumulate":
                return SeqVal((union(item, out),))
            if len(args) > 2 or "initial" in kwargs:
                return out
            elts = args[1].elts if isinstance(args[1], SeqVal) and args[1].keys is None else None
            return item if elts is not None and len(elts) == 1 else out
        if kind == "accumulate" and len(args) == 1:
            return SeqVal((items[0],))
        known = [_known_iteration(a) for a in args]
        if kind == "zip" and args and not kwargs and all(k is not None for k in known):
            # over containers of known elements: Python's tuples, in order, as many as the shortest
            rows = tuple(SeqVal(tuple(r), tuple(r)) for r in zip(*known))
            return SeqVal(rows, rows)
        if kind == "enumerate" and len(args) == 1 and known[0] is not None and (
                not kwargs or (set(kwargs) == {"start"} and isinstance(kwargs["start"], ConstVal)
                               and type(kwargs["start"].value) is int)):
            start = kwargs["start"].value if kwargs else 0
            rows = tuple(_pair(ConstVal(start + i), x) for i, x in enumerate(known[0]))
            return SeqVal(rows, rows)
        if kind in ("zip", "product"):
            elts = tuple(items)
            return SeqVal((SeqVal(elts, elts),))
        if kind == "enumerate" and args:
            return SeqVal((_pair(UNKNOWN, items[0]),))
        if kind == "pairs" and args:
            return SeqVal((_pair(items[0], items[0]),))
        if kind == "tuples" and args:
            return SeqVal((SeqVal((items[0],)),))
        if kind == "groupby" and args:
            return SeqVal((_pair(UNKNOWN, SeqVal((items[0],))),))
        if kind == "repeat" and args:
            return SeqVal((args[0],))
        if kind == "tee" and args:
            return SeqVal((SeqVal((items[0],)),))
        return UNKNOWN

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

    def call_builtin(self, e, name, args, kwargs, st):
        if name == "vars" and len(args) == 1 and not kwargs and isinstance(args[0], InstanceVal):
            return self.attribute(e, args[0], "__dict__", st)  # an instance's attributes as a dict
        if name == "vars" and len(args) == 1 and not kwargs and isinstance(args[0], ProjModVal):
            return self.module_namespace(args[0])  # a project module's globals, as a dict
        if name == "len" and len(args) == 1 and isinstance(args[0], TVal) and args[0].shape:
            return ConstVal(args[0].shape[0])  # len(t): its first size
        if name in N.PURE_BUILTINS and args and not kwargs and all(isinstance(a, ConstVal) for a in args):
            # int("0"), bool(0), str(1), len("ab"): Python's own answer
            try:
                return ConstVal(N.PURE_BUILTINS[name](*(a.value for a in args)))
            except Exception:
                return UNKNOWN
        if name in ("any", "all") and len(args) == 1 and not kwargs and isinstance(args[0], SeqVal) \
                and not args[0].is_dict:
            # every element is one of its items: all of one known truth value decide it
            # (`any(p.is_meta for p in model.parameters())` of a module on a known device)
            a = args[0]
            vals = a.elts if a.elts is not None else a.items
            if all(isinstance(v, ConstVal) for v in vals):
                truths = [bool(v.value) for v in vals]
                if a.elts is not None or all(t is (name == "all") for t in truths):
                    return ConstVal(any(truths) if name == "any" else all(truths))
            return UNKNOWN
        if name in ("list", "tuple", "set", "sorted", "reversed", "iter", "frozenset"):
            if not args:
                return SeqVal(())
            a = args[0]
            if name == "sorted" and len(args) == 1 and (not kwargs or set(kwargs) == {"reverse"}):
                ordered = _sorted_known(_known_iteration(a), kwargs.get("reverse", ConstVal(False)))
                if ordered is not None:
                    return SeqVal(ordered, ordered)
            elts = _ordered_elements(a, name, kwargs)
            if elts is not None:
                return SeqVal(elts, elts)  # `sorted(PLANS)`, `list(d)`: known elements, in Python's order
            if isinstance(a, SeqVal) and not a.is_dict:
                return SeqVal(a.items, a.elts if name in ("list", "tuple") else None)
            return SeqVal((self.iter_item(a, st),))
        if name in ("setattr", "object.__setattr__") and len(args) == 3:
            # an attribute assignment with the name as data (a frozen dataclass's
            # __post_init__, "apply these overrides" helpers)
            names = args[1].options if isinstance(args[1], MaybeVal) and args[1].each else (args[1],)
            for n in names:
                if isinstance(n, ConstVal) and isinstance(n.value, str):
                    val = args[2]
                    if isinstance(val, MaybeVal) and len(val.options) == len(names) and len(names) > 1:
                        val = val.options[names.index(n)]
                    self.set_attribute(e.args[0] if e.args else None, args[0], n.value, val, e, st)
                elif isinstance(n, ChildName) and n.module is args[0] and isinstance(args[0], ModuleVal):
                    # a child of the module, replaced by the value (LoRA-style injection)
                    heap_set(args[0], f"<child {id(e)}>", args[2])
                elif isinstance(args[0], ModeVal):
                    heap_field(args[0], "allow", None)  # any attribute, maybe the allow flag
            return UNKNOWN
        if name in ("staticmethod", "classmethod") and len(args) == 1 and isinstance(args[0], FuncVal):
            # `f = staticmethod(lambda: ...)` in a class body: as the decorator would
            fv = copy.copy(args[0])
            fv.kind = "static" if name == "staticmethod" else "class"
            return fv
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
        if name == "isinstance" and len(args) == 2 and not kwargs:
            known = self._isinstance(args[0], args[1])
            return ConstVal(known) if known is not None else UNKNOWN
        if name == "hasattr" and len(args) == 2 and isinstance(args[1], ConstVal) and isinstance(args[1].value, str):
            obj, attr = args[0], args[1].value
            if isinstance(obj, (InstanceVal, ModuleVal)) and (attr in obj.attrs or (
                    isinstance(obj.cls, ClassVal) and (obj.cls.methods.get(attr) is not None or obj.cls.lookup_attr(attr) is not None))):
                return ConstVal(True)  # (not found: it may still be set, or come from __getattr__)
            return UNKNOWN
        if name == "callable" and len(args) == 1:
            v = args[0]
            if isinstance(v, (FuncVal, BoundMethod, ClassVal, PartialVal, MethodRef, ModuleVal, DecoratorVal)):
                return ConstVal(True)
            if isinstance(v, ConstVal):
                return ConstVal(callable(v.value))
            return UNKNOWN
        if name == "type" and len(args) == 1 and isinstance(args[0], (InstanceVal, ModuleVal)) and args[0].cls is not None:
            return args[0].cls
        if name == "dict" and not args and kwargs:
            return _dict_val(list(kwargs), list(kwargs.values()))
        if name == "dict" and len(args) == 1 and isinstance(args[0], SeqVal) and args[0].is_dict and not kwargs:
            a = args[0]
            return SeqVal(a.items, a.elts, a.keys, True)  # a new dict with the same items
        if name == "dict":
            items = []
            for a in args:
                it = self.iter_item(a, st)
                if isinstance(it, SeqVal) and it.elts and len(it.elts) == 2:
                    items.append(it.elts[1])
                else:
                    items.append(self.iter_item(it))
            items += list(kwargs.values())
            return SeqVal(tuple(items), is_dict=True)
        if name in ("map", "filter", "enumerate", "zip"):
            return self.iterable_call(e, N.ITERABLE_FUNCS["builtins." + name], args, kwargs, st)
        if name in ("next", "anext") and args:
            if isinstance(args[0], GeneratorVal):
                return self.gen_next(args[0], st, temporary=bool(e.args) and isinstance(e.args[0], ast.Call))
            first = _ordered_elements(args[0], "list", {})
            if first is not None:
                return first[0] if first else (args[1] if len(args) > 1 else UNKNOWN)  # the first element
            item = self.iter_item(args[0], st)
            # one element, not each of them in turn (`next(iter(d))`)
            return _one_of(item)
        if name in ("iter", "aiter") and len(args) == 1 and isinstance(args[0], GeneratorVal):
            return args[0]  # a generator is its own iterator
        if name == "sum" and args:
            item = self.iter_item(args[0], st)
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


# a function of at most this many AST nodes is cheap to run
SMALL_BODY_NODES = 60
MAX_EXACT_YIELDS = 16  # a generator's yields kept as a known sequence up to this many
# calls whose result is a configuration known exactly (the names as called: `p.parse_args(argv)`)
def _ordered_elements(a, name, kwargs):
    """The elements ``list``/``tuple``/``sorted``/``reversed`` make of a sequence with known
    elements, or of a dict with known keys (its keys), in the order Python gives them
    (``sorted`` of constants only, without ``key=``/``reverse=``); None: not known."""
    if not isinstance(a, SeqVal) or name not in ("list", "tuple", "sorted", "reversed", "iter") or kwargs:
        return None
    if a.is_dict:
        if a.keys is None or a.elts is None:
            return None
        elts = tuple(ConstVal(k) for k in a.keys)
    elif a.elts is not None and a.keys is None:
        elts = tuple(a.elts)
    else:
        return None
    if name == "reversed":
        return elts[::-1]
    if name == "sorted":
        if not all(isinstance(x, ConstVal) for x in elts):
            return None
        try:
            return tuple(sorted(elts, key=lambda c: c.value))
        except TypeError:
            return None  # (mixed types: Python raises)
    return elts


CONFIG_MAKERS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args", "loads"})
CONFIG_READERS = frozenset({"json.load"})  # (a project data file: project_link.open_data_file)


def _all_bases_known(cls):
    """Is every class in ``cls``'s MRO a class of the file (or ``object``, ``nn.Module``)?"""
    return all(isinstance(b, ClassVal) or (isinstance(b, ModRef) and (b.qualname == "builtins.object" or b.qualname in N.NN_MODULE_BASE))
               for c in cls.mro or (cls,) for b in c.bases)


def _pair(a, b):
    return SeqVal((a, b), (a, b))


def _sort_key(v):
    """The key ``sorted`` compares a known element by: a str or number constant, or a
    tuple's first element when that is one (None: not known)."""
    if isinstance(v, SeqVal) and not v.is_dict and v.keys is None and v.elts:
        v = v.elts[0]
    if isinstance(v, ConstVal) and type(v.value) in (str, int, float, bool):
        return v.value
    return None


def _sorted_known(elems, reverse):
    """``sorted`` of known elements when Python's order is known: every key known,
    distinct (ties would compare the rest) and of one kind (str, or numbers); else None."""
    if elems is None or not isinstance(reverse, ConstVal) or type(reverse.value) is not bool:
        return None
    keys = [_sort_key(x) for x in elems]
    if any(k is None for k in keys) or len(set(keys)) != len(keys):
        return None
    if len({type(k) is str for k in keys}) > 1:
        return None
    order = sorted(range(len(elems)), key=lambda i: keys[i], reverse=reverse.value)
    return tuple(elems[i] for i in order)




def _value_key(v, depth=0):
    """A known argument as an ``lru_cache`` key: a constant, or a tuple of known
    constants (``x.shape``: torch.Size hashes and compares as its tuple). None: not known."""
    if isinstance(v, ConstVal):
        return ("c", _const_key(v.value))
    if isinstance(v, SeqVal) and v.elts is not None and v.keys is None and not v.is_dict and depth < 3:
        parts = tuple(_value_key(x, depth + 1) for x in v.elts)
        return None if None in parts else ("t", parts)
    return None


def _const_key(v):
    """A constant as a cache key (equal as Python's dict keys are; other objects by identity)."""
    return (v if isinstance(v, (int, float, str, bytes, bool, type(None))) else id(v))


def _returns_at_once(node) -> bool:
    """A function whose body is one ``return`` of a value built from its arguments
    and constants (``return Config(fake=True)``, a settings getter): cheap to run,
    and what it returns may decide a branch elsewhere (a flag, a mode's option)."""
    body = getattr(node, "body", None)
    if not isinstance(body, list) or len(body) > 2:
        return False
    last = body[-1]
    if len(body) == 2 and not (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
        return False  # (a docstring, then the return)
    return isinstance(last, ast.Return) and last.value is not None and not isinstance(last.value, ast.Lambda)
