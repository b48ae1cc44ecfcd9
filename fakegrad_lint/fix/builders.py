"""Fixes toward shape-only inference: convert real values at the region boundary.

The analysis attaches a :class:`FixPlan` to a leak when the region was opened by a
``with`` block (or ``mode.__enter__()`` / ``ExitStack.enter_context``) in the same
function, and the real value is named there by a plain name, a ``self.``
attribute, or a container of them. ``FixPlan.uses`` lists every expression of the
block through which that value leaks; only those are rewritten, so reads that
never reach a fake op (``history.append(x)``, ``x.shape``) keep the real value.

- tensor: bind the mode if needed (``with FakeTensorMode(...) as fake_mode:``),
  hoist ``x_fake = fake_mode.from_tensor(x)`` to the top of the block and use it
  where ``x`` leaked. Shapes in the region are unchanged and the real tensor is
  never touched: **safe**. (A non-leaf is copied as a fake leaf of its own:
  ``from_tensor(x).detach().requires_grad_()``.)
- container: the same with a generated comprehension over its tensors (``fix/containers.py``).
- module: ``model(args)`` becomes ``torch.func.functional_call(model, state,
  args)`` over ``from_tensor`` copies of its parameters and buffers, hoisted once.
  The module and its real parameters are untouched and every shape is the same,
  but gradients and in-place buffer updates land on the fake copies and the call
  skips ``model.__call__`` hooks: **unsafe**.
- a method other than forward, a loop over a module, a region that reads the gradients
  or calls the module's own methods, ``copy.deepcopy(model)`` under a strict mode: a fake
  deep copy over a ``from_tensor`` memo (``fix/modules.py``, where the forms are measured).
- a function traced by ``make_fx``: converted at the op with the tracer's mode (``fix/traced.py``).
- leaked fake (FGL003): the real operand becomes ``f.fake_mode.from_tensor(w)``,
  made by the leaked tensor's own mode: **unsafe** (which side should be real is
  the author's call).

When the code reads the real gradient later (``x.grad``, ``torch.autograd.grad``
outside the block) the conversion would change what it reads, so the fix is
display-only. When the mode was picked by a conditional (``FakeTensorMode() if
FLAG else nullcontext()``) the fix is right for the current flag only: unsafe.
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager
from dataclasses import replace

import libcst as cst

from fakegrad_lint.analysis.leaks import FixPlan
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.positions import PositionMap
from fakegrad_lint.findings import Applicability, Fix
from fakegrad_lint.fix import containers, grads, modules, probes, traced
from fakegrad_lint.fix.cst import CstError, CstFile, Ops


class NoFix(Exception):
    """A planned fix that cannot be built; the message says why (``no fix: ...``)."""


#: The path of the file whose text a fix is built for (set by :func:`for_file`), for the
#: checks that read the modules it imports (``modules.recomputes_forward``).
_PATH: list = [None]


@contextmanager
def for_file(path: str | None):
    """The fixes built in this block are for the file at ``path`` (its project's modules
    are read for what the fix form depends on)."""
    saved, _PATH[0] = _PATH[0], path
    try:
        yield
    finally:
        _PATH[0] = saved


def build_fix(leak, source: str) -> Fix | None:
    """The fix of ``leak``'s plan, built as libcst operations (:mod:`fakegrad_lint.fix.cst`)
    whose transformed module gives the edits; :class:`NoFix` says why there is none."""
    try:
        return _build_fix(leak, source)
    except CstError as exc:
        raise NoFix(str(exc)) from None


class _Nodes:
    """The CST nodes behind the analysis' ``ast`` nodes (one libcst parse per file)."""

    def __init__(self, source: str):
        self.pos = PositionMap(source)
        self.file = CstFile.of(source)

    def ops(self) -> Ops:
        return Ops(self.file)

    def start(self, node) -> tuple[int, int]:
        return self.pos.char_pos(node.lineno, node.col_offset)

    def expr(self, node):
        return self.file.node_at(self.start(node), self.pos.char_pos(node.end_lineno, node.end_col_offset))

    def stmt(self, node):
        return self.file.statement_at(self.start(node))

    def with_stmt(self, w):
        node = self.file.statement_at(self.start(w))
        if not isinstance(node, cst.With):
            raise CstError("the region's with statement is not found")
        return node

    def taken(self, w) -> set:
        """Names a new binding at the region could clash with: libcst's scope of the
        region's first statement (not the file: another function's ``fake_mode`` is free)."""
        return self.file.names_taken(self.stmt(w.body[0]))


