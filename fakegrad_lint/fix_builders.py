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
- container: the same with ``torch.utils._pytree.tree_map_only`` over its tensors.
- module: ``model(args)`` becomes ``torch.func.functional_call(model, state,
  args)`` over ``from_tensor`` copies of its parameters and buffers, hoisted once.
  The module and its real parameters are untouched and every shape is the same,
  but gradients and in-place buffer updates land on the fake copies and the call
  skips ``model.__call__`` hooks: **unsafe**.
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
from dataclasses import dataclass, field

from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.positions import PositionMap
from fakegrad_lint.findings import Applicability, Edit, Fix, Location


@dataclass(eq=False)
class FixPlan:
    kind: str  # "tensor" | "container" | "module" | "leaked-tensor" | "leaked-module"
    value: str  # "x", "self.w", "model"
    with_node: object  # ast.With or analysis.interpreter.PseudoWith (None for leaked-*)
    item_index: int
    mode_name: str | None  # how the region's mode can be named inside it, if bound
    uses: list  # expressions to rewrite (calls, for modules); filled by the analysis
    module_tree: ast.Module
    derived: bool = False  # the real value is not a leaf (computed from one)
    conditional: bool = False  # the mode was picked by a conditional expression
    grad_reads: list = field(default_factory=list)


def build_fix(leak, source: str) -> Fix | None:
    plan: FixPlan = leak.fix
    pos = PositionMap(source)
    if plan.kind.startswith("leaked-"):
        return _leaked_fix(plan, pos)
    w = plan.with_node
    if not w.body or not plan.uses:
        return None
    header_end = getattr(w, "header_end", None) or max(
        (it.optional_vars or it.context_expr).end_lineno for it in w.items
    )
    one_line = w.body[0].lineno <= header_end
    if one_line and (not isinstance(w, ast.With) or w.body[-1].end_lineno != header_end):
        return None
    if _rebound_before_use(w, plan):
        return None  # the name means something else by the time it leaks
    taken = _names_in(plan.module_tree)
    edits: list[Edit] = []

    mode = plan.mode_name
    if mode is None and getattr(w, "bind_stmt", None) is not None:
        # `stack.enter_context(FakeTensorMode(...))` as a statement: bind its result
        mode = _unique("fake_mode", taken)
        at = Location(*pos.char_pos(w.bind_stmt.lineno, w.bind_stmt.col_offset))
        edits.append(Edit(at, at, f"{mode} = "))
    elif mode is None:
        if not w.items:
            return None
        item = w.items[plan.item_index]
        if item.optional_vars is not None:
            return None
        mode = _unique("fake_mode", taken)
        end = pos.char_pos(item.context_expr.end_lineno, item.context_expr.end_col_offset)
        edits.append(Edit(Location(*end), Location(*end), f" as {mode}"))

    if one_line:
        # `with m: a; b` -> the body moves to its own line under the hoisted copy
        line = pos.lines[w.lineno - 1]
        indent = re.match(r"[ \t]*", line).group(0) + "    "
        row, col = pos.char_pos(w.body[0].lineno, w.body[0].col_offset)
        start = col
        while start > 0 and line[start - 1] in " \t":
            start -= 1
        edits.append(Edit(Location(row, start), Location(row, col), f"\n{indent}"))
        hoist_at = Location(row, start)
        hoist_fmt = "\n{indent}{stmt}"
    else:
        hoist_line, indent = _hoist_point(w, pos, header_end, mode)
        hoist_at = Location(hoist_line, 0)
        hoist_fmt = "{indent}{stmt}\n"
    base = re.sub(r"\W+", "_", plan.value.rsplit(".", 1)[-1]).strip("_") or "value"
    base = base.lower() if base.isupper() else base

    if plan.kind == "module":
        torch_name, import_edit = _torch_module_name(plan.module_tree, pos)
        rhs = (f"{{name: {mode}.from_tensor(t) for name, t in "
               f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]}}")
        existing = _existing_hoist(w, pos, rhs)
        state = existing or _unique(f"{base}_fake_state", taken)
        if not existing:
            edits.append(Edit(hoist_at, hoist_at, hoist_fmt.format(indent=indent, stmt=f"{state} = {rhs}")))
        edits += [_functional_call_edit(call, plan.value, state, torch_name, pos) for call in plan.uses]
        if import_edit is not None:
            edits.append(import_edit)
        applicability = Applicability.UNSAFE
        message = f"Call `{plan.value}` with `torch.func.functional_call` over fake copies of its parameters and buffers"
    else:
        import_edit = None
        if plan.kind == "container":
            torch_name, import_edit = _torch_module_name(plan.module_tree, pos)
            rhs = (f"{torch_name}.utils._pytree.tree_map_only({torch_name}.Tensor, lambda t: "
                   f"{mode}.from_tensor(t).detach().requires_grad_(t.requires_grad), {plan.value})")
        elif plan.derived:
            # from_tensor of a non-leaf keeps a fake history that backward cannot walk:
            # make the fake copy a leaf of its own
            rhs = f"{mode}.from_tensor({plan.value}).detach().requires_grad_()"
        else:
            rhs = f"{mode}.from_tensor({plan.value})"
        existing = _existing_hoist(w, pos, rhs)
        fake = existing or _unique(f"{base}_fake", taken)
        if not existing:
            edits.append(Edit(hoist_at, hoist_at, hoist_fmt.format(indent=indent, stmt=f"{fake} = {rhs}")))
        renames = _with_gradient_reads(plan.uses, w.body, plan.value)
        later = _with_gradient_reads([], _following(plan.module_tree, w), plan.value)
        for node in renames:
            edits.append(Edit(Location(*pos.char_pos(node.lineno, node.col_offset)),
                              Location(*pos.char_pos(node.end_lineno, node.end_col_offset)), fake))
        if import_edit is not None:
            edits.append(import_edit)
        applicability = Applicability.SAFE
        message = f"Convert `{plan.value}` at the boundary with `{mode}.from_tensor`"

    body_lines = (w.body[0].lineno, w.body[-1].end_lineno)
    outside_grad = [ln for ln in plan.grad_reads if not body_lines[0] <= ln <= body_lines[1]]
    outside_sink = leak.sink == "torch.autograd.grad" and leak.sink_line is not None and not (
        body_lines[0] <= leak.sink_line <= body_lines[1]
    )
    if (outside_grad or outside_sink) and plan.kind != "module":
        # the code reads the gradient after the block: it read a FakeTensor before the fix,
        # it reads the fake copy's gradient (same shapes) after it; later real reads change
        covered = {n.lineno for n in later}
        if later and all(ln in covered for ln in outside_grad) and (not outside_sink or leak.sink_line in covered):
            later_edits = [Edit(Location(*pos.char_pos(n.lineno, n.col_offset)),
                                Location(*pos.char_pos(n.end_lineno, n.end_col_offset)), fake) for n in later]
            return Fix(f"{message}, and read the fake copy's gradient after the block",
                       Applicability.UNSAFE, tuple(edits + later_edits))
    if outside_grad or outside_sink:
        where = outside_grad[0] if outside_grad else leak.sink_line
        return Fix(f"{message} (not applied: line {where} reads the real gradient of `{plan.value}`)",
                   Applicability.DISPLAY_ONLY, tuple(edits))
    if plan.conditional:
        applicability = Applicability.UNSAFE
        message += " (right for the current value of the condition that picks the mode)"
    return Fix(message, applicability, tuple(edits))


