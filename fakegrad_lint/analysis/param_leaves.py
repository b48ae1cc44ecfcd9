"""Per-parameter provenance of torch layers and containers of them.

``model.named_parameters()`` of a real ``nn.Linear`` (or a ``Sequential``/``ModuleList``/
``ModuleDict`` of known torch layers) yields each parameter by its dotted name, in
registration order (``"0.weight"``, ``"0.bias"``, ...). Each parameter is one object
for the whole program (an :class:`Origin` of kind "parameter" with its layer as parent,
kept on the layer's origin), so that freezing it by name
(``if name.endswith("bias"): p.requires_grad_(False)``) and reading its flag later
(``[p for p in m.parameters() if p.requires_grad]``) see the same state, as in torch.

A parameter's ``requires_grad`` is derived from its own switch and its modules' (a
module switched off, or this parameter in the layer's ``frozen`` set): known True or
False only when every part of that is known.
"""

from __future__ import annotations

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.heap import heap_field
from fakegrad_lint.analysis.values import ModuleVal, Origin, TVal

# the order torch registers a layer's parameters in (others after, by name)
_ORDER = ("weight", "bias")
# layers whose parameters depend on arguments ``_known_params`` does not model
# (InstanceNorm has none unless ``affine=True``)
_UNSURE = frozenset({"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"})


def _ordered(names):
    return sorted(names, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))


def param_leaves(mod, line, prefix="", depth=0, device=None):
    """[(dotted name, TVal of that parameter)] of a real module whose every parameter is
    known, in ``named_parameters()`` order; None when not known. A parameter lives on its
    layer's known device, else on the one its container was given (``net.to_empty(device=
    "cpu")`` moves every part: ``p.is_meta`` stays known)."""
    if not isinstance(mod, ModuleVal) or depth > 4:
        return None
    if mod.cls is None and mod.children is None and mod.torch_class in N.PARAMLESS_MODULES and depth:
        return []  # (`nn.ReLU()` in a container: no parameters, whatever else is known of it)
    if not mod.is_real() or mod.cls is not None or mod.meta or mod.opaque or mod.may_fake:
        return None
    o = mod.origin
    device = mod.device if mod.device is not None else device
    if mod.children is not None:
        if mod.torch_class not in ("Sequential", "ModuleList", "ModuleDict"):
            return None
        out = []
        for k in mod.children:
            child = mod.attrs.get(k)
            got = param_leaves(child, line, f"{prefix}{k}.", depth + 1, device)
            if got is None:
                return None
            out.extend(got)
        return out
    if mod.torch_class is None or mod.torch_class in _UNSURE:
        return None
    if o.param_names is None:
        return None
    if o.leaves is None:
        o.leaves = {}  # one object per parameter
    leaves = o.leaves
    out = []
    for p in _ordered(o.param_names):
        leaf = leaves.get(p)
        if leaf is None:
            # (made with its layer: the trace's source is where the layer was built)
            leaf = leaves[p] = Origin(f"{o.name}.{p}" if o.name else p, "parameter", o.line, parent=o, param=p)
        heap_field(leaf, "disabled", effective_disabled(leaf))
        out.append((prefix + p, TVal(frozenset([leaf]), device=device)))
    return out


def leaves_of(mod):
    """The per-parameter origins made so far for a real module's own parameters (a layer's,
    or a container's layers'), as a frozenset: a leak of one of them is a leak of the module."""
    out = set()
    stack, seen = [mod], 0
    while stack and seen < 64:
        m = stack.pop()
        seen += 1
        if not isinstance(m, ModuleVal) or not m.is_real():
            continue
        if m.origin is not None:
            out.update((m.origin.leaves or {}).values())
        if m.children is not None:
            stack.extend(m.attrs.get(k) for k in m.children)
    return frozenset(out)


class ParamLeavesMixin:
    @property
    def loop_iters(self):
        """ids of the expressions a ``for`` or a comprehension iterates: there a loop's
        body sees the parameters one by one (``named_parameters()`` gives the leaves)."""
        return self.__dict__.setdefault("_loop_iters", set())


def _ancestors_disabled(origin):
    """True when a module above ``origin`` switched it off (the module, or this part
    of it), None when that holds on some paths only, else False."""
    out = False
    o = origin
    for _ in range(8):
        parent = o.parent
        if parent is None:
            break
        if parent.disabled is True or (o.param is not None and o.param in parent.frozen):
            return True
        if parent.disabled is None:
            out = None
        o = parent
    return out


def effective_disabled(leaf):
    """Is the parameter ``leaf`` switched off now (None: on some paths only)? Its
    modules' state is the newer one (switching a parameter off records it in its
    layer's ``frozen`` set; switching a module on clears that)."""
    above = _ancestors_disabled(leaf)
    if above is not False:
        return above
    return None if leaf.disabled is None else False


def requires_grad_of(t):
    """``p.requires_grad`` of a real parameter of a known layer: ConstVal-ready bool, or
    None when not known."""
    if not isinstance(t, TVal) or t.mode is not None or t.derived or t.may_fake or len(t.origins) != 1:
        return None
    (o,) = t.origins
    if o.kind != "parameter" or o.parent is None or o.param is None or o.parent.kind != "module":
        return None
    d = effective_disabled(o)
    return None if d is None else not d


def split_state(leaves):
    """Do the parameters differ in ``requires_grad`` (some switched one by one)? Then
    each must be followed by itself; else the module's own provenance says it all."""
    return any(effective_disabled(o) is not False for _, t in leaves for o in t.origins)


def covered_modules(origins):
    """The module origins every parameter of which is among ``origins`` (parameters of
    known layers; a container once each of its parts is covered): what is said of all
    of its parameters (``opt.zero_grad()`` over them) is said of the module."""
    done = {id(o): o for o in origins}
    out = []
    for _ in range(4):
        by_parent = {}
        for o in done.values():
            if o.parent is not None and o.param is not None:
                by_parent.setdefault(id(o.parent), (o.parent, set()))[1].add(o.param)
        new = [p for p, names in by_parent.values()
               if p.param_names and names >= p.param_names and id(p) not in done]
        if not new:
            break
        for p in new:
            done[id(p)] = p
            out.append(p)
    return out


def maybe_switched(origin, depth=0):
    """Was some parameter of this module switched off on some paths only (one of its
    leaves, or of its submodules')? Then what the module brings is only possibly
    requires-grad (a module-level join keeps only what every path froze)."""
    if depth > 4 or origin is None:
        return False
    if any(leaf.disabled is None for leaf in (origin.leaves or {}).values()):
        return True
    owner = origin.owner
    if owner is not None and getattr(owner, "children", None) is not None:
        for k in owner.children:
            child = owner.attrs.get(k)
            if child is not None and getattr(child, "origin", None) is not None \
                    and maybe_switched(child.origin, depth + 1):
                return True
    return False
