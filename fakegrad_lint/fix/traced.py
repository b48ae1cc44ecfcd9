"""Fixes inside a function traced by ``make_fx(f, tracing_mode="fake" | "symbolic")``
(``torch.fx.experimental.proxy_tensor`` or ``functorch``).

The tracer makes its own FakeTensorMode and hands ``f`` fake inputs; a real module or
tensor ``f`` reads from outside (a closure, a global) is what leaks. The fix converts it
at the op with the tracer's mode, named through a parameter of ``f`` that holds a traced
input (the analysis proves which: ``x.fake_mode``):

- ``clf(x)`` -> ``torch.func.functional_call(clf, {name: x.fake_mode.from_tensor(t) ...}, (x,))``
- ``x @ w`` -> ``x @ x.fake_mode.from_tensor(w)``

Measured on torch 2.13: the traced graph is the same (the fake copies are constants of
the graph, as the real parameters were: same nodes, same code) under ``"fake"`` and
``"symbolic"``, with or without ``_allow_non_fake_inputs``; the real parameters get no
FakeTensor ``.grad`` from a traced backward. ``x.fake_mode`` is written only where the
file proves ``x`` fake at every run (``fix/operand_mode.py``: ``f`` read nowhere but as
``make_fx``'s function); otherwise the builders find the mode at run time right above the
statement (a direct call with real inputs keeps the real module): unsafe, as the graph's
backward now differentiates the fake copies.

The same conversion at the op serves a region whose ``with`` block is not where the
leak is (a generator that yields inside its region, ``op-*`` plans, tried after the
helper placements of ``fix/helpers.py``): the mode is that of a fake operand of the op
(``x.fake_mode``), allow modes only, and only for code with exactly one call in the file
(the region's): anywhere else ``x`` would be real.
"""

from __future__ import annotations

import ast
from dataclasses import replace

__all__ = ["build"]


class NotTracedOnly(Exception):
    pass


def _called_directly(tree, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            return True
    return False


def _function_name(tree, fn) -> str | None:
    """The name a function is called by: its ``def`` name, or the plain name a lambda is
    assigned to."""
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return fn.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.value is fn and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
    return None


def _calls(tree, name: str) -> int:
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id == name)


def build(plan, nodes, leaked_fix):
    fn = plan.with_node
    if plan.kind.startswith("op-"):
        # a fake operand's mode at the op (the region's block is elsewhere): the code must
        # run only there, so the function has exactly one call in the file (the region's)
        name = _function_name(plan.module_tree, fn) if not isinstance(fn, ast.Module) else None
        if fn is not None and not isinstance(fn, ast.Module) and (name is None or _calls(plan.module_tree, name) != 1
                                                                  or _referenced(plan.module_tree, name) != 1):
            raise NotTracedOnly(f"`{name or 'the function'}` may run outside the region, where "
                                f"`{plan.mode_name.split('.')[0]}` is not fake")
        kind = "leaked-module" if plan.kind == "op-module" else "leaked-tensor"
        return leaked_fix(replace(plan, kind=kind), nodes)
    if _called_directly(plan.module_tree, fn.name):
        raise NotTracedOnly(f"`{fn.name}` is also called directly, where its inputs are not fake")
    kind = "leaked-module" if plan.kind == "traced-module" else "leaked-tensor"
    fix = leaked_fix(replace(plan, kind=kind), nodes)
    return replace(fix, message=f"Use a fake copy of `{plan.value}` made by the tracer's mode (`{plan.mode_name}`)")


def _referenced(tree, name: str) -> int:
    """How often ``name`` is read in the file (a function handed elsewhere may run anywhere)."""
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == name
               and isinstance(node.ctx, ast.Load))