def _hoist_point(w, pos, header_end, mode):
    """Where the fake copies go: after copies hoisted earlier, above the comments that
    lead into the first statement of the block."""
    body = list(w.body)
    i = 0
    while i < len(body) - 1 and isinstance(body[i], ast.Assign) and f"{mode}.from_tensor(" in pos.segment(body[i]):
        i += 1
    stmt = body[i]
    line = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    indent = re.match(r"[ \t]*", pos.lines[line - 1]).group(0)
    prev_end = body[i - 1].end_lineno if i > 0 else header_end
    while line - 1 > prev_end and pos.lines[line - 2].strip().startswith("#"):
        line -= 1
    return line, indent


def _functional_call_edit(call, module, state, torch_name, pos) -> Edit:
    """``module(a, k=v)`` -> ``torch.func.functional_call(module, state, (a,), {"k": v})``."""
    arg_texts = [("*" if isinstance(a, ast.Starred) else "") + pos.segment(a.value if isinstance(a, ast.Starred) else a)
                 for a in call.args]
    args = "(" + ", ".join(arg_texts) + ("," if len(arg_texts) == 1 else "") + ")"
    kw_parts = [f"**{pos.segment(kw.value)}" if kw.arg is None else f'"{kw.arg}": {pos.segment(kw.value)}'
                for kw in call.keywords]
    new_call = f"{torch_name}.func.functional_call({module}, {state}, {args}"
    new_call += (", {" + ", ".join(kw_parts) + "})") if kw_parts else ")"
    return Edit(Location(*pos.char_pos(call.lineno, call.col_offset)),
                Location(*pos.char_pos(call.end_lineno, call.end_col_offset)), new_call)


