"""Fix forms of issue 12 measured on the released vault6 set, tested like Fixit's rules
(``fix_examples.py``), each with its runtime check (slow tier) and a second ``--fix`` that
changes nothing:

- a real module handed to a helper of the file in the region, which takes
  ``torch.autograd.grad`` with respect to its own parameter's parameters
  (``params = [p for p in model.parameters() if p.requires_grad]``,
  vault6 ``hazard_autograd_grad_param_saliency``): the fake copy passed at the call *is*
  that parameter inside the helper, so the inputs are the fakes the graph holds and the fix
  is offered (unsafe); before, it was display-only ("may differentiate with respect to the
  real parameters"). A helper whose ``autograd.grad`` names the real parameters some other
  way (a global list) keeps the fix display-only: the copy's graph does not hold them.
"""

from __future__ import annotations

import json

from fix_examples import HEAD, example_tests
from regen_golden import BASE_ARGS, cli

HELPER_GRADS = HEAD + '''

def layer_grads(model, x):
    loss = model(x).pow(2).mean()  # FGL001
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.autograd.grad(loss, params)


def grad_shapes(model):
    with FakeTensorMode(allow_non_fake_inputs=True):
        grads = layer_grads(model, torch.randn(3, 4))
        return [tuple(g.shape) for g in grads]


net = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
print(grad_shapes(net))
print(type(net[0].weight.grad).__name__)
'''

HELPER_GRADS_FIXED = '''\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
import copy


def layer_grads(model, x):
    loss = model(x).pow(2).mean()  # FGL001
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.autograd.grad(loss, params)


def grad_shapes(model):
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
        model_fake = copy.deepcopy(
            model,
            {
                **{id(v): v for sub in model.modules() for k, v in vars(sub).items() if not k.startswith("_")},
                **{id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]},
            },
        )
        grads = layer_grads(model_fake, torch.randn(3, 4))
        return [tuple(g.shape) for g in grads]


net = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
print(grad_shapes(net))
print(type(net[0].weight.grad).__name__)
'''

GLOBAL_PARAMS = HEAD + '''
net = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
PARAMS = list(net.parameters())


def layer_grads(model, x):
    loss = model(x).pow(2).mean()  # FGL001
    return torch.autograd.grad(loss, PARAMS)


def grad_shapes(model):
    with FakeTensorMode(allow_non_fake_inputs=True):
        grads = layer_grads(model, torch.randn(3, 4))
        return [tuple(g.shape) for g in grads]


print(grad_shapes(net))
'''

SAFE_MODULE_MADE_IN_REGION = HEAD + '''

def layer_grads(model, x):
    loss = model(x).pow(2).mean()
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.autograd.grad(loss, params)


def grad_shapes(widths):
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = nn.Sequential(nn.Linear(widths[0], widths[1]), nn.Tanh(), nn.Linear(widths[1], widths[2]))
        grads = layer_grads(model, torch.randn(3, 4))
        return [tuple(g.shape) for g in grads]


print(grad_shapes((4, 5, 2)))
'''

INVALID = [
    ("helper_grads_over_its_parameter", HELPER_GRADS, HELPER_GRADS_FIXED),
]

VALID = [
    ("helper_grads_module_made_in_region", SAFE_MODULE_MADE_IN_REGION),
]

globals().update(example_tests(INVALID, VALID, "helper_grads"))


def test_helper_grads_over_a_global_list_stay_display_only(tmp_path):
    """``torch.autograd.grad(loss, PARAMS)`` in the helper, ``PARAMS`` the real module's
    parameters: the copy's graph does not hold them (a RuntimeError after a fix), so the
    fix is not applied."""
    path = tmp_path / "global_params.py"
    path.write_text(GLOBAL_PARAMS, encoding="utf-8")
    proc = cli(*BASE_ARGS, "--unsafe-fixes", "--output-format", "json", str(path))
    found = {f["location"]["row"]: f for f in json.loads(proc.stdout)}
    op = found[10]
    assert op["fix"]["applicability"] == "display-only", op
    assert "line 11" in op["fix"]["message"]
    cli(*BASE_ARGS, "--fix", "--unsafe-fixes", str(path))
    assert path.read_text(encoding="utf-8") == GLOBAL_PARAMS
