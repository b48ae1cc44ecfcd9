"""The analysis' output: leak records become :class:`~fakegrad_lint.analysis.leaks.Leak`
facts. A may record never becomes a fact; each fact carries its proof chain as
data (source, call into another module, region, leak, sink, with file and range)
and, when the conversion is expressible in the block that opened the region, a
:class:`~fakegrad_lint.analysis.leaks.FixPlan` for the fix code.
"""

from __future__ import annotations

import ast
import os

from fakegrad_lint.analysis.code_text import _constant_subscripts, _defined_in, _free_in
from fakegrad_lint.analysis.leaks import Leak, Route, Step, Verdict, describe_container
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.state import PseudoWith
from fakegrad_lint.analysis.torch_values import _owns
from fakegrad_lint.analysis.valueops import _carries
from fakegrad_lint.analysis.values import MaybeVal, ModuleVal, SeqVal, TVal


def _with_grad_reads(plan, lines):
    plan.grad_reads = list(lines)
    return plan


def _path_of(ctx):
    """The file of a project module context (None: the linted file)."""
    return ctx.mf.path if ctx is not None and getattr(ctx, "mf", None) is not None else None


def _reset_after_sink(rec):
    """(A record whose fake .grad write also met another sink keeps that sink's verdict.)"""
    return any(desc != ".grad assignment" for desc, _ in rec.sinks)


def _values_name(rec):
    site = rec.entry[0] if rec.entry else None
    if site is not None and isinstance(site[0], ast.Call):
        return dotted_name(site[0].func) or rec.value_text
    return rec.value_text


class FactsMixin:
    """Leak records -> proved Leak facts with traces and fix plans."""

    def _leaks(self) -> list[Leak]:
        best: dict = {}
        order = {Verdict.CRASH: 3, Verdict.HAZARD: 2, Verdict.FORWARD_ONLY: 1}
        for rec in self.records.values():
            if rec.may or rec.rg_unproved:
                continue  # a link is only possible: never a finding
            if rec.grad_written and rec.origin.fake_grad is not True and not _reset_after_sink(rec):
                continue  # the fake .grad written was reset (`zero_grad()`, `p.grad = None`) before the end
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
            writes = [line for desc, line in rec.sinks if desc == ".grad assignment"]
            if writes and leak.fix is not None:
                # the computed gradients are written to the real tensor whatever it is converted
                # to: the fix must move those writes too (fix/builders.py), or offer nothing
                leak.fix.grad_writes = writes
            kinds = self.__dict__.get("_with_kinds", {}).get((id(rec.region.with_node), rec.region.item_index))
            if kinds is not None and kinds[0] is rec.region.with_node and len(kinds[1]) > 1:
                leak.fix = None  # its `with` enters a fake mode on some runs only: a fix there would run on the others
            # one leak per place, route and value: `a @ b` leaks two values, two
            # findings (issue 14), each with its own fix
            key = (start[0], route, rec.value_text)  # (one line: the same message once)
            prev = best.get(key)
            if prev is None or order[verdict] > order[prev.verdict]:
                best[key] = leak
            handed = self._handover_leak(rec, leak) if rec.handover is not None and rec.file is None else None
            if handed is not None:
                hkey = (handed.start[0], route, handed.value)
                prev = best.get(hkey)
                if prev is None or order[verdict] > order[prev.verdict]:
                    best[hkey] = handed
        return sorted(best.values(), key=lambda l: l.start)

    def _handover_leak(self, rec, leak):
        """The same leak reported also where the linted file's call hands the real value to
        the function that does the op (``helper(weights)``, ``scorer.score(emb.table)``,
        ``teacher(x)`` running ``__call__``), with that call in its chain; no fix of its own
        (the op's finding carries it)."""
        call, expr = rec.handover
        start = self._main_pos.char_pos(call.lineno, call.col_offset)
        if start == leak.start:
            return None
        end = self._main_pos.char_pos(call.end_lineno, call.end_col_offset)
        callee = dotted_name(call.func) or self._main_text(call.func)
        step = Step("call", f"the real value `{self._main_text(expr)}` is handed to `{callee}` here", None, start, end)
        at = next((i for i, x in enumerate(leak.trace) if x.kind == "leak"), len(leak.trace))
        trace = tuple(leak.trace[:at]) + (step,) + tuple(leak.trace[at:])
        from fakegrad_lint.analysis.leaks import FixPlan

        value = self._main_text(expr)
        why = f"`{callee}` does the op on line {leak.start[0]}, reported there (with a fix when one is proved)"
        fix = FixPlan(kind="none", value=value, with_node=None, item_index=-1, mode_name=None, uses=[],
                      module_tree=self.tree, reason=why)
        return Leak(verdict=leak.verdict, route=leak.route, start=start, end=end, value=value,
                    value_kind=leak.value_kind, mode=leak.mode, mode_line=leak.mode_line, sink=leak.sink,
                    sink_line=leak.sink_line, fix=fix, trace=trace, mode_path=leak.mode_path, sink_path=leak.sink_path)

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
            for ex, val in zip(exprs, values):
                if ex is not None and _carries([val], rec.origin):
                    return call, self._main_text(ex)  # (a submodule of `model`, an attribute of `state`)
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
        if rec.rg_proof is not None and src is not None:
            # an opaque module: real storage from `to_empty`, requires-grad proved by the sink
            pdesc, pnode = rec.rg_proof
            src = line_step("source", f"module `{o.name}` given real storage here; its parameters require grad: "
                            f"the `{pdesc}` at line {pnode.lineno} would raise otherwise", o.line, o.file)
        if src is not None:
            steps.append(src)
        if rec.file is not None:
            steps.append(node_step("call", f"the real value enters `{_values_name(rec)}` ({rec.file.name}) here", reported, None))
        region = rec.region
        # (a mode entered strict but patched to allow non-fake inputs: what the op saw)
        effective = True if region.allow is False and not rec.crash else region.allow
        allow = "allows non-fake inputs" if effective else "strict: a real input raises" if effective is False else "allow_non_fake_inputs unknown"
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

    def _fix_plan(self, node, expr, value, origin, region, st):
        """How to convert the real value at the region's boundary, when that is
        expressible in the ``with`` block that opened the region."""
        if region.with_node is None:
            return _traced_fix_plan(self, node, expr, value, region, st)
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
            call, exprs, values = site.call, site.arg_exprs, site.arg_values
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
            if kind == "module" and _deepcopy_of(node, expr):
                kind = "module-deepcopy"  # `copy.deepcopy(model)` in a strict region: copy it as fakes
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
        target = node if kind in ("module", "module-deepcopy") else (base if kind == "container" else expr)
        if kind in ("module-copy", "module-deepcopy") and dotted is None:
            return None
        uses = region.uses.setdefault((kind, dotted), [])
        if not any(u is target for u in uses):
            uses.append(target)
        contents = describe_container(st.scope.lookup(dotted)) if kind == "container" and "." not in dotted \
            and region.func_node is st.scope.func_node else None
        return FixPlan(kind=kind, value=dotted, with_node=region.with_node, item_index=region.item_index,
                       mode_name=region.bound_name, uses=uses, module_tree=self.tree, loop_modules=self.loop_modules,
                       derived=isinstance(value, TVal) and value.derived, conditional=region.mode.conditional,
                       contents=contents)

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

    def _text(self, expr):
        seg = self.pos.segment(expr) if hasattr(expr, "lineno") else None
        if not seg:
            return "value"
        seg = " ".join(seg.split())
        return seg if len(seg) <= 40 else seg[:37] + "..."


