"""``guard()``: fail fast the moment a real requires-grad tensor enters a fake op."""

from __future__ import annotations

import contextlib
import functools


class Guard(contextlib.ContextDecorator):
    """Context manager and decorator; raises :class:`FakeGradError` on the first leak.

    Forward-only use under ``allow_non_fake_inputs=True`` raises too: the guard
    is strict on purpose (convert with ``fake_mode.from_tensor`` at the boundary).
    """

    def __init__(self):
        self._stack = []

    def __enter__(self):
        from fakegrad_lint.runtime.watcher import Watcher

        w = Watcher(raise_on_entry=True)
        w.__enter__()
        self._stack.append(w)
        return w

    def __exit__(self, *exc):
        self._stack.pop().__exit__(*exc)
        return False


def guard(func=None):
    """``with guard(): ...``, ``@guard()`` or ``@guard``."""
    if func is not None and callable(func):
        g = Guard()

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with g:
                return func(*args, **kwargs)

        return wrapper
    return Guard()
