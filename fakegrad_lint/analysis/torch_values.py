"""Torch's semantics applied to abstract values, as pure functions over the rows
of :mod:`fakegrad_lint.analysis.torch_tables` (the data): which qualified names are
``nn.Module`` classes, torch ops or third-party module factories, the known
parameters of common layers, what ``requires_grad_`` and ``from_tensor``/deepcopy
under a mode do to a value, grad-mode constructors.

The tables hold the facts; this module holds no branch a table row could express.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.heap import heap_field
from fakegrad_lint.analysis.values import UNKNOWN, ClassVal, ConstVal, FuncVal, MaybeVal, ModuleVal, SeqVal, TVal

_MODULE_ITERATORS = frozenset({"children", "modules", "named_children", "named_modules", "parameters",
                               "named_parameters", "buffers", "named_buffers", "values", "items"})


def _owns(mod, origin, depth: int = 0) -> bool:
    """Is ``origin`` the origin of module value ``mod``, of one of its parameters, or
    of one of its submodules (known attributes, a few levels down)?"""
    o = origin
    while o is not None:
        if o is mod.origin:
            return True
        o = o.parent
    if depth >= 4:
        return False
    return any(isinstance(v, ModuleVal) and _owns(v, origin, depth + 1) for v in mod.attrs.values())


def _forward_uses_fakes(cls, attrs):
    """A module of the file built in a region: does its ``forward`` read a fake
    parameter or submodule of it (``self.proj``), with no real one among them?"""
    if any(v.real_rg() or (isinstance(v, ModuleVal) and v.meta) for v in attrs.values()):
        return False
    fwd = cls.lookup_method("forward")
    if not isinstance(fwd, FuncVal) or not fwd.node.args.args:
        return False
    me = fwd.node.args.args[0].arg
    fakes = {k for k, v in attrs.items() if isinstance(v, (ModuleVal, TVal)) and v.proven_fake()}
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == me and n.attr in fakes
               for n in ast.walk(fwd.node))


def _is_nn_module_class(q):
    if q in N.NN_MODULE_BASE:
        return True
    if not q.startswith("torch.nn."):
        return False
    parts = q[len("torch.nn."):].split(".")
    if not parts[-1][:1].isupper():
        return False
    if parts[0] in N.NN_NON_MODULE_SUBPACKAGES:
        return False
    return parts[-1] not in N.NN_NON_MODULE_CLASSES


def _is_module_factory(q):
    """A third-party call that returns a real module (torchvision.models.resnet18,
    timm.create_model, transformers' from_pretrained / from_config)."""
    for prefix, how in N.MODULE_FACTORIES:
        if how == "exact":
            if q == prefix:
                return True
        elif q.startswith(prefix):
            rest = q[len(prefix):].split(".")
            if how == "lower" and len(rest) == 1 and rest[0][:1].islower():
                return True
            if how == "loader" and len(rest) == 2 and rest[0][:1].isupper() and rest[1] in N.LOADER_METHODS:
                return True
    return False


def _is_torch_op(q):
    if q in N.TORCH_NON_OPS or any(q.startswith(p) for p in N.TORCH_NON_OPS_PREFIX):
        return False
    last = q.rsplit(".", 1)[-1]
    if last[:1].isupper():
        return False  # classes: torch.Size, torch.Generator, torch.nn.X (handled before)
    if q.startswith(("torch.func.", "torch.vmap", "torch.autograd.", "torch._")):
        return False
    return True


def _module_classes(v, depth=0):
    """A module class of the file, or a container of them (a registry)."""
    if isinstance(v, ClassVal):
        return v.is_module
    if isinstance(v, (SeqVal, MaybeVal)) and depth < 2:
        return any(_module_classes(x, depth + 1) for x in (v.items if isinstance(v, SeqVal) else v.options))
    return False


def _set_requires_grad(v, on, depth=0):
    """``module.requires_grad_(on)``: every parameter of the module, its submodules'
    included (attributes of modules of the file), is switched."""
    if isinstance(v, ModuleVal):
        if v.origin is not None:
            heap_field(v.origin, "disabled", not on)
            if on:
                heap_field(v.origin, "frozen", set())
            _part_switched(v.origin, on)
        if depth < 4:
            for x in v.attrs.values():
                if isinstance(x, (ModuleVal, TVal, SeqVal)):
                    _set_requires_grad(x, on, depth + 1)
    elif isinstance(v, TVal):
        for o in v.origins:
            if o.kind in ("parameter", "module"):
                heap_field(o, "disabled", not on)
                if o.kind == "module":
                    _part_switched(o, on)
    elif isinstance(v, SeqVal) and depth < 4:
        for x in v.items:
            _set_requires_grad(x, on, depth + 1)


def _part_switched(o, on):
    """A child module of a container (``net[0]``) switched on or off: the container is off
    once every child with parameters is, and on again with any of them."""
    parent = o.parent
    if parent is None or o.param is None or parent.kind != "module":
        return
    if on:
        heap_field(parent, "frozen", parent.frozen - {o.param})
        heap_field(parent, "disabled", False)
    else:
        heap_field(parent, "frozen", parent.frozen | {o.param})
        if parent.param_names is not None and parent.frozen >= parent.param_names:
            heap_field(parent, "disabled", True)
            _part_switched(parent, False)


def _enable_module_origins(v):
    """``p.requires_grad_(True)`` over a module's parameters (an ``unfreeze`` loop over
    ``model.parameters()``) or of one known parameter: requires grad again."""
    for o in v.origins:
        if o.kind == "module" and o.disabled:
            heap_field(o, "disabled", False)
            heap_field(o, "frozen", set())
            _part_switched(o, True)
            if o.owner is not None:
                _set_requires_grad(o.owner, True)
        elif o.parent is not None and o.param is not None:
            heap_field(o, "disabled", False)
            heap_field(o.parent, "frozen", o.parent.frozen - {o.param})
            heap_field(o.parent, "disabled", False)
            _part_switched(o.parent, True)  # (its container is on again too)


def _disable_module_origins(v):
    """``p.requires_grad_(False)`` over a module's parameters (a loop over
    ``model.parameters()``), or over each of its known parameters by name
    (``lin.weight.requires_grad = False``): the module no longer brings
    requires-grad values."""
    for o in v.origins:
        if o.kind == "module":
            heap_field(o, "disabled", True)
            _part_switched(o, False)
            if o.owner is not None:
                _set_requires_grad(o.owner, False)
        elif o.parent is not None and o.param is not None:
            heap_field(o, "disabled", True)
            parent = o.parent
            heap_field(parent, "frozen", parent.frozen | {o.param})
            if parent.param_names is not None and parent.frozen >= parent.param_names:
                heap_field(parent, "disabled", True)
                _part_switched(parent, False)  # (a layer of a container: the container's part is off)


def _known_params(cls_name, kwargs):
    """The parameter names of common torch.nn layers (None when not known)."""
    if cls_name in N.WEIGHT_ONLY_MODULES:
        return frozenset({"weight"})
    if cls_name in N.WEIGHT_AND_BIAS_MODULES:
        names = {"weight", "bias"}
        for flag in ("bias", "elementwise_affine", "affine"):
            v = kwargs.get(flag)
            if isinstance(v, ConstVal) and v.value is False:
                names = set() if flag != "bias" else names - {"bias"}
        if cls_name == "RMSNorm":
            names.discard("bias")
        return frozenset(names)
    return None


def _name_origins(val, name, line):
    """``x = torch.randn(..., requires_grad=True)``: the origin made on this line is ``x``."""
    origins = val.real_rg() if isinstance(val, (TVal, ModuleVal)) else ()
    for o in origins:
        if o.line == line and o.name in ("tensor", "module", "parameter"):
            o.name = name
    if isinstance(val, ModuleVal) and val.children is not None and val.cls is None:
        # a container's children made in its constructor call: `net[0]`, `net["head"]`
        for k in val.children:
            child = val.attrs.get(k)
            o = child.origin if isinstance(child, ModuleVal) else None
            if o is not None and o.line == line and o.name == "module" and o.parent is val.origin:
                o.name = f"{name}[{k}]" if not k.isidentifier() else f"{name}.{k}"


def _grad_mode_kind(q, args, kwargs):
    """The context a grad-mode constructor builds, from torch_tables' meaning of its
    constant argument: "grad_on" or "grad_off" (an unknown argument: grad may be off)."""
    without, by_arg = N.GRAD_MODE_CONTEXTS[q]
    arg = args[0] if args else kwargs.get(N.GRAD_MODE_ARGUMENT)
    if (arg is None or not by_arg) and without is not None:
        mode = without
    elif isinstance(arg, ConstVal) and isinstance(arg.value, (bool, int)) and bool(arg.value) in by_arg:
        mode = by_arg[bool(arg.value)]
    else:
        mode = "off"
    return "grad_on" if mode == "on" else "grad_off"


def _is_meta(vals):
    for v in vals:
        if isinstance(v, ConstVal) and isinstance(v.value, str) and v.value.startswith("meta"):
            return True
    return False


def _with_taint(v, leaks):
    if isinstance(v, TVal):
        return TVal(v.origins, v.mode, v.leaks | leaks, v.derived, closed=v.closed)
    if isinstance(v, SeqVal):
        items = tuple(_with_taint(x, leaks) for x in v.items)
        elts = tuple(_with_taint(x, leaks) for x in v.elts) if v.elts is not None else None
        return SeqVal(items, elts, v.keys, v.is_dict)
    return v


def _fake_copy(v, mode, depth=0):
    """What ``from_tensor`` / a deepcopy under a fake mode gives: the same structure,
    every tensor (and every submodule's parameter) fake."""
    if isinstance(v, ModuleVal):
        attrs = {k: (_fake_copy(x, mode, depth + 1) if depth < 4 and isinstance(x, (ModuleVal, TVal, SeqVal)) else x)
                 for k, x in v.attrs.items()}
        return ModuleVal(None, mode, v.cls, attrs)
    if isinstance(v, SeqVal):
        items = tuple(_fake_copy(x, mode, depth + 1) for x in v.items)
        elts = tuple(_fake_copy(x, mode, depth + 1) for x in v.elts) if v.elts is not None else None
        return SeqVal(items, elts, v.keys, v.is_dict)
    if isinstance(v, (TVal, MaybeVal)) or v is UNKNOWN:
        return TVal(frozenset(), mode, shape=v.shape if isinstance(v, TVal) else None)  # (a copy: same sizes)
    return v


def _proven_copy(copy, src, may):
    """A fake deep copy of a real torch module: its outputs are fake (its forward
    uses the copied parameters); a copy of a module of the file, when its forward reads them."""
    if isinstance(copy, ModuleVal) and isinstance(src, ModuleVal) and src.origin is not None:
        copy.may_fake = may
        copy.fake_out = src.cls is None or _forward_uses_fakes(src.cls, copy.attrs)
    return copy


# ------------------------------------------------------------------ shapes


def with_shape(t, shape):
    """``t`` with a known shape (None leaves it unknown)."""
    if not isinstance(t, TVal) or shape is None or t.shape == shape:
        return t
    return TVal(t.origins, t.mode, t.leaks, t.derived, t.may_fake, tuple(shape), closed=t.closed)


def shape_of(v):
    """The shape ``v`` has as an operand: a tensor's known shape, ``()`` for a Python
    number; None when not known."""
    if isinstance(v, TVal):
        return v.shape
    if isinstance(v, ConstVal) and type(v.value) in (int, float, bool):
        return ()
    return None


def _ints(vals):
    out = []
    for v in vals:
        if not (isinstance(v, ConstVal) and type(v.value) is int):
            return None
        out.append(v.value)
    return tuple(out)


def size_of_args(args):
    """``f(2, 3)``, ``f((2, 3))``, ``f(x.shape)``: the sizes (None: not known ints)."""
    if len(args) == 1 and isinstance(args[0], SeqVal) and args[0].elts is not None and args[0].keys is None:
        args = args[0].elts
    sizes = _ints(args)
    return sizes if sizes is not None and all(n >= 0 for n in sizes) else None


def shape_value(shape):
    """A known shape as Python sees ``x.shape`` (a tuple of ints; torch.Size is one)."""
    items = tuple(ConstVal(n) for n in shape)
    return SeqVal(items, items)


def broadcast(shapes):
    """torch's broadcasting of known shapes (None: one is unknown or they do not broadcast)."""
    if any(s is None for s in shapes):
        return None
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        dims = {s[len(s) - n + i] for s in shapes if len(s) - n + i >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _reshape(shape, args):
    sizes = _ints(args[0].elts) if len(args) == 1 and isinstance(args[0], SeqVal) and args[0].elts is not None else _ints(args)
    if shape is None or sizes is None or sizes.count(-1) > 1 or any(n < -1 for n in sizes):
        return None
    total = 1
    for n in shape:
        total *= n
    known = 1
    for n in sizes:
        if n != -1:
            known *= n
    if -1 in sizes:
        if known == 0 or total % known:
            return None
        sizes = tuple(total // known if n == -1 else n for n in sizes)
    elif known != total:
        return None
    return sizes


def _dim(d, ndim):
    if not (isinstance(d, ConstVal) and type(d.value) is int) or ndim == 0:
        return None
    i = d.value + ndim if d.value < 0 else d.value
    return i if 0 <= i < ndim else None


def _matmul(a, b):
    if a is None or b is None or len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    batch = broadcast([a[:-2], b[:-2]])
    return None if batch is None else batch + (a[-2], b[-1])


def op_shape(name, shapes, args, kwargs):
    """The result shape of the op ``name`` (a Tensor method, or a torch function's
    qualified name) on operands of ``shapes`` (the receiver or first tensor first;
    ``args``: the values after it). None: not known."""
    first = shapes[0] if shapes else None
    if name in N.SHAPE_SAME_METHODS or name in N.SHAPE_SAME_FUNCS:
        return first
    if name in N.SHAPE_BROADCAST_METHODS or name in N.SHAPE_BROADCAST_FUNCS:
        return broadcast(shapes) if len(shapes) >= 2 else None
    if name in N.SHAPE_RESHAPE_METHODS:
        return _reshape(first, list(args)) if args and not kwargs else None
    if name in N.SHAPE_MATMUL:
        return _matmul(first, shapes[1]) if len(shapes) == 2 else None
    if name in N.SHAPE_TRANSPOSE and first is not None and len(args) == 2:
        i, j = _dim(args[0], len(first)), _dim(args[1], len(first))
        if i is None or j is None:
            return None
        out = list(first)
        out[i], out[j] = out[j], out[i]
        return tuple(out)
    if name in N.SHAPE_UNSQUEEZE and first is not None and len(args) == 1:
        i = _dim(args[0], len(first) + 1)
        return None if i is None else first[:i] + (1,) + first[i:]
    if name in ("t", "T") and first is not None and len(first) <= 2:
        return tuple(reversed(first))
    return None


def shape_read(name, shape, args):
    """``x.size()``, ``x.size(d)``, ``x.dim()``, ``x.numel()`` on a known shape (None: not known)."""
    if shape is None:
        return None
    if name == "size":
        if not args:
            return shape_value(shape)
        i = _dim(args[0], len(shape)) if len(args) == 1 else None
        return None if i is None else ConstVal(shape[i])
    if args:
        return None
    if name in ("dim", "ndimension"):
        return ConstVal(len(shape))
    total = 1
    for n in shape:
        total *= n
    return ConstVal(total)


def layer_output_shape(mod, args, kwargs):
    """The output shape of a torch layer's forward on one input of known shape, where
    torch's rule is exact (``torch_tables.SHAPE_LAYERS``); None otherwise."""
    if not (isinstance(mod, ModuleVal) and mod.cls is None and mod.layer_args is not None and len(args) == 1
            and not kwargs and isinstance(args[0], TVal) and args[0].shape):
        return None
    rule = N.SHAPE_LAYERS.get(mod.torch_class)
    shape = args[0].shape
    if rule == "same":
        return shape
    pos, kw = mod.layer_args
    if rule == "linear":
        out = pos[1] if len(pos) > 1 else kw.get("out_features")
        inp = pos[0] if pos else kw.get("in_features")
        if type(out) is int and type(inp) is int and shape[-1] == inp:
            return shape[:-1] + (out,)
        return None
    if rule == "embedding":
        dim = pos[1] if len(pos) > 1 else kw.get("embedding_dim")
        return shape + (dim,) if type(dim) is int else None
    return None
