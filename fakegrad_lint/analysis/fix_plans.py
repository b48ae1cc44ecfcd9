"""Fix plans for leaks that the region's own block cannot fix (the facts of
:class:`~fakegrad_lint.analysis.facts.FactsMixin` cover the block that opened the region).

Two more placements, tried in this order when that one has no plan:

- **at the call in the block**: a real *module* handed to a helper called in the region's
  block (``train_step(model, opt, x)``, ``loss_fn(ae, x)`` with ``loss_fn`` a lambda of a
  registry): the call gets a fake copy of the module made in the block (``module-copy``),
  so the helper is left as it is for its other callers;
- **in the function whose code leaks** (``placement="function"``), when the value does not
  pass through a call of the block: a global or a closure variable read by a helper, a
  module bound by ``functools.partial``, a function run by a decorator's wrapper that opens
  the region, a method called through ``getattr``, code in the body of a context-manager
  class or a helper that enters the mode without handing it out (``ExitStack``). The mode
  has no name there: the fix finds it at run time (``torch._guards.detect_fake_mode()``,
  ``None`` outside any fake region, so every other caller keeps the real value).

Only values the analysis proved are planned: a tensor named by a stable expression, a
real module called or copied; never a may value, a meta module, a lambda's body (no
statement to hoist into) or code of another module.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis.code_text import _constant_subscripts
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.state import PseudoWith
from fakegrad_lint.analysis.torch_tables import CONTAINER_MODULES
from fakegrad_lint.analysis.torch_values import _owns
from fakegrad_lint.analysis.param_leaves import leaves_of as _leaves_of
from fakegrad_lint.analysis.values import MaybeVal, ModuleVal, SeqVal, TVal

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)

# Set by the project fix pass (``fakegrad_lint.fix.projects``) while it analyses a file:
# plans whose edit lands in another project module's region are kept (``FixPlan.path``).
PLAN_IN_OTHER_MODULES = [False]


def _in_place(node) -> bool:
    """Is ``node`` an in-place call (``x.add_(...)``, ``nn.init.zeros_(w)``)?"""
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name.endswith("_") and not name.endswith("__")


def _meta_inputs(block) -> bool:
    """Does the region's block make its tensors on the meta device (``device="meta"``,
    ``torch.device("meta")``), and nothing on another device?"""
    if block is None or not getattr(block, "body", None):
        return False
    devices = set()
    for stmt in block.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.keyword) and node.arg == "device":
                v = node.value
                if isinstance(v, ast.Call) and (dotted_name(v.func) or "").endswith("device") and v.args:
                    v = v.args[0]
                devices.add(v.value if isinstance(v, ast.Constant) else None)
    return devices == {"meta"}


def _param_paths(module, path: str, depth: int = 0):
    """The attribute paths under ``module`` (named ``path``) proved to be its parameters: a
    torch layer's own (``embed.weight`` of an ``nn.Embedding``) and ``nn.Parameter``
    attributes (a tied ``lm_head.weight``), a few levels deep."""
    if depth > 4 or not isinstance(module, ModuleVal) or not module.is_real():
        return
    names = getattr(module.origin, "param_names", None) or ()
    for name in names:
        yield f"{path}.{name}"
    for name, val in module.attrs.items():
        if isinstance(val, ModuleVal):
            yield from _param_paths(val, f"{path}.{name}", depth + 1)
        elif isinstance(val, TVal) and not isinstance(val, SeqVal) and val.origins and val.mode is None and \
                all(o.kind == "parameter" for o in val.origins):
            yield f"{path}.{name}"


def _chain_root_name(expr):
    """``protos`` of ``protos.t()``, ``bank.mean(0)[None]``: the plain name a chain of
    attributes, calls and subscripts starts from (None: another expression)."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(expr, ast.Call) and not isinstance(expr.func, ast.Attribute):
            return None  # `causal_mask(n)`: what a function returns is not its name's
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr if isinstance(expr, ast.Name) else None


def _imported_names(tree) -> set:
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name.split(".")[0]) for a in node.names)
    return out


