"""Every torch name the runtime checker uses, private or public, in one place.

Nothing else in ``fakegrad_lint.runtime`` touches ``torch._*``. When a torch
release moves one of these, this is the only file to change. Importing this
module imports torch; everything else imports it lazily.
"""

from __future__ import annotations

import os
import warnings

from fakegrad_lint.runtime import RUNTIME_EXTRA_HINT, SUPPORTED_TORCH

_MIN_VERSION = (2, 4)


try:
    with warnings.catch_warnings():
        # a torch build without NumPy next to it warns on import; that is torch's
        # business, not a finding, and must not reach the user's one-line errors
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
except ImportError as exc:  # pragma: no cover - exercised through a subprocess test
    raise ImportError(
        f"the fakegrad-lint runtime checker needs torch ({SUPPORTED_TORCH}); install it with {RUNTIME_EXTRA_HINT}"
    ) from exc

from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.overrides import TorchFunctionMode  # noqa: F401  (used by watcher)
from torch.utils import _pytree
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

Tensor = torch.Tensor
Parameter = torch.nn.Parameter

# Substring of the AssertionError a default FakeTensorMode raises for a real input.
FAKE_ASSERTION_TEXT = "Please convert all Tensors to FakeTensors first"

TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep

# The autograd entry points that write or return gradients. Tensor.backward and
# torch.autograd.backward / grad all go through __torch_function__ handling, so
# a TorchFunctionMode sees them with their original arguments.
SINK_BACKWARD = (torch.Tensor.backward, torch.autograd.backward)
SINK_GRAD = torch.autograd.grad


def _parse_version(text: str) -> tuple[int, int]:
    parts = []
    for piece in text.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    while len(parts) < 2:
        parts.append(0)
    return parts[0], parts[1]


TORCH_VERSION = torch.__version__


def torch_supported(version: str = TORCH_VERSION) -> bool:
    return _parse_version(version) >= _MIN_VERSION


def warn_if_unsupported(version: str = TORCH_VERSION) -> bool:
    """Warn once when torch is older than the supported range; True when supported."""
    if torch_supported(version):
        return True
    warnings.warn(
        f"fakegrad-lint runtime checker supports torch {SUPPORTED_TORCH}; found torch {version}. "
        "Events may be missed or misattributed.",
        RuntimeWarning,
        stacklevel=2,
    )
    return False


try:  # torch >= 2.1: infra modes are kept in keyed slots, O(1) to query.
    _FAKE_KEY = torch._C._TorchDispatchModeKey.FAKE
    _get_dispatch_mode = torch._C._get_dispatch_mode

    def active_fake_mode():
        """The FakeTensorMode active on this thread's dispatch stack, or None."""
        mode = _get_dispatch_mode(_FAKE_KEY)
        if mode is not None:
            return mode
        return None

except AttributeError:  # pragma: no cover - older torch

    def active_fake_mode():
        for mode in reversed(_get_current_dispatch_mode_stack()):
            if isinstance(mode, FakeTensorMode):
                return mode
        return None


def tree_leaves(obj):
    return _pytree.tree_leaves(obj)


def disable_torch_function():
    """Context manager: torch-function modes and subclasses are off inside it."""
    return torch._C.DisableTorchFunction()


def is_fake(obj) -> bool:
    return isinstance(obj, FakeTensor)


def fake_mode_of(t):
    return getattr(t, "fake_mode", None)


def allows_non_fake(mode) -> bool | None:
    if mode is None:
        return None
    return bool(getattr(mode, "allow_non_fake_inputs", False))


def register_optimizer_step_post_hook(hook):
    """Global hook run after every ``Optimizer.step``; returns a removable handle."""
    from torch.optim.optimizer import register_optimizer_step_post_hook as reg

    return reg(hook)


def leaf_variables(t, limit: int = 20000):
    """Real leaf tensors that ``t``'s autograd graph accumulates into (``t`` itself for a leaf)."""
    if t.grad_fn is None:
        return [t] if t.requires_grad else []
    out = []
    seen = set()
    stack = [t.grad_fn]
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            out.append(var)
            continue
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return out


def set_default_device(device: str) -> None:
    torch.set_default_device(device)


def cuda_available() -> bool:
    return torch.cuda.is_available()
