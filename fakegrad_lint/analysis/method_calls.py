"""Method calls ``recv.name(...)`` by the kind of the receiver: may values,
classes and ``super()``, exported programs, tensors (``backward`` is a sink;
``requires_grad_``, ``detach``, metadata reads), modes (``__enter__``/``__exit__``,
``from_tensor``), modules (``parameters()``, ``to_empty``, ``requires_grad_``,
methods returning ``self``), instances, optimizers, ``ExitStack.enter_context``,
containers (``append``, ``items``, ``get``...), explicit context ``__enter__``.
"""

from __future__ import annotations

import ast
import itertools

from fakegrad_lint.analysis.param_leaves import param_leaves, split_state
from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.context import DispatchContext
from fakegrad_lint.analysis.expressions import module_children
from fakegrad_lint.analysis.heap import heap_field, heap_set
from fakegrad_lint.analysis.library_classes import LibraryMixin
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.torch_values import (_disable_module_origins, _enable_module_origins, _fake_copy, _is_meta,
    _set_requires_grad, op_shape, shape_of, shape_read)
from fakegrad_lint.analysis.valueops import argparse_kwargs, argparse_parse, const_data, _arg_exprs, _dict_val, _flatten, _kw_false, _kw_true, _one_of, _operands, _values_of
from fakegrad_lint.analysis.values import (UNKNOWN, MethodRef, ArgParserVal, DataFileVal, BoundMethod, ChildName, ClassVal, ConstVal, CtxVal,
    ExitStackVal,
    ExportedProgramVal, FuncVal, GeneratorVal, HookHandle, InstanceVal, MaybeVal, ModeVal, ModRef, ModuleVal, OptimizerVal, Origin, PartialVal, Region,
    RealTreeVal, SeqVal, SuperVal, TVal, WorkerVal, join, join_all)


def _is_named_tuple(cls):
    return isinstance(cls, ClassVal) and any(isinstance(b, ModRef) and b.qualname in N.NAMED_TUPLE_BASES
                                             for c in (cls.mro or (cls,)) for b in c.bases)


_GROUPS = itertools.count()  # mutually exclusive groups, numbered as made


def _materialize(mod, line, depth=0):
    """``to_empty`` outside a region: the module and what it holds get real storage."""
    if mod.origin is None:
        heap_field(mod, "origin", Origin("module", "module", line))
    heap_field(mod, "mode", None)
    heap_field(mod, "meta", False)
    for k, x in list(mod.attrs.items()):
        if isinstance(x, TVal) and x.mode is not None:
            heap_set(mod, k, TVal())  # (a parameter's requires-grad comes with the module's origin)
        elif isinstance(x, ModuleVal) and depth < 4 and (x.meta or x.mode is not None):
            _materialize(x, line, depth + 1)


def _proven_real(v):
    """A tensor real on every path (not fake, not made in a region entered on some paths)."""
    return isinstance(v, TVal) and v.mode is None and not v.may_fake and v.device != "meta"


def _device_type_of(dev):
    """The device type a ``device=`` argument names on every path ("cpu", "cuda",
    "meta"; a string or a ``torch.device``), else None."""
    if isinstance(dev, MaybeVal) and not dev.each:
        kinds = {_device_type_of(o) for o in dev.options}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(dev, ConstVal) and isinstance(dev.value, str):
        return dev.value.split(":", 1)[0] or None
    if isinstance(dev, CtxVal) and dev.kind == "device":
        return dev.target
    if isinstance(dev, CtxVal) and dev.kind == "meta_device":
        return "meta"
    return None


# methods that take elements out of a list, dict or set
_REMOVALS = frozenset({"clear", "pop", "popitem", "remove", "discard"})