def _build_fix(leak, source: str) -> Fix | None:
    plan: FixPlan = leak.fix
    if plan.kind == "none":
        raise NoFix(plan.reason or "no fix is known for this shape")
    if plan.kind.startswith("module"):
        method = _bound_method_source(source, plan.value)
        if method is not None:
            raise NoFix(f"`{plan.value}` is bound to `{method}` in this file, a bound method at run time, "
                        f"not a module: a module's copy cannot stand in for it")
    if plan.grad_writes and (plan.placement != "region" or plan.kind.startswith(("leaked-", "traced-", "op-"))):
        raise NoFix(f"line {plan.grad_writes[0]} writes the gradients computed in the region to a real "
                    f"tensor's `.grad`, which a fix here cannot move")
    if plan.kind.startswith("leaked-"):
        reason = modules.leaked_refusal(leak, plan)
        if reason is not None:
            raise NoFix(reason)
        guarded = _operand_mode_guard(leak, plan, source)
        if guarded is not None:
            return guarded
        nodes = _Nodes(source)
        fix = _leaked_fix(plan, nodes)
        real = probes.real_reads(plan.module_tree, plan.grad_reads)
        read = next(iter(sorted(real)), None)
        redirected, blocked = _leaked_grad_reads(plan, real)
        if read is None and blocked is not None:
            read = blocked  # a read of its gradient right after the op that a copy would change
        if redirected:
            # `layer.weight.grad` read right after: it read the FakeTensor the op left; it reads
            # the same fake copy's (`from_tensor` memoizes: the copy the op used)
            fix = _leaked_fix(plan, nodes, redirected)
            return _with_probe_note(
                Fix(f"{fix.message}, and read that copy's gradient on line{'s' if len(redirected) > 1 else ''} "
                    f"{', '.join(str(n.lineno) for n in redirected)}", fix.applicability, fix.edits),
                plan.module_tree, plan.grad_reads)
        if read is not None:
            # the real value's gradient is read later: with a fake operand it has none
            return Fix(f"{fix.message} (not applied: line {read} reads the real gradient of `{plan.value}`)",
                       Applicability.DISPLAY_ONLY, fix.edits)
        return _with_probe_note(fix, plan.module_tree, plan.grad_reads)
    if plan.kind.startswith(("traced-", "op-")):
        if "symbolic" in (leak.mode or ""):
            plan = replace(plan, static_shapes=True)
        guarded = _operand_mode_guard(leak, plan, source)
        if guarded is not None:
            return guarded
        try:
            fix = traced.build(plan, _Nodes(source), _leaked_fix)
        except traced.NotTracedOnly as exc:
            raise NoFix(str(exc)) from None
        reads = probes.real_reads(plan.module_tree, plan.grad_reads) if plan.kind.startswith("op-") else []
        read = next(iter(sorted(reads)), None)
        if read is not None:
            return Fix(f"{fix.message} (not applied: line {read} reads the real gradient of `{plan.value}`)",
                       Applicability.DISPLAY_ONLY, fix.edits)
        return _with_probe_note(fix, plan.module_tree, plan.grad_reads if plan.kind.startswith("op-") else [])
    if plan.placement == "function":
        from fakegrad_lint.fix.helpers import build_function_fix  # the mode is found at run time (fix/helpers.py)

        return build_function_fix(leak, source)
    w = plan.with_node
    if not w.body or not plan.uses:
        raise NoFix("the region has no statement to convert the value in")
    header_end = getattr(w, "header_end", None) or max(
        (it.optional_vars or it.context_expr).end_lineno for it in w.items
    )
    one_line = w.body[0].lineno <= header_end
    if one_line and (not isinstance(w, ast.With) or w.body[-1].end_lineno != header_end):
        raise NoFix("the region's body shares its line with other code")
    # every expression the fix rewrites in the block: the hoist goes right above the
    # statement with the first of them (after whatever the block does to the value first)
    rewritten = list(plan.uses) if plan.kind in ("module", "module-deepcopy") else \
        _with_gradient_reads(plan.uses, w.body, plan.value)
    first_stmt = _first_use_stmt(w, rewritten)
    if _rebound_before_use(w, plan, first_stmt.lineno if not one_line else 0) and not one_line:
        loop_root = _loop_module(w, plan)
        if loop_root is not None:
            # a loop variable drawn from a real module (`for layer in model.children()`):
            # the loop draws from a fake copy of the module instead
            plan = replace(plan, kind="module-copy", value=dotted_name(loop_root) or "", uses=[loop_root])
            rewritten = [loop_root]
            first_stmt = _first_use_stmt(w, rewritten)
    copy_all, after_roots, later, grads_converted = False, None, [], False
    if plan.kind == "module" and not one_line and not modules.converts(w.body, plan.value) and \
            (_reads_grads_in_region_only(leak, plan, w) or modules.handed_on(w.body, plan.value) or
                                                   modules.uses_own_methods(w.body, plan.value, plan.uses)):
        # the region reads the gradients it makes (`p.grad` for `p` in `model.parameters()`):
        # the region runs on a fake deep copy, every read of the module included
        loads = modules.module_loads(w.body, plan.value, 0)
        if loads:
            made = {id(n) for _, stmt in _copy_hoists(w, plan.value) for n in ast.walk(stmt)}
            loads = [n for n in loads if id(n) not in made]  # an earlier fix's copy reads the real one
        after_roots = modules.grad_read_roots(_following(plan.module_tree, w), plan.value, modules.made_in(w.body))
        if loads and after_roots is not None:
            loads = loads + after_roots  # the reads of the gradients after the block read the copy's
            plan, rewritten, copy_all = replace(plan, kind="module-copy", uses=loads), loads, True
            first_stmt = _first_use_stmt(w, rewritten)
    block, block_header = w, header_end  # where the copies are hoisted
    if _rebound_before_use(w, plan, first_stmt.lineno if not one_line else 0):
        # the name means something else by the time it leaks; a `for` loop's own variable
        # (`for key, model in models.items()`) that the body does not rebind before it leaks
        # is converted in the loop's body, each time round, right above the statement with
        # the first use
        loop = None if one_line or plan.kind not in ("module", "tensor") else _binding_loop(w, plan)
        if loop is None:
            raise NoFix(f"`{plan.value}` is rebound in the region before it leaks (a loop or comprehension "
                        f"variable, an assignment)")
        block, block_header = _LoopBody(loop.body), max(loop.target.end_lineno, loop.iter.end_lineno)
        first_stmt = _first_use_stmt(block, rewritten)
        if _rebound_before_use(block, plan, first_stmt.lineno) or not all(
                loop.body[0].lineno <= n.lineno and n.end_lineno <= loop.body[-1].end_lineno for n in rewritten):
            raise NoFix(f"`{plan.value}` is rebound in the region before it leaks (a loop or comprehension "
                        f"variable, an assignment)")
    if plan.kind in ("module", "module-copy") and not copy_all and not modules.converts(w.body, plan.value):
        from fakegrad_lint.fix.helpers import grad_read_copy  # a copy whose gradients the code reads

        plan = grad_read_copy(plan, w, _following(plan.module_tree, w), leak) or plan
    if plan.kind == "module" and modules.runs_threads(plan.module_tree):
        # `functional_call` swaps the fakes into the module object itself, where another thread
        # running the same module sees them (FakeTensorDeviceMismatchError, another thread's
        # mode): a fake copy of the module per run of the region
        plan = replace(plan, kind="module-copy", uses=modules.call_receivers(plan.uses, plan.value))
    elif plan.kind == "module" and modules.recomputes_forward(source, _PATH[0]):
        # activation checkpointing reruns the forward in the backward, after `functional_call`
        # has put the real tensors back: a fake copy keeps its fakes for the recompute
        plan = replace(plan, kind="module-copy", uses=modules.call_receivers(plan.uses, plan.value))
    nodes = _Nodes(source)
    pos = nodes.pos
    taken = nodes.taken(w)
    ops = nodes.ops()

    mode = plan.mode_name
    if mode is None and getattr(w, "bind_stmt", None) is not None:
        # `stack.enter_context(FakeTensorMode(...))` as a statement: bind its result
        mode = _unique("fake_mode", taken)
        ops.bind(nodes.stmt(w.bind_stmt), mode)
    elif mode is None:
        if not w.items:
            raise NoFix("the region's mode has no name to call from_tensor on")
        item = w.items[plan.item_index]
        if item.optional_vars is not None:
            raise NoFix("the mode is bound to a target that is not a plain name")
        mode = _unique("fake_mode", taken)
        ops.as_name(nodes.expr(item.context_expr), mode)

    if one_line:
        # `with m: a; b` -> an indented block: the hoisted copy, then `a; b`
        indent = _indent_of(pos.lines[w.lineno - 1]) + nodes.file.indent
        with_node = nodes.with_stmt(w)

        def hoist(stmt: str) -> None:
            ops.hoist_one_line(with_node, stmt, indent)
    else:
        _, indent = _hoist_point(block, pos, block_header, first_stmt)
        before = nodes.stmt(first_stmt)

        def hoist(stmt: str) -> None:
            ops.insert_before(before, stmt, indent)
    base = re.sub(r"\W+", "_", plan.value.rsplit(".", 1)[-1]).strip("_") or "value"
    base = base.lower() if base.isupper() else base

    if plan.kind in ("module-copy", "module-deepcopy"):
        if _binds(plan.module_tree, "id"):  # (a read of the builtin, an earlier fix's memo, is no clash)
            raise NoFix("`id` names something else in this scope")
        names = _bound_imports(plan.module_tree, _first_line(w))
        copy_name = names.get(("copy", None))
        wanted = []
        if copy_name is None and plan.kind == "module-copy":
            if "copy" in taken:
                raise NoFix("`copy` names something else in this scope")
            copy_name = "copy"
            wanted.append(("copy", None))
        if plan.kind == "module-deepcopy":
            layout = _Layout(pos)
            for call in plan.uses:
                line = pos.lines[call.lineno - 1]
                new_call = modules.fake_copy(pos.segment(call.func), plan.value, mode)
                if call.lineno == call.end_lineno:
                    new_call = modules.wrapped_call(new_call, line, len(pos.segment(call)), _indent_of(line),
                                                    layout.unit, layout.limit)
                ops.replace(nodes.expr(call), new_call)
            applicability = Applicability.SAFE
            message = (f"Copy `{plan.value}` as fakes: `copy.deepcopy` with its parameters and buffers "
                       f"replaced by `{mode}.from_tensor` copies")
        else:
            hoisted = _copy_hoists(w, plan.value)
            before_use = [name for name, stmt in hoisted if stmt.end_lineno < first_stmt.lineno or stmt is first_stmt]
            each = not copy_all and (modules.iterated(w.body, plan.uses[0]) or plan.contents == "modules")
            # a module handed on to a helper (`self._run_batch(module, ...)`) may have its own methods
            # called there, which record into its public attributes (`self.trainer.logged`): share them too
            share = modules.method_receiver(w.body, plan.uses) or modules.handed_on(w.body, plan.value, to_helper=True)
            if before_use and not each:
                fake = before_use[0]  # the copy an earlier fix made above (another finding of the module)
            else:
                fake = _unique(f"{base}_fake", taken)
                layout = _Layout(pos)
                hoist(modules.wrapped(f"{fake} = ", modules.fake_copy(f"{copy_name}.deepcopy", plan.value, mode,
                                                                      each, share), indent, layout.unit, layout.limit))
            for node in plan.uses:
                ops.replace(nodes.expr(node), fake)
            applicability = Applicability.UNSAFE
            form = f"`copy.deepcopy` over `{mode}.from_tensor` copies of its parameters and buffers"
            if share:
                form += (", sharing its public attributes with the real module, so what its methods record "
                         "there stays visible")
            if plan.grad_redirect:
                message = (f"Run `{plan.value}` as a fake copy ({form}), and read the copy's gradients where the "
                           f"code reads `{plan.value}`'s: gradients and state changes land on the copy")
            elif plan.helper:
                message = (f"Pass a fake copy of `{plan.value}` ({form}) to `{plan.helper}` in the region: "
                           f"`{plan.helper}` is left as it is for its other callers; gradients and state changes "
                           f"land on the copy")
            else:
                message = (f"Run `{plan.value}` as a fake copy ({form}): gradients and state changes land on "
                           f"the copy")
        for module, obj in wanted:
            ops.add_import(module, obj)
    elif plan.kind == "module":
        torch_name, needs_import = _torch_module_name(plan.module_tree, pos, _first_line(w))
        rhs = (f"{{name: {mode}.from_tensor(t) for name, t in "
               f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]}}")
        existing = _existing_hoist(block, pos, rhs)
        state = existing or _unique(f"{base}_fake_state", taken)
        if not existing:
            stmt = f"{state} = {rhs}"
            layout = _Layout(pos)
            if len(indent) + len(stmt) > layout.limit and not one_line:
                u = layout.unit
                pairs = f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]"
                if len(indent + u) + len(f"for name, t in {pairs}") > layout.limit:
                    i2 = indent + u + u
                    pairs = (f"[\n{i2}*{plan.value}.named_parameters(),\n{i2}*{plan.value}.named_buffers(),"
                             f"\n{indent}{u}]")
                stmt = (f"{state} = {{\n{indent}{u}name: {mode}.from_tensor(t)\n{indent}{u}for name, t in "
                        f"{pairs}\n{indent}}}")
            hoist(stmt)
        for call in plan.uses:
            new_call = _functional_call(call, plan.value, state, torch_name, pos, taken)
            if new_call is None:
                raise NoFix("a positional argument follows a keyword argument in the module call")
            ops.replace(nodes.expr(call), new_call)
        if needs_import:
            ops.add_import("torch")
        applicability = Applicability.UNSAFE
        message = f"Call `{plan.value}` with `torch.func.functional_call` over fake copies of its parameters and buffers"
        if leak.sink == "torch.autograd.grad":
            grads_converted = _convert_grad_inputs(plan, w, mode, ops, nodes, leak)
            if grads_converted:
                message += (", and take `torch.autograd.grad` with respect to those copies "
                            f"(`{mode}.from_tensor` gives the same copy of each parameter)")
    else:
        needs_import = False
        if plan.kind == "container":
            torch_name, needs_import = _torch_module_name(plan.module_tree, pos, _first_line(w))
            try:
                rhs, reads_torch = containers.conversion(plan, mode, torch_name, taken)
            except containers.NoConversion as exc:
                raise NoFix(str(exc)) from None
            needs_import = needs_import and reads_torch
        elif plan.derived:
            # from_tensor of a non-leaf keeps a fake history that backward cannot walk:
            # make the fake copy a leaf of its own
            rhs = f"{mode}.from_tensor({plan.value}).detach().requires_grad_()"
        else:
            rhs = f"{mode}.from_tensor({plan.value})"
        existing = _existing_hoist(w, pos, rhs)
        fake = existing or _unique(f"{base}_fake", taken)
        if not existing:
            hoist(f"{fake} = {rhs}")
        later = _with_gradient_reads([], _following(plan.module_tree, w), plan.value)
        for node in rewritten:
            ops.replace(nodes.expr(node), fake)
        if needs_import:
            ops.add_import("torch")
        applicability = Applicability.SAFE
        message = f"Convert `{plan.value}` at the boundary with `{mode}.from_tensor`"

    if plan.grad_writes:
        _redirect_grad_writes(plan, w, mode, ops, nodes)
        message += (f"; the gradients it computes are written to the `{mode}.from_tensor` copies "
                    f"(the same fakes the region used), not to the real tensors' `.grad`")
        applicability = min(applicability, Applicability.UNSAFE)  # a write after the block changes
    body_lines = (w.body[0].lineno, w.body[-1].end_lineno)
    probed = []  # lines that only ask `type()` of a real gradient the fix empties
    if plan.grad_redirect:
        return Fix(message, applicability, ops.edits())
    # `torch.autograd.grad` in the helper the copy is handed to, over that helper's own
    # parameter: the copy's parameters, the fakes the graph holds (`fix/grads.py`)
    helper_grads = leak.sink == "torch.autograd.grad" and plan.kind == "module-copy" and \
        grads.helper_grads_over_copy(plan, w, _following(plan.module_tree, w))
    if plan.kind in ("module", "module-copy"):
        from fakegrad_lint.fix.helpers import parameter_grad_read_elsewhere

        read = None if copy_all else (
            _module_grad_read(list(w.body) + _following(plan.module_tree, w), plan.value, plan.module_tree, probed)
            or parameter_grad_read_elsewhere(plan.module_tree, w, probed))
        if read is not None:
            # the gradients land on the fake copies: what the code reads there changes
            return Fix(f"{message} (not applied: line {read} reads the gradients of `{plan.value}`'s parameters)",
                       Applicability.DISPLAY_ONLY, ops.edits())
        if leak.sink == "torch.autograd.grad" and not grads_converted and not helper_grads:
            # `autograd.grad(loss, inputs)` may differentiate with respect to the real
            # parameters, which the fixed graph no longer holds (a RuntimeError at run time)
            return Fix(f"{message} (not applied: `torch.autograd.grad` on line {leak.sink_line} may differentiate "
                       f"with respect to `{plan.value}`'s real parameters)",
                       Applicability.DISPLAY_ONLY, ops.edits())
    if copy_all:
        # every read of the gradients, in the block and after it, reads the copy's
        if after_roots:
            message += ", and read the copy's gradients after the block"
        return Fix(message, applicability, ops.edits())
    outside_grad = [ln for ln in plan.grad_reads if not body_lines[0] <= ln <= body_lines[1]]
    # `type(x.grad)` after the block sees `NoneType` after the fix: no reason to hold it back
    probed += probes.probe_lines(plan.module_tree, outside_grad)
    outside_grad = probes.real_reads(plan.module_tree, outside_grad)
    if later and plan.kind not in ("module", "module-copy"):
        # `layer.weight.grad` read after the block (the analysis may not know it for a
        # module's parameter): it read the FakeTensor the region left; it must read the copy's
        outside_grad = sorted(set(outside_grad) | {n.lineno for n in later})
        if not _only_grad_reads_until(_following(plan.module_tree, w), plan.value, later):
            return Fix(f"{message} (not applied: line {outside_grad[0]} reads the real gradient of "
                       f"`{plan.value}` after another use of it)", Applicability.DISPLAY_ONLY, ops.edits())
    outside_sink = leak.sink == "torch.autograd.grad" and leak.sink_line is not None and not helper_grads and not (
        body_lines[0] <= leak.sink_line <= body_lines[1]
    )
    if (outside_grad or outside_sink) and plan.kind not in ("module", "module-copy"):
        # the code reads the gradient after the block: it read a FakeTensor before the fix,
        # it reads the fake copy's gradient (same shapes) after it; later real reads change
        covered = {n.lineno for n in later}
        if later and all(ln in covered for ln in outside_grad) and (not outside_sink or leak.sink_line in covered):
            for n in later:
                ops.replace(nodes.expr(n), fake)
            return Fix(f"{message}, and read the fake copy's gradient after the block",
                       Applicability.UNSAFE, ops.edits())
    if outside_grad or outside_sink:
        where = outside_grad[0] if outside_grad else leak.sink_line
        return Fix(f"{message} (not applied: line {where} reads the real gradient of `{plan.value}`)",
                   Applicability.DISPLAY_ONLY, ops.edits())
    if plan.conditional:
        applicability = Applicability.UNSAFE
        message += " (right for the current value of the condition that picks the mode)"
    return _with_probe_note(Fix(message, applicability, ops.edits()), plan.module_tree, probed)


