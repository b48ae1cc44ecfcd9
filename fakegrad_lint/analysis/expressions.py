"""Expressions: each evaluates to an abstract value. Names resolve through
scopes and imports, attributes along instances, classes and the MRO (``super()``,
properties), boolean operators return an operand, comparisons and f-strings fold
when their values are known, subscripts look up constant keys.

Calls are in :mod:`calls`.
"""

from __future__ import annotations

import ast
import os
import re

from fakegrad_lint.analysis.param_leaves import requires_grad_of
from fakegrad_lint.analysis.descriptors import class_lookup, descriptor_kind
from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.code_text import _BUILTINS
from fakegrad_lint.analysis.heap import heap_set
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.torch_values import op_shape, shape_value
from fakegrad_lint.analysis.state import STEP_BUDGET, UNROLL_DEPTH, UNROLL_MAX, Scope, YieldReached
from fakegrad_lint.analysis.valueops import (concat_seqs, const_tuple, _NONCONST, _one_of, _compare, _dict_val, _fold_strings, _FormattedPart,
    _is_tensorish, _truth, known_iteration)
from fakegrad_lint.analysis.values import (is_enum_member, UNKNOWN, BoundMethod, ClassVal, ConstVal, ExportedProgramVal, FieldVal,
    FuncVal, GeneratorVal, InstanceVal, LazyImport, MaybeVal, MethodRef, ModeVal, ModRef, ModuleVal, OptimizerVal, Origin, AutogradApply, ProjModVal, SeqVal, SuperVal,
    DispatchRegister, PartialVal, RealTreeVal, SingleDispatchVal,
    TVal, Value, join, join_all, union, union_all)


# the linted file writes or patches sys.argv (`sys.argv = [...]`, `sys.argv[1:] = ...`,
# `.append(...)`, `patch.object(sys, "argv", ...)`, `patch("sys.argv", ...)`)
_ARGV_WRITE = re.compile(r"\bargv\s*(\[[^\]]*\])?\s*\+?=(?!=)|\bargv\.(append|extend|insert|pop|clear|remove)\b|[\"']argv[\"']|sys\.argv[\"']")



def _argv_written(source):
    """Can the file change ``sys.argv``? A name ``argv`` written, mutated or named as a
    string; a parameter or keyword called ``argv`` (``def main(argv=None)``,
    ``main(argv=[...])``, after ``(`` or ``,``) writes nothing."""
    for m in _ARGV_WRITE.finditer(source):
        if m.group(0).startswith("argv") and m.group(1) is None and source[:m.start()].rstrip()[-1:] in ("(", ","):
            continue
        return True
    return False


