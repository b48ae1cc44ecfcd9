"""Whole-project analysis of layouts where what a module does depends on Python's
semantics across modules (fixtures/probes4_projects has the runnable corpus): a plugin
list built by appending ``importlib.import_module`` results over known names, a
container built inside a region from modules made before it, a pytest-like runner
(fixtures registered by ``fn.__name__``, ``inspect.signature``, generator fixtures,
``vars(module)``), and a module-level cache filled inside a region by a module's
forward and read back by a real step. Each hazard has a safe look-alike; every file's
findings equal its markers."""

from __future__ import annotations

import pytest

from test_project import assert_markers, make

CORE = """\
import importlib

from torch._subclasses.fake_tensor import FakeTensorMode


def load(names):
    mods = []
    for name in names:
        mod = importlib.import_module(name)
        if not hasattr(mod, "analyze"):
            continue
        mods.append(mod)
    return mods


def run_all(plugins, model):
    out = {}
    with FakeTensorMode(allow_non_fake_inputs=True):
        for plugin in plugins:
            out[plugin.NAME] = plugin.analyze(model)
    return out
"""

COUNT = """\
NAME = "count"


def analyze(model):
    return sum(p.numel() for p in model.parameters())
"""

BACKWARD = """\
import torch

NAME = "backward"


def analyze(model):
    out = model(torch.randn(2, 4))
    out.sum().backward()
    return tuple(out.shape)
"""


@pytest.mark.parametrize("names, marker", [
    ('["plugins.count", "plugins.backward"]', "  # FGL001"),
    ('["plugins.count", "plugins.count"]', ""),
])
def test_plugins_appended_over_known_names(tmp_path, names, marker):
    """``mods.append(import_module(name))`` over a list of known names keeps the list's
    elements, in order: the loop in another module then runs each plugin."""
    make(tmp_path, {
        "core.py": CORE,
        "plugins/__init__.py": "",
        "plugins/count.py": COUNT,
        "plugins/backward.py": BACKWARD,
        "run.py": f"""\
            import torch.nn as nn

            from core import load, run_all

            model = nn.Linear(4, 3)
            print(run_all(load({names}), model)){marker}
            """,
    })
    assert_markers(tmp_path)


EMPTY = """\
from torch._subclasses.fake_tensor import FakeTensorMode


class init_empty_weights:
    def __init__(self):
        self._mode = FakeTensorMode(allow_non_fake_inputs=True)

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)
"""


@pytest.mark.parametrize("before, inside, marker", [
    ("adapters = [nn.Linear(a, b) for a, b in DIMS]", "", "  # FGL001"),
    ("", "adapters = [nn.Linear(a, b) for a, b in DIMS]", ""),
])
def test_container_built_in_region_holds_real_modules(tmp_path, before, inside, marker):
    """A Sequential built inside a region from modules made before it holds them (their
    parameters stay real); ``zip`` of known lists keeps its pairs in order."""
    make(tmp_path, {
        "lite/__init__.py": "from .empty import init_empty_weights\n",
        "lite/empty.py": EMPTY,
        "plan.py": f"""\
            import torch
            import torch.nn as nn

            from lite import init_empty_weights

            DIMS = [(4, 8), (8, 2)]
            {before}
            with init_empty_weights():
                {inside}
                layers = [nn.Sequential(nn.Linear(a, b), ad) for (a, b), ad in zip(DIMS, adapters)]
                model = nn.Sequential(layers[0][1], nn.ReLU(), layers[1][1])
                loss = model(torch.randn(2, 4)).sum(){marker}
                loss.backward()
            """,
    })
    assert_markers(tmp_path)


FIXTURES = """\
import contextlib

import torch.nn as nn
from torch._subclasses.fake_tensor import FakeTensorMode

FIXTURES = {}


def fixture(fn):
    FIXTURES[fn.__name__] = fn
    return fn


@fixture
def model():
    return nn.Linear(6, 2)


@fixture
def session():
    with %s as mode:
        yield mode
"""

CHECKS = """\
import torch


def test_shape(model, session):
    assert model(torch.randn(3, 6)).shape == (3, 2)


def helper():
    return 0
"""

RUNNER = """\
import contextlib
import importlib
import inspect
import types

from checks.fixtures import FIXTURES


def resolve(fn, stack):
    kwargs = {}
    for name in inspect.signature(fn).parameters:
        value = FIXTURES[name]()
        if isinstance(value, types.GeneratorType):
            gen = value
            value = next(gen)
            stack.callback(lambda g=gen: next(g, None))
        kwargs[name] = value
    return kwargs


def main():
    mod = importlib.import_module("checks.test_shapes")
    tests = [(n, f) for n, f in sorted(vars(mod).items()) if n.startswith("test_")]
    for name, fn in tests:
        with contextlib.ExitStack() as stack:
            fn(**resolve(fn, stack))%s


main()
"""


@pytest.mark.parametrize("ctx, marker", [("FakeTensorMode()", "  # FGL002"), ("contextlib.nullcontext()", "")])
def test_pytest_like_runner(tmp_path, ctx, marker):
    """Fixtures registered by ``fn.__name__``, resolved by ``inspect.signature``, a
    generator fixture told apart with ``isinstance(v, types.GeneratorType)`` and entered
    with ``next``; tests collected from ``vars(module)``."""
    make(tmp_path, {
        "checks/__init__.py": "",
        "checks/fixtures.py": FIXTURES % ctx,
        "checks/test_shapes.py": CHECKS,
        "runner.py": RUNNER % marker,
    })
    assert_markers(tmp_path)


POOL = """\
import torch

_POOL = {}


def scratch(shape):
    key = tuple(shape)
    if key not in _POOL:
        _POOL[key] = torch.zeros(key)
    return _POOL[key]


def reset():
    _POOL.clear()


def drop(shape):
    del _POOL[tuple(shape)]
"""

LAYER = """\
import torch.nn as nn

from .pool import scratch


class Biased(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) + scratch(x.shape)
"""


@pytest.mark.parametrize("between, marker", [
    ("", "  # FGL003"),
    ("pool.reset()", ""),
    ("pool.drop((8, 4))", ""),
])
def test_cache_filled_by_forward_in_region(tmp_path, between, marker):
    """A module's forward run inside a region fills a module-level cache of another
    module with a fake buffer; the real step after it reads the fake back (unless the
    cache was cleared, or the key deleted, in between)."""
    make(tmp_path, {
        "kernels/__init__.py": "",
        "kernels/pool.py": POOL,
        "kernels/layer.py": LAYER,
        "train.py": f"""\
            import torch
            from torch._subclasses.fake_tensor import FakeTensorMode

            from kernels import pool
            from kernels.layer import Biased

            model = Biased()
            with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
                model(torch.empty(8, 4))
            {between}
            loss = model(torch.randn(8, 4)).sum(){marker}
            loss.backward()
            """,
    })
    assert_markers(tmp_path)
