"""Dispatch: a tensor op on its operands under the current context. When a fake
mode dispatches it (inside a region, or through a leaked fake operand) every real
requires-grad operand becomes a :class:`~fakegrad_lint.analysis.values.LeakRecord`
(a may link when the region, what it allows, or the value is only possibly so);
a strict mode crashes the path. ``sink`` marks the records in a backward's graph.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import values as _values
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.param_leaves import covered_modules, maybe_switched
from fakegrad_lint.analysis.state import Crashed
from fakegrad_lint.analysis.torch_values import _owns, broadcast, op_shape, shape_of, with_shape
from fakegrad_lint.analysis.valueops import _carries, _flatten, _fold_strings, _is_module_value, _is_tensorish, fold_binop
from fakegrad_lint.analysis.heap import heap_field
from fakegrad_lint.analysis.values import UNKNOWN, LeakRecord, ModuleVal, Region, SeqVal, TVal, closed_value, origin_order


# sinks that accumulate into the leaves' .grad (torch.autograd.grad returns the gradients instead)
_ACCUMULATING = frozenset({".backward()", "torch.autograd.backward"})


def _rg_unknown(origin):
    """Is the real value's requires-grad unknown (it, or the module it is part of, is an
    opaque module: ``Origin.rg_unknown``)?"""
    o = origin
    while o is not None:
        if o.rg_unknown:
            return True
        o = o.parent
    return False


def _root(origin):
    while origin.parent is not None:
        origin = origin.parent
    return origin


def _proves_rg(v, leaks, desc, inputs, st, catching):
    """The records whose requires-grad a backward of ``v`` proves: a backward raises
    (``element 0 of tensors does not require grad``) unless some leaf of the graph
    requires grad. When every leaf that can is known (``v.closed``: no unknown
    operand, no fake requires-grad leaf made in the region, no real requires-grad
    value outside it) and all of them are the parameters of one opaque module, the
    program itself proves that they require grad. Not when the backward runs where an
    exception it raises may be caught (``catching``), nor for a subset of inputs."""
    if desc not in _ACCUMULATING or inputs is not None or st.may or catching:
        return ()
    if not isinstance(v, TVal) or not v.closed or v.real_rg() or not leaks:
        return ()
    roots = {id(_root(rec.origin)) for rec in leaks}
    if len(roots) != 1 or not all(rec.rg_unproved and _rg_unknown(rec.origin) for rec in leaks):
        return ()
    if any(rec.origin.disabled for rec in leaks):
        return ()
    return tuple(leaks)


def _has_real_grad(origin):
    """Does the real value already hold a real ``.grad`` on every path (it, or the module
    it is a parameter of)?"""
    o = origin
    while o is not None:
        if o.grad_real is True:
            return True
        o = o.parent
    return False


def _part_of(a, b):
    """Is the real value ``a`` the value ``b`` or a part of it (a parameter of the module
    ``b``, of one of its submodules)? A gradient asked for ``a`` flows through a leak of ``b``."""
    o = a
    while o is not None:
        if o is b:
            return True
        o = o.parent
    return b.owner is not None and _owns(b.owner, a)


class DispatchMixin:
    """Ops under the active mode: leaks recorded, sinks reached."""

    def binop(self, e, operands, st):
        if not any(_is_tensorish(v) for v, _ in operands):
            op = e.op if isinstance(e, (ast.BinOp, ast.AugAssign)) else None
            if op is not None and len(operands) == 2:
                folded = fold_binop(op, operands[0][0], operands[1][0])  # `calls + 1`, `4 * 1024`
                if folded is not None:
                    return folded
            if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and len(operands) == 2:
                # `"a" + name`: string concatenation of known strings
                return _fold_strings([v for v, _ in operands], "".join, only=(str,))
            return UNKNOWN
        shapes = [shape_of(v) for v, _ in operands]
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):
            shape = op_shape("matmul", shapes, (), {})
        else:
            shape = broadcast(shapes)  # elementwise: the operands broadcast
        return self.op(e, operands, st, shape=shape)

    def op(self, node, operands, st, differentiable=True, shape=None):
        """A tensor op on ``operands`` ((value, expr) pairs): detect leaks, return the
        result (of ``shape`` when known)."""
        return with_shape(self._op(node, operands, st, differentiable), shape)

    def _op(self, node, operands, st, differentiable=True):
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
        # (no graph is recorded without grad: nothing in the result can require grad)
        closed = not grad or all(closed_value(v) for v, _ in flat)
        fake_ex = None
        if route == "leaked-mix":
            # the expression that names the leaked fake tensor itself (never a container
            # of it: `inputs.fake_mode` on a tuple does not exist)
            starred = {id(a.value) for a in getattr(node, "args", ()) if isinstance(a, ast.Starred)}
            fake_ex = next((ex for v, ex in flat if ex is not None and id(v) not in whole and isinstance(v, TVal)
                            and id(ex) not in starred
                            and v.fake_mode() is mode and dotted_name(ex)), None)
            if fake_ex is None:
                fake_ex = _fake_root(flat, whole, starred, mode, st)
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
                for origin in sorted(origins, key=origin_order):
                    if origin.disabled:
                        continue
                    # (requires_grad switched off on some paths only: a may link)
                    rec = self.record(node, origin, whole.get(id(v), v), ex, region, route, allow, st, grad, fake_ex,
                                      may or origin.disabled is None or maybe_switched(origin))
                    if rec is not None:
                        new.append(rec)
            return TVal(frozenset(), mode, (leaks | frozenset(new)) if grad else frozenset(), may_fake=region_may,
                        closed=closed)
        origins = frozenset()
        if grad:
            for v, _ in flat:
                origins |= v.real_rg()
        return TVal(origins, None, leaks if grad else frozenset(), derived=bool(origins), closed=closed)

    def record(self, node, origin, value, expr, region, route, allow, st, grad, fake_ex=None, may=False):
        crash = allow is False
        if not crash and not grad:
            return None
        key = (id(node), id(origin))
        entry = None
        if self.ctx is not self.main:
            # code of another project module: reported where the linted file calls into it
            entry = self._main_entry()
            if entry is None or not (origin.file is None or _carries(list(entry[2]) + list(entry[3].values()), origin)
                                     or self._made_by_earlier_call(origin)):
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
            if entry is None:
                rec.handover = self._handover(node, origin, region, st, route)
            if entry is not None:
                rec.file, rec.entry = self.ctx, entry
                # code of another module: a plan only where the edit lands in a file the
                # fix can edit (analysis/fix_plans.py, ``_other_module_fix_plan``)
                rec.fix_plan = self._other_module_fix_plan(node, expr, value, origin, region, st)
            elif route == "leaked-mix":
                rec.fix_plan = self._leaked_fix_plan(node, expr, value, fake_ex)
            else:
                rec.fix_plan = self._fix_plan(node, expr, value, origin, region, st)
                if rec.fix_plan is not None and region.file is not None and not self._in_main(
                        self._landing(rec.fix_plan, region)):
                    # the block (or function) to edit is in another module: kept for the project
                    # fix pass only (analysis/fix_plans.py, ``_plan_where_it_lands``)
                    rec.fix_plan = self._plan_where_it_lands(rec.fix_plan, region)
            if _rg_unknown(origin):
                # a module whose parameters may not require grad: a possible leak until a
                # sink proves they do (``sink``); no fix for a module of unknown class
                rec.rg_unproved, rec.fix_plan = True, None
            self.records[key] = rec
        elif rec.fix_plan is not None and route != "leaked-mix" and expr is not None:
            # the same value leaks again in this op (`w["a"] * w["b"]`): its fix must
            # convert this expression too (the plan's uses are shared per region)
            self._fix_plan(node, expr, value, origin, region, st)
        if crash and not may:
            raise Crashed()
        return rec

    def _handover(self, node, origin, region, st, route="in-region"):
        """(call, argument expression) where the linted file hands the real value over to
        the function that does the op: its innermost call site, made while the region was
        already active (``penalty(weights)`` or ``scorer.score(emb.table)`` in the ``with``
        block, ``teacher(x)`` in a helper the block calls), when one of its arguments (the
        receiver of a method, the object called through ``__call__``) carries the value.
        None: the op is not in a called function, the function opened the region itself,
        the value does not come in through that call, or the call is plumbing (``*args``
        forwarding, ``map(fn, xs)``, an alias of the function)."""
        if not st.sites or not st.stack:
            return None
        site = st.sites[-1]
        call = site.call
        if call is node or not isinstance(call, ast.Call) or not self._in_main(call):
            return None
        func = st.stack[-1]  # the function doing the op
        if route != "leaked-mix" and not any(r is region for r in site.regions):
            return None  # the region was entered during the call (by the function, a decorator's context)
        # (a leaked fake meets the real value wherever it is: the call that hands the
        # real value to the function doing the mix is where it enters, as for a region)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None  # forwarded through `*args`/`**kwargs` (a wrapper's plumbing)
        name = getattr(func, "name", None)
        called = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name != "__call__" and called != name:
            return None  # not a call of the function by its name (`map(fn, xs)`, an alias)
        pairs = [(ex, val) for ex, val in zip(site.arg_exprs, site.arg_values) if ex is not None and val is not None]
        for ex, val in pairs:
            if origin in val.real_rg():
                return call, ex  # the value itself (`helper(x)`, `scorer.score(emb.table)`)
        for ex, val in pairs:
            if _carries([val], origin):
                return call, ex  # a container or an object holding it (`helper(weights)`, `teacher(x)`)
        return None

    def _backward_under_mode(self, v, desc, node, st):
        """A backward of a *real* graph started while an allow-mode region dispatches
        (a loss computed under ``unset_fake_temporarily()`` or before the ``with``,
        backpropagated inside it): the engine makes the seed gradient and runs every
        backward function under the mode, so the real leaves' ``.grad`` become
        FakeTensors (``torch.autograd.grad`` returns fakes). The backward call is the
        leak and its sink. Only where the mode is known to allow non-fake inputs."""
        region = st.active_region()
        if region.may or st.allow_of(region.mode) is not True or not v.proven_rg() or not st.grad_enabled:
            return
        expr = node.func.value if isinstance(node.func, ast.Attribute) and desc == ".backward()" else \
            (node.args[0] if node.args else None)
        new = []
        for origin in sorted(v.real_rg(), key=origin_order):
            if origin.disabled is not False:
                continue
            rec = self.record(node, origin, v, expr, region, "in-region", True, st, True, None, False)
            if rec is not None:
                rec.fix_plan = None  # (no conversion of an operand helps: the backward itself runs fake)
                new.append(rec)
        for rec in new:
            self._mark_sink(rec, desc, node)

    def _mark_sink(self, rec, desc, node):
        if desc in _ACCUMULATING and not rec.may:
            heap_field(rec.origin, "fake_grad", True)
        rec.sinks.append((desc, node.lineno))
        rec.sink_sites.append((desc, node, self.ctx if self.ctx is not self.main else None))

    def _real_grads(self, v, inputs):
        """A backward outside any region through real values: their leaves (those in
        ``inputs`` when given) hold real gradients from here on."""
        wanted = None
        if inputs is not None and inputs is not UNKNOWN:
            wanted = set()
            for x in (_flatten(inputs) if isinstance(inputs, SeqVal) else [inputs]):
                wanted |= set(x.real_rg())
        for o in v.real_rg():
            if (wanted is None or o in wanted) and o.fake_grad is False:
                heap_field(o, "grad_real", True)  # (into a fake .grad a real backward accumulates a fake)

    def grads_reset(self, v, set_to_none=True):
        """``opt.zero_grad()`` / ``model.zero_grad()`` / ``p.grad = None``: the real values'
        ``.grad`` is None again (``set_to_none=False`` zeroes the real tensors in place)."""
        if set_to_none is False:
            return
        values = _flatten(v) if isinstance(v, SeqVal) else [v]
        leaves = [o for x in values for o in x.real_rg()]
        for o in covered_modules(leaves):  # (every parameter of a layer, one by one: the layer's too)
            heap_field(o, "grad_real", False if set_to_none is True else None)
            heap_field(o, "fake_grad", False if set_to_none is True else o.fake_grad and None)
        for x in values:
            for o in x.real_rg():
                heap_field(o, "grad_real", False if set_to_none is True else None)
                heap_field(o, "fake_grad", False if set_to_none is True else o.fake_grad and None)
                if o.owner is not None:
                    for child in o.owner.attrs.values():
                        if isinstance(child, ModuleVal) and child.origin is not None:
                            heap_field(child.origin, "grad_real", False if set_to_none is True else None)

    def fake_grad_written(self, target, obj, val, st):
        """``p.grad = g`` with ``g`` a fake tensor and ``p`` a real requires-grad one: the
        real tensor's ``.grad`` is the fake from here on (the setter checks device, dtype
        and sizes, and dispatches nothing: no mode raises), as after a backward through
        a fake op (HAZARD 3): the assignment is both the leak and its sink."""
        if st.may or not isinstance(val, TVal) or not val.proven_fake() or val.leaks or not obj.proven_rg():
            return
        region = st.active_region()
        route = "in-region"
        if region is None or region.mode is not val.mode:
            region, route = Region(val.mode, val.mode.allow, None, -1, None), "leaked-mix"
        if region.may:
            return
        for origin in sorted(obj.real_rg(), key=origin_order):
            if origin.disabled:
                continue
            rec = self.record(target, origin, obj, target.value, region, route, True, st, True, None, False)
            heap_field(origin, "fake_grad", True)
            if rec is not None:
                rec.grad_written = True
            if rec is not None and (".grad assignment", target.lineno) not in rec.sinks:
                rec.fix_plan = None  # (the fake is written whatever the tensor is converted to)
                rec.sinks.append((".grad assignment", target.lineno))
                rec.sink_sites.append((".grad assignment", target, self.ctx if self.ctx is not self.main else None))

    def _made_by_earlier_call(self, origin):
        """Was this real value (made in another module) made by an earlier call of the
        linted file's code (``model = build()``; ``state.register(model)``), not by
        the call running now nor by an imported module's body? Then it reached the
        running code through module state the linted file filled: its value."""
        now = self._entry_token()
        for _ in range(4):  # (a parameter's own origin may be newer than its module's)
            made = origin.made_in
            if made is not None and made is not _values.MODULE_BODY and made is not now:
                return True
            origin = origin.parent
            if origin is None:
                break
        return False

    def sink(self, v, desc, node, st, inputs=None):
        if isinstance(v, TVal) and v.mode is None and st.active_region() is not None and not st.may:
            self._backward_under_mode(v, desc, node, st)
        leaks = v.taint()
        if desc in _ACCUMULATING and not st.may and st.active_region() is None:
            self._real_grads(v, inputs)
        if not leaks or st.may:
            return  # (a sink on a path that only may be taken proves no hazard)
        for rec in _proves_rg(v, leaks, desc, inputs, st, getattr(self, "_catching", 0)):
            if rec.rg_unproved:
                rec.rg_unproved, rec.rg_proof = False, (desc, node)
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
            if wanted is not None and not any(_part_of(rec.origin, w) or _part_of(w, rec.origin) for w in wanted):
                continue  # (the gradients asked for are of other tensors)
            if desc in _ACCUMULATING and _has_real_grad(rec.origin):
                continue  # accumulated in place into the real .grad it already has: it stays real
            if desc in _ACCUMULATING and not rec.may:
                heap_field(rec.origin, "fake_grad", True)  # (its .grad is the fake from here on)
            rec.sinks.append((desc, node.lineno))
            rec.sink_sites.append((desc, node, self.ctx if self.ctx is not self.main else None))


def _fake_root(flat, whole, starred, mode, st):
    """The name of a leaked fake tensor under a method chain of an operand (``negs`` of
    ``q @ negs.t()``): that name's value is a fake tensor of the same mode, so its
    ``.fake_mode`` is the op's (None when no operand is such a chain)."""
    for v, ex in flat:
        if ex is None or id(ex) in starred or not isinstance(v, TVal) or v.fake_mode() is not mode:
            continue
        if id(v) in whole:
            # an element of a list or tuple display (`torch.cat([pos, neg])`): the element's name
            seq = whole[id(v)]
            if isinstance(ex, (ast.List, ast.Tuple)) and len(ex.elts) == len(seq.items):
                elt = next((e for e, item in zip(ex.elts, seq.items) if item is v), None)
                if elt is not None and isinstance(elt, ast.Name):
                    return elt
            continue
        root = ex
        while isinstance(root, (ast.Call, ast.Attribute)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if root is not ex and isinstance(root, ast.Name):
            base = st.scope.lookup(root.id)
            if isinstance(base, TVal) and not isinstance(base, SeqVal) and base.proven_fake() and \
                    base.fake_mode() is mode:
                return root
    return None
