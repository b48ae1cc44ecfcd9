"""What code of one module does to the values another module hands it, as Python and
torch do it (fixtures/probes5_projects, fixtures/probes6_projects have the runnable
corpus): ``nn.Module.__setattr__`` registering a trainable adapter, submodule or
parameter on a frozen model (a helper of another module given the model), a test
runner looping over a module's whole namespace (``vars(module)``: more than the
eight elements a loop over unkeyed values unrolls), and a ``unittest.TestCase``
whose ``setUp`` makes the mode its tests enter. Each hazard has a safe look-alike;
every file's findings equal its markers."""

from __future__ import annotations

import pytest

from test_project import assert_markers, make

BACKBONE = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = nn.Linear(dim, dim)
        self.adapter = None

    def forward(self, x):
        h = self.ff(x)
        if self.adapter is not None:
            h = h + self.adapter(h)
        return x + h


class Backbone(nn.Module):
    def __init__(self, dim=8, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
"""

# %s: the adapter helper's body (freeze first or last)
ATTACH = """\
import torch.nn as nn


def attach(model, dim):
%s
"""
FREEZE_THEN_ATTACH = """\
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.blocks:
        block.adapter = nn.Linear(dim, dim)"""
ATTACH_THEN_FREEZE = """\
    for block in model.blocks:
        block.adapter = nn.Linear(dim, dim)
    for p in model.parameters():
        p.requires_grad_(False)"""

PROBE = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from backbone import Backbone
from peft import attach

model = Backbone()
attach(model, 8)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = model(torch.randn(2, 8, requires_grad=True)).sum()%s
    loss.backward()
"""


@pytest.mark.parametrize("body, marker", [
    (FREEZE_THEN_ATTACH, "  # FGL001"),
    (ATTACH_THEN_FREEZE, ""),
    (FREEZE_THEN_ATTACH.replace("block.adapter", "block.teacher"), ""),  # (no forward reads it)
])
def test_adapter_attached_by_another_modules_helper(tmp_path, body, marker):
    """A trainable submodule assigned onto a frozen model's blocks, and read by their
    forward, brings requires-grad parameters into the model's call again; frozen after
    the assignment, or set where no forward reads it, it does not."""
    make(tmp_path, {"backbone.py": BACKBONE, "peft/__init__.py": "from .attach import attach\n",
                    "peft/attach.py": ATTACH % body, "probe.py": PROBE % marker})
    assert_markers(tmp_path)


SETATTR = """\
import torch.nn as nn


def attach(model, dim, name="adapter"):
    model.requires_grad_(False)
    for block in model.blocks:
        setattr(block, name, nn.Linear(dim, dim)%s)
"""


@pytest.mark.parametrize("frozen, marker", [("", "  # FGL001"), (".requires_grad_(False)", "")])
def test_setattr_of_a_trainable_part_on_a_frozen_models_blocks(tmp_path, frozen, marker):
    """``setattr(block, name, layer)`` registers the layer as ``Module.__setattr__`` does;
    a layer frozen before it is registered adds no requires-grad parameter."""
    make(tmp_path, {"backbone.py": BACKBONE, "peft/__init__.py": "from .attach import attach\n",
                    "peft/attach.py": SETATTR % frozen, "probe.py": PROBE % marker})
    assert_markers(tmp_path)


FIXTURES_LIB = """\
FIXTURES = {}


def fixture(fn):
    FIXTURES[fn.__name__] = fn
    return fn
"""

SHARED = """\
import torch.nn as nn
from torch._subclasses.fake_tensor import FakeTensorMode

from fixtures_lib import fixture


@fixture
def fake_mode():
    return FakeTensorMode(allow_non_fake_inputs=True)


@fixture
def model():
    return nn.Linear(4, 1)%s
"""

CHECK = """\
import torch


def check_backward(model, fake_mode):
    with fake_mode:
        x = torch.randn(3, 4, requires_grad=True)
        model(x).sum().backward()
"""

RUNNER = """\
import inspect

import shared  # noqa: F401
from checks import check_grads
from fixtures_lib import FIXTURES

for name, fn in sorted(vars(check_grads).items()):
    if name.startswith("check_") and callable(fn):
        kwargs = {p: FIXTURES[p]() for p in inspect.signature(fn).parameters}
        fn(**kwargs)%s
"""


@pytest.mark.parametrize("frozen, marker", [("", "  # FGL001"), (".requires_grad_(False)", "")])
def test_runner_loops_over_a_modules_whole_namespace(tmp_path, frozen, marker):
    """``vars(module)`` has the module's eight dunder entries before its own names: the
    loop over its items runs once per name, and the ``if`` picks the checks."""
    make(tmp_path, {"fixtures_lib.py": FIXTURES_LIB, "shared.py": SHARED % frozen, "checks/__init__.py": "",
                    "checks/check_grads.py": CHECK, "runner.py": RUNNER % marker})
    assert_markers(tmp_path)


MODELS = """\
import torch.nn as nn

SHARED = {}


def get_model():
    if "model" not in SHARED:
        SHARED["model"] = nn.Linear(4, 2)%s
    return SHARED["model"]
"""

CASE = """\
import unittest

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from models import get_model


class ShapeTests(unittest.TestCase):
    def setUp(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)

    def test_backward(self):
        model = get_model()
        with self.mode:
            out = model(torch.randn(3, 4, requires_grad=True))%s
            out.sum().backward()
"""


@pytest.mark.parametrize("frozen, marker", [("", "  # FGL001"), (".requires_grad_(False)", "")])
def test_testcase_setup_mode_with_another_modules_singleton(tmp_path, frozen, marker):
    """The mode a TestCase's ``setUp`` sets on ``self`` is entered by its tests."""
    make(tmp_path, {"models.py": MODELS % frozen, "tests/__init__.py": "", "tests/test_shapes.py": CASE % marker})
    assert_markers(tmp_path)
