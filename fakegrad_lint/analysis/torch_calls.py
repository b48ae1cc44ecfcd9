"""Calls of qualified names resolved through imports (``torch.*``, ``copy``,
``functools``, ``dataclasses``, third-party module factories), each meaning a row
of :mod:`fakegrad_lint.analysis.torch_tables`: modes, contexts, ``make_fx``,
``torch.func`` transforms, parameters and factories (fake inside a region, real
outside), module constructors, ``deepcopy``/``to_empty`` under modes, the
autograd sinks; and calling a module (its ``forward``).
"""

from __future__ import annotations

import ast
import dataclasses
import weakref

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.calls import OpenKwargs
from fakegrad_lint.analysis.library_classes import thread_target
from fakegrad_lint.analysis.state import Crashed
from fakegrad_lint.analysis.torch_values import (_fake_copy, _grad_mode_kind, _is_meta, _is_module_factory,
    _is_nn_module_class, _is_torch_op, _known_params, _proven_copy, _with_taint, op_shape, shape_of, size_of_args)
from fakegrad_lint.analysis.valueops import (_NONCONST, _arg_exprs, _flatten, _is_tensorish, _kw_false,
    _kw_true, _operands)
from fakegrad_lint.analysis.valueops import json_loads, new_parser
from fakegrad_lint.analysis.torch_values import layer_output_shape
from fakegrad_lint.analysis.values import (UNKNOWN, ArgParserVal, DataFileVal, BoundMethod, ClassVal, ConstVal, CtxVal, DecoratorVal,
    ExitStackVal, ExportedProgramVal, FieldVal, FuncVal, GetterVal, WeakRefVal, InstanceVal, LazyImport, MaybeVal, ModeVal, ModRef, ModuleVal,
    OptimizerVal, Origin, PartialVal, RealTreeVal, Region, ReturnsVal, SeqVal, TracedFn, TransformVal, TVal, WorkerVal)


def _self_attrs_read(fn):
    """``self.<name>`` attributes a method reads (its first parameter's attributes),
    also by a constant name through the builtin ``getattr(self, "name"[, default])``
    (with a default it reads the attribute wherever it is set)."""
    params = getattr(fn, "args", None)
    if params is None or not (params.posonlyargs or params.args):
        return frozenset()
    me = (params.posonlyargs or params.args)[0].arg
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) and n.value.id == me:
            names.add(n.attr)
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in N.ATTRIBUTE_READERS
              and len(n.args) in (2, 3) and not n.keywords and isinstance(n.args[0], ast.Name) and n.args[0].id == me
              and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)):
            names.add(n.args[1].value)
    return frozenset(names)


def _factory_shape(q, args, kwargs):
    """The shape a factory call makes (None: not known)."""
    if q not in N.SIZE_FACTORIES:
        return None
    if "size" in kwargs:
        return size_of_args([kwargs["size"]])
    if q == "torch.full":
        return size_of_args(args[:1]) if args else None
    return size_of_args(args) if args else None


# a torch container whose children are not known one by one -> the classes of the module
# values it was built from (its children are of those classes)
_ELEMENT_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_PRE_HOOKS = tuple(k for k in N.MODULE_HOOK_REGISTRARS.values() if k == "_forward_pre_hooks")
_POST_HOOKS = tuple(k for k in N.MODULE_HOOK_REGISTRARS.values() if k != "_forward_pre_hooks")


