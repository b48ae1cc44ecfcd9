"""Exceptions of the runtime checker (no torch import here)."""


class FakeGradError(RuntimeError):
    """A real requires-grad tensor entered a fake op while :func:`fakegrad_lint.runtime.guard` was active."""
