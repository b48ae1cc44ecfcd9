"""Runtime checker: watch user code for real requires-grad tensors entering fake ops.

This is the only package of fakegrad-lint that imports torch, and only lazily:
importing ``fakegrad_lint.runtime`` itself does not import torch; ``Watcher``,
``watch`` and entering a ``guard()`` do. Every torch internal used lives in
``fakegrad_lint.runtime.torch_compat``.
"""

from fakegrad_lint.runtime.errors import FakeGradError
from fakegrad_lint.runtime.guard import guard

SUPPORTED_TORCH = ">=2.4"
RUNTIME_EXTRA_HINT = "pip install 'fakegrad-lint[runtime]'"

__all__ = ["SUPPORTED_TORCH", "FakeGradError", "Watcher", "guard", "watch"]


def __getattr__(name):
    if name in ("Watcher", "watch", "user_events", "event_message"):
        from fakegrad_lint.runtime import watcher

        return getattr(watcher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
