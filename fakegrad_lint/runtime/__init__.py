"""Runtime checker: watch user code for real requires-grad tensors entering fake ops.

This is the only package of fakegrad-lint that imports torch, and only lazily:
importing ``fakegrad_lint.runtime`` itself does not import torch; ``Watcher``,
``watch`` and entering a ``guard()`` do. Every torch internal used lives in
``fakegrad_lint.runtime.torch_compat``.
"""

from fakegrad_lint.runtime.errors import FakeGradError
from fakegrad_lint.runtime.guard import guard

SUPPORTED_TORCH = ">=2.4"  # the `runtime` extra of pyproject.toml (tests/test_everyday.py checks they agree)
# A command that works wherever fakegrad-lint came from (a clone, a git URL, a
# wheel): the runtime extra is torch and nothing else.
RUNTIME_EXTRA_HINT = f"pip install 'torch{SUPPORTED_TORCH}'"

__all__ = ["SUPPORTED_TORCH", "FakeGradError", "Watcher", "guard", "watch"]


def __getattr__(name):
    if name in ("Watcher", "watch", "user_events", "event_message"):
        from fakegrad_lint.runtime import watcher

        return getattr(watcher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
