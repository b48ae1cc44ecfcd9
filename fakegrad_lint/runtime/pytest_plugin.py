"""pytest plugin: ``pytest --fakegrad`` runs every test under the runtime watcher.

A test fails when, while its body runs, a real tensor's
``.grad`` becomes a FakeTensor (or ``torch.autograd.grad`` returns a fake
gradient for a real input); the failure names the line(s) where the tensor
entered fake ops and the line of the backward.

The plugin is registered for every pytest run through the ``pytest11`` entry
point, so this module imports neither torch nor the watcher unless
``--fakegrad`` is given.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("fakegrad")
    group.addoption(
        "--fakegrad",
        action="store_true",
        default=False,
        help="run every test under the fakegrad-lint runtime watcher; fail tests that leave a FakeTensor in a real .grad",
    )


class FakeGradLeak(AssertionError):
    """Raised into a test that leaked a fake gradient into a real tensor."""


def _where(path: str, line: int, rootdir: str) -> str:
    try:
        rel = os.path.relpath(path, rootdir)
    except ValueError:
        return f"{path}:{line}"
    return f"{path if rel.startswith(os.pardir) else rel}:{line}"


class _FakegradPlugin:
    def __init__(self, config):
        from fakegrad_lint.runtime.watcher import Watcher

        self._Watcher = Watcher
        self._rootdir = str(config.rootpath)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        __tracebackhide__ = True
        hazards = []

        def on_record(rec):
            if rec.get("type") == "hazard":
                hazards.append(rec)

        with self._Watcher(on_record=on_record):
            result = yield
        if hazards:
            from fakegrad_lint.runtime.messages import event_message

            seen, lines = set(), []
            for rec in hazards:
                key = (rec["filename"], rec["line"])
                if key in seen:
                    continue
                seen.add(key)
                lines.append(f"  {_where(rec['filename'], rec['line'], self._rootdir)}: {event_message(rec)}")
            raise FakeGradLeak("fakegrad: a real tensor's .grad became a FakeTensor\n" + "\n".join(lines))
        return result


def pytest_configure(config):
    if config.getoption("fakegrad", default=False):
        config.pluginmanager.register(_FakegradPlugin(config), "fakegrad-watcher")