def _deepcopy_of(node, expr) -> bool:
    """Is ``node`` the call ``copy.deepcopy(expr)`` (the copy a fix can make fake)?"""
    return isinstance(node, ast.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "deepcopy" \
        and len(node.args) == 1 and node.args[0] is expr and not node.keywords


def _traced_fix_plan(an, node, expr, value, region, st):
    """A real value used in a function traced by ``make_fx(f, tracing_mode="fake")``:
    convert it at the op with the tracer's own mode, named through a parameter of ``f``
    that holds one of the traced (fake) inputs (``x.fake_mode``). The builder
    (``fix/traced.py``) checks that ``f`` is only traced."""
    fn = st.scope.func_node
    if not (region.mode.desc or "").startswith("make_fx(") or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if expr is None or dotted_name(expr) is None or getattr(value, "meta", False):
        return None
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    name = next((p for p in params if isinstance(v := st.scope.vars.get(p), TVal) and v.mode is region.mode
                 and not v.origins), None)
    if name is None or any(dotted_name(t) == name for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign))
                           for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
        return None
    from fakegrad_lint.analysis.leaks import FixPlan

    if isinstance(value, ModuleVal):
        if not (isinstance(node, ast.Call) and node.func is expr):
            return None
        kind = "traced-module"
    elif isinstance(value, TVal):
        kind = "traced-tensor"
    else:
        return None
    return FixPlan(kind=kind, value=dotted_name(expr), with_node=fn, item_index=-1, mode_name=f"{name}.fake_mode",
                   uses=[node if kind == "traced-module" else expr], module_tree=an.tree,
                   derived=isinstance(value, TVal) and value.derived)


def _op_mode_fix_plan(an, node, expr, value, region, st):
    """The region's ``with`` block is not where the leak is (a generator that yields inside
    its region, a mode entered by a helper): convert the real value at the op with the mode
    of a fake operand of that op, named by a plain name (``model(x)`` ->
    ``functional_call(model, {... x.fake_mode.from_tensor(t) ...}, (x,))``). Allow modes
    only: under a strict mode the op's other real inputs raise too."""
    if region.allow is not True or expr is None or dotted_name(expr) is None or getattr(value, "meta", False):
        return None
    if isinstance(node, ast.Call):
        operands = [*node.args, *(kw.value for kw in node.keywords)]
        if isinstance(node.func, ast.Attribute):
            operands.append(node.func.value)
    elif isinstance(node, ast.BinOp):
        operands = [node.left, node.right]
    else:
        return None
    name = None
    for op in operands:
        v = st.scope.lookup(op.id) if isinstance(op, ast.Name) and op is not expr else None
        if isinstance(v, TVal) and v.mode is region.mode and not v.origins and not v.may_fake:
            name = op.id
            break
    if name is None:
        return None
    from fakegrad_lint.analysis.leaks import FixPlan

    if isinstance(value, ModuleVal):
        if node.func is not expr:
            return None
        kind = "op-module"
    elif isinstance(value, TVal):
        kind = "op-tensor"
    else:
        return None
    return FixPlan(kind=kind, value=dotted_name(expr), with_node=st.scope.func_node, item_index=-1,
                   mode_name=f"{name}.fake_mode", uses=[node if kind == "op-module" else expr], module_tree=an.tree,
                   derived=isinstance(value, TVal) and value.derived)