class MethodCallsMixin(LibraryMixin):
    """obj.name(...) by the kind of obj."""

    def generator_method(self, g, name, st):
        """A generator object's methods: ``send``/``__next__`` resume it to its next
        ``yield``, ``close`` ends it (leaving the regions it was suspended in); any
        other (``throw``) leaves it where the analysis cannot follow."""
        if name in ("send", "__next__", "asend", "__anext__"):
            return self.gen_next(g, st)
        if name in ("close", "aclose"):
            if g.state in ("new", "suspended"):
                g.state = "done"
                self._gen_release(g, st, st.regions)
            return ConstVal(None)
        if name in ("__iter__", "__aiter__"):
            return g
        if g.state in ("new", "suspended"):
            g.state = "unknown"
            self._gen_release(g, st, st.regions)
        return UNKNOWN

    def _optimizer_step(self, e, opt, args, kwargs, st):
        """``opt.step(...)``: its pre hooks, the closure it is given (``step(closure)``
        runs it and returns its result), then its post hooks, each hook called as
        ``fn(optimizer, args, kwargs)``, as torch's ``Optimizer.step`` wrapper does."""
        hook_args = [opt, SeqVal(tuple(args), tuple(args)), _dict_val(list(kwargs), list(kwargs.values()))]
        for fn in self._held_hooks(opt, "_optimizer_step_pre_hooks"):
            self.call_value(e, fn, list(hook_args), {}, st, func_expr=None)
        closure = args[0] if args else kwargs.get("closure")
        res = self.call_value(e, closure, [], {}, st, func_expr=None) if closure is not None else UNKNOWN
        for fn in self._held_hooks(opt, "_optimizer_step_post_hooks"):
            self.call_value(e, fn, list(hook_args), {}, st, func_expr=None)
        return res

    @staticmethod
    def _held_hooks(owner, key):
        held = owner.attrs.get(key)
        return list(held.items) if isinstance(held, SeqVal) else []

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
        if recv is UNKNOWN and name in N.MODULE_ONLY_METHODS:
            recv = self._opaque_module(e, st)
        if isinstance(recv, SuperVal) and name == "__new__" and getattr(self, "_meta_new", None) is not None:
            return self._meta_new  # `super().__new__(mcls, name, bases, ns)` in a metaclass: the class made
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
        if isinstance(recv, GeneratorVal):
            return self.generator_method(recv, name, st)
        if isinstance(recv, FuncVal) and recv.memo and name in N.MEMO_FUNCTION_METHODS:
            if N.MEMO_FUNCTION_METHODS[name] == "clear":
                # `fn.cache_clear()`: no earlier result comes back (a fake made in a
                # region is not returned to a later real call); on a path that only may
                # run this, the entries are dropped too: a kept one would be a may link
                self._memo_results.pop(recv.node, None)
                return ConstVal(None)
            return UNKNOWN
        if isinstance(recv, TVal):
            return self.tensor_method(e, recv, name, args, kwargs, st)
        if (isinstance(recv, ConstVal) and isinstance(recv.value, str) and name in N.PURE_STR_METHODS and not kwargs
                and all(isinstance(a, ConstVal) for a in args)):
            try:
                out = getattr(recv.value, name)(*(a.value for a in args))
            except Exception:
                return UNKNOWN
            if isinstance(out, (list, tuple)):
                items = tuple(ConstVal(x) for x in out)
                return SeqVal(items, items)
            return ConstVal(out)
        if isinstance(recv, ArgParserVal):
            return self.parser_method(e, recv, name, args, kwargs, st)
        if isinstance(recv, RealTreeVal):
            return recv if name in N.MAPPING_VALUE_METHODS else UNKNOWN  # (a part of the loaded tree)
        if isinstance(recv, DataFileVal):
            if name == "read" and not args and not kwargs:
                return ConstVal(recv.text)
            return recv if name == "__enter__" else UNKNOWN
        if isinstance(recv, ModeVal) and recv.cls is not None and not name.startswith("__"):
            # an instance of a FakeTensorMode subclass of the file: its own methods first
            if name in recv.attrs:
                return self.call_value(e, recv.attrs[name], args, kwargs, st)
            m = recv.cls.methods.get(name)
            if m is not None:
                return self.call_value(e, self.bind_method(m, recv, recv.cls, st), args, kwargs, st)
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
            if name == "_replace" and not args and _is_named_tuple(recv.cls):
                # a NamedTuple's `_replace(**changes)`: a new one with those fields changed
                if type(kwargs) is not dict or any(k not in recv.cls.fields() for k in kwargs):  # (unknown **kw)
                    return UNKNOWN
                return InstanceVal(recv.cls, {**recv.attrs, **kwargs})
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
            if recv.cls.library is not None:
                res = self.library_method(e, recv, name, args, kwargs, st)
                if res is not None:
                    return res
            if recv.cls.lookup_method("__getattr__") is not None:
                return self.call_value(e, self.attribute(e.func, recv, name, st), args, kwargs, st)
            return UNKNOWN
        if isinstance(recv, WorkerVal):
            return self.worker_method(e, recv, name, args, kwargs, st)
        if isinstance(recv, HookHandle):
            if name == "remove":
                held = recv.module.attrs.get(recv.key)
                if isinstance(held, SeqVal):
                    heap_set(recv.module, recv.key, SeqVal(tuple(h for h in held.items if h is not recv.fn)))
            return UNKNOWN
        if isinstance(recv, OptimizerVal):
            if name == "zero_grad":
                self.grads_reset(recv.params, _set_to_none(args, kwargs))
                return UNKNOWN
            if name in N.OPTIMIZER_HOOK_REGISTRARS and len(args) == 1 and not kwargs:
                key = N.OPTIMIZER_HOOK_REGISTRARS[name]
                held = recv.attrs.get(key)
                heap_set(recv, key, SeqVal((held.items if isinstance(held, SeqVal) else ()) + (args[0],)))
                return HookHandle(recv, key, args[0])
            if name == "step":
                return self._optimizer_step(e, recv, args, kwargs, st)
            return UNKNOWN
        if isinstance(recv, ExitStackVal):
            if name in ("enter_context", "enter_async_context") and args:
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
                if not recv.pushed:
                    recv.pushed.append([])  # a stack used without `with`: closed by close()/__exit__()
                recv.pushed[-1].extend(undo)
                return v
            if name == "pop_all":
                # a new stack takes over what this one entered; closing this one leaves nothing
                moved = ExitStackVal([list(m) for m in recv.pushed])
                for marker in recv.pushed:
                    marker.clear()
                return moved
            if name in N.EXIT_STACK_CLOSE:
                # `stack.close()` / `stack.__exit__(...)`: what it entered is left now
                for marker in recv.pushed:
                    for fn in reversed(marker):
                        fn(st)
                    marker.clear()
                return UNKNOWN
            return UNKNOWN
        if isinstance(recv, SeqVal):
            if name == "setdefault" and recv.keys is not None and args and isinstance(args[0], ConstVal):
                # a known dict: the key's value when present, else the default, stored
                got = recv.lookup(args[0].value)
                if got is not None:
                    return got
                default = args[1] if len(args) > 1 else ConstVal(None)
                self.mutate_container(e.func.value, recv, _dict_val(list(recv.keys) + [args[0].value], list(recv.elts) + [default]), st)
                return default
            if name in _REMOVALS:
                return self.remove_from_container(e.func.value, recv, name, args, st)
            if (name == "update" and recv.is_dict and recv.keys is not None and len(args) <= 1
                    and all(isinstance(a, SeqVal) and a.is_dict and a.keys is not None for a in args)
                    and type(kwargs) is dict):
                # `d.update(other, **kw)` of known keys (`opts.update(overrides)` over an empty
                # `**overrides`): each key of `other`, then each keyword, set in `d`; the rest kept
                keys = list(recv.keys) + [k for a in args for k in a.keys] + list(kwargs)
                vals = list(recv.elts) + [v for a in args for v in a.elts] + list(kwargs.values())
                self.mutate_container(e.func.value, recv, _dict_val(keys, vals), st)
                return ConstVal(None)
            if name in ("append", "add", "insert", "extend", "update", "setdefault"):
                new_items = list(recv.items)
                for a in args:
                    if name == "update":
                        new_items.append(_values_of(a) if isinstance(a, SeqVal) else a)
                    else:
                        new_items.append(self.iter_item(a, st) if name == "extend" else a)
                new_items.extend(kwargs.values())
                # a list of known elements appended to on this path keeps them known, in
                # order (`mods.append(import_module(name))` over known names); a branch
                # that appends is joined by the heap (elements known where paths agree)
                elts = (recv.elts + (args[0],) if name == "append" and len(args) == 1 and not kwargs
                        and recv.elts is not None and recv.keys is None and not recv.is_dict else None)
                self.mutate_container(e.func.value, recv, SeqVal(tuple(new_items), elts, is_dict=recv.is_dict), st)
                return UNKNOWN
            if name in ("items",):
                if recv.keys is not None:
                    # a dict with known keys: its (key, value) pairs, in order, each one known
                    pairs = tuple(SeqVal((ConstVal(k), v), (ConstVal(k), v)) for k, v in zip(recv.keys, recv.elts))
                    return SeqVal(pairs, pairs)
                return SeqVal(tuple(SeqVal((UNKNOWN, v), (UNKNOWN, v)) for v in recv.items))
            if name == "copy":
                return SeqVal(recv.items, recv.elts, recv.keys, recv.is_dict)  # a new object, the same items
            if name == "keys":
                if recv.keys is None:
                    return UNKNOWN
                keys = tuple(ConstVal(k) for k in recv.keys)
                return SeqVal(keys, keys)
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
                # one of the values (a key not known, a set's arbitrary element), not each of them
                return _one_of(join_all(recv.items)) if recv.items else UNKNOWN
            return UNKNOWN
        if isinstance(recv, PartialVal) and name == "__call__":
            return self.call_value(e, recv, args, kwargs, st)
        if isinstance(recv, (FuncVal, BoundMethod)) and name == "__call__":
            return self.call_value(e, recv, args, kwargs, st)
        if isinstance(recv, CtxVal) and name == "__enter__":
            restores = isinstance(recv.target, tuple) and recv.target[:1] == ("restores",)
            self._manual_undo[id(recv)] = (recv.target[1] if restores else st.grad_enabled, st.dispatch_off,
                                           st.fake_copy, st.meta_device, st.ctx.inference)
            self.enter(recv, st, [])
            return UNKNOWN
        if isinstance(recv, CtxVal) and name == "__exit__":
            saved = self._manual_undo.pop(id(recv), None)
            if saved is not None:  # restore what this context changed, in the state that leaves it
                k = recv.kind
                if k in ("grad_off", "grad_on"):
                    st.ctx = st.ctx.but(grad_enabled=saved[0], inference=saved[4])
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

    def remove_from_container(self, expr, recv, name, args, st):
        """``d.clear()``, ``d.pop(k)``, ``xs.remove(v)``, ``del d[k]`` (``name`` "del"): the
        object itself changes (every name holding it sees it). A known key of a dict with
        known keys goes; ``clear`` empties it; any other removal leaves its items as may
        values (which of them are still there is not known). Returns what ``pop`` gives."""
        got = UNKNOWN
        if name == "clear":
            new = SeqVal((), (), () if recv.is_dict else None, is_dict=recv.is_dict)
        elif name in ("pop", "del") and recv.is_dict and recv.keys is not None and recv.elts is not None \
                and args and isinstance(args[0], ConstVal) and recv.lookup(args[0].value) is not None:
            at = [i for i, k in enumerate(recv.keys) if k == args[0].value and type(k) is type(args[0].value)][0]
            got = recv.elts[at]
            keys = recv.keys[:at] + recv.keys[at + 1:]
            elts = recv.elts[:at] + recv.elts[at + 1:]
            new = SeqVal(elts, elts, keys, is_dict=True)
        else:
            if name == "pop":
                got = _values_of(recv) if recv.is_dict else self.iter_item(recv)
            new = SeqVal(tuple(join(UNKNOWN, x) for x in recv.items), is_dict=recv.is_dict)
        self.mutate_container(expr, recv, new, st)
        return got

    def worker_method(self, e, w, name, args, kwargs, st):
        """Thread pools and threads: the function runs where it is started, in a thread
        of its own: torch's dispatch modes and grad mode are thread-local, so it starts
        outside every region, with grad on (``Thread.run()`` runs in the caller's thread)."""
        if w.kind == "executor":
            if name == "__enter__":
                return w
            if name == "submit" and args:
                res = self._in_new_thread(lambda: self.call_value(e, args[0], list(args[1:]), kwargs, st,
                                                                  func_expr=e.args[0] if e.args else None), st)
                return WorkerVal("future", result=res)
            if name == "map" and len(args) >= 2:
                return self._in_new_thread(lambda: self.iterable_call(e, "map", args, {}, st), st)
            return UNKNOWN
        if w.kind == "future" and name == "result":
            return w.result if w.result is not None else UNKNOWN
        if w.kind == "thread" and name in ("start", "run") and w.target is not None:
            fn, targs, tkw = w.target
            call = lambda: self.call_value(e, fn, list(targs), dict(tkw), st, func_expr=None)  # noqa: E731
            w.result = self._in_new_thread(call, st) if name == "start" else call()
            return UNKNOWN
        return UNKNOWN

    def _in_new_thread(self, run, st):
        saved = st.ctx
        st.ctx = DispatchContext(may=saved.may)
        try:
            return run()
        finally:
            st.ctx = saved

    def parser_method(self, e, parser, name, args, kwargs, st):
        """argparse: ``add_argument`` declares an argument (into the parser a group
        belongs to); parsing a known constant argument list runs argparse itself on what
        was declared (``valueops.argparse_parse``: flags, ``store_true``, ``type=int``,
        defaults, ``set_defaults``, mutually exclusive groups). The command line
        (``parse_args()``, ``parse_args(None)``) is that of the program run with no
        arguments (``program_argv``)."""
        root = parser.root or parser
        if name == "add_argument":
            spec = argparse_kwargs(args, kwargs)
            if spec is None:
                root.complete = False
            else:
                root.specs.append((parser.group,) + spec)
            return UNKNOWN
        if name == "add_argument_group":
            return ArgParserVal(root=root, group=parser.group)
        if name == "add_mutually_exclusive_group":
            req = kwargs.get("required", ConstVal(False))
            if not isinstance(req, ConstVal):
                root.complete = False
            n = next(_GROUPS)
            return ArgParserVal(root=root, group=("mutex", n, bool(req.value) if isinstance(req, ConstVal) else False))
        if name == "set_defaults":
            root.defaults.update(kwargs)
            return UNKNOWN
        if name in N.ARGPARSE_PARSE:
            argv = args[0] if args else kwargs.get("args", ConstVal(None))
            if isinstance(argv, ConstVal) and argv.value is None:
                # the command line: sys.argv[1:] of the program run as it is
                full = self.program_argv()
                argv = SeqVal(full.elts[1:], full.elts[1:]) if isinstance(full, SeqVal) else UNKNOWN
            ok, data = const_data(argv) if isinstance(argv, SeqVal) and not argv.is_dict else (False, None)
            if not (root.complete and ok and isinstance(data, list) and all(isinstance(a, str) for a in data)):
                return UNKNOWN
            parsed = argparse_parse(root.options, root.specs, root.defaults, data, name == "parse_known_args")
            if parsed is None:
                return UNKNOWN
            ns = self.simple_namespace(e, [], parsed[0])
            if name != "parse_known_args":
                return ns
            rest = tuple(ConstVal(a) for a in parsed[1])
            return SeqVal((ns, SeqVal(rest, rest)), (ns, SeqVal(rest, rest)))
        root.complete = False  # add_subparsers and the rest: not followed
        return UNKNOWN

    def _opaque_module(self, e, st):
        """``x.to_empty(...)`` (a method only a module has) on a value the analysis cannot
        follow (a third-party call's result): ``x`` is a module, of unknown class, storage
        and requires-grad, from here on (the name is rebound; any other receiver stays
        unknown)."""
        recv = e.func.value if isinstance(e.func, ast.Attribute) else None
        if recv is None or st.may:
            return UNKNOWN
        mod = ModuleVal(None, opaque=True)
        if dotted_name(recv) is not None:
            self.rebind(recv, mod, st)  # (`build(...).to_empty(...)`: only the result is the module)
        return mod

    def _strict_module_op(self, e, mod, st):
        """``mod.name(...)`` runs an op on every parameter under the active strict mode
        (a crash); no fix: the call is not the module's own call that a fix rewrites."""
        try:
            self.op(e, [(mod, e.func.value)], st, differentiable=False)
        finally:
            for rec in self.records.values():
                if rec.node is e:
                    rec.fix_plan = None

    def module_method(self, e, mod, name, args, kwargs, st):
        real = mod.is_real()
        own = mod.attrs.get(name)
        if name in mod.attrs and not (name == "forward" and (id(mod) in self._own_forward_running or (
                isinstance(own, MethodRef) and own.recv is mod and own.name == name))):
            # (`model.forward = orig` of its own forward read before: the class's forward)
            return self.call_value(e, mod.attrs[name], args, kwargs, st)
        if name == "forward" or name == "__call__":
            return self.module_call(e, mod, e.func.value, args, kwargs, st)
        if name == N.TORCH_FORWARD:
            return self.torch_forward(e, mod, None, args, kwargs, st)
        if mod.cls is not None and name in mod.cls.methods:
            m = mod.cls.methods[name]
            if not isinstance(m, FuncVal) or m.kind == "property":
                return self.call_value(e, self.bind_method(m, mod, mod.cls, st), args, kwargs, st)
            if m.kind == "static":
                return self.call_function(m, list(args), kwargs, st)
            return self.call_function(m, [mod.cls if m.kind == "class" else mod] + list(args), kwargs, st,
                                      site=(e, [e.func.value] + _arg_exprs(e), [mod] + list(args)))
        leaves = param_leaves(mod, e.lineno) if real and name in ("parameters", "named_parameters") else None
        if leaves and (id(e) in self.loop_iters or split_state(leaves)):
            # each parameter by name, one object each (param_leaves.py), where a loop's
            # body sees them one by one or they differ already (some switched off)
            if name == "parameters":
                ts = tuple(t for _, t in leaves)
                return SeqVal(ts, ts)
            pairs = tuple(SeqVal((ConstVal(n), t), (ConstVal(n), t)) for n, t in leaves)
            return SeqVal(pairs, pairs)
        if name in ("parameters", "named_parameters") or (name == "state_dict" and _kw_true(kwargs, "keep_vars")):
            kids = _child_origins(mod) if mod.origin is None and mod.mode is None else frozenset()
            if real:
                p = TVal(frozenset([mod.origin]), device=mod.device)  # the module's own provenance: freezing them freezes it
            elif kids:
                # a module with no parameters of its own (`nn.Sequential()` filled by
                # `add_module`): its children's, each with its provenance
                p = TVal(kids)
            else:
                p = TVal(frozenset(), mod.mode, may_fake=mod.may_fake)
            if name == "parameters":
                return SeqVal((p,))
            if name == "named_parameters":
                return SeqVal((SeqVal((UNKNOWN, p), (UNKNOWN, p)),))
            return SeqVal((p,), is_dict=True)  # state_dict(keep_vars=True)
        kids = module_children(mod) if mod.torch_class != "ModuleDict" else (
            [mod.attrs[k] for k in mod.children] if mod.children is not None and mod.cls is None else None)
        if kids is not None and name in ("children", "named_children"):
            if name == "children":
                return SeqVal(tuple(kids), tuple(kids))
            pairs = tuple(SeqVal((ConstVal(k), c), (ConstVal(k), c)) for k, c in zip(mod.children, kids))
            return SeqVal(pairs, pairs)
        if name in ("modules", "named_modules") and mod.children is not None and mod.cls is None:
            found = _descendants(mod, "", 0)
            if found is not None:
                if name == "modules":
                    mods = tuple(m for _, m in found)
                    return SeqVal(mods, mods)
                pairs = tuple(SeqVal((ConstVal(k), m), (ConstVal(k), m)) for k, m in found)
                return SeqVal(pairs, pairs)
        if name in ("children", "modules"):
            return SeqVal((mod,))
        if name in N.MODULE_MAPPING_VIEWS and mod.cls is None and mod.children is not None \
                and mod.torch_class == "ModuleDict":
            keys = tuple(ConstVal(k) for k in mod.children)
            vals = tuple(mod.attrs.get(k, UNKNOWN) for k in mod.children)
            if name == "keys":
                return SeqVal(keys, keys)
            if name == "values":
                return SeqVal(vals, vals)
            pairs = tuple(SeqVal((k, v), (k, v)) for k, v in zip(keys, vals))
            return SeqVal(pairs, pairs)
        if name in N.MODULE_MAPPING_VIEWS and mod.cls is None:
            # nn.ModuleDict / ParameterDict views: its entries stand for the container
            # (their parameters are its parameters), keys unknown
            if name == "keys":
                return SeqVal((UNKNOWN,))
            entry = self.iter_item(mod)
            return SeqVal((SeqVal((UNKNOWN, entry), (UNKNOWN, entry)),)) if name == "items" else SeqVal((entry,))
        if name == "named_children":
            key = ChildName(mod)  # (setattr(mod, name, m) with it replaces a child)
            return SeqVal((SeqVal((key, mod), (key, mod)),))
        if name == "named_modules":
            return SeqVal((SeqVal((UNKNOWN, mod), (UNKNOWN, mod)),))
        if name in N.MODULE_DETACHING_METHODS and real:
            region = st.active_region()
            if region is not None and st.allow_of(region.mode) is False:
                # it detaches every parameter: an op on real tensors under a strict mode
                self._strict_module_op(e, mod, st)
        if name in ("state_dict", "buffers", "named_buffers"):
            t = TVal(frozenset(), mod.mode, may_fake=mod.may_fake)
            if name == "named_buffers":
                return SeqVal((SeqVal((UNKNOWN, t), (UNKNOWN, t)),))
            return SeqVal((t,), is_dict=name == "state_dict")
        if name == "load_state_dict" and _kw_true(kwargs, "assign") and args:
            # assign=True: the module holds the given tensors themselves from here on;
            # fake ones (every value proven fake, of one mode) make it a fake module
            vals = _flatten(args[0]) if isinstance(args[0], SeqVal) else []
            modes = {id(v.mode): v.mode for v in vals if isinstance(v, TVal) and v.proven_fake()}
            if vals and len(modes) == 1 and all(isinstance(v, TVal) and v.proven_fake() for v in vals):
                mode = next(iter(modes.values()))
                _fakify_in_region(mod, Region(mode, mode.allow), st)
                heap_field(mod, "fake_out", mod.fake_out or mod.cls is None)
            elif (isinstance(args[0], RealTreeVal) or (vals and all(_proven_real(v) for v in vals))) \
                    and mod.mode is not None and not mod.may_fake and not st.may and not mod.meta:
                # real tensors: each becomes `nn.Parameter(t, requires_grad=p.requires_grad)`
                # in place of the fake parameter `p` (the module's parameters require grad)
                _materialize(mod, e.lineno)
                heap_field(mod, "fake_out", False)
            return UNKNOWN
        if name == "to_empty" or _is_dtype_cast(name, args, kwargs):
            region = st.active_region()
            if region is not None and st.allow_of(region.mode) is False and mod.real_rg():
                # the new parameters are made from the old ones under the mode, which does
                # not accept the real (or meta) tensors the module holds: a crash (HAZARD 12)
                self._strict_module_op(e, mod, st)
        if name == "to_empty":
            # new storage for every parameter, in place: fake under an active region,
            # real (uninitialised) outside it, whatever the module held before
            region = st.active_region()
            if region is not None:
                _fakify_in_region(mod, region, st)
            elif mod.meta or (mod.origin is None and mod.mode is not None):
                _materialize(mod, e.lineno)
            if region is None:
                # every parameter and buffer now lives on that device (`p.is_meta` is known)
                dev = args[0] if args else kwargs.get("device", UNKNOWN)
                mod.device = _device_type_of(dev)
                if mod.opaque and mod.origin is None and mod.mode is None and mod.device not in (None, "meta") \
                        and not st.may and not st.meta_device:
                    # an opaque module given real storage: a real module, but whether its
                    # parameters require grad is not known (a sink may prove it: dispatch.py)
                    heap_field(mod, "origin", Origin(self._text(e.func.value), "module", e.lineno,
                                                     rg_unknown=True))
            return mod
        if _is_dtype_cast(name, args, kwargs):
            # new parameters made from the old ones: an allowing mode's fakes in a region
            region = st.active_region()
            if region is not None and st.allow_of(region.mode) is True and not st.may:
                _fakify_in_region(mod, region, st)
                return mod
        if name == "zero_grad" and real:
            self.grads_reset(mod, _set_to_none(args, kwargs))
            return UNKNOWN
        if name == "requires_grad_":
            # in place, on every parameter: the module (and what was taken from it) is
            # frozen or unfrozen from here on
            off = (args and isinstance(args[0], ConstVal) and args[0].value is False) or _kw_false(kwargs, "requires_grad")
            _set_requires_grad(mod, not off)
            return mod
        if name in N.MODULE_SELF_METHODS:
            if name == "to" and (_is_meta(args) or _is_meta(list(kwargs.values()))):
                heap_field(mod, "meta", True)
            if name == "apply" and args:
                self._apply_to_modules(e, args[0], mod, st, 0)  # fn(m) for every submodule m, then the module
            return mod
        if name in N.MODULE_HOOK_REGISTRARS and args and not kwargs.get("with_kwargs"):
            key = N.MODULE_HOOK_REGISTRARS[name]
            self._hooks_made = True
            held = mod.attrs.get(key)
            heap_set(mod, key, SeqVal((held.items if isinstance(held, SeqVal) else ()) + (args[0],)))
            return HookHandle(mod, key, args[0])
        if name in ("register_parameter", "register_buffer") and len(args) >= 2 and isinstance(args[0], ConstVal):
            heap_set(mod, str(args[0].value), args[1])
            return UNKNOWN
        if name in ("add_module", "register_module") and len(args) >= 2 and isinstance(args[0], ConstVal):
            heap_set(mod, str(args[0].value), args[1])
            return UNKNOWN
        if name in ("get_submodule", "get_parameter") and len(args) == 1 and isinstance(args[0], ConstVal) \
                and isinstance(args[0].value, str):
            # the dotted path through the attributes set on the modules (not known: unknown)
            target = mod
            for part in [p for p in args[0].value.split(".") if p]:
                target = target.attrs.get(part) if isinstance(target, ModuleVal) else None
                if target is None:
                    return UNKNOWN
            return target if isinstance(target, (ModuleVal if name == "get_submodule" else TVal)) else UNKNOWN
        return UNKNOWN

    def _apply_to_modules(self, e, fn, mod, st, depth):
        """``module.apply(fn)``: fn on each child (theirs first, recursively), then on the module."""
        for child in (module_children(mod) or []) if depth < 4 and mod.torch_class != "ModuleDict" else []:
            self._apply_to_modules(e, fn, child, st, depth + 1)
        if depth < 4 and mod.torch_class == "ModuleDict" and mod.children is not None:
            for k in mod.children:
                if isinstance(mod.attrs.get(k), ModuleVal):
                    self._apply_to_modules(e, fn, mod.attrs[k], st, depth + 1)
        self.call_value(e, fn, [mod], {}, st, func_expr=None)

    def tensor_method(self, e, recv, name, args, kwargs, st):
        if name == "element_size" and not args and recv.itemsize is not None:
            return ConstVal(recv.itemsize)
        if name == "backward":
            inputs = kwargs.get("inputs", args[3] if len(args) > 3 else None)
            self.sink(recv, ".backward()", e, st, inputs=inputs)
            return UNKNOWN
        if name == "requires_grad_":
            flag = True
            if args and isinstance(args[0], ConstVal):
                flag = bool(args[0].value)
            elif args:
                # an unknown flag (`p.requires_grad_(saved_flag)`) tells nothing:
                # the value keeps what was known of it
                return recv
            if _kw_false(kwargs, "requires_grad"):
                flag = False
            if recv.mode is None:
                if not flag:
                    _disable_module_origins(recv)
                else:
                    _enable_module_origins(recv)
                origins = recv.origins | {Origin(dotted_name(e.func.value) or "tensor", "tensor", e.lineno)} if flag else frozenset()
                new = TVal(origins, None, recv.leaks, shape=recv.shape)
                self.rebind(e.func.value, new, st)
                return new
            return recv
        if name in N.SHAPE_READS:
            known = shape_read(name, recv.shape, args)
            if known is not None:
                return known
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
            new = TVal(frozenset(), mode, frozenset(), shape=recv.shape)
            if name == "detach_":
                self.rebind(e.func.value, new, st)
            return new
        if name in ("to", "cuda", "cpu") and recv.mode is None and (_is_meta(args) or _is_meta(list(kwargs.values()))):
            return TVal(frozenset(), None)
        diff = name not in N.NON_DIFFERENTIABLE_METHODS
        operands = [(recv, e.func.value)] + _operands(e, args, kwargs)
        shape = op_shape(name, [recv.shape] + [shape_of(a) for a in args], args, kwargs)
        return self.op(e, operands, st, differentiable=diff, shape=shape)


