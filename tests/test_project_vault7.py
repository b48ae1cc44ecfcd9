"""Semantics behind the vault7 project misses (an15), in one file and across modules;
``fixtures/probes7_projects`` has the runnable corpus (labelled by running it):

- ``d.update(other, **kw)`` of a dict with known keys keeps them known: a copy of
  defaults updated with an empty ``**overrides`` still holds ``None`` under the key, so
  ``opts.get("context") or FakeTensorMode(...)`` gives the mode;
- ``module.forward = wrapper`` (an instance attribute): ``nn.Module.__call__`` runs
  ``self.forward``, which finds the wrapper first; the forward it wrapped
  (``orig = module.forward``) is the class's;
- a forward hook that returns a value replaces the module's output (torch's
  ``_call_impl``), so a fake mixed into it reaches the loss; one that returns None
  leaves the output as it was.

Each hazard has a safe look-alike; every file's findings equal its markers."""

from __future__ import annotations

import pytest

from markers import markers_in_source
from test_project import _json_findings, make


def assert_markers(root):
    """The folder linted as the command line does (a helper's line is reported too when
    its caller is linted with it): every file's findings == its markers."""
    got = {f for f in _json_findings(root, ".")[0] if f[2] != "FGL004"}
    want = {(str(p.relative_to(root)), row, code) for p in sorted(root.rglob("*.py"))
            for row, code in markers_in_source(p.read_text(encoding="utf-8")) if code != "FGL004"}
    assert got == want, f"got {sorted(got)}, want {sorted(want)}"


# ----------------------------------------------------------------- dict.update

SETTINGS = """\
from torch._subclasses.fake_tensor import FakeTensorMode

BASE = {"ctx": None, "lr": 0.1}


def merged(**changes):
    cfg = dict(BASE)
    cfg.update(%s)
    return cfg


def planning(cfg):
    return cfg.get("ctx") or FakeTensorMode(allow_non_fake_inputs=True)
"""

MAIN = """\
import contextlib

import torch
from torch import nn

from settings import merged, planning

cfg = merged(%s)
net = nn.Linear(4, 1)
with planning(cfg):
    out = net(torch.randn(2, 4))%s
    out.sum().backward()
"""


@pytest.mark.parametrize("update, call, marker", [
    ("changes", "", "  # FGL001"),  # (an empty **changes: the key stays None)
    ("{}, **changes", "", "  # FGL001"),
    ("changes", "ctx=contextlib.nullcontext()", ""),  # (the keyword sets a truthy context)
    ("{'ctx': contextlib.nullcontext()}", "", ""),
])
def test_dict_update_of_known_keys_across_modules(tmp_path, update, call, marker):
    settings = SETTINGS % update
    if "contextlib" in update:
        settings = "import contextlib\n" + settings
    make(tmp_path, {"settings.py": settings, "main.py": MAIN % (call, marker)})
    assert_markers(tmp_path)


ONE_FILE = """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

opts = {"ctx": None}
opts.update(%s)
model = nn.Linear(3, 1)
with opts["ctx"] or FakeTensorMode(allow_non_fake_inputs=True):
    loss = model(torch.randn(2, 3)).sum()%s
    loss.backward()
"""


@pytest.mark.parametrize("update, marker", [
    ("{}", "  # FGL001"),
    ("{'batch': 4}, lr=0.1", "  # FGL001"),
    ("ctx=__import__('contextlib').nullcontext()", ""),
    ("{'ctx': __import__('contextlib').nullcontext()}", ""),
])
def test_dict_update_in_one_file(tmp_path, update, marker):
    make(tmp_path, {"probe.py": ONE_FILE % (update, marker)})
    assert_markers(tmp_path)


# ----------------------------------------------------------------- an instance forward

WRAP = """\
from torch._subclasses.fake_tensor import FakeTensorMode

_MODE = FakeTensorMode(allow_non_fake_inputs=True)


def wrap(module):
    orig = module.forward

    def forward(x):
        with _MODE:
            return orig(x)%s

    module.forward = forward
    return orig
"""

TRAIN = """\
import torch
from torch import nn

from wrapping import wrap


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, x):
        return self.lin(x)


net = Net()
orig = wrap(net)
%s
loss = net(torch.randn(2, 4)).sum()%s
loss.backward()
"""


@pytest.mark.parametrize("between, marker", [
    ("", "  # FGL001"),
    ("net.forward = orig", ""),  # (the bound class forward put back)
    ("other = Net()", "  # FGL001"),
])
def test_instance_forward_attribute_across_modules(tmp_path, between, marker):
    make(tmp_path, {"wrapping.py": WRAP % marker, "train.py": TRAIN % (between, marker)})
    assert_markers(tmp_path)


def test_instance_forward_set_on_another_module(tmp_path):
    """The wrapper is set on a module the training does not call: its forward is real."""
    make(tmp_path, {"wrapping.py": WRAP % "", "train.py": TRAIN.replace("orig = wrap(net)", "orig = wrap(Net())")
                    % ("", "")})
    assert_markers(tmp_path)


ONE_FORWARD = """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

mode = FakeTensorMode(allow_non_fake_inputs=True)
model = nn.Linear(3, 1)
orig = model.forward


def forward(x):
    with mode:
        return orig(x)%s


model.forward = %s
loss = model(torch.randn(2, 3)).sum()
loss.backward()
"""


@pytest.mark.parametrize("value, marker", [("forward", "  # FGL001"), ("orig", "")])
def test_instance_forward_in_one_file(tmp_path, value, marker):
    """(`model.forward = orig`, its own forward read before, is the class's forward: no
    recursion into the attribute)"""
    make(tmp_path, {"probe.py": ONE_FORWARD % (marker, value)})
    assert_markers(tmp_path)


# ----------------------------------------------------------------- forward hook results

HOOKS = """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

_PLAN = FakeTensorMode(allow_non_fake_inputs=True)


def _planned(shape):
    with _PLAN:
        return torch.randn(shape)


def install(model):
    seen = []

    def hook(module, inputs, output):
%s

    for m in model.modules():
        if isinstance(m, nn.ReLU):
            m.register_forward_hook(hook)
    return seen
"""

USE = """\
import torch
from torch import nn

from hooks import install

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
install(model)
loss = model(torch.randn(2, 4)).sum()%s
loss.backward()
"""


@pytest.mark.parametrize("body, marker", [
    ("        return output + _planned(output.shape)  # FGL003", "  # FGL003"),
    ("        noisy = output + _planned(output.shape)\n        seen.append(tuple(noisy.shape))", ""),
    ("        seen.append(tuple((output + _planned(output.shape)).shape))\n        return None", ""),
    ("        return output * 2", ""),  # (a real replacement)
])
def test_forward_hook_result_replaces_the_output_across_modules(tmp_path, body, marker):
    make(tmp_path, {"hooks.py": HOOKS % body, "use.py": USE % marker})
    assert_markers(tmp_path)


ONE_HOOK = """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

mode = FakeTensorMode(allow_non_fake_inputs=True)
with mode:
    noise = torch.randn(2, 1)


def hook(module, inputs, output):
%s


model = nn.Linear(3, 1)
model.register_forward_hook(hook)
loss = model(torch.randn(2, 3)).sum()
loss.backward()
"""


@pytest.mark.parametrize("body", [
    "    return output + noise  # FGL003",
    "    print((output + noise).shape)",
])
def test_forward_hook_result_in_one_file(tmp_path, body):
    make(tmp_path, {"probe.py": ONE_HOOK % body})
    assert_markers(tmp_path)