class ExpressionsMixin:
    """Expressions: one abstract value per expression."""

    def eval(self, e, st) -> Value:
        # one step (StatementsMixin._tick, inlined: this runs for every expression)
        self.steps = steps = self.steps + 1
        if steps > STEP_BUDGET:
            self.exhausted = True
        run = self._expression_table.get(type(e))
        return run(e, st) if run is not None else UNKNOWN

    def _eval_name(self, e, st):
        v = st.scope.lookup(e.id)
        if v is None:
            return ModRef("builtins." + e.id) if e.id in _BUILTINS else UNKNOWN
        if type(v) is LazyImport:
            return self._force(v)
        if type(v) is ModRef and v.qualname in N.KNOWN_CONSTANTS:
            return ConstVal(N.KNOWN_CONSTANTS[v.qualname])  # `from typing import TYPE_CHECKING`
        return v

    def _eval_constant(self, e, st):
        return ConstVal(e.value)

    def _eval_bin_op(self, e, st):
        left = self.eval(e.left, st)
        right = self.eval(e.right, st)
        if isinstance(left, SeqVal) and isinstance(right, SeqVal) and isinstance(e.op, ast.Add):
            return concat_seqs(left, right)
        if isinstance(left, SeqVal) and isinstance(right, SeqVal):
            return SeqVal(left.items + right.items)
        return self.binop(e, [(left, e.left), (right, e.right)], st)

    def _eval_unary_op(self, e, st):
        v = self.eval(e.operand, st)
        if isinstance(e.op, ast.Not):
            tv = _truth(v)
            return ConstVal(not tv) if tv is not None else UNKNOWN
        if isinstance(e.op, (ast.USub, ast.UAdd)) and isinstance(v, ConstVal) and type(v.value) in (int, float):
            return ConstVal(-v.value if isinstance(e.op, ast.USub) else v.value)  # `-2`
        return self.binop(e, [(v, e.operand)], st)

    def _eval_compare(self, e, st):
        vals = [(self.eval(e.left, st), e.left)] + [(self.eval(c, st), c) for c in e.comparators]
        known = _compare(e.ops, [v for v, _ in vals])
        if known is not None:
            return ConstVal(known)
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
            return UNKNOWN
        if any(_is_tensorish(v) for v, _ in vals):
            return self.op(e, vals, st, differentiable=False)
        return UNKNOWN

    def _eval_bool_op(self, e, st):
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

    def _eval_if_exp(self, e, st):
        test = _truth(self.eval(e.test, st))
        if test is not None:
            v = self.eval(e.body if test else e.orelse, st)
            if isinstance(v, ModeVal):
                v.conditional = True  # right for this flag value only
            return v
        return join(self.eval(e.body, st), self.eval(e.orelse, st))

    def _eval_sequence(self, e, st):
        items = []
        for el in e.elts:
            if isinstance(el, ast.Starred):
                items.append(self.iter_item(self.eval(el.value, st), st))
            else:
                items.append(self.eval(el, st))
        elts = tuple(items) if not any(isinstance(el, ast.Starred) for el in e.elts) else None
        return SeqVal(tuple(items), elts)

    def _eval_dict(self, e, st):
        items = []
        keys = []
        for k, v in zip(e.keys, e.values):
            if k is not None:
                kv = self.eval(k, st)
                items.append(self.eval(v, st))
                keys.append(_key_of(kv))
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

    def _eval_subscript(self, e, st):
        obj = self.eval(e.value, st)
        idx = self.eval(e.slice, st)
        return self.subscript(e, obj, idx, st)

    def _eval_lambda(self, e, st):
        fv = FuncVal(e, st.scope)
        fv.defaults = [self.eval(d, st) for d in e.args.defaults]
        fv.kw_defaults = {a.arg: self.eval(d, st) for a, d in zip(e.args.kwonlyargs, e.args.kw_defaults) if d is not None}
        return fv

    def _eval_named_expr(self, e, st):
        v = self.eval(e.value, st)
        self.assign(e.target, v, st, e.value)
        return v

    def _eval_starred(self, e, st):
        return self.eval(e.value, st)

    def _eval_await(self, e, st):
        return self.eval(e.value, st) if e.value is not None else UNKNOWN

    def _eval_yield_from(self, e, st):
        """``yield from g``: each item of ``g`` is yielded here, inside the regions ``g``
        is suspended in when it yields them."""
        v = self.eval(e.value, st)
        if isinstance(v, GeneratorVal):
            v = self.gen_consume(v, st)  # the inner generator runs as this one is consumed
        held = self._gen_regions.get(id(v))
        inside = held[1] if held is not None and held[0] is v else ()
        for region in inside:
            st.ctx = st.ctx.entering(region)
        try:
            self.on_yield(self.iter_item(v, st), st, e)
        finally:
            for region in reversed(inside):
                st.ctx = st.ctx.leaving(region)
        return UNKNOWN

    def _eval_yield(self, e, st):
        v = self.eval(e.value, st) if e.value is not None else UNKNOWN
        self.on_yield(v, st, e)
        return UNKNOWN

    def _eval_joined_str(self, e, st):
        return _fold_strings([self._fstring_part(v, st) for v in e.values], "".join)

    def _eval_slice(self, e, st):
        parts = [self.eval(p, st) if p is not None else ConstVal(None) for p in (e.lower, e.upper, e.step)]
        if all(isinstance(p, ConstVal) and (p.value is None or type(p.value) is int) for p in parts):
            return ConstVal(slice(*(p.value for p in parts)))  # `x.shape[-2:]`
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

    def on_yield(self, v, st, node=None):
        if st.stack and self._capture_gen is st.stack[-1]:
            y = YieldReached(st, v)
            y.ctx = st.ctx
            y.node = node  # (where the helper resumes when the with-block ends)
            try:
                raise y
            finally:
                y = None  # not held by this frame, which its traceback holds (a cycle)
        st.returns.append(v)
        if st.yield_regions is not None:
            # (a yield inside `unset_fake_temporarily()`: the consumer runs with the modes off)
            st.yield_regions.append(st.ctx.regions if not st.ctx.dispatch_off else ())

    def eval_comprehension(self, e, st):
        scope = Scope(parent=st.scope, module=st.scope.module, func_node=st.scope.func_node)
        cst = st.child(scope)
        cst.depth = st.depth
        cst.stack = st.stack
        cst.returns = st.returns
        try:
            if len(e.generators) == 1 and not e.generators[0].is_async:
                self.loop_iters.add(id(e.generators[0].iter))
                it = self.eval(e.generators[0].iter, cst)
                self.note_loop_module(e.generators[0], e.generators[0].iter, it, cst)
                elems = self.known_elements(it)
                if elems is None and e.generators[0].ifs:
                    elems = self._kept_elements(e.generators[0], it, cst)
                if elems is not None:
                    return self._comprehension_each(e, elems, cst)
                return self._comprehension_joined(e, cst, it)
            return self._comprehension_joined(e, cst)
        finally:
            if not isinstance(e, ast.GeneratorExp):
                # a list, set or dict comprehension runs right here: what its element
                # enters (`[stack.enter_context(cm) for cm in cms]`) stays entered, as in
                # Python (a generator expression runs where it is consumed)
                st.ctx = cst.ctx.but(may=st.may)

    def _kept_elements(self, gen, it, cst):
        """More known elements than a loop unrolls, whose ``if`` keeps only a few (a test
        runner's ``[f for n, f in vars(mod).items() if n.startswith("test_")]``): those,
        when every test is known on every element; else None."""
        elems = known_iteration(it)
        if elems is None or len(elems) > 8 * UNROLL_MAX or self._unroll_depth >= UNROLL_DEPTH:
            return None
        kept = []
        for x in elems:
            self.assign(gen.target, x, cst, None)
            truths = [_truth(self.eval(cond, cst)) for cond in gen.ifs]
            if None in truths:
                return None
            if all(truths):
                kept.append(x)
        return kept if len(kept) <= UNROLL_MAX else None

    def _comprehension_each(self, e, elems, cst):
        """A comprehension over known elements: its element evaluated once per element,
        in order, as Python does; the result's elements are known when every ``if`` is."""
        gen = e.generators[0]
        items, keys = [], []
        exact = True
        self._unroll_depth += 1
        try:
            for x in elems:
                self.assign(gen.target, x, cst, None)
                keep = True
                for cond in gen.ifs:
                    t = _truth(self.eval(cond, cst))
                    if t is False:
                        keep = False
                        break
                    exact = exact and t is True
                if not keep:
                    continue
                if isinstance(e, ast.DictComp):
                    k = self.eval(e.key, cst)
                    keys.append(k.value if isinstance(k, ConstVal) else _NONCONST)
                    items.append(self.eval(e.value, cst))
                else:
                    items.append(self.eval(e.elt, cst))
        finally:
            self._unroll_depth -= 1
        if isinstance(e, ast.DictComp):
            if exact and _NONCONST not in keys:
                return _dict_val(keys, items)
            return SeqVal(tuple(items), is_dict=True)
        ordered = exact and not isinstance(e, ast.SetComp)
        return SeqVal(tuple(items), tuple(items) if ordered else None)

    def _comprehension_joined(self, e, cst, first=None):
        """A comprehension run once with each target bound to the join of its items."""
        for i, gen in enumerate(e.generators):
            if not (i == 0 and first is not None):
                self.loop_iters.add(id(gen.iter))
            it = first if i == 0 and first is not None else self.eval(gen.iter, cst)
            if not (i == 0 and first is not None):
                self.note_loop_module(gen, gen.iter, it, cst)
            self.assign(gen.target, self.iter_item(it, cst), cst, None)
            for cond in gen.ifs:
                self.eval(cond, cst)
        if isinstance(e, ast.DictComp):
            self.eval(e.key, cst)
            return SeqVal((self.eval(e.value, cst),), is_dict=True)
        return SeqVal((self.eval(e.elt, cst),))

    def user_dunder(self, obj, name):
        """The method ``name`` of the class of an instance (or module) of the file's
        classes, when Python would call it for a protocol (None: no such method)."""
        cls = getattr(obj, "cls", None) if isinstance(obj, (InstanceVal, ModuleVal)) else None
        return cls.lookup_method(name) if isinstance(cls, ClassVal) else None

    def iter_item(self, v, st=None):
        """What iterating ``v`` yields (the union of its items). With the state, an
        object of a class of the file iterates as its ``__iter__`` returns."""
        if isinstance(v, GeneratorVal):
            return self.iter_item(self.gen_consume(v, st), st) if st is not None else UNKNOWN
        if st is not None and isinstance(v, (InstanceVal, ModuleVal)):
            it = self.user_dunder(v, "__iter__")
            if it is not None:
                res = self.call_function(it, [v], {}, st, force=True)
                return UNKNOWN if res is v else self.iter_item(res, st)
        if isinstance(v, ClassVal) and v.members:
            return union_all(dict.fromkeys(v.members.values()))  # an enum's members, each
        if isinstance(v, SeqVal) and v.is_dict:
            # iterating a mapping gives its keys
            return union_all(ConstVal(k) for k in v.keys or ())
        if isinstance(v, SeqVal):
            return union_all(v.items)
        if isinstance(v, TVal):
            return v  # iterating a tensor yields slices with the same provenance
        if isinstance(v, ModuleVal):
            kids = module_children(v)
            if kids is not None:
                return union_all(kids) if kids else UNKNOWN
            return v  # ModuleList / Sequential: submodules of the same kind
        if isinstance(v, MaybeVal):
            out = None
            for o in v.options:
                x = self.iter_item(o)
                out = x if out is None else (union(out, x) if v.each else join(out, x))
            return out or UNKNOWN
        return UNKNOWN

    def subscript(self, e, obj, idx, st):
        if isinstance(obj, ClassVal) and obj.members is not None:
            # `Color["RED"]`: the member of that name (not known: one of them)
            if isinstance(idx, ConstVal):
                return obj.members.get(idx.value, UNKNOWN) if isinstance(idx.value, str) else UNKNOWN
            return join_all(dict.fromkeys(obj.members.values()))
        getitem = self.user_dunder(obj, "__getitem__")
        if getitem is not None:
            # `obj[k]` is `type(obj).__getitem__(obj, k)`
            return self.call_function(getitem, [obj, idx], {}, st, force=True,
                                      site=(e, [getattr(e, "value", None), getattr(e, "slice", None)], [obj, idx]))
        if isinstance(obj, RealTreeVal):
            return obj  # `ckpt["model"]`: a part of the loaded tree, its tensors real
        if isinstance(obj, SeqVal) and obj.keys is not None:
            if _key_of(idx) is not _NONCONST:
                v = obj.lookup(_key_of(idx))
                return v if v is not None else UNKNOWN  # a KeyError, or a key added later
            if isinstance(idx, MaybeVal) and idx.options and all(isinstance(o, ConstVal) for o in idx.options):
                # one of (or each of) several known keys: their values
                found = [obj.lookup(o.value) for o in idx.options]
                out = None
                for v in found:
                    v = UNKNOWN if v is None else v
                    out = v if out is None else (union(out, v) if idx.each else join(out, v))
                return out
            # an unknown key: one of the values
            out = None
            for v in obj.elts or ():
                out = v if out is None else join(out, v)
            return out or UNKNOWN
        if isinstance(obj, MaybeVal):
            return self.over_options(obj, lambda o: self.subscript(e, o, idx, st), st)
        if isinstance(obj, SeqVal) and obj.is_dict:
            # keys not all known: `d[k]` is one of the values (a may-value), not each of them
            return join_all(obj.items) if obj.items else UNKNOWN
        if isinstance(obj, SeqVal):
            if obj.elts is not None and isinstance(idx, ConstVal) and isinstance(idx.value, slice):
                part = obj.elts[idx.value]
                return SeqVal(part, part)
            if obj.elts is not None and isinstance(idx, ConstVal) and isinstance(idx.value, int):
                try:
                    return obj.elts[idx.value]
                except IndexError:
                    return UNKNOWN
            # an element not known by position: ONE of the items (`sorted(d, key=len)[0]`
            # picks one key, never each of them in turn as a loop would)
            return _one_of(self.iter_item(obj))
        if isinstance(obj, ModuleVal):
            child = _child_at(obj, idx)
            if child is not None:
                return child  # `net[0]`, `blocks[-1]`, `heads["cls"]`: that child
            return obj  # nn.Sequential / ModuleList indexing: a submodule of the same kind
        if _is_tensorish(obj):
            return self.op(e, [(obj, e.value)], st)
        return UNKNOWN

    def bind_method(self, m, obj, cls, st):
        """A function found on the class of ``obj``, bound as Python binds it."""
        if isinstance(m, SingleDispatchVal) and m.method:
            return PartialVal(m, (obj,), {})  # a singledispatchmethod, bound
        if not isinstance(m, FuncVal):
            return m
        if m.kind == "property" or any(
            isinstance(d, ast.Name) and d.id in ("property", "cached_property") for d in getattr(m.node, "decorator_list", ())
        ):
            val = self.call_function(m, [obj], {}, st)
            if (m.cached or any(isinstance(d, ast.Name) and d.id == "cached_property" for d in m.node.decorator_list)) \
                    and isinstance(obj, (InstanceVal, ModuleVal)) and not isinstance(m.node, ast.Lambda):
                # functools.cached_property: its value is stored in the instance's __dict__
                # under the function's name, which later reads find before the class
                heap_set(obj, m.node.name, val)
            return val
        if m.kind == "static":
            return m
        if m.kind == "class":
            return BoundMethod(m, cls)
        return BoundMethod(m, obj)

    def eval_attribute(self, e, st):
        obj = self.eval(e.value, st)
        return self.attribute(e, obj, e.attr, st)

    def program_argv(self):
        """``sys.argv`` of the program run as it is (no arguments: its default
        configuration, as for environment reads with a default), unless the linted
        file changes or patches ``sys.argv`` itself (then it is unknown). The command
        line is the user's input, so a function the program called with its plain
        run's configuration is still analysed with unknown arguments as well: a flag
        that takes another path (autoparallel's ``--fake-evaluate``) is a path it has."""
        memo = self.__dict__.get("_argv")
        if memo is None:
            if _argv_written(self.source):
                memo = UNKNOWN
            else:
                script = ConstVal(os.path.basename(self.main_path or "") or "script.py")
                memo = SeqVal((script,), (script,))
                # the program's own calls then ran with the plain run's configuration;
                # a user's command line may pick others (calls.py: its functions are
                # also run with unknown arguments)
                self.__dict__["_argv_read"] = True
            self.__dict__["_argv"] = memo
        return memo

    def attribute(self, e, obj, attr, st):
        if isinstance(obj, ModRef):
            q = f"{obj.qualname}.{attr}"
            if q in N.PROGRAM_ARGV:
                return self.program_argv()
            return ConstVal(N.KNOWN_CONSTANTS[q]) if q in N.KNOWN_CONSTANTS else ModRef(q)
        if isinstance(obj, ProjModVal):
            return self._module_attr(obj, attr)
        if isinstance(obj, MaybeVal):
            out = None
            for o in obj.options:
                v = self.attribute(e, o, attr, st)
                out = v if out is None else join(out, v)
            return out or UNKNOWN
        if isinstance(obj, TVal):
            if attr == "shape" and obj.shape is not None:
                return shape_value(obj.shape)
            if attr == "ndim" and obj.shape is not None:
                return ConstVal(len(obj.shape))
            if attr in ("is_meta", "is_cuda") and obj.device is not None and obj.mode is None:
                return ConstVal(obj.device == attr[3:])  # (its device is known: `to_empty(device="cpu")`)
            if attr == "requires_grad" and requires_grad_of(obj) is not None:
                return ConstVal(requires_grad_of(obj))  # a known layer's parameter (param_leaves.py)
            if attr in N.METADATA_ATTRS:
                return UNKNOWN
            if attr == "grad":
                for o in obj.real_rg():
                    while o is not None:  # (a parameter's gradient is its modules' too, up the chain)
                        o.grad_reads.append(e.lineno)
                        o = o.parent
                return TVal(frozenset(), obj.mode, frozenset())
            if attr == "data":
                return TVal(frozenset(), obj.mode, frozenset())
            if attr in ("T", "mT", "H", "mH", "real", "imag"):
                return self.op(e, [(obj, e.value)], st, shape=op_shape("T", [obj.shape], (), {}) if attr == "T" else None)
            if attr in N.MODEL_OUTPUT_ATTRS or attr in N.TENSOR_TUPLE_FIELDS:
                return obj
            if attr in N.TENSOR_TUPLE_INDEX_FIELDS:
                return TVal(frozenset(), obj.mode, frozenset())
            return MethodRef(obj, attr) if attr.isidentifier() and not attr.startswith("_") else UNKNOWN
        if isinstance(obj, (InstanceVal, ModuleVal)):
            got = self.data_descriptor_read(obj, attr, st)
            if got is not None:
                return got  # (a data descriptor of the class wins over the instance's __dict__)
            if attr in obj.attrs:
                return obj.attrs[attr]
            if attr == "__dict__" and isinstance(obj, InstanceVal):
                return _dict_val(list(obj.attrs), list(obj.attrs.values()))  # (writes: statements.rebind)
            cls = obj.cls
            if cls is not None:
                m = cls.methods.get(attr)
                if descriptor_kind(m) in ("data", "non-data"):
                    return self.descriptor_get(m, obj, cls, st)  # (`@descriptor def name(self)`)
                if m is not None:
                    return self.bind_method(m, obj, cls, st)
                a = cls.lookup_attr(attr)
                if isinstance(a, SingleDispatchVal):
                    return self.bind_method(a, obj, cls, st)
                if isinstance(a, InstanceVal) and isinstance(a.cls, ClassVal):
                    get = a.cls.lookup_method("__get__")
                    if get is not None:
                        # a descriptor in the class: `type(a).__get__(a, obj, type(obj))`
                        return self.call_function(get, [a, obj, cls], {}, st, force=True)
                if a is not None:
                    return (a.default or UNKNOWN) if isinstance(a, FieldVal) else a
                lib = self.library_attr(obj, attr) if cls.library is not None else None
                if lib is not None:
                    return lib  # a method of the library class it derives from (`self.addCleanup`)
                getattr_fn = cls.lookup_method("__getattr__") if not attr.startswith("__") else None
                if getattr_fn is not None and not isinstance(obj, ModuleVal):
                    # an attribute found nowhere else: `type(obj).__getattr__(obj, name)`
                    return self.call_function(getattr_fn, [obj, ConstVal(attr)], {}, st, force=True)
            if isinstance(obj, ModuleVal) and obj.opaque and attr not in N.MODULE_METHOD_NAMES:
                return UNKNOWN  # (a module of unknown class: what its attributes are is not known)
            if isinstance(obj, ModuleVal) and obj.cls is None and attr in N.MODULE_WRAPPER_ATTRS:
                return obj  # DataParallel(m).module, torch.compile(m)._orig_mod: the same parameters
            if isinstance(obj, ModuleVal) and attr in N.MODULE_PARAM_ATTRS:
                if obj.is_real():
                    return TVal(frozenset([Origin(f"{dotted_name(e) or attr}", "parameter", e.lineno, parent=obj.origin, param=attr)]))
                return TVal(frozenset(), obj.mode, may_fake=obj.may_fake)
            if isinstance(obj, ModuleVal) and attr in N.MODULE_METHOD_NAMES:
                return MethodRef(obj, attr)  # a torch method taken as a value (`fwd = model.forward`)
            return UNKNOWN
        if isinstance(obj, ClassVal):
            if attr in ("__name__", "__qualname__") and obj.lookup_attr(attr) is None:
                return ConstVal(obj.node.name)
            if attr == "apply" and obj.lookup_method("apply") is None and _is_autograd_function(obj):
                return AutogradApply(obj)
            d = class_lookup(obj, attr)
            if descriptor_kind(d) in ("data", "non-data"):
                return self.descriptor_get(d, None, obj, st)  # `C.name`: `__get__(d, None, C)`
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
            if attr == "forward" and isinstance(obj.self_val, ModuleVal) and obj.cls.torch_base:
                # no class of the file after it defines forward: torch's layer's runs on
                # the module's own parameters (`super().forward(x)` in an nn.Linear subclass)
                return MethodRef(obj.self_val, N.TORCH_FORWARD)
            # past the file's classes: the library class they derive from
            lib = self.library_attr(obj.self_val, attr) if getattr(owner, "library", None) is not None else None
            return lib if lib is not None else UNKNOWN
        if isinstance(obj, ExportedProgramVal):
            return UNKNOWN
        if isinstance(obj, SingleDispatchVal):
            return DispatchRegister(obj) if attr == "register" else UNKNOWN
        if isinstance(obj, OptimizerVal) and attr in N.OPTIMIZER_METHOD_NAMES:
            return MethodRef(obj, attr)
        if isinstance(obj, ModeVal):
            if attr == "allow_non_fake_inputs":
                return ConstVal(obj.allow) if obj.allow is not None else UNKNOWN
            if obj.cls is not None:
                # an instance of a FakeTensorMode subclass of the file
                if attr in obj.attrs:
                    return obj.attrs[attr]
                m = obj.cls.methods.get(attr)
                if m is not None:
                    return self.bind_method(m, obj, obj.cls, st)
                a = obj.cls.lookup_attr(attr)
                if a is not None:
                    return a
            if attr in N.MODE_METHOD_NAMES:
                return MethodRef(obj, attr)  # (`self.addCleanup(mode.__exit__, None, None, None)`)
            return UNKNOWN
        if isinstance(obj, FuncVal) and obj.memo and attr in N.MEMO_FUNCTION_METHODS:
            return MethodRef(obj, attr)  # (`clear = table.cache_clear`, called later)
        if isinstance(obj, FuncVal) and attr == "__name__" and obj.wrapped is None:
            # a def's name (registries keyed by `fn.__name__`); a wrapper's may be copied by
            # functools.wraps or not: unknown
            return ConstVal(obj.node.name if isinstance(obj.node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<lambda>")
        return UNKNOWN


def module_children(mod):
    """What iterating a torch container with known children gives, in order (a
    ModuleDict: its keys); None when not known."""
    if mod.children is None or mod.cls is not None:
        return None
    if mod.torch_class == "ModuleDict":
        return [ConstVal(k) for k in mod.children]
    kids = [mod.attrs.get(k) for k in mod.children]
    return kids if all(isinstance(k, ModuleVal) for k in kids) else None


def _child_at(mod, idx):
    """``mod[idx]`` for a container with known children (None: not known)."""
    if mod.children is None or mod.cls is not None or not isinstance(idx, ConstVal):
        return None
    key = idx.value
    if type(key) is int and mod.torch_class != "ModuleDict":
        n = len(mod.children)
        if not -n <= key < n:
            return None
        key = mod.children[key]
    if not isinstance(key, str) or key not in mod.children:
        return None
    child = mod.attrs.get(key)
    return child if isinstance(child, ModuleVal) else None


def _is_autograd_function(cls):
    """A subclass of ``torch.autograd.Function`` (through classes of the file too)."""
    for c in cls.mro or (cls,):
        for b in getattr(c, "bases", ()) or ():
            if isinstance(b, ModRef) and b.qualname in N.AUTOGRAD_FUNCTION_BASES:
                return True
    return False


# expression type -> the method that evaluates it (types not listed are unknown)
EXPRESSION_METHODS = {
    ast.Name: "_eval_name",
    ast.Constant: "_eval_constant",
    ast.Attribute: "eval_attribute",
    ast.Call: "eval_call",
    ast.BinOp: "_eval_bin_op",
    ast.UnaryOp: "_eval_unary_op",
    ast.Compare: "_eval_compare",
    ast.BoolOp: "_eval_bool_op",
    ast.IfExp: "_eval_if_exp",
    ast.List: "_eval_sequence",
    ast.Tuple: "_eval_sequence",
    ast.Set: "_eval_sequence",
    ast.Dict: "_eval_dict",
    ast.ListComp: "eval_comprehension",
    ast.SetComp: "eval_comprehension",
    ast.GeneratorExp: "eval_comprehension",
    ast.DictComp: "eval_comprehension",
    ast.Subscript: "_eval_subscript",
    ast.Lambda: "_eval_lambda",
    ast.NamedExpr: "_eval_named_expr",
    ast.Starred: "_eval_starred",
    ast.Await: "_eval_await",
    ast.YieldFrom: "_eval_yield_from",
    ast.Yield: "_eval_yield",
    ast.JoinedStr: "_eval_joined_str",
    ast.Slice: "_eval_slice",
}


def _key_of(v):
    """A dict key the analysis knows: a constant's value, or a member of the file's
    enums (a singleton, compared by identity); else ``_NONCONST``."""
    if isinstance(v, ConstVal):
        return v.value
    if is_enum_member(v):
        return v
    t = const_tuple(v)  # `d[(seq_len, dim)]`: a tuple of constants is a key like any constant
    return t if t is not None else _NONCONST
