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
FakeTensor ``.grad`` from a traced backward. Offered only when ``f`` is never called
directly in the file (a direct call with real inputs has no ``fake_mode``): unsafe, as the
graph's backward now differentiates the fake copies.
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


def build(plan, nodes, leaked_fix):
    fn = plan.with_node
    if _called_directly(plan.module_tree, fn.name):
        raise NotTracedOnly(f"`{fn.name}` is also called directly, where its inputs are not fake")
    kind = "leaked-module" if plan.kind == "traced-module" else "leaked-tensor"
    fix = leaked_fix(replace(plan, kind=kind), nodes)
    return replace(fix, message=f"Use a fake copy of `{plan.value}` made by the tracer's mode (`{plan.mode_name}`)")