# attributes of a module that are its methods, not modules (`orig = module.forward`)
_MODULE_METHOD_ATTRS = frozenset({"forward", "__call__", "_call_impl", "_wrapped_call_impl"})


def _bound_method_source(source: str, value: str | None) -> str | None:
    """The text of an assignment ``value = x.forward`` (or another method of a module) in
    ``source``, when ``value`` is a plain name bound so anywhere in the file; else None."""
    if not value or not value.isidentifier() or not any(f".{a}" in source for a in _MODULE_METHOD_ATTRS):
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Attribute) \
                and node.value.attr in _MODULE_METHOD_ATTRS:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == value for t in targets):
                return ast.unparse(node.value)
    return None


def _with_probe_note(fix: Fix, tree, lines) -> Fix:
    """``fix``, unsafe at most and saying so, when ``lines`` include reads that only ask
    ``type()`` of the real gradient (``fix/probes.py``): they see ``NoneType`` after it."""
    lines = sorted(set(probes.probe_lines(tree, lines)))
    if not lines:
        return fix
    where = ", ".join(str(ln) for ln in lines[:3])
    return Fix(f"{fix.message}; line{'s' if len(lines) > 1 else ''} {where} then see{'' if len(lines) > 1 else 's'} "
               f"`type(...grad)` of the real value as `NoneType` (no gradient), not the FakeTensor",
               min(fix.applicability, Applicability.UNSAFE), fix.edits)


