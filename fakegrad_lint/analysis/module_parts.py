"""What ``nn.Module.__setattr__`` does to a real module: a submodule or an
``nn.Parameter`` assigned onto it (``block.adapter = Bottleneck(d)``,
``setattr(model, name, LoRALinear(child))``, ``model.scale = nn.Parameter(...)``)
is registered as one of its parts, so the module's parameters include it from then
on, whoever made the assignment (a helper of another module given the model, a
loop over its blocks).

A frozen module (``requires_grad_(False)``, a loop over its parameters) given a
part that requires grad brings requires-grad parameters again: its call in an
allow-mode region leaves FakeTensor gradients on that part. The part is linked to
the module (``Origin.parent``) so that freezing it again later, or the whole
module, is seen as well. Pure data over the values: nothing here walks the AST.
"""

from __future__ import annotations

from fakegrad_lint.analysis.heap import heap_field
from fakegrad_lint.analysis.values import ModuleVal, TVal


def _requires_grad_part(val) -> bool:
    """Is ``val`` a real module with requires-grad parameters, or a real requires-grad
    parameter, on every path (never a may value: a may link never reports)?"""
    if isinstance(val, ModuleVal):
        o = val.origin
        return (val.is_real() and o is not None and o.disabled is False and not o.rg_unknown
                and not val.opaque and not val.may_fake and not val.meta)
    if isinstance(val, TVal):
        origins = val.real_rg()
        return (bool(origins) and val.mode is None and not val.may_fake
                and all(o.kind == "parameter" and o.disabled is False for o in origins))
    return False


def register_part(mod, attr: str, val) -> None:
    """``mod.attr = val`` on a real module: a part that requires grad makes a frozen
    module (and the modules it is a known part of) require grad again."""
    if not isinstance(mod, ModuleVal) or not mod.is_real() or not _requires_grad_part(val):
        return
    o = mod.origin
    if isinstance(val, ModuleVal) and val.origin.parent is None and val.origin is not o:
        val.origin.parent, val.origin.param = o, attr  # (a part of it: switching one switches the other)
        if o.param_names is not None:
            heap_field(o, "param_names", o.param_names | {attr})
    _enable_up(o, attr)


def _enable_up(o, attr, depth: int = 0) -> None:
    if attr in o.frozen:
        heap_field(o, "frozen", o.frozen - {attr})
    if o.disabled is not False:
        heap_field(o, "disabled", False)
    parent = o.parent
    if parent is not None and o.param is not None and depth < 8:
        _enable_up(parent, o.param, depth + 1)