def _leaked_fix(plan, pos) -> Fix | None:
    """A real value mixed with a fake that leaked out of its region: give the op a
    fake copy made by the leaked tensor's own mode (``f.fake_mode.from_tensor(w)``)."""
    mode = plan.mode_name
    node = plan.uses[0]
    if plan.kind == "leaked-tensor":
        suffix = ".detach().requires_grad_()" if plan.derived else ""
        edits = (Edit(Location(*pos.char_pos(node.lineno, node.col_offset)),
                      Location(*pos.char_pos(node.end_lineno, node.end_col_offset)),
                      f"{mode}.from_tensor({plan.value}){suffix}"),)
    else:
        torch_name, import_edit = _torch_module_name(plan.module_tree, pos)
        state = (f"{{name: {mode}.from_tensor(t) for name, t in "
                 f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]}}")
        edits = (_functional_call_edit(node, plan.value, state, torch_name, pos),)
        if import_edit is not None:
            edits += (import_edit,)
    return Fix(f"Use a fake copy of `{plan.value}` made by `{mode}`", Applicability.UNSAFE, edits)


def _following(tree, w):
    """The statements after ``w`` in the block that holds it (empty if not found)."""
    if not isinstance(w, (ast.With, ast.AsyncWith)):
        return []
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and w in block:
                return block[block.index(w) + 1 :]
    return []


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


def _rebound_before_use(w, plan) -> bool:
    """Is the name assigned in the block on a line before one of its leaking uses?
    (Then the hoisted copy would be of another value, or of an unbound name.)"""
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

    return any(line < last_use for stmt in w.body for line in stores(stmt))


def _names_in(tree) -> set:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
    return out


def _unique(name, taken):
    if name not in taken:
        return name
    i = 2
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"


def _existing_hoist(w, pos, rhs):
    """A previous fix's hoisted assignment at the top of the block: reuse its name."""
    rx = re.compile(rf"\s*(\w+) = {re.escape(rhs)}\s*")
    for stmt in w.body:
        if not isinstance(stmt, ast.Assign):
            break
        m = rx.fullmatch(pos.segment(stmt))
        if m:
            return m.group(1)
    return None




def _torch_module_name(tree, pos):
    """The name bound to the ``torch`` module at the top level, or an edit adding it."""
    last_import = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "torch" or (alias.name.startswith("torch.") and alias.asname is None):
                    return alias.asname or "torch", None
            last_import = stmt
        elif isinstance(stmt, ast.ImportFrom):
            last_import = stmt
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and last_import is None:
            last_import = stmt  # docstring
    line = (last_import.end_lineno + 1) if last_import is not None else _first_code_line(pos)
    return "torch", Edit(Location(line, 0), Location(line, 0), "import torch\n")


def _first_code_line(pos) -> int:
    """The first line that is not a comment or blank: an import added to a file
    without imports goes there, below a shebang and a ``# coding:``
    declaration (which must stay in the first two lines) and a header comment."""
    for row, line in enumerate(pos.lines, start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return row
    return 1
