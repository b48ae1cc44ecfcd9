"""Qualified names the analysis recognises, after import resolution.

Names are resolved through the file's imports (``import torch.nn as nn``,
``from torch._subclasses import FakeTensorMode as FTM``) before they are looked
up here, so a local class or variable that merely has one of these spellings is
never mistaken for torch's.
"""

from __future__ import annotations

import ast


def dotted_name(node) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None

FAKE_TENSOR_MODE = frozenset(
    {
        "torch._subclasses.fake_tensor.FakeTensorMode",
        "torch._subclasses.FakeTensorMode",
    }
)
FAKE_COPY_MODE = frozenset(
    {"torch._subclasses.fake_tensor.FakeCopyMode", "torch._subclasses.FakeCopyMode"}
)
DETECT_FAKE_MODE = frozenset({"torch._guards.detect_fake_mode"})
UNSET_FAKE = frozenset(
    {
        "torch._subclasses.fake_tensor.unset_fake_temporarily",
        "torch._subclasses.unset_fake_temporarily",
        "torch.utils._mode_utils.no_dispatch",
        "torch.utils._python_dispatch._disable_current_modes",
        "torch._C._DisableTorchDispatch",
        "torch._subclasses.fake_tensor.disable_fake_tensor_mode_tracing",
    }
)
GRAD_OFF = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
    }
)
GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})
NULL_CONTEXT = frozenset({"contextlib.nullcontext", "contextlib.suppress"})
EXIT_STACK = frozenset({"contextlib.ExitStack"})
CONTEXT_MANAGER = frozenset({"contextlib.contextmanager"})
PATCH_OBJECT = frozenset({"unittest.mock.patch.object", "mock.patch.object"})
MAKE_FX = frozenset({"torch.fx.experimental.proxy_tensor.make_fx", "torch.fx.experimental.make_fx"})
DEEPCOPY = frozenset({"copy.deepcopy"})
FUNCTIONAL_CALL = frozenset(
    {"torch.func.functional_call", "torch.nn.utils.stateless.functional_call", "torch._functorch.functional_call.functional_call"}
)
PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
AUTOGRAD_BACKWARD = frozenset({"torch.autograd.backward"})
AUTOGRAD_GRAD = frozenset({"torch.autograd.grad"})
FROM_REAL_TENSOR_ATTR = ("from_tensor", "from_real_tensor")

# torch.* callables that are not tensor ops: no operand dispatches on a tensor.
TORCH_NON_OPS_PREFIX = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.testing.",
    "torch.jit.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.optim.",
    "torch.nn.init.calculate",
    "torch.fx.",
    # whole-program tools: their results are programs and handles, not tensors
    "torch.export.",
    "torch.onnx.",
    "torch.package.",
    "torch.hub.",
    "torch.profiler.",
    "torch.library.",
    "torch.overrides.",
)
TORCH_NON_OPS = frozenset(
    {
        "torch.Size",
        "torch.device",
        "torch.dtype",
        "torch.manual_seed",
        "torch.set_default_device",
        "torch.set_default_dtype",
        "torch.get_default_dtype",
        "torch.is_tensor",
        "torch.is_grad_enabled",
        "torch.is_floating_point",
        "torch.numel",
        "torch.compile",
        "torch.Generator",
        "torch.typename",
        "torch.get_default_device",
        "torch.set_printoptions",
        "torch.use_deterministic_algorithms",
        "torch.set_num_threads",
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_value_",
    }
)
# torch.* functions whose result carries no autograd history from their inputs.
NON_DIFFERENTIABLE_FUNCS = frozenset(
    {
        "torch.zeros_like",
        "torch.ones_like",
        "torch.empty_like",
        "torch.full_like",
        "torch.rand_like",
        "torch.randn_like",
        "torch.randint_like",
        "torch.argmax",
        "torch.argmin",
        "torch.argsort",
        "torch.eq",
        "torch.ne",
        "torch.lt",
        "torch.gt",
        "torch.le",
        "torch.ge",
        "torch.isnan",
        "torch.isinf",
        "torch.isfinite",
        "torch.sign",
        "torch.equal",
        "torch.allclose",
        "torch.isclose",
        "torch.nonzero",
        "torch.count_nonzero",
    }
)
# Tensor methods and attributes that read metadata only (no dispatch on the data).
METADATA_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "stride",
        "storage_offset",
        "element_size",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "get_device",
        "type",
        "is_leaf",
        "has_names",
        "is_shared",
        "is_pinned",
        "data_ptr",
        "untyped_storage",
        "requires_grad_",
        "retain_grad",
        "register_hook",
        "__len__",
    }
)
METADATA_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "requires_grad",
        "is_leaf",
        "layout",
        "is_cuda",
        "is_meta",
        "is_sparse",
        "is_quantized",
        "names",
        "grad_fn",
        "_version",
        "itemsize",
        "nbytes",
    }
)
NON_DIFFERENTIABLE_METHODS = frozenset(
    {
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_tensor",
        "argmax",
        "argmin",
        "argsort",
        "long",
        "int",
        "bool",
        "short",
        "byte",
        "char",
        "eq",
        "ne",
        "lt",
        "gt",
        "le",
        "ge",
        "isnan",
        "isinf",
        "nonzero",
        "sign",
        "zero_",
    }
)