def _convert_grad_inputs(plan, w, mode, ops, nodes, leak) -> bool:
    """``torch.autograd.grad(loss, params)`` in the region over the module's real
    parameters: the inputs become the fake copies the fixed graph holds (``fix/grads.py``).
    True when every such call of the region (the sink's among them) is converted; nothing
    is converted otherwise."""
    from fakegrad_lint.fix import grads

    lines = (w.body[0].lineno, w.body[-1].end_lineno)
    if leak.sink_line is None or not lines[0] <= leak.sink_line <= lines[1]:
        return False
    if any(call.lineno > lines[1] for call, _ in grads.autograd_grad_calls(_following(plan.module_tree, w))):
        return False  # a gradient after the block, over the graph the region made
    fresh = modules.made_in(w.body)
    before = _scope_body(plan.module_tree, w)
    edits, sink_seen = [], False
    for call, inputs in grads.autograd_grad_calls(w.body):
        if inputs is None:
            return False
        text = grads.converted_inputs(inputs, plan.value, mode, before, fresh, nodes.pos.segment,
                                      plan.param_paths)
        if text is None:
            return False
        sink_seen |= call.lineno <= leak.sink_line <= call.end_lineno
        if text:
            edits.append((inputs, text))
    if not sink_seen:
        return False
    layout = _Layout(nodes.pos)
    calls = {id(inputs): call for call, inputs in grads.autograd_grad_calls(w.body)}
    for node, text in edits:
        call = calls[id(node)]
        line = nodes.pos.lines[call.lineno - 1]
        if call.lineno != call.end_lineno or len(line) - len(nodes.pos.segment(node)) + len(text) <= layout.limit:
            ops.replace(nodes.expr(node), text)
            continue
        # the call no longer fits the file's line length: one argument a line
        args = [text if a is node else nodes.pos.segment(a) for a in call.args]
        args += [(f"{k.arg}=" if k.arg else "**") + (text if k.value is node else nodes.pos.segment(k.value))
                 for k in call.keywords]
        indent = _indent_of(line)
        inner = indent + layout.unit
        ops.replace(nodes.expr(call), f"{nodes.pos.segment(call.func)}(\n" + "".join(f"{inner}{a},\n" for a in args)
                    + f"{indent})")
    return True