def _other_operand(node, expr, imported):
    """The operand of the op ``node`` other than the real ``expr`` that is computed from a
    plain name (``protos.t()`` of ``z @ protos.t()``), not from an imported module; None
    if there is none."""
    if isinstance(node, ast.BinOp):
        cands = [node.left, node.right]
    elif isinstance(node, ast.Call):
        cands = [*node.args, *(k.value for k in node.keywords if k.arg is not None)]
        if isinstance(node.func, ast.Attribute):
            cands.append(node.func.value)
    else:
        return None
    for c in cands:
        if c is expr or any(n is expr for n in ast.walk(c)) or isinstance(c, ast.Starred) or \
                dotted_name(c) is not None:
            continue  # (a named operand that held the fake is the analysis' own `fake_ex`)
        root = _chain_root_name(c)
        if root is not None and root.id not in imported and root.id not in ("self", "cls") and \
                root.id != dotted_name(expr):
            return c
    return None


class FixPlansMixin:
    """``_fix_plan`` with the call-site module copy and the in-function placement."""

    def _fix_plan(self, node, expr, value, origin, region, st):
        if expr is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            # the op is the module's own call (`model(x)`) and the real value a tensor deep in
            # it (a parameter set by `setattr` on a child): the module is what is converted
            mod = st.scope.lookup(node.func.id)
            if isinstance(mod, ModuleVal) and not mod.meta and _owns(mod, origin):
                return self._fix_plan(node, node.func, mod, origin, region, st)
        if isinstance(value, ModuleVal) and value.meta and _meta_inputs(region.with_node):
            # a meta module in a region that computes on meta inputs: its fake copies are
            # meta too, so the region computes on the devices it did before the fix
            value.meta = False
            try:
                return self._fix_plan(node, expr, value, origin, region, st)
            finally:
                value.meta = True
        if isinstance(value, MaybeVal):
            opts = [o for o in value.options if not (getattr(o, "value", 0) is None)]
            if opts and all(isinstance(o, ModuleVal) and not o.meta for o in opts) and \
                    any(origin in o.real_rg() for o in opts):
                # one of several real modules (`nn.DataParallel(model) if n > 1 else model`): a fake
                # copy works on any of them (`functional_call` refuses `nn.DataParallel`)
                plan = self._fix_plan(node, expr, opts[0], origin, region, st)
                if plan is not None and plan.kind == "module" and plan.placement == "region" and \
                        isinstance(node, ast.Call) and node.func is expr and dotted_name(expr) is not None:
                    return self._plan("module-copy", dotted_name(expr), expr, region, st, region_uses=True)
                return plan
        plan = super()._fix_plan(node, expr, value, origin, region, st)
        if plan is not None:
            if plan.kind == "module" and isinstance(value, ModuleVal):
                plan.param_paths = frozenset(_param_paths(value, plan.value))
            return plan
        plan = self._module_list_plan(node, expr, value, region, st) or \
            self._container_module_plan(node, expr, value, origin, region, st)
        if plan is not None:
            return plan
        if isinstance(value, MaybeVal) or (isinstance(value, ModuleVal) and value.meta):
            return None
        if getattr(self, "ctx", None) is not getattr(self, "main", None):
            # code of another project module: only a fake copy of a module handed over at the
            # call in the region's block (the block is where the edit lands; see
            # `_other_module_fix_plan`), never an edit inside the other module's helper
            plan = self._call_site_module_plan(region, origin, st)
            if plan is None and PLAN_IN_OTHER_MODULES[0]:
                # the project fix pass: in the other module's function whose code leaks (the mode
                # found at run time, so its callers outside any region keep the real value)
                plan = self._function_plan(node, expr, value, region, st)
            return plan
        from fakegrad_lint.analysis.facts import _op_mode_fix_plan  # last: at the op, with a fake operand's mode

        return self._call_site_module_plan(region, origin, st) or self._function_plan(node, expr, value, region, st) \
            or _op_mode_fix_plan(self, node, expr, value, region, st)

    def _leaked_fix_plan(self, node, expr, value, fake_ex):
        """Mixing with a leaked fake (FGL003): the facts convert a real operand named by a
        stable expression; a real operand the code computes right there from a requires-grad
        value (``encoder(tokens) + pos_table``, ``student(x).softmax(-1)``,
        ``model.weight.pow(2).sum()``) is converted whole, as a fake leaf of its own made by
        the leaked fake's mode: ``pos_table.fake_mode.from_tensor(encoder(tokens))
        .detach().requires_grad_()``. The real operand is computed as before (same values,
        same shapes); the backward that follows stops at the fake leaf, so no FakeTensor
        reaches a real ``.grad``."""
        if fake_ex is None and expr is not None:
            fake_ex = _other_operand(node, expr, _imported_names(self.tree))
        if fake_ex is not None and dotted_name(fake_ex) is None:
            # the fake operand is computed at the op (`protos.t()`): its mode is found at run
            # time from the name it is computed from (``fix/operand_mode.py``); where that
            # name is real, `detect_fake_mode` gives None and the real value is used
            root = _chain_root_name(fake_ex)
            if root is None:
                return None
            plan = self._leaked_fix_plan(node, expr, value, root)
            if plan is not None:
                plan.mode_from_root = True
            return plan
        if isinstance(expr, (ast.List, ast.Tuple)) and isinstance(value, SeqVal) and \
                len(expr.elts) == len(value.items) and fake_ex is not None:
            # `torch.cat([pos, neg])` with `neg` the leaked fake: the one real element is converted
            real = [(e, v) for e, v in zip(expr.elts, value.items)
                    if isinstance(v, TVal) and not isinstance(v, SeqVal) and v.real_rg()]
            if len(real) == 1 and not any(e is fake_ex for e, _ in real):
                return self._leaked_fix_plan(node, real[0][0], real[0][1], fake_ex)
            return None
        plan = super()._leaked_fix_plan(node, expr, value, fake_ex)
        if plan is not None or fake_ex is None or expr is None or dotted_name(fake_ex) is None:
            return plan
        if not (isinstance(value, TVal) and not isinstance(value, SeqVal) and value.derived
                and isinstance(expr, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Attribute))):
            return None
        text = self.pos.segment(expr) if hasattr(expr, "lineno") else None
        if not text or "\n" in text or any(isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield,
                                                           ast.YieldFrom)) for n in ast.walk(expr)):
            return None
        from fakegrad_lint.analysis.leaks import FixPlan

        if isinstance(expr, (ast.BinOp, ast.UnaryOp)):
            text = f"({text})"
        return FixPlan(kind="leaked-tensor", value=text, with_node=None, item_index=-1,
                       mode_name=f"{dotted_name(fake_ex)}.fake_mode", uses=[expr], module_tree=self.tree,
                       derived=True)

    def _other_module_fix_plan(self, node, expr, value, origin, region, st):
        """The plan of a leak in code of another project module (a helper the linted file's
        code calls), kept only where its edit lands in the block that opened the region:
        in the linted file (the value is converted at the call in its block, or handed over
        as a fake copy: the helper stays as it is for its other callers), or, for the project
        fix pass (``PLAN_IN_OTHER_MODULES``, ``fakegrad_lint.fix.projects``), in the project
        module whose code opened the region (every caller of that region is fixed by it);
        the plan then names that module (``path``, ``module_tree``)."""
        if region.with_node is None and st.active_region() is not region:
            return None  # a fake that leaked out of its region: no mode is active where it is mixed
        plan = self._fix_plan(node, expr, value, origin, region, st)
        if plan is None or (region.with_node is None and plan.placement != "function"
                            and not plan.kind.startswith("traced-")):
            return None
        return self._plan_where_it_lands(plan, region)

    @staticmethod
    def _landing(plan, region):
        """The block or function ``plan``'s edit lands in: the function of a function
        placement, the function traced by ``make_fx`` (``traced-*``, whose region is the
        tracer's call, maybe in another module), else the region's block."""
        if plan.placement == "function":
            return plan.func_node
        if plan.kind.startswith("traced-") and plan.with_node is not None:
            return plan.with_node
        return region.with_node

    def _plan_where_it_lands(self, plan, region):
        """``plan`` if its edit lands in the linted file; for the project fix pass
        (``PLAN_IN_OTHER_MODULES``) also when it lands in another project module (the block
        that opened the region, or the function whose code leaks there), naming that module
        (``path``, ``module_tree``); else None."""
        if plan.placement == "function":
            at = plan.func_node
        elif (plan.kind.startswith("traced-") and plan.with_node is not None) or \
                (plan.placement == "region" and plan.with_node is region.with_node and region.with_node is not None):
            at = self._landing(plan, region)
            if self._in_main(at):
                return plan
        else:
            return None
        mf = self._module_holding(at) if PLAN_IN_OTHER_MODULES[0] else None
        if mf is None or plan.grad_writes:
            return None
        plan.path, plan.module_tree = mf.path, mf.tree
        return plan

    def _module_holding(self, node):
        """The project module (its ``ModuleFile``) whose tree holds ``node``, if loaded."""
        if isinstance(node, PseudoWith):
            node = node.body[0] if node.body else None
        if node is None:
            return None
        table = self.__dict__.setdefault("_node_modules", {})
        for mv in list(getattr(self, "_modules", {}).values()):
            mf = getattr(mv, "mf", None)
            if mf is None:
                continue
            if id(mf) not in table:
                table[id(mf)] = (mf, {id(n) for n in ast.walk(mf.tree)})
            if id(node) in table[id(mf)][1]:
                return mf
        return None

    def _leaks(self):
        """The facts; a hazard or a crash for which no conversion is planned gets a plan of
        kind ``"none"`` that says why, so that its finding says ``no fix: <why>``."""
        from fakegrad_lint.analysis.leaks import FixPlan, Route, Verdict

        leaks = super()._leaks()
        for leak in leaks:
            if leak.fix is not None or leak.verdict is Verdict.FORWARD_ONLY:
                continue
            if leak.mode_path is not None:
                why = "the region is opened in another module of the project"
            elif leak.route is Route.LEAKED_MIX:
                why = (f"no conversion of `{leak.value}` with the leaked fake's mode is proved at this op "
                       f"(which side should be real is the author's call)")
            else:
                why = (f"no conversion of `{leak.value}` is proved here (no expression, block or function where "
                       f"a fake copy is known to fit: a module made on the meta device, an element picked by a "
                       f"computed key, a value the region makes from it)")
            leak.fix = FixPlan(kind="none", value=leak.value, with_node=None, item_index=-1, mode_name=None, uses=[],
                               module_tree=self.tree, reason=why)
        return leaks

    # -- a module picked from a list of modules by a computed index --------------

    def _module_list_plan(self, node, expr, value, region, st):
        """``stages[s](x)`` in the region's block, ``stages`` a list of modules (``s``
        computed): the list is copied as fakes (each module over a ``from_tensor`` memo) and
        the call picks from the copy."""
        if region.with_node is None or region.func_node is not st.scope.func_node:
            return None
        if not (isinstance(value, ModuleVal) and isinstance(expr, ast.Subscript) and isinstance(node, ast.Call)
                and node.func is expr and not isinstance(expr.slice, (ast.Constant, ast.Slice))):
            return None
        base = dotted_name(expr.value)
        seq = st.scope.lookup(base) if base is not None and "." not in base else None
        if not (isinstance(seq, SeqVal) and not seq.is_dict and seq.items
                and all(isinstance(v, ModuleVal) and not v.meta for v in seq.items)):
            return None
        plan = self._plan("module-copy", base, expr.value, region, st, region_uses=True)
        plan.contents = "modules"  # a list of modules: every one of them is copied
        return plan

    def _container_module_plan(self, node, expr, value, origin, region, st):
        """``scaler.scales[group]`` in the region's block, ``scaler.scales`` a real torch
        container module (``nn.ParameterDict``, ``nn.ModuleDict``, ``nn.ModuleList``, ...)
        and the key computed: the container is copied as fakes (``copy.deepcopy`` over the
        ``from_tensor`` memo, which runs under a strict mode too) and the element is picked
        from the copy, whatever the key."""
        if region.with_node is None or region.func_node is not st.scope.func_node:
            return None
        if not (isinstance(expr, ast.Subscript) and not isinstance(expr.slice, (ast.Constant, ast.Slice))):
            return None
        base = dotted_name(expr.value)
        if base is None:
            return None
        parts = base.split(".")
        container = st.scope.lookup(parts[0])
        for attr in parts[1:]:
            container = container.attrs.get(attr) if isinstance(container, ModuleVal) else None
        if not (isinstance(container, ModuleVal) and container.is_real() and not container.meta
                and container.torch_class in CONTAINER_MODULES and _owns(container, origin)):
            return None
        return self._plan("module-copy", base, expr.value, region, st, region_uses=True)

    # -- a real module passed to a helper called in the region's block ----------

    def _call_site_module_plan(self, region, origin, st):
        # (the module handed over, or one of its parameters seen one by one: param_leaves.py)
        if region.with_node is None or region.func_node is st.scope.func_node:
            return None
        site = next((x for x in reversed(st.sites) if x.caller is region.func_node), None)
        if site is None:
            return None
        call, exprs, values = site.call, site.arg_exprs, site.arg_values
        if len(exprs) != len(values):
            return None  # the arguments are not the call's own (a `functools.partial` adds its bound ones)
        starred = {id(a.value) for a in getattr(call, "args", ()) if isinstance(a, ast.Starred)}
        starred |= {id(k.value) for k in getattr(call, "keywords", ()) if k.arg is None}
        for ex, val in zip(exprs, values):
            if ex is not None and id(ex) in starred:
                return None  # `fn(*args)`: the name is the whole tuple, not the module
            if ex is None or not isinstance(val, ModuleVal) or val.meta or origin not in val.real_rg() | _leaves_of(val):
                continue
            dotted = dotted_name(ex)
            if dotted is None:
                return None
            plan = self._plan("module-copy", dotted, ex, region, st, region_uses=True)
            plan.helper = dotted_name(call.func) or self._text(call.func)
            return plan
        return None

    # -- in the function whose code leaks -----------------------------------------

    def _function_plan(self, node, expr, value, region, st):
        func = st.scope.func_node
        if not isinstance(func, _FUNCTIONS) or expr is None:
            return None
        if region.with_node is not None and region.func_node is func:
            return None  # the region's own block: the facts' placement (it said no)
        if _in_place(node):
            return None  # `nn.init.xavier_uniform_(m.weight)`: a copy would take the change away from the value
        if isinstance(value, ModuleVal):
            if isinstance(node, ast.Call) and node.func is expr:
                kind = "module"
            else:
                kind = "module-copy"
        elif isinstance(value, TVal) and not isinstance(value, SeqVal):
            kind = "tensor"
        else:
            return None
        dotted = dotted_name(expr)
        if dotted is None and kind == "module" and _constant_subscripts(expr):
            dotted = self._text(expr)
            if "\n" in dotted or "..." in dotted:
                return None
        if dotted is None:
            return None
        target = node if kind == "module" else expr
        plan = self._plan(kind, dotted, target, region, st, func=func)
        plan.derived = isinstance(value, TVal) and value.derived
        return plan

    def _plan(self, kind, dotted, target, region, st, region_uses=False, func=None):
        from fakegrad_lint.analysis.leaks import FixPlan

        if region_uses:
            uses = region.uses.setdefault((kind, dotted), [])
        else:
            table = self.__dict__.setdefault("_function_uses", {})
            uses = table.setdefault((id(func), kind, dotted), [])
        if not any(u is target for u in uses):
            uses.append(target)
        return FixPlan(kind=kind, value=dotted, with_node=region.with_node if func is None else None,
                       item_index=region.item_index, mode_name=region.bound_name if func is None else None,
                       uses=uses, module_tree=self.tree, loop_modules=self.loop_modules,
                       conditional=region.mode.conditional,
                       placement="region" if func is None else "function", func_node=func)