class TorchCallsMixin:
    """Calls of torch (and known third-party) qualified names."""

    _modes_made = False  # a fake mode (or make_fx's) was made somewhere in this analysis
    _hooks_made = False  # a forward (pre) hook was registered somewhere in this analysis

    def call_transform(self, e, tf, args, kwargs, st):
        """torch.func.grad(f)(*args) and friends: f runs on the arguments; gradients
        (grad, jac) are fake under an active region and carry the leaks of f's result."""
        region = st.active_region()
        mode = region.mode if region is not None else None
        entered = frozenset()
        runnable = isinstance(tf.func, (FuncVal, BoundMethod, PartialVal, ModuleVal, InstanceVal, MaybeVal, TransformVal))
        if mode is not None and (not runnable or st.allow_of(mode) is not False):
            # the transform wraps its arguments (functorch levels) under the mode: the real
            # ones enter the fake computation at this call, and again where the function
            # uses them (functional_call), as a TorchFunctionMode sees it (a strict mode
            # crashes where the function first uses one: that op is followed)
            operands = _operands(e, args, kwargs)
            if tf.kind == "vjp" and isinstance(e, ast.Call) and len(e.args) == len(args) + 1:
                operands = [(a, None if isinstance(x, ast.Starred) else x) for a, x in zip(args, e.args[1:])]
            entered = self.op(e, operands, st).taint()
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

        if tf.kind == "vjp":
            # (f(*primals), vjp_fn): vjp_fn gives the gradient of every primal
            grads = tuple(grads_like(a) for a in args)
            pullback = ReturnsVal(SeqVal(grads, grads))
            return SeqVal((res, pullback), (res, pullback))
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
        own = mod.attrs.get("forward") if isinstance(mod, ModuleVal) else None
        if isinstance(own, (FuncVal, PartialVal)) and id(mod) not in self._own_forward_running:
            # `module.forward = wrapper` (an instance attribute): `Module.__call__` runs
            # `self.forward`, which finds the wrapper before the class's forward, unbound;
            # the forward the wrapper calls (`orig = module.forward`, read before) is the class's
            self._run_hooks(e, mod, args, None, st, children=False, keys=_PRE_HOOKS)
            self._own_forward_running.add(id(mod))
            try:
                res = self.call_value(e, own, args, kwargs, st, func_expr=None)
            finally:
                self._own_forward_running.discard(id(mod))
            return self._run_hooks(e, mod, args, res, st, children=False, keys=_POST_HOOKS)
        # its forward pre hooks run before its forward (a hook that enters a mode opens
        # the region the forward runs in), its forward hooks after it
        self._run_hooks(e, mod, args, None, st, children=False, keys=_PRE_HOOKS)
        fwd = mod.cls.lookup_method("forward") if isinstance(mod, ModuleVal) and mod.cls is not None else None
        outside = isinstance(fwd, FuncVal) and st.active_region() is None and fwd.node not in st.stack
        site = (e, [func_expr] + _arg_exprs(e), [mod] + list(args))
        if outside and self._forward_opens_region(fwd):
            # outside any region, a module of the file whose forward opens one: calling it runs forward
            return self.call_function(fwd, [mod] + list(args), kwargs, st, site=site)
        if outside and not st.may and self._modes_made:
            # outside any region a module of the file runs its forward for real: a fake it
            # is given, or reads from elsewhere (a global, a cache, a closure), meets its
            # real parameters where the forward mixes them, as at run time (no fake was
            # made yet: nothing to meet)
            before = len(self.records)
            operands = [(mod, func_expr)] + self._module_state(mod, func_expr) + _operands(e, args, kwargs)
            try:
                out = self.call_function(fwd, [mod] + list(args), kwargs, st, site=site)
            except Crashed:
                # a strict mode's fake met the real parameters in the forward: the call
                # is where the fake entered the real module (the runtime's user frame)
                if any(v.fake_mode() is not None for v, _ in operands[1:]):
                    self.op(e, operands, st)
                raise
            if isinstance(out, TVal) and (len(self.records) > before or out.proven_fake()):
                # (a fake given to it is also an operand of the call itself: both lines
                # are where the real values meet it, as a runtime checker sees the frames)
                res = self.op(e, operands, st)
                res = _with_taint(out, res.taint()) if res.taint() - out.taint() else out
                return self._run_hooks(e, mod, args, res, st, children=False, keys=_POST_HOOKS)  # (its forward ran theirs)
            if isinstance(out, TVal):
                # its forward ran and mixed no fake it was given with a real value: the
                # call is an op on the rest (a fake read for its shape only is no operand)
                res = self.op(e, [(v, x) for v, x in operands if v.fake_mode() is None], st)
                return self._run_hooks(e, mod, args, res, st, children=False, keys=_POST_HOOKS)
        children = self._sequence_with_code(mod)
        if children and len(args) == 1 and not kwargs:
            # a Sequential holding a module of the project's code: its forward calls
            # each child on the last one's output (each child's forward, and hooks, run)
            out = args[0]
            for child in children:
                out = self.module_call(e, child, func_expr, [out], {}, st)  # (named by the container)
            return self._run_hooks(e, mod, args, out, st, children=False, keys=_POST_HOOKS)
        self._run_hooks(e, mod, args, None, st, own=False, keys=_PRE_HOOKS)  # the submodules' (their forwards run in it)
        if isinstance(fwd, FuncVal) and not outside and fwd.node not in st.stack and not st.may \
                and self._forward_calls_helper(fwd):
            ran = self._forward_for_effects(fwd, mod, args, kwargs, st, site)
        else:
            ran = None
        res = self.torch_forward(e, mod, func_expr, args, kwargs, st)
        if isinstance(ran, TVal) and isinstance(res, TVal) and res.shape is None and ran.shape is not None:
            # (the sizes and element size its forward computed)
            res = dataclasses.replace(res, shape=ran.shape, itemsize=res.itemsize or ran.itemsize)
        return self._run_hooks(e, mod, args, res, st, keys=_POST_HOOKS)

    def _forward_calls_helper(self, fwd):
        """Does a forward call a function of the project by name (a helper of its module or
        one it imports: ``rope_tables(...)``, ``scratch(shape)``)? Such a helper may keep
        state of its module (a cache) that outlives the call."""
        memo = self._helper_memo
        if memo is None:
            memo = self._helper_memo = {}
        hit = memo.get(fwd.node)
        if hit is None:
            hit = False
            for n in ast.walk(fwd.node):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    v = fwd.scope.lookup(n.func.id) if fwd.scope is not None else None
                    if isinstance(v, (FuncVal, LazyImport)):
                        hit = True
                        break
            memo[fwd.node] = hit
        return hit

    _helper_memo = None

    def _forward_for_effects(self, fwd, mod, args, kwargs, st, site):
        """Inside a region, the forward of a module of the project runs for what it leaves
        behind in other objects (a module-level cache it fills with fake tensors, read
        back later by a real step), as at run time; its value is the module call's (an op
        on the module, ``torch_forward``) and the leaks it records are dropped (the call's
        own op records the module's)."""
        before = set(self.records)
        try:
            return self.call_function(fwd, [mod] + list(args), kwargs, st, site=site)
        except Crashed:
            return None
        finally:
            for key in [k for k in self.records if k not in before]:
                del self.records[key]

    @staticmethod
    def _sequence_with_code(mod):
        """The children of a Sequential (in order) when one of them is a module of a
        class of the project whose forward is known, else None."""
        n = mod.sequence if isinstance(mod, ModuleVal) and mod.cls is None else 0
        children = [mod.attrs.get(str(i)) for i in range(n)]
        if not n or not all(isinstance(c, ModuleVal) for c in children):
            return None
        if not any(c.cls is not None and isinstance(c.cls.lookup_method("forward"), FuncVal) for c in children):
            return None
        return children

    def torch_forward(self, e, mod, func_expr, args, kwargs, st):
        """A forward whose code is torch's (a layer's, or one not followed): an op on
        the module (its parameters and the state set on it) and the arguments."""
        operands = [(mod, func_expr)] + self._module_state(mod, func_expr) + _operands(e, args, kwargs)
        return self.op(e, operands, st, shape=layer_output_shape(mod, args, kwargs))

    def _run_hooks(self, e, mod, args, out, st, depth=0, children=True, keys=(), own=True):
        """The forward pre hooks (``keys``: ``_PRE_HOOKS``) or forward hooks
        (``_POST_HOOKS``) of ``mod`` (``own``) and of its submodules (``children``),
        as torch runs them: ``fn(module, args)`` and ``fn(module, args, output)`` (the
        output of a submodule is taken to be like the call's own)."""
        if not self._hooks_made or not isinstance(mod, ModuleVal) or depth > 4:
            return out  # (no hook was registered in this analysis: nothing to run)
        inputs = SeqVal(tuple(args), tuple(args))
        for key in keys if own else ():
            held = mod.attrs.get(key)
            for fn in held.items if isinstance(held, SeqVal) else ():
                hook_args = [mod, inputs] + ([out] if key == "_forward_hooks" else [])
                got = self.call_value(e, fn, hook_args, {}, st, func_expr=None)
                if key == "_forward_hooks" and isinstance(got, TVal):
                    out = got  # a forward hook that returns a value replaces the output (the next hook gets it)
        for v in list(mod.attrs.values()) if children else ():
            if isinstance(v, ModuleVal) and v is not mod:
                # (a submodule's output, replaced by its hook, is taken to flow into the call's own)
                out = self._run_hooks(e, v, [out] if keys != _PRE_HOOKS else args, out, st, depth + 1, keys=keys)
        return out

    def _module_state(self, mod, func_expr, depth=0):
        """Tensors assigned onto a module (``head.weight = emb.weight``, ``m.pos = table``,
        ``register_buffer``) that its forward is known to use: operands of its call too
        (also those set on a submodule it calls: ``lm.head.weight = emb.weight``)."""
        if not isinstance(mod, ModuleVal) or not mod.attrs or depth > 3:
            return []
        if mod.cls is None:
            used = N.MODULE_STATE_ATTRS  # a torch layer's forward reads its parameters and buffers
            kinds = (TVal,)
            classes = _ELEMENT_CLASSES.get(mod) if mod.container and mod.children is None else None
            if classes:
                # a container standing for children of these classes: what their forwards read
                for c in classes:
                    fwd = c.lookup_method("forward")
                    used = used | (_self_attrs_read(fwd.node) if isinstance(fwd, FuncVal) else frozenset())
                kinds = (TVal, ModuleVal)
            elif mod.container:
                # a container's forward runs every child, those set by name included
                used = used | frozenset(k for k, v in mod.attrs.items() if isinstance(v, ModuleVal))
                kinds = (TVal, ModuleVal)
        else:
            fwd = mod.cls.lookup_method("forward")
            used = _self_attrs_read(fwd.node) if isinstance(fwd, FuncVal) else frozenset()
            kinds = (TVal, ModuleVal)  # (its submodules too: `self.body(x)`)
        real = mod.is_real() and not mod.origin.disabled
        # a real module brings its own parameters; what matters is a fake set on it, and
        # on a fake (or frozen) one a real tensor or module set on it
        out = []
        for a, v in mod.attrs.items():
            if a not in used or not isinstance(v, kinds):
                continue
            if not real and isinstance(v, ModuleVal) and v.is_real() and v.origin.disabled is True:
                # a frozen part of a frozen module: what is set on it since (a trainable
                # adapter a helper attached to each block) is used by its forward too
                out.extend(self._module_state(v, func_expr, depth + 1))
            elif v.fake_mode() is not None if real else bool(v.real_rg()):
                out.append((v, None))  # (no expression of the call names it: no fix is offered)
            elif isinstance(v, ModuleVal):
                out.extend(self._module_state(v, func_expr, depth + 1))
        return out

    def _forward_opens_region(self, fv):
        node = fv.node
        text = "\n".join(self._lines_of(fv)[node.lineno - 1 : node.end_lineno])
        # (its words are those of its own module: `with FAKE:` names an import there)
        return self._names_entry(text, self._scope_ctx.get(getattr(fv.scope, "module", None)))

    def call_qualname(self, e, q, args, kwargs, st):
        if q in N.OPEN_FILE:
            return self.open_data_file(args, kwargs)  # (project_link)
        if q.startswith("builtins."):
            return self.call_builtin(e, q[9:], args, kwargs, st)
        known = self.call_table(e, q, args, kwargs, st)
        if known is not None:
            return known
        if q in N.FAKE_TENSOR_MODE:
            # the default is strict, unless a `**opts` of unknown keys may pass the keyword
            v = kwargs.get("allow_non_fake_inputs", UNKNOWN if isinstance(kwargs, OpenKwargs) else ConstVal(False))
            allow = bool(v.value) if isinstance(v, ConstVal) else None
            desc = "FakeTensorMode(allow_non_fake_inputs=True)" if allow else ("FakeTensorMode()" if allow is False else "FakeTensorMode(...)")
            self._modes_made = True
            return ModeVal(allow, e.lineno, desc, e)
        if q in N.DETECT_FAKE_MODE:
            self._modes_made = True
            return self.detect_fake_mode(e, args, kwargs, st)
        if q in N.FAKE_COPY_MODE:
            return CtxVal("fake_copy", args[0] if args and isinstance(args[0], ModeVal) else None)
        if q in N.UNSET_FAKE:
            return CtxVal("unset_fake")
        if q in N.GRAD_MODE_CONTEXTS:
            if q in N.GRAD_OFF and args and isinstance(args[0], FuncVal):  # used as a plain decorator call
                args[0].grad_off = True
                return args[0]
            kind = _grad_mode_kind(q, args, kwargs)
            if q in N.GRAD_MODE_SET_ON_CALL:
                prev = st.grad_enabled
                st.grad_enabled = kind == "grad_on" and not st.ctx.inference
                return CtxVal(kind, ("restores", prev))
            if q in N.INFERENCE_MODE:
                return CtxVal(kind, ("inference", kind == "grad_off"))
            return CtxVal(kind)
        if q in N.GRAD_MODE_SETTERS:
            st.grad_enabled = _grad_mode_kind("torch.set_grad_enabled", args, kwargs) == "grad_on" and not st.ctx.inference
            return UNKNOWN
        if q in N.SUPPRESSING_CONTEXTS:
            caught = [a for a in args if isinstance(a, SeqVal)] and [x for a in args if isinstance(a, SeqVal) for x in a.items]
            names = [x.qualname for x in (caught or args) if isinstance(x, ModRef)]
            catches = any(n.rsplit(".", 1)[-1] in N.CATCHES_ASSERTION and n.startswith("builtins.") for n in names)
            return CtxVal("suppress_assert" if catches else "null")
        if q in N.NULL_CONTEXT:
            # `nullcontext(x).__enter__()` returns x (`with nullcontext(mode) as m:` binds the mode)
            enter_result = (args[0] if args else kwargs.get("enter_result")) if q in N.NULL_CONTEXT_ENTER_RESULT else None
            return CtxVal("null", enter_result)
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
            # the keywords' values as passed (`**CAPTURE_KW`, `cfg.tracing_mode` too)
            open_kw = isinstance(kwargs, OpenKwargs)
            tm = kwargs.get("tracing_mode", UNKNOWN if open_kw else ConstVal("real"))
            tm = tm.value if isinstance(tm, ConstVal) else _NONCONST
            if tm in ("fake", "symbolic") and args:
                allow = kwargs.get("_allow_non_fake_inputs", UNKNOWN if open_kw else ConstVal(False))
                allow = allow.value if isinstance(allow, ConstVal) else None
                desc = f'make_fx(tracing_mode="{tm}"' + (", _allow_non_fake_inputs=True)" if allow else ")")
                self._modes_made = True
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
            shape = data.shape if isinstance(data, TVal) else None
            if region is not None or (isinstance(data, TVal) and data.mode is not None):
                return TVal(frozenset(), region.mode if region else data.mode, shape=shape)
            if _kw_false(kwargs, "requires_grad") or (len(args) > 1 and isinstance(args[1], ConstVal) and args[1].value is False):
                return TVal(shape=shape)
            return TVal(frozenset([Origin("parameter", "parameter", e.lineno)]), shape=shape)
        if q in N.AUTOGRAD_BACKWARD:
            tensors = args[0] if args else kwargs.get("tensors", UNKNOWN)
            inputs = kwargs.get("inputs")
            if isinstance(inputs, ConstVal) and inputs.value is None:
                inputs = None  # `inputs=None` (a parameter's default passed on): every leaf
            self.sink(tensors, "torch.autograd.backward", e, st, inputs=inputs)
            return UNKNOWN
        if q in N.AUTOGRAD_GRAD:
            outputs = args[0] if args else kwargs.get("outputs", UNKNOWN)
            inputs = args[1] if len(args) > 1 else kwargs.get("inputs", UNKNOWN)
            self.sink(outputs, "torch.autograd.grad", e, st, inputs=inputs)
            mode = outputs.fake_mode()
            return SeqVal((TVal(frozenset(), mode),)) if mode is not None else UNKNOWN
        if q.startswith("torch.optim.") and q.rsplit(".", 1)[-1][:1].isupper():
            return OptimizerVal(args[0] if args else UNKNOWN)
        if _is_distribution_class(q):
            operands = _operands(e, args, kwargs)
            if any(_is_tensorish(x) for v, _ in operands for x in _flatten(v)):
                return self.op(e, operands, st)  # (its methods are ops on what it holds)
            return UNKNOWN
        if _is_nn_module_class(q):
            return self.new_module(e, q, args, kwargs, st)
        if q.startswith("torch.") and _is_torch_op(q):
            operands = _operands(e, args, {k: v for k, v in kwargs.items() if k != "out"})
            diff = q not in N.NON_DIFFERENTIABLE_FUNCS
            if not any(_is_tensorish(x) for v, _ in operands for x in _flatten(v)):
                # a factory: born fake inside a region, real (maybe requires grad) outside
                shape = _factory_shape(q, args, kwargs)
                size = self._factory_itemsize(q, kwargs) if shape is not None else None
                region = st.active_region()
                # a new leaf: requires grad as the call says, when it says it knowably
                rg = kwargs.get("requires_grad")
                closed = q in N.NEW_LEAF_FACTORIES and not isinstance(kwargs, OpenKwargs) and (
                    rg is None or (isinstance(rg, ConstVal) and isinstance(rg.value, bool)))
                if region is not None:
                    return TVal(frozenset(), region.mode, may_fake=region.may or bool(st.may), shape=shape,
                                closed=closed and not _kw_true(kwargs, "requires_grad"), itemsize=size)
                if _kw_true(kwargs, "requires_grad"):  # (on the meta device too: not fake)
                    return TVal(frozenset([Origin("tensor", "tensor", e.lineno)]), shape=shape, closed=closed,
                                itemsize=size)
                return TVal(shape=shape, closed=closed, itemsize=size)
            tensors = [i for i, a in enumerate(args) if isinstance(a, TVal)]
            shape = None
            if tensors:
                k = tensors[0]
                shapes = [shape_of(a) for a in args[k:]] if q in N.SHAPE_BROADCAST_FUNCS else [args[k].shape]
                if q in N.SHAPE_MATMUL and len(args) == 2:
                    shapes = [shape_of(a) for a in args]
                shape = op_shape(q, shapes, args[k + 1:], kwargs)
            res = self.op(e, operands, st, differentiable=diff, shape=shape)
            if _kw_true(kwargs, "requires_grad") and isinstance(res, TVal) and res.mode is None:
                return TVal(res.origins | {Origin("tensor", "tensor", e.lineno)}, shape=res.shape)
            return res
        return UNKNOWN

    def call_table(self, e, q, args, kwargs, st):
        """Calls whose meaning is a row of ``torch_tables`` (None: not one of them)."""
        first = args[0] if args else UNKNOWN
        if q in N.DEEPCOPY and len(args) == 2 and isinstance(src_mode := _memo_mode(args[1]), ModeVal):
            # `copy.deepcopy(m, {id(t): mode.from_tensor(t) for t in ...})`: every parameter and
            # buffer comes from the memo, as its fake copy (the fix of a module, fix/modules.py)
            return _proven_copy(_fake_copy(first, src_mode), first, bool(st.may))
        if q in N.DEEPCOPY or q in N.MODULE_DEEPCOPYING_WRAPPERS:
            return self.deepcopy(e, first, st)
        if q in N.DATACLASS_ASDICT or q in N.DATACLASS_ASTUPLE:
            return _dataclass_fields(first, as_dict=q in N.DATACLASS_ASDICT) if len(args) == 1 else UNKNOWN
        if q in N.DATACLASS_REPLACE:
            if len(args) != 1 or not _is_dataclass_instance(first) or isinstance(kwargs, OpenKwargs):
                return UNKNOWN
            names = first.cls.fields()
            if any(k not in names for k in kwargs):
                return UNKNOWN  # (a TypeError in Python)
            return InstanceVal(first.cls, {**first.attrs, **kwargs})  # (the same objects: a shallow copy)
        if q in N.RETURNS_MODULE_GIVEN:
            # the same module (made over in a region, its new parameters are mixed: unknown)
            if isinstance(first, ModuleVal) and (st.active_region() is None or not first.is_real()):
                return first
            return UNKNOWN
        if q in N.SHALLOW_COPY:
            return first if isinstance(first, ModuleVal) else UNKNOWN  # the same parameters
        if q in N.JSON_LOADS:
            return json_loads(first)
        if q in N.JSON_LOAD:
            return json_loads(ConstVal(first.text)) if isinstance(first, DataFileVal) and not kwargs else UNKNOWN
        if q in N.IMPORT_MODULE:
            return self.import_module_call(args, kwargs)  # (project_link)
        if q in N.DEVICE_CONTEXT:
            if _is_meta(args[:1] + [kwargs.get("type", UNKNOWN)]):
                return CtxVal("meta_device")
            kind = _device_type(e, args)
            return CtxVal("device", kind) if kind is not None else UNKNOWN
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
        if q in N.TENSOR_LOADERS:
            where = kwargs.get("map_location", kwargs.get("device", args[1] if len(args) > 1 else ConstVal(None)))
            if st.active_region() is None and not st.may and not st.meta_device and not st.fake_copy \
                    and isinstance(where, ConstVal) and (where.value is None or where.value in ("cpu", "cuda")):
                return RealTreeVal()
            return UNKNOWN
        if q in N.CALL_CHAIN_THROUGH:
            return self.call_chain(e, q, args, kwargs, st)
        if q in N.SKIP_INIT:
            return self.call_value(e, first, list(args[1:]), kwargs, st, func_expr=None)
        if q in N.VJP and args:
            return self.call_transform(e, TransformVal("vjp", first), list(args[1:]), {}, st)
        for kind, qs in N.FUNC_TRANSFORMS.items():
            if q in qs:
                argnums = kwargs.get("argnums", args[1] if len(args) > 1 else ConstVal(0))
                return TransformVal(kind, first, argnums.value if isinstance(argnums, ConstVal) else None)
        if _is_module_factory(q):
            return self.new_module(e, q, args, kwargs, st, torch_layer=False)
        if q in N.ITERABLE_FUNCS:
            return self.iterable_call(e, N.ITERABLE_FUNCS[q], args, kwargs, st)
        if q in N.WEAKREFS:
            return WeakRefVal(args[0]) if len(args) == 1 and not kwargs else UNKNOWN
        if q in N.METHOD_CALLERS:
            if args and isinstance(args[0], ConstVal) and isinstance(args[0].value, str) \
                    and not isinstance(kwargs, OpenKwargs):
                return GetterVal("method", (args[0].value, tuple(args[1:]), tuple(kwargs.items())))
            return UNKNOWN
        if q in N.GETTERS:
            if args and not kwargs and all(isinstance(a, ConstVal) for a in args):
                return GetterVal(N.GETTERS[q], tuple(a.value for a in args))
            return UNKNOWN
        if q in N.OPERATOR_FUNCS:
            if any(_is_tensorish(a) for a in args):
                if q == "operator.getitem" and len(args) == 2:
                    return self.subscript(e, args[0], args[1], st)
                return self.op(e, _operands(e, args, kwargs), st)
            return UNKNOWN
        if q in N.STACK_MODULE_STATE:
            return self.stack_module_state(e, first, args, kwargs, st)
        if q in N.EXECUTORS:
            return WorkerVal("executor")
        if q in N.THREADS:
            target = thread_target(N.LIBRARY_CLASSES[q], args, kwargs)
            return UNKNOWN if target is None else WorkerVal("thread", target)
        if q in N.SIMPLE_NAMESPACE:
            return self.simple_namespace(e, args, kwargs)
        if q in N.SIGNATURE:
            names = _parameter_names(args[0]) if len(args) == 1 and not kwargs else None
            if names is None:
                return UNKNOWN
            params = SeqVal(tuple(UNKNOWN for _ in names), tuple(UNKNOWN for _ in names), tuple(names), is_dict=True)
            return self.simple_namespace(e, [], {"parameters": params})
        if q in N.UNITTEST_MAIN:
            return self.unittest_main(e, args, kwargs, st)
        if q in N.UNITTEST_LOADERS:
            return self.new_suite(args[:1], st)
        if N.LIBRARY_CLASSES.get(q) in N.LIBRARY_INSTANTIATED:
            return self.instantiate(self.library_class(q), args, kwargs, st, e)
        if q in N.ARGUMENT_PARSER:
            return new_parser(args, kwargs)
        if q in N.ENV_READS_WITH_DEFAULT:
            default = args[1] if len(args) > 1 else kwargs.get("default", ConstVal(None))
            return default if isinstance(default, ConstVal) else UNKNOWN
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

    def detect_fake_mode(self, e, args, kwargs, st):
        """``torch._guards.detect_fake_mode(inputs)``: the fake mode of the active region
        (the innermost on the mode stack), else the mode of the fake tensors among the
        inputs (one mode: torch asserts they agree), else None when every input is known
        to be real. Otherwise whatever mode the inputs were made in: what it allows is
        not known here (torch.export's non-strict mode allows non-fake inputs)."""
        region = st.active_region()
        if region is not None and not region.may and not st.may:
            return region.mode
        inputs = args[0] if args else kwargs.get("inputs", ConstVal(None))
        flat = _flatten(inputs) if isinstance(inputs, SeqVal) else [inputs]
        if region is None and flat and all(isinstance(v, TVal) for v in flat):
            fakes = [v for v in flat if v.fake_mode() is not None]
            modes = {id(v.mode): v.mode for v in fakes}
            if len(modes) == 1 and all(v.proven_fake() for v in fakes):
                return next(iter(modes.values()))
            if not fakes and all(not v.may_fake for v in flat):
                return ConstVal(None)
        return ModeVal(None, e.lineno, "detect_fake_mode()", e)

    def call_chain(self, e, q, args, kwargs, st):
        """``checkpoint_sequential(functions, segments, input)`` (CALL_CHAIN_THROUGH): each
        module of the chain runs on the previous one's output, under the current modes;
        a Sequential runs as ``functions(input)``, a list of modules one after another."""
        at, in_at, in_kw, own = N.CALL_CHAIN_THROUGH[q]
        chain = args[at] if len(args) > at else UNKNOWN
        x = args[in_at] if len(args) > in_at else kwargs.get(in_kw, UNKNOWN)
        expr = e.args[at] if len(e.args) > at else None
        rest = {k: v for k, v in kwargs.items() if k not in own and k != in_kw}
        if isinstance(chain, SeqVal) and chain.elts is not None:
            for f in chain.elts:
                x = self.call_value(e, f, [x], rest, st, func_expr=None)
            return x
        if isinstance(chain, ModuleVal):
            return self.call_value(e, chain, [x], rest, st, func_expr=expr)
        return UNKNOWN

    def stack_module_state(self, e, models, args, kwargs, st):
        """``torch.func.stack_module_state(models)``: (params, buffers), new leaves that
        require grad when every model's parameters are real and do (in a region: the
        models' tensors are operands, the stacks fake)."""
        mods = [m for m in (_flatten(models) if isinstance(models, SeqVal) else [models])]
        if not mods or not all(isinstance(m, ModuleVal) for m in mods):
            return UNKNOWN
        if st.active_region() is not None:
            res = self.op(e, _operands(e, args, kwargs), st, differentiable=False)
            params = buffers = TVal(frozenset(), res.fake_mode(), res.taint())
        elif all(m.is_real() and not m.origin.disabled for m in mods):
            params, buffers = TVal(frozenset([Origin("params", "tensor", e.lineno)])), TVal()
        elif all(m.origin is None or m.origin.disabled for m in mods) and not any(m.mode for m in mods):
            params = buffers = TVal()
        else:
            return UNKNOWN
        stacks = (SeqVal((params,), is_dict=True), SeqVal((buffers,), is_dict=True))
        return SeqVal(stacks, stacks)

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
            return _real_copy(src, e.lineno)
        return src

    def _factory_itemsize(self, q, kwargs):
        """Bytes per element of a floating factory's result (``torch.randn``...): its
        ``dtype=`` when a known constant, else the default float32, unless the linted
        file changes the default dtype. None when not known."""
        if q not in N.FLOAT_FACTORIES:
            return None
        dt = kwargs.get("dtype")
        if dt is None:
            return None if "set_default" in self.source else 4
        return N.DTYPE_SIZES.get(dt.qualname) if isinstance(dt, ModRef) else None

    def new_module(self, e, q, args, kwargs, st, torch_layer=True):
        """A module built by a known constructor or factory: fake inside a region, meta
        on the meta device, else real with requires-grad parameters."""
        region = st.active_region()
        last = q.rsplit(".", 1)[-1]
        if region is not None and torch_layer and last in _MODULE_CONTAINERS and not st.may:
            known = _known_children(last, args, kwargs)
            if known and any(_holds_real(x) for _, x in known):
                # a container has no parameters of its own: built inside a region from
                # modules made before it, it holds those modules (real parameters stay
                # real), as one built outside would
                region = None
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
            if torch_layer and last in _MODULE_CONTAINERS:
                known = _known_children(last, args, kwargs)
                if known:
                    # it holds the very modules it was given, as one built outside does
                    # (`seq[0]`, `seq.apply(fn)` reach them; state set on them later is theirs)
                    fake.torch_class = last
                    _adopt_children(fake, known)
                    if last == "Sequential":
                        fake.sequence = len(known)
            return fake
        mod = ModuleVal(Origin("module", "module", e.lineno), None)
        if st.meta_device or _is_meta(list(kwargs.values())):
            mod.meta = True
        if not torch_layer:
            return mod
        mod.origin.param_names = _known_params(last, kwargs)
        mod.container = last in N.CONTAINER_MODULES
        mod.torch_class = last
        if last in N.SHAPE_LAYERS and all(isinstance(a, ConstVal) for a in args) \
                and all(isinstance(v, ConstVal) for v in kwargs.values()):
            mod.layer_args = (tuple(a.value for a in args), {k: v.value for k, v in kwargs.items()})
        if last == "Sequential" and not kwargs and args and all(isinstance(a, ModuleVal) for a in args):
            # its children by position (torch names them "0", "1", ...): its forward runs them in turn
            mod.attrs.update((str(i), a) for i, a in enumerate(args))
            mod.sequence = len(args)
        if last in N.CONTAINER_MODULES:
            children = [x for a in list(args) + list(kwargs.values()) for x in _flatten(a)]
            if not any(x.real_rg() or (isinstance(x, ModuleVal) and x.meta) for x in children):
                mod.origin = None
            known = _known_children(last, args, kwargs)
            _adopt_children(mod, known)
            classes = {id(x.cls): x.cls for x in children if isinstance(x, ModuleVal) and isinstance(x.cls, ClassVal)}
            if known is None and children and all(isinstance(x, ModuleVal) and isinstance(x.cls, ClassVal) for x in children):
                # children not known one by one (`ModuleList([Block(d) for _ in range(n)])`): the
                # container stands for each of them, and what is set on it is set on them
                _ELEMENT_CLASSES[mod] = tuple(classes.values())
        elif last in N.PARAMLESS_MODULES:
            mod.origin = None
        if mod.sequence and mod.origin is not None:
            mod.origin.owner = mod  # (freezing its parameters freezes its children's)
        return mod