def _copy_hoists(w, value: str) -> list:
    """``[(name, statement)]``: the fake copies of ``value`` an earlier fix hoisted into the
    block (``name = copy.deepcopy(value, {...})``)."""
    out = []
    for stmt in w.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
                isinstance(stmt.value, ast.Call) and (dotted_name(stmt.value.func) or "").endswith("deepcopy") and \
                len(stmt.value.args) == 2 and dotted_name(stmt.value.args[0]) == value and \
                isinstance(stmt.value.args[1], (ast.Dict, ast.DictComp)):
            out.append((stmt.targets[0].id, stmt))
    return out


def _binds(tree, name: str) -> bool:
    """Does the file bind ``name`` anywhere (an assignment, a parameter, a def, an import)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name for a in node.names):
            return True
    return False


def _only_grad_reads_until(stmts, value: str, reads) -> bool:
    """Is every load of ``value`` in ``stmts`` up to the last of ``reads`` one of them
    (no real use in between whose gradient the reads would then see)?"""
    last = max(n.lineno for n in reads)
    ids = {id(sub) for n in reads for sub in ast.walk(n)}
    parts = value.split(".")
    names = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}  # `layer.weight`: `layer` too
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Name, ast.Attribute)) and node.lineno <= last and \
                    dotted_name(node) in names and id(node) not in ids:
                return False
    return True


def _redirect_grad_writes(plan, w, mode, ops, nodes) -> None:
    """``p.grad = g`` (``g`` computed in the region: ``torch.func.grad``, ``vmap``) after
    the block, in the same function: ``{mode}.from_tensor(p).grad = g``. ``from_tensor``
    memoizes, so the write lands on the fake copy the region used (or a fresh fake),
    never on the real tensor. :class:`NoFix` for a write elsewhere."""
    stmts = list(w.body) + _following(plan.module_tree, w)
    found = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(node, ast.Assign) and node.lineno in plan.grad_writes:
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and t.attr == "grad":
                        found.setdefault(node.lineno, []).append(t.value)
    missing = [ln for ln in plan.grad_writes if ln not in found]
    helper_calls = _helper_grad_writes(plan, stmts, missing, nodes, mode, ops) if missing else None
    if missing and helper_calls is None:
        raise NoFix(f"line {missing[0]} writes the gradients computed in the region to a real tensor's `.grad` "
                    f"outside the code that runs right after the region")
    for targets in found.values():
        for target in targets:
            text = nodes.pos.segment(target)
            if text.startswith(f"{mode}.from_tensor("):
                continue
            ops.replace(nodes.expr(target), f"{mode}.from_tensor({text})")


def _helper_grad_writes(plan, stmts, lines, nodes, mode, ops):
    """The writes of ``lines`` done by a helper of this file that the block, or the code
    right after it, calls (``apply_grads(model, grads)`` whose ``p.grad = grads[name]``
    runs over ``model.named_parameters()``, or ``set_grad(w, g)`` with ``w.grad = g``): at
    that call the argument becomes the memoized fake copy (a module: ``copy.deepcopy``
    over the ``from_tensor`` memo; a tensor: ``{mode}.from_tensor(w)``), so the helper,
    left as it is for its other callers, writes to the fakes the region used. None when a
    write is not one of those."""
    defs = {d.name: d for d in plan.module_tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    edits = {}
    for line in lines:
        fn = next((d for d in defs.values() if d.lineno <= line <= d.end_lineno), None)
        if fn is None:
            return None
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        kinds = _written_params(fn, line, params)
        if kinds is None:
            return None
        calls = [n for s in stmts for n in ast.walk(s) if isinstance(n, ast.Call) and
                 isinstance(n.func, ast.Name) and n.func.id == fn.name]
        if not calls:
            return None
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or call.keywords:
                return None
            stmt = next(s for s in stmts if any(n is call for n in ast.walk(s)))
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.If, ast.Try)):
                return None  # (the copy goes above the call's own statement)
            for index, kind in kinds.items():
                if index >= len(call.args) or dotted_name(call.args[index]) is None:
                    return None
                edits[id(call.args[index])] = (call.args[index], kind, stmt)
    names = _bound_imports(plan.module_tree, min(n.lineno for n, _, _ in edits.values()))
    copy_name = names.get(("copy", None))
    layout = _Layout(nodes.pos)
    for arg, kind, stmt in edits.values():
        text = dotted_name(arg)
        if kind == "module":
            if copy_name is None:
                if _binds(plan.module_tree, "copy") or _binds(plan.module_tree, "id"):
                    return None
                copy_name = "copy"
                ops.add_import("copy")
            before = nodes.stmt(stmt)
            taken = nodes.file.names_taken(before)
            base = re.sub(r"\W+", "_", text.rsplit(".", 1)[-1]).strip("_") or "module"
            fake = _unique(f"{base}_fake", taken)
            indent = _indent_of(nodes.pos.lines[stmt.lineno - 1])
            ops.insert_before(before, modules.wrapped(f"{fake} = ", modules.fake_copy(
                f"{copy_name}.deepcopy", text, mode), indent, layout.unit, layout.limit), indent)
            ops.replace(nodes.expr(arg), fake)
        else:
            ops.replace(nodes.expr(arg), f"{mode}.from_tensor({text})")
    return list(edits)


def _written_params(fn, line, params):
    """``{index of a parameter of fn: "module" | "tensor"}`` for the ``.grad`` writes of
    ``line`` in ``fn``: ``p.grad = ...`` with ``p`` the parameter itself (a tensor) or the
    variable of a loop over ``param.parameters()`` / ``param.named_parameters()`` (a
    module); None for any other write, or a parameter rebound in ``fn``."""
    out = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and node.lineno == line):
            continue
        for t in node.targets:
            if not (isinstance(t, ast.Attribute) and t.attr == "grad" and isinstance(t.value, ast.Name)):
                return None
            root = t.value.id
            if root in params:
                out[params.index(root)] = "tensor"
                continue
            loop = next((f for f in ast.walk(fn) if isinstance(f, ast.For) and f.lineno < line <= f.end_lineno
                         and any(isinstance(x, ast.Name) and x.id == root for x in ast.walk(f.target))), None)
            it = loop.iter if loop is not None else None
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args
                    and it.func.attr in ("parameters", "named_parameters") and isinstance(it.func.value, ast.Name)
                    and it.func.value.id in params):
                return None
            out[params.index(it.func.value.id)] = "module"
    if not out:
        return None
    rebound = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if any(params[i] in rebound for i in out):
        return None
    return out


def _scope_body(tree, w) -> list:
    """The body of the innermost function that holds ``w`` (the module's, at the top level)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= _first_line(w) <= node.end_lineno and (best is None or node.lineno >= best.lineno):
            best = node
    return list((best or tree).body)


def _reads_grads_in_region_only(leak, plan, w) -> bool:
    """Does the function read the gradients of the module's parameters, in the region or
    after it in the same block, only through the module's name (and no
    ``torch.autograd.grad`` may name the real parameters)? Then a fake copy made in the
    region serves every such read."""
    following = _following(plan.module_tree, w)
    if leak.sink == "torch.autograd.grad" or not modules.grad_reads_in(w.body + following, plan.value):
        return False
    lines = (w.body[0].lineno, (following or w.body)[-1].end_lineno)
    if any(not lines[0] <= ln <= lines[1] for ln in plan.grad_reads):
        return False
    roots = modules.grad_read_roots(following, plan.value, modules.made_in(w.body))
    loads = modules.module_loads(following, plan.value, 0)
    # after the block the module is only read for those gradients (no real step that
    # would make real ones: those reads must stay on the real module), or no gradient is
    # read there at all (`sum(p.numel() for p in model.parameters())`: the real module,
    # whose gradients nothing after the block reads)
    return roots is not None and loads is not None and (not roots or {id(n) for n in loads} <= {id(n) for n in roots})


def _first_use_stmt(w, nodes):
    """The statement of the block that holds the first of ``nodes``."""
    first = min((n.lineno for n in nodes), default=w.body[0].lineno)
    for stmt in w.body:
        if stmt.end_lineno >= first:
            return stmt
    return w.body[-1]


def _hoist_point(w, pos, header_end, stmt):
    """Where the fake copies go: right above ``stmt`` (the statement with the first
    use) and the comments that lead into it; after copies hoisted there earlier."""
    body = list(w.body)
    i = next(k for k, b in enumerate(body) if b is stmt)
    line = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    indent = _indent_of(pos.lines[line - 1])
    prev_end = body[i - 1].end_lineno if i > 0 else header_end
    while line - 1 > prev_end and pos.lines[line - 2].strip().startswith("#"):
        line -= 1
    return line, indent


def _indent_of(line: str) -> str:
    """The indentation to copy from ``line``. A form feed in it resets the column
    (Python's tokenizer), so it is dropped from the copy."""
    return re.match(r"[ \t\x0c]*", line).group(0).replace("\x0c", "")


class _Layout:
    """How the file lays out code: its indentation unit and the line length it keeps
    to (the longest line it has, between 79 and 120 characters)."""

    def __init__(self, pos):
        self.pos = pos
        self.lines = pos.lines
        longest = max((len(line) for line in self.lines), default=0)
        self.limit = min(max(longest, 79), 120)
        self.unit = "    "
        for line in self.lines:
            m = re.match(r"[ \t]+(?=\S)", line)
            if m and not line.lstrip().startswith("#"):
                self.unit = m.group(0) if m.group(0).startswith("\t") else " " * min(len(m.group(0)), 8)
                break
        self._starts = None

    def offset(self, lineno: int, byte_col: int) -> int:
        """Offset of an ast position in ``"\n".join(lines)``."""
        if self._starts is None:
            self._starts, total = [], 0
            for line in self.lines:
                self._starts.append(total)
                total += len(line) + 1
        row, col = self.pos.char_pos(lineno, byte_col)
        return self._starts[row - 1] + col

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _functional_call(call, module, state, torch_name, pos, taken=frozenset()) -> str | None:
    """``module(a, k=v)`` -> ``torch.func.functional_call(module, state, (a,), dict(k=v))``.

    The arguments are kept as written (comments, line breaks), sliced from the
    source between the call's parentheses; a call that no longer fits the file's
    line length is wrapped. None when the arguments cannot be split that way
    (a positional argument after a keyword)."""
    layout = _Layout(pos)
    text = layout.text
    call_end = layout.offset(call.end_lineno, call.end_col_offset)
    func_end = layout.offset(call.func.end_lineno, call.func.end_col_offset)
    paren = text.find("(", func_end)
    if paren < 0 or paren >= call_end or text[func_end:paren].strip(" \t\n\\)") or text[call_end - 1] != ")":
        return None
    close = call_end - 1
    args, kws = call.args, call.keywords
    if kws and args and layout.offset(kws[0].lineno, kws[0].col_offset) < layout.offset(args[-1].end_lineno, args[-1].end_col_offset):
        return None
    kw_start = layout.offset(kws[0].lineno, kws[0].col_offset) if kws else close
    positional = text[paren + 1:kw_start]
    if len(args) == 1:
        arg_end = layout.offset(args[0].end_lineno, args[0].end_col_offset) - (paren + 1)
        if not positional[arg_end:].lstrip(" \t\n\\)").startswith(","):
            # `(x)` is not a tuple: the comma goes right after the argument
            rest = positional[arg_end:]
            positional = positional[:arg_end] + "," + rest
    elif not args:
        positional = positional if "#" in positional else ""
    keywords = ""
    if kws:
        kw_text = text[kw_start:close]
        if "dict" not in taken:
            keywords = f", dict({kw_text})"
        elif "#" in kw_text:
            return None
        else:
            parts = [f"**{pos.segment(kw.value)}" if kw.arg is None else f'"{kw.arg}": {pos.segment(kw.value)}'
                     for kw in kws]
            keywords = ", {" + ", ".join(parts) + "}"
    if kws and not args and positional.strip() == "":
        positional = ""
    new_call = f"{torch_name}.func.functional_call({module}, {state}, ({positional}){keywords})"
    if "\n" not in new_call and call.lineno == call.end_lineno:
        line = pos.lines[call.lineno - 1]
        _, start_col = pos.char_pos(call.lineno, call.col_offset)
        _, end_col = pos.char_pos(call.end_lineno, call.end_col_offset)
        if len(line) - (end_col - start_col) + len(new_call) > layout.limit:
            indent = _indent_of(line)
            inner = indent + layout.unit
            parts = [module, state, f"({positional.strip()})"] + ([keywords[2:]] if keywords else [])
            if len(inner) + len(", ".join(parts)) + 1 <= layout.limit:
                new_call = f"{torch_name}.func.functional_call(\n{inner}{', '.join(parts)},\n{indent})"
            else:
                new_call = f"{torch_name}.func.functional_call(\n" + "".join(
                    f"{inner}{part},\n" for part in parts) + indent + ")"
    return new_call


def _operand_mode_guard(leak, plan, source: str) -> Fix | None:
    """None when the file proves the operand of ``plan``'s ``x.fake_mode`` a FakeTensor at
    every execution of the statement (``fix/operand_mode.py``); else the conversion with
    the mode found at run time right above the statement, which keeps the real value
    wherever the operand is real (NoFix when that cannot be built)."""
    from fakegrad_lint.fix import operand_mode
    from fakegrad_lint.fix.helpers import DETECT, build_function_fix

    why = operand_mode.unproved(plan, leak)
    if why is None:
        return None
    if operand_mode.bound_in_statement(plan):
        raise NoFix(f"{why}, and it is bound inside the op's statement (no statement above to find the mode in)")
    guarded, detect = operand_mode.guarded_plan(plan)
    if isinstance(guarded.func_node, ast.Lambda):
        raise NoFix(f"{why}, and the op is in a lambda's body (no statement to find the mode in)")
    try:
        return build_function_fix(leak, source, plan=guarded, detect=detect or DETECT, why=why)
    except NoFix as exc:
        raise NoFix(f"{why}; {exc}") from None


def _leaked_fix(plan, nodes, grad_reads=()) -> Fix | None:
    """A real value mixed with a fake that leaked out of its region: give the op a
    fake copy made by the leaked tensor's own mode (``f.fake_mode.from_tensor(w)``);
    ``grad_reads`` (``w`` of ``w.grad`` reads after the op) read that copy."""
    mode = plan.mode_name
    node = plan.uses[0]
    ops = nodes.ops()
    for read in grad_reads:
        ops.replace(nodes.expr(read), f"{mode}.from_tensor({plan.value})")
    static = ", static_shapes=True" if plan.static_shapes else ""
    if plan.kind == "leaked-tensor":
        suffix = ".detach().requires_grad_()" if plan.derived else ""
        ops.replace(nodes.expr(node), f"{mode}.from_tensor({plan.value}){suffix}")  # (measured: runs symbolic too)
    else:
        torch_name, needs_import = _torch_module_name(plan.module_tree, nodes.pos, node.lineno)
        state = (f"{{name: {mode}.from_tensor(t{static}) for name, t in "
                 f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]}}")
        call = _functional_call(node, plan.value, state, torch_name, nodes.pos, nodes.file.names_taken(nodes.expr(node)))
        if call is None:
            raise NoFix("a positional argument follows a keyword argument in the module call")
        ops.replace(nodes.expr(node), call)
        if needs_import:
            ops.add_import("torch")
    return Fix(f"Use a fake copy of `{plan.value}` made by `{mode}`", Applicability.UNSAFE, ops.edits())


