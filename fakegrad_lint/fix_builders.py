"""Fixes toward shape-only inference: convert real values at the region boundary.

The analysis attaches a :class:`FixPlan` to a leak when the leak happens lexically
inside the ``with`` block that opened the region, in the same function, and the
real value is a plain name or ``self.`` attribute. This module turns the plan
into text edits (positions in the tool's convention) and decides applicability:

- tensor: bind the mode if needed (``with FakeTensorMode(...) as fake_mode:``),
  hoist ``x_fake = fake_mode.from_tensor(x)`` to the top of the block and use it
  for every read of ``x`` in the block. Shapes in the region are unchanged and the
  real tensor is never touched: **safe**. When the code reads ``x.grad`` or asks
  ``torch.autograd.grad`` for ``x`` outside the block, the real grad it reads
  would change (``None`` instead of a FakeTensor), so the fix is display-only.
- module: ``model(args)`` becomes ``torch.func.functional_call(model, state,
  args)`` over ``from_tensor`` copies of its parameters and buffers, hoisted once.
  The module object and its real parameters are untouched and every shape is the
  same, but gradients (and in-place buffer updates) now land on fake copies, and
  the call no longer goes through ``model.__call__`` hooks: **unsafe**.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from fakegrad_lint.analysis.positions import PositionMap
from fakegrad_lint.findings import Applicability, Edit, Fix, Location

_DISPATCH_OFF_WORDS = ("unset_fake_temporarily", "no_dispatch", "_disable_current_modes", "_DisableTorchDispatch")


@dataclass(eq=False)
class FixPlan:
    kind: str  # "tensor" | "module"
    value: str  # "x", "self.w", "model"
    with_node: ast.With
    item_index: int
    mode_name: str | None  # how the region's mode can be named inside it, if bound
    call: ast.Call | None  # the module call, for kind == "module"
    module_tree: ast.Module
    derived: bool = False  # the real value is not a leaf (computed from one)
    grad_reads: list = field(default_factory=list)


def build_fix(leak, source: str) -> Fix | None:
    plan: FixPlan = leak.fix
    if plan.kind.startswith("leaked-"):
        return _leaked_fix(plan, PositionMap(source))
    w = plan.with_node
    if not w.body:
        return None
    header_end = getattr(w, "header_end", None) or max(
        (it.optional_vars or it.context_expr).end_lineno for it in w.items
    )
    first = w.body[0]
    first_line = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])])
    if first_line <= header_end:
        return None  # `with m: stmt` on one line: nothing safe to hoist into
    pos = PositionMap(source)
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

    indent = re.match(r"[ \t]*", pos.lines[first_line - 1]).group(0)
    base = plan.value.rsplit(".", 1)[-1].lstrip("_") or "value"
    hoist_at = Location(first_line, 0)

    if plan.kind in ("tensor", "container"):
        if plan.kind == "container":
            torch_name, import_edit = _torch_module_name(plan.module_tree, pos)
            rhs = (f"{torch_name}.utils._pytree.tree_map_only({torch_name}.Tensor, lambda t: "
                   f"{mode}.from_tensor(t).detach().requires_grad_(t.requires_grad), {plan.value})")
            if import_edit is not None:
                edits.append(import_edit)
        elif plan.derived:
            # from_tensor of a non-leaf keeps a fake history that backward cannot walk:
            # make the fake copy a leaf of its own
            rhs = f"{mode}.from_tensor({plan.value}).detach().requires_grad_()"
        else:
            rhs = f"{mode}.from_tensor({plan.value})"
        existing = _existing_hoist(w, pos, re.escape(rhs))
        fake = existing or _unique(f"{base}_fake", taken)
        renames = _loads(w, plan.value)
        if renames is None:
            return None
        if not existing:
            edits.append(Edit(hoist_at, hoist_at, f"{indent}{fake} = {rhs}\n"))
        for node in renames:
            edits.append(Edit(Location(*pos.char_pos(node.lineno, node.col_offset)),
                              Location(*pos.char_pos(node.end_lineno, node.end_col_offset)), fake))
        body_lines = (w.body[0].lineno, w.body[-1].end_lineno)
        outside_grad = [ln for ln in plan.grad_reads if not body_lines[0] <= ln <= body_lines[1]]
        outside_sink = leak.sink == "torch.autograd.grad" and leak.sink_line is not None and not (
            body_lines[0] <= leak.sink_line <= body_lines[1]
        )
        if outside_grad or outside_sink:
            where = outside_grad[0] if outside_grad else leak.sink_line
            return Fix(
                f"Use `{mode}.from_tensor({plan.value})` inside the region (not applied: line {where} "
                f"reads the real gradient of `{plan.value}`)",
                Applicability.DISPLAY_ONLY,
                tuple(edits),
            )
        return Fix(f"Convert `{plan.value}` at the boundary with `{mode}.from_tensor`", Applicability.SAFE, tuple(edits))

    # module
    call = plan.call
    if call is None or _loads(w, plan.value) is None:
        return None
    torch_name, import_edit = _torch_module_name(plan.module_tree, pos)
    pattern = rf"\{{\w+: {re.escape(mode)}\.from_tensor\(\w+\) for \w+, \w+ in \[\*{re.escape(plan.value)}\.named_parameters\(\), \*{re.escape(plan.value)}\.named_buffers\(\)\]\}}"
    existing = _existing_hoist(w, pos, pattern)
    state = existing or _unique(f"{base}_fake_state", taken)
    if not existing:
        edits.append(Edit(hoist_at, hoist_at,
                          f"{indent}{state} = {{name: {mode}.from_tensor(t) for name, t in "
                          f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]}}\n"))
    edits.append(_functional_call_edit(call, plan.value, state, torch_name, pos))
    if import_edit is not None:
        edits.append(import_edit)
    return Fix(
        f"Call `{plan.value}` with `torch.func.functional_call` over fake copies of its parameters and buffers",
        Applicability.UNSAFE,
        tuple(edits),
    )


def _functional_call_edit(call, module, state, torch_name, pos) -> Edit:
    """``module(a, k=v)`` -> ``torch.func.functional_call(module, state, (a,), {'k': v})``."""
    arg_texts = [("*" if isinstance(a, ast.Starred) else "") + pos.segment(a.value if isinstance(a, ast.Starred) else a)
                 for a in call.args]
    args = "(" + ", ".join(arg_texts) + ("," if len(arg_texts) == 1 else "") + ")"
    kw_parts = [f"**{pos.segment(kw.value)}" if kw.arg is None else f"{kw.arg!r}: {pos.segment(kw.value)}"
                for kw in call.keywords]
    new_call = f"{torch_name}.func.functional_call({module}, {state}, {args}"
    new_call += (", {" + ", ".join(kw_parts) + "})") if kw_parts else ")"
    return Edit(Location(*pos.char_pos(call.lineno, call.col_offset)),
                Location(*pos.char_pos(call.end_lineno, call.end_col_offset)), new_call)


def _leaked_fix(plan, pos) -> Fix | None:
    """A real value mixed with a fake that leaked out of its region: give the op a
    fake copy made by the leaked tensor's own mode (``f.fake_mode.from_tensor(w)``).
    Unsafe: which side should be real is the author's call."""
    mode = plan.mode_name
    node = plan.call
    if plan.kind == "leaked-tensor":
        suffix = ".detach().requires_grad_()" if plan.derived else ""
        edit = Edit(Location(*pos.char_pos(node.lineno, node.col_offset)),
                    Location(*pos.char_pos(node.end_lineno, node.end_col_offset)),
                    f"{mode}.from_tensor({plan.value}){suffix}")
        edits = (edit,)
    else:
        torch_name, import_edit = _torch_module_name(plan.module_tree, pos)
        state = (f"{{name: {mode}.from_tensor(t) for name, t in "
                 f"[*{plan.value}.named_parameters(), *{plan.value}.named_buffers()]}}")
        edits = (_functional_call_edit(node, plan.value, state, torch_name, pos),)
        if import_edit is not None:
            edits += (import_edit,)
    return Fix(f"Use a fake copy of `{plan.value}` made by `{mode}`", Applicability.UNSAFE, edits)


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