def _descendants(mod, prefix, depth):
    """``module.named_modules()`` of a container whose children are known: (name, module)
    for the module itself, then each child's, depth first (None: some child not known)."""
    out = [(prefix, mod)]
    if mod.children is None or mod.cls is not None:
        return out if depth else None
    if depth > 4:
        return None
    for k in mod.children:
        child = mod.attrs.get(k)
        if not isinstance(child, ModuleVal):
            return None
        sub = _descendants(child, f"{prefix}.{k}" if prefix else k, depth + 1)
        if sub is None:
            return None
        out.extend(sub)
    return out


def _set_to_none(args, kwargs):
    """``zero_grad(set_to_none=...)``: True (the default), False, or None when not known."""
    v = args[0] if args else kwargs.get("set_to_none", ConstVal(True))
    return bool(v.value) if isinstance(v, ConstVal) and isinstance(v.value, bool) else None


def _fakify_in_region(mod, region, st):
    """Every parameter of ``mod`` replaced by a new tensor made under ``region``'s
    mode (``to_empty``, a dtype cast): the module holds fakes from here on."""
    heap_field(mod, "mode", region.mode)
    heap_field(mod, "may_fake", region.may or bool(st.may))
    heap_field(mod, "fake_out", mod.fake_out or (mod.origin is not None and mod.cls is None))
    # its submodules and tensors are converted with it
    for k, x in list(mod.attrs.items()):
        if isinstance(x, (ModuleVal, TVal, SeqVal)):
            heap_set(mod, k, _fake_copy(x, region.mode))


def _is_dtype_cast(name, args, kwargs):
    """``m.double()``, ``m.half()``, ``m.to(torch.float64)``: a cast away from float32."""
    if name in N.MODULE_DTYPE_CASTS and not args and not kwargs:
        return True
    if name == "to":
        given = list(args) + [kwargs.get("dtype")]
        return any(isinstance(a, ModRef) and a.qualname in N.NON_DEFAULT_FLOAT_DTYPES for a in given)
    return False


def _child_origins(mod, depth=0):
    """The provenance of the real submodules set on ``mod`` (recursively): what its
    ``parameters()`` hold when it has none of its own."""
    out = set()
    for x in mod.attrs.values():
        if isinstance(x, ModuleVal) and x.mode is None:
            if x.origin is not None:
                out.add(x.origin)
            elif depth < 4:
                out |= _child_origins(x, depth + 1)
    return frozenset(out)