def _leaked_grad_reads(plan, lines) -> tuple[list, int | None]:
    """``(reads, blocked)``: ``reads``, the receivers of the ``plan.value.grad`` reads in the
    statements that run right after the op's own statement, in its block, when they cover
    ``lines`` (the real reads the analysis found) and no other use of the value comes before
    the last of them (the real value's gradient is then what the op left: the fake copy's
    after the fix); else ``[]``, with ``blocked`` the line of the first such read that a copy
    would change. A tensor the leaked mode's copy replaces by a fresh leaf (``derived``) has
    no copy to read."""
    if plan.kind != "leaked-tensor" or len(plan.uses) != 1:
        return [], None
    op = plan.uses[0]
    stmt = _following_of_node(plan.module_tree, op)
    if stmt is None:
        return [], None
    op_stmt, after = stmt
    reads = []
    for s in after:
        for node in ast.walk(s):
            if isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.ctx, ast.Load) and \
                    dotted_name(node.value) == plan.value and not probes.type_probe(plan.module_tree, node):
                reads.append(node.value)
    if not reads:
        return [], None
    first = min(n.lineno for n in reads)
    if plan.derived or not set(lines) <= {n.lineno for n in reads} or \
            any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
                for s in after for n in ast.walk(s)):
        return [], first
    ids = {id(sub) for n in reads for sub in ast.walk(n)} | {id(sub) for sub in ast.walk(op)}
    parts = plan.value.split(".")
    names = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    last = max(n.lineno for n in reads)
    for s in [op_stmt, *after]:
        for node in ast.walk(s):
            if isinstance(node, (ast.Name, ast.Attribute)) and node.lineno <= last and \
                    dotted_name(node) in names and id(node) not in ids:
                return [], first  # another use of the value before a read: which gradient it sees is not known
    return reads, None