def _parameter_names(fn):
    """The names of ``inspect.signature(fn).parameters``, in order, for a function
    (a bound method: without its first), or None when not known (a decorator's wrapper:
    whether it copied the signature with ``functools.wraps`` is not known)."""
    bound = isinstance(fn, BoundMethod)
    fv = fn.func if bound else fn
    if not isinstance(fv, FuncVal) or fv.wrapped is not None or not isinstance(fv.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = fv.node.args
    names = [x.arg for x in a.posonlyargs + a.args]
    names += [a.vararg.arg] if a.vararg else []
    names += [x.arg for x in a.kwonlyargs]
    names += [a.kwarg.arg] if a.kwarg else []
    if bound:
        if not (a.posonlyargs + a.args):
            return None
        names = names[1:]
    return names


_MODULE_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def _holds_real(mod, depth=0):
    """Does a module hold real requires-grad parameters, its own or a submodule's
    (an instance made inside a region whose ``self.adapter`` was made before it)?"""
    if mod.real_rg():
        return True
    return depth < 4 and any(isinstance(v, ModuleVal) and v is not mod and _holds_real(v, depth + 1)
                             for v in mod.attrs.values())


def _real_copy(src, line, depth=0):
    """``copy.deepcopy(m)`` outside any region: a new real module, its own children copied
    too (freezing the copy leaves the original alone)."""
    attrs = {k: (_real_copy(v, line, depth + 1) if isinstance(v, ModuleVal) and v.origin is not None and depth < 4 else v)
             for k, v in src.attrs.items()}
    origin = None
    if src.origin is not None:
        origin = Origin(src.origin.name, "module", line, param_names=src.origin.param_names)
        origin.disabled, origin.frozen = src.origin.disabled, set(src.origin.frozen)
        origin.rg_unknown = src.origin.rg_unknown  # (a copy of an opaque module: as unknown)
    copy = ModuleVal(origin, src.mode, src.cls, attrs, src.meta, opaque=src.opaque)
    copy.container, copy.torch_class, copy.children = src.container, src.torch_class, src.children
    if origin is not None and src.origin.owner is src:
        origin.owner = copy
    for k in src.children or ():
        child = attrs.get(k)
        if origin is not None and isinstance(child, ModuleVal) and child.origin is not None and child is not src.attrs.get(k):
            child.origin.parent, child.origin.param = origin, k
    return copy


def _known_children(last, args, kwargs):
    """A container's children by name, in order, when every one is a known module:
    ``Sequential(a, b)`` -> "0", "1"; ``ModuleList([a, b])``; ``ModuleDict({"k": a})``."""
    if kwargs:
        return None
    if last == "Sequential" and args and all(isinstance(a, ModuleVal) for a in args):
        return [(str(i), a) for i, a in enumerate(args)]
    if len(args) != 1 or not isinstance(args[0], SeqVal) or args[0].elts is None:
        return None
    seq = args[0]
    if not all(isinstance(x, ModuleVal) for x in seq.elts):
        return None
    if last == "ModuleList" and not seq.is_dict:
        return [(str(i), x) for i, x in enumerate(seq.elts)]
    if last == "ModuleDict" and seq.is_dict and seq.keys is not None and all(isinstance(k, str) for k in seq.keys):
        return list(zip(seq.keys, seq.elts))
    return None


def _adopt_children(mod, children):
    """The container holds its children (``net[0]``, ``net.named_children()``): each is a
    part of it, so switching one child's parameters off switches off that part only."""
    if children is None:
        return
    mod.children = tuple(k for k, _ in children)
    for k, child in children:
        mod.attrs[k] = child
        o = child.origin
        if mod.origin is not None and o is not None and o.parent is None:
            o.parent, o.param = mod.origin, k
    if mod.origin is not None:
        # (a child with no parameters, `nn.ReLU()`, is no part that can be switched)
        mod.origin.param_names = frozenset(k for k, c in children if c.origin is not None
                                           and c.torch_class not in N.PARAMLESS_MODULES)
        mod.origin.owner = mod  # (its parameters are its children's: switching them switches those)
        # children frozen before it was built (`Sequential(backbone.requires_grad_(False), head)`):
        # those parts are off, and the container is off when every part with parameters is
        mod.origin.frozen = {k for k, c in children if c.origin is not None and c.origin.disabled}
        if mod.origin.param_names and mod.origin.frozen >= mod.origin.param_names:
            mod.origin.disabled = True


def _is_distribution_class(q):
    if not q.startswith(N.DISTRIBUTIONS_PREFIX):
        return False
    parts = q[len(N.DISTRIBUTIONS_PREFIX):].split(".")
    return parts[-1][:1].isupper() and not any(p in N.DISTRIBUTIONS_NON_CLASSES for p in parts[:-1])


def _memo_mode(memo):
    """The fake mode of every value of a deepcopy memo (a dict of fake tensors), else None."""
    if not isinstance(memo, SeqVal) or not memo.is_dict or not memo.items:
        return None
    modes = {id(v.mode): v.mode for v in memo.items if isinstance(v, TVal)}
    if len(modes) != 1 or not all(isinstance(v, TVal) and v.mode is not None for v in memo.items):
        return None
    return next(iter(modes.values()))


def _is_dataclass_instance(v):
    return isinstance(v, InstanceVal) and isinstance(v.cls, ClassVal) and v.cls.dataclass


def _dataclass_fields(v, as_dict, depth=0):
    """``dataclasses.asdict(v)`` / ``astuple(v)`` of an instance of a dataclass of the
    file: its fields in order, nested dataclasses converted too. The values are deep
    copies, so only constants are known (a copied tensor is another object)."""
    if not _is_dataclass_instance(v) or depth > 4:
        return UNKNOWN
    names = v.cls.fields()
    vals = []
    for n in names:
        x = v.attrs.get(n, UNKNOWN)
        if _is_dataclass_instance(x):
            x = _dataclass_fields(x, as_dict, depth + 1)
        elif not isinstance(x, ConstVal):
            x = UNKNOWN
        vals.append(x)
    if as_dict:
        return SeqVal(tuple(vals), tuple(vals), tuple(names), is_dict=True)
    return SeqVal(tuple(vals), tuple(vals))


def _device_type(e, args):
    """The device type ``torch.device(...)`` names when it is known (``"cuda"`` for
    ``torch.device("cuda:0")`` or ``torch.device(f"cuda:{rank}")``), else None."""
    if len(args) == 2 and isinstance(args[0], ConstVal) and isinstance(args[0].value, str):
        return args[0].value if ":" not in args[0].value else None  # torch.device("cuda", index)
    if len(args) != 1:
        return None
    if isinstance(args[0], ConstVal) and isinstance(args[0].value, str):
        return args[0].value.split(":", 1)[0] or None
    node = e.args[0] if len(e.args) == 1 else None
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        head = node.values[0].value
        if isinstance(head, str) and ":" in head:
            return head.split(":", 1)[0] or None  # (the index is formatted after the colon)
    return None
