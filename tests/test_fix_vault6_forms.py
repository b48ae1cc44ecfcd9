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
  way (a global list) keeps the fix display-only: the copy's graph does not hold them;
- a dict of the real parameters built by a helper of the file and handed to
  ``functional_call`` in the region (``state = params_and_buffers(block)``, vault6
  ``hazard_functional_call_real_param_dict``): the container's type is the one every
  ``return`` of the helper gives (``fix/containers._returned_kind``), so it is converted as
  ``{k: mode.from_tensor(v) for k, v in state.items()}``; a helper that may return a list
  or a dict gets no fix (``no fix: the type of `state` is not known``);
- a real module that is a ``for`` loop's own variable in the region (``for key, model in
  models.items()`` under a strict mode, vault5 ``hazard_metaclass_costmodel_strict``): it is
  converted in the loop's body, each time round, right above the statement with the first
  use (after whatever the body rebinds it to first); a name an inner comprehension rebinds
  still gets no fix.
"""

from __future__ import annotations

import json

import pytest
from fix_examples import HEAD, example_tests, fixed
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

HELPER_GRADS_FIXED = fixed(
    HELPER_GRADS,
    (
        'from torch._subclasses.fake_tensor import FakeTensorMode\n',
        (
            'from torch._subclasses.fake_tensor import FakeTensorMode\n'
            'import copy\n'
        ),
    ),
    (
        (
            '    with FakeTensorMode(allow_non_fake_inputs=True):\n'
            '        grads = layer_grads(model, torch.randn(3, 4))\n'
        ),
        (
            '    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n'
            '        model_fake = copy.deepcopy(\n'
            '            model,\n'
            '            {\n'
            '                **{id(v): v for sub in model.modules() for k, v in vars(sub).items() if not k.startswith("_")},\n'
            '                **{id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]},\n'
            '            },\n'
            '        )\n'
            '        grads = layer_grads(model_fake, torch.randn(3, 4))\n'
        ),
    ),
)

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

HELPER_DICT = HEAD + '''from torch.func import functional_call


def state_of(module):
    state = dict(module.named_parameters())
    state.update(dict(module.named_buffers()))
    return state


def probe(net):
    state = state_of(net)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        out = functional_call(net, state, (torch.randn(2, 4),))  # FGL001
        out.sum().backward()
        return tuple(out.shape)


net = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
print(probe(net), len(state_of(net)))
'''

HELPER_DICT_FIXED = fixed(
    HELPER_DICT,
    (
        '        out = functional_call(net, state, (torch.randn(2, 4),))  # FGL001\n',
        (
            '        state_fake = {k: mode.from_tensor(v) for k, v in state.items()}\n'
            '        out = functional_call(net, state_fake, (torch.randn(2, 4),))  # FGL001\n'
        ),
    ),
)

HELPER_LIST_OR_DICT = HEAD + '''from torch.func import functional_call


def state_of(module, flat):
    if flat:
        return list(module.parameters())
    state = dict(module.named_parameters())
    return state


def probe(net):
    state = state_of(net, False)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        out = functional_call(net, state, (torch.randn(2, 4),))  # FGL001
        out.sum().backward()
        return tuple(out.shape)


net = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
print(probe(net))
'''

SAFE_HELPER_DICT_OF_FAKES = HEAD + '''from torch.func import functional_call


def state_of(module, mode):
    state = {k: mode.from_tensor(v) for k, v in module.named_parameters()}
    state.update({k: mode.from_tensor(v) for k, v in module.named_buffers()})
    return state


def probe(net):
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        state = state_of(net, mode)
        out = functional_call(net, state, (torch.randn(2, 4),))
        out.sum().backward()
        return tuple(out.shape)


net = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
print(probe(net), type(net[0].weight.grad).__name__)
'''

LOOP_VARIABLE = HEAD + '''

def out_shapes(models):
    rows = {}
    with FakeTensorMode():
        for key, model in models.items():
            x = torch.randn(2, model.in_features)
            rows[key] = tuple(model(x).shape)  # FGL002
    return rows


print(out_shapes({"a": nn.Linear(4, 3), "b": nn.Linear(6, 2)}))
'''



def loop_fixed(code: str, call: str, args: str) -> str:
    """``code`` (a loop over ``models.items()`` under a strict mode) as the fix writes it:
    the module's fake state made in the loop's body, right above ``call``'s statement."""
    return fixed(
        code,
        ("    with FakeTensorMode():\n", "    with FakeTensorMode() as fake_mode:\n"),
        (
            f"            rows[key] = tuple({call}.shape)  # FGL002\n",
            "            model_fake_state = {\n"
            "                name: fake_mode.from_tensor(t)\n"
            "                for name, t in [\n"
            "                    *model.named_parameters(),\n"
            "                    *model.named_buffers(),\n"
            "                ]\n"
            "            }\n"
            "            rows[key] = tuple(torch.func.functional_call(\n"
            f"                model, model_fake_state, ({args},),\n"
            "            ).shape)  # FGL002\n",
        ),
    )