def _following_of_node(tree, node):
    """``(statement, the statements after it in its block)`` for the innermost statement
    that holds ``node``; None if not found."""
    best = None
    for parent in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if isinstance(stmt, ast.stmt) and stmt.lineno <= node.lineno and \
                        node.end_lineno <= stmt.end_lineno and any(n is node for n in ast.walk(stmt)):
                    if best is None or stmt.lineno >= best[0].lineno and (stmt.end_lineno - stmt.lineno) <= \
                            (best[0].end_lineno - best[0].lineno):
                        best = (stmt, block[i + 1:])
    return best


def _module_grad_read(stmts, module: str, tree=None, probed=None) -> int | None:
    """The first line of ``stmts`` that reads a gradient of ``module``'s parameters:
    ``module.fc.weight.grad``, or ``p.grad`` for ``p`` drawn from
    ``module.parameters()`` (``named_parameters``, ``buffers``...) in a loop or a
    comprehension."""
    def drawn_from_module(it) -> bool:
        return isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
            (dotted_name(it.func.value) or "") == module

    def probe(sub) -> bool:
        # with ``tree``: a `type(p.grad)` read is no reason (its line goes to ``probed``)
        if tree is not None and probes.type_probe(tree, sub):
            probed.append(sub.lineno)
            return True
        return False

    def has_grad(node) -> int | None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr == "grad" and not probe(sub):
                return sub.lineno
        return None

    for stmt in stmts:
        for node in ast.walk(stmt):
            if modules.clip_root(node, module) is not None:
                return node.lineno
            if isinstance(node, ast.Attribute) and node.attr == "grad" and not probe(node):
                root = modules.chain_to(node.value, module)
                if root is not None and root is not node.value:
                    return node.lineno
            elif isinstance(node, (ast.For, ast.AsyncFor)) and drawn_from_module(node.iter):
                line = next((ln for b in node.body if (ln := has_grad(b)) is not None), None)
                if line is not None:
                    return line
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and \
                    any(drawn_from_module(g.iter) for g in node.generators):
                line = has_grad(node)
                if line is not None:
                    return line
    return None