def _existing_hoist(w, pos, rhs_pattern):
    """A previous fix's hoisted assignment at the top of the block: reuse its name."""
    rx = re.compile(rf"\s*(\w+) = {rhs_pattern}\s*")
    for stmt in w.body:
        if not isinstance(stmt, ast.Assign):
            break
        m = rx.fullmatch(pos.segment(stmt))
        if m:
            return m.group(1)
    return None


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _loads(w, value):
    """Every read of ``value`` in the block where the fake mode dispatches, or None
    when the block rebinds it (then no rename is sound)."""
    out = []
    dotted = "." in value

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return True
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
            any(word in ast.dump(it.context_expr) for word in _DISPATCH_OFF_WORDS) for it in node.items
        ):
            return True
        if dotted and isinstance(node, ast.Attribute) and _dotted(node) == value:
            if not isinstance(node.ctx, ast.Load):
                return False
            out.append(node)
            return True
        if not dotted and isinstance(node, ast.Name) and node.id == value:
            if not isinstance(node.ctx, ast.Load):
                return False
            out.append(node)
            return True
        for child in ast.iter_child_nodes(node):
            if not visit(child):
                return False
        return True

    for stmt in w.body:
        if not visit(stmt):
            return None
    return out


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
    line = (last_import.end_lineno + 1) if last_import is not None else 1
    return "torch", Edit(Location(line, 0), Location(line, 0), "import torch\n")