LOOP_VARIABLE_FIXED = loop_fixed(LOOP_VARIABLE, "model(x)", "x")

LOOP_VARIABLE_REBOUND = HEAD + '''
SPARE = nn.Linear(4, 3)


def out_shapes(models):
    rows = {}
    with FakeTensorMode():
        for key, model in models.items():
            if key == "b":
                model = SPARE
            rows[key] = tuple(model(torch.randn(2, 4)).shape)  # FGL002
    return rows


print(out_shapes({"a": nn.Linear(4, 3), "b": nn.Linear(4, 2)}))
'''

LOOP_VARIABLE_REBOUND_FIXED = loop_fixed(LOOP_VARIABLE_REBOUND, "model(torch.randn(2, 4))", "torch.randn(2, 4)")

LOOP_VARIABLE_COMPREHENSION = HEAD + '''

def out_shapes(models):
    rows = {}
    with FakeTensorMode():
        for key, model in models.items():
            rows[key] = [tuple(model(torch.randn(2, 4)).shape) for model in model]  # FGL002
    return rows


print(out_shapes({"a": nn.Sequential(nn.Linear(4, 3)), "b": nn.Sequential(nn.Linear(4, 2))}))
'''

SAFE_LOOP_OVER_FAKE_STATE = HEAD + '''

def out_shapes(models):
    rows = {}
    with FakeTensorMode() as mode:
        for key, model in models.items():
            state = {k: mode.from_tensor(v) for k, v in [*model.named_parameters(), *model.named_buffers()]}
            x = torch.randn(2, model.in_features)
            rows[key] = tuple(torch.func.functional_call(model, state, (x,)).shape)
    return rows


print(out_shapes({"a": nn.Linear(4, 3), "b": nn.Linear(6, 2)}))
'''

INVALID = [
    ("helper_grads_over_its_parameter", HELPER_GRADS, HELPER_GRADS_FIXED),
    ("helper_dict_of_parameters", HELPER_DICT, HELPER_DICT_FIXED),
    ("loop_variable_module", LOOP_VARIABLE, LOOP_VARIABLE_FIXED),
    ("loop_variable_rebound_above", LOOP_VARIABLE_REBOUND, LOOP_VARIABLE_REBOUND_FIXED),
]

VALID = [
    ("helper_grads_module_made_in_region", SAFE_MODULE_MADE_IN_REGION),
    ("helper_dict_of_fake_copies", SAFE_HELPER_DICT_OF_FAKES),
    ("loop_over_fake_state", SAFE_LOOP_OVER_FAKE_STATE),
]

globals().update(example_tests(INVALID, VALID, "vault6_forms"))


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


@pytest.mark.parametrize("code,reason", [
    # every `return` of the helper must give the same container type
    (HELPER_LIST_OR_DICT, "type of `state` is not known"),
    # an inner comprehension rebinds the loop variable between the hoist and the use
    (LOOP_VARIABLE_COMPREHENSION, "rebound in the region"),
], ids=["helper_may_return_a_list", "loop_variable_rebound_by_a_comprehension"])
def test_no_fix_and_why(tmp_path, code, reason):
    path = tmp_path / "example.py"
    path.write_text(code, encoding="utf-8")
    proc = cli(*BASE_ARGS, "--unsafe-fixes", "--output-format", "json", str(path))
    (finding,) = json.loads(proc.stdout)
    assert finding["fix"] is None and reason in finding["no_fix"], finding