def _following(tree, w):
    """The statements that run right after ``w``: those after it in the block that holds
    it, then, when that block is the body of another ``with`` (which always runs its body
    to the end), those after that one, and so on (empty if not found)."""
    if not isinstance(w, (ast.With, ast.AsyncWith)):
        return []
    parents = {}
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                for i, stmt in enumerate(block):
                    parents[id(stmt)] = (node, name, block, i)
    out, cur = [], w
    while id(cur) in parents:
        node, name, block, i = parents[id(cur)]
        out.extend(block[i + 1:])
        if not (isinstance(node, (ast.With, ast.AsyncWith)) and name == "body"):
            break
        cur = node
    return out


def _with_gradient_reads(uses, body, value):
    """The leaking uses plus the block's reads of the value's gradient (``x.grad``,
    ``torch.autograd.grad(..., [x])``): they must follow the value to its fake copy."""
    out = list(uses)
    seen = {(u.lineno, u.col_offset) for u in uses}

    def add(node):
        if dotted_name(node) == value and (node.lineno, node.col_offset) not in seen:
            seen.add((node.lineno, node.col_offset))
            out.append(node)

    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and node.attr == "grad":
                add(node.value)
            elif isinstance(node, ast.Call) and (dotted_name(node.func) or "").endswith("autograd.grad"):
                inputs = node.args[1:2] + [kw.value for kw in node.keywords if kw.arg == "inputs"]
                for part in inputs:
                    for sub in ast.walk(part):
                        add(sub)
    return out


def _loop_module(w, plan):
    """The module expression of a loop or comprehension of the block whose target is the
    leaking name (``for layer in model.children()`` -> ``model``, ``(p for p in
    model.parameters())`` -> ``model``, ``for layer in layers`` -> ``layers``), when the
    analysis proved it a real module or a list of real modules; else None."""
    root = plan.value.split(".", 1)[0]
    for stmt in w.body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and id(node) in plan.loop_modules and \
                    any(isinstance(t, ast.Name) and t.id == root for t in ast.walk(node.target)):
                return plan.loop_modules[id(node)]
    return None


class _LoopBody:
    """A loop's body shaped like a ``with`` for :func:`_hoist_point` and :func:`_first_use_stmt`."""

    def __init__(self, body):
        self.body = body


def _binding_loop(w, plan):
    """The innermost ``for`` loop of the block (not in a nested function) whose target binds
    the leaking name and whose body holds every use of it; None if there is none."""
    root = plan.value.split(".", 1)[0]
    best = None
    todo = list(w.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor)) and node.body and \
                any(isinstance(t, ast.Name) and t.id == root and isinstance(t.ctx, ast.Store)
                    for t in ast.walk(node.target)) and \
                all(node.body[0].lineno <= u.lineno and u.end_lineno <= node.body[-1].end_lineno for u in plan.uses) \
                and (best is None or node.lineno > best.lineno):
            best = node
        todo.extend(ast.iter_child_nodes(node))
    return best


def _rebound_before_use(w, plan, from_line: int = 0) -> bool:
    """Is the name assigned in the block, from ``from_line`` (where the copy is
    hoisted) on, on a line before one of its leaking uses? (Then the hoisted copy
    would be of another value, or of an unbound name.)"""
    use_lines = [u.lineno for u in plan.uses]
    last_use = max(use_lines)

    root = plan.value.split(".", 1)[0]

    def stores(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if isinstance(node, ast.comprehension):
            # a comprehension's own variable: the value does not exist at the top of the block
            if any(isinstance(t, ast.Name) and t.id == root for t in ast.walk(node.target)):
                yield -1
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            name = dotted_name(node)
            if name is not None and (plan.value == name or plan.value.startswith(name + ".")):
                yield node.lineno  # `x = ...`, or `m = ...` for `m.weight`
        for child in ast.iter_child_nodes(node):
            yield from stores(child)

    return any(line == -1 or from_line <= line < last_use for stmt in w.body for line in stores(stmt))


def _unique(name, taken):
    if name not in taken:
        return name
    i = 2
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"


def _existing_hoist(w, pos, rhs):
    """A previous fix's hoisted assignment at the top of the block: reuse its name
    (whatever the line breaks a wrapped hoist has)."""
    want = "".join(rhs.split())
    for stmt in w.body:
        if not isinstance(stmt, ast.Assign):
            continue
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
                "".join(pos.segment(stmt.value).split()) == want:
            return stmt.targets[0].id
    return None


def _first_line(w) -> int:
    """The first line of a region's block a fix can touch (its header, or the
    statement that enters the mode)."""
    bind = getattr(w, "bind_stmt", None)
    if bind is not None:
        return bind.lineno
    return getattr(w, "lineno", None) or w.body[0].lineno


def _torch_module_name(tree, pos, before_line: int):
    """``(name, needs_import)``: the name bound to the ``torch`` module at the top level
    before ``before_line``, else ``("torch", True)``: ``import torch`` is added through
    libcst's ``AddImportsVisitor`` (at the end of the leading import block: never above a
    shebang, an encoding declaration, the docstring or ``__future__`` imports, always
    above the region)."""
    for stmt in tree.body:
        if stmt.lineno >= before_line:
            break
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "torch" or (alias.name.startswith("torch.") and alias.asname is None):
                    return alias.asname or "torch", False
    return "torch", True


def _bound_imports(tree, before_line: int) -> dict:
    """``{(module, name or None): bound name}`` for the top-level imports above
    ``before_line`` (``import copy`` -> ``("copy", None)``; ``from m import n as k``
    -> ``("m", "n"): "k"``)."""
    out = {}
    for stmt in tree.body:
        if stmt.lineno >= before_line:
            break
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname or "." not in a.name:
                    out[(a.name, None)] = a.asname or a.name
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            for a in stmt.names:
                out[(stmt.module, a.name)] = a.asname or a.name
    return out
