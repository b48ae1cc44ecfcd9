"""Fix forms of issue 12's fourth round (measured on the released vault3 set), tested like
Fixit's rules (``fix_examples.py``), each with its runtime check (slow tier) and a second
``--fix`` that changes nothing:

- a loop over ``enumerate(model.stages)`` (a real torch container module reached through an
  attribute): the loop draws from a fake copy of the container (``copy.deepcopy`` over the
  ``from_tensor`` memo), as ``for blk in model.stages`` already did;
- an element of a real torch container module picked by a computed key
  (``scaler.scales[group]``, an ``nn.ParameterDict``), under a strict mode: the container is
  copied as fakes once above the loop and the element is picked from the copy;
- ``torch.func.grad`` over ``dict(model.named_parameters())``: the fix converts the dict, and
  the proof no longer rejects it because ``model`` itself, handed on to
  ``functional_call(model, fake_params)``, now only runs forward (FGL004 for the real object
  the target leaked, made by the same statement and entered in the same region, is a
  downgrade, not a new finding);
- ``head(enc(x))`` under ``make_fx(tracing_mode="symbolic")``: the inner op raised first, so
  re-linted after converting ``enc`` the outer ``head`` crashes in the same statement: that
  crash was masked, not added (``fix/proof.py``), and the next pass of the fix loop converts
  ``head`` too;
- a real tensor mixed with a leaked fake (FGL003) whose gradient the code reads right after
  (``layer.weight.grad.shape``): the read goes to the same fake copy (``from_tensor``
  memoizes), so it prints what it printed; a read after another use of the value keeps the
  fix display-only, and such a read the analysis did not list no longer lets the fix break
  the program (``None.shape``);
- ``torch.autograd.grad(loss, [model.embed.weight])`` over a module the fix runs by
  ``functional_call``: an input the analysis proved a parameter of the module (a torch
  layer's own, an ``nn.Parameter`` attribute, a tied weight) becomes
  ``fake_mode.from_tensor(model.embed.weight)``, the memoized fake the fixed graph holds.
"""

from __future__ import annotations

import json

from fix_examples import HEAD, example_tests, fixed
from regen_golden import BASE_ARGS, cli

from fakegrad_lint.findings import Finding, Location, TraceStep
from fakegrad_lint.fix import proof

STAGES = HEAD + '''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))


def stage_shapes(model):
    rows = []
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.randn(2, 4)
        for i, block in enumerate(model.stages):
            y = block(x)  # FGL001
            y.sum().backward()
            rows.append((i, tuple(y.shape)))
    return rows


print(stage_shapes(Net()))
'''

STAGES_FIXED = fixed(
    STAGES,
    ("FakeTensorMode\n", "FakeTensorMode\nimport copy\n"),
    ("    with FakeTensorMode(allow_non_fake_inputs=True):\n        x = torch.randn(2, 4)\n"
     "        for i, block in enumerate(model.stages):\n",
     "    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n        x = torch.randn(2, 4)\n"
     "        stages_fake = copy.deepcopy(\n"
     "            model.stages, {id(t): fake_mode.from_tensor(t) for t in [*model.stages.parameters(), "
     "*model.stages.buffers()]}\n"
     "        )\n"
     "        for i, block in enumerate(stages_fake):\n"),
)

SCALES = HEAD + '''

class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterDict({"a": nn.Parameter(torch.ones(3)), "b": nn.Parameter(torch.ones(5))})
        self.sizes = {"a": 3, "b": 5}


def check(scaler):
    out = {}
    with FakeTensorMode():
        for group, n in scaler.sizes.items():
            y = torch.randn(2, n) * scaler.scales[group]  # FGL002
            out[group] = tuple(y.shape)
    return out


print(check(Scaler()))
'''

SCALES_FIXED = fixed(
    SCALES,
    ("FakeTensorMode\n", "FakeTensorMode\nimport copy\n"),
    ("    with FakeTensorMode():\n",
     "    with FakeTensorMode() as fake_mode:\n"
     "        scales_fake = copy.deepcopy(\n"
     "            scaler.scales, {id(t): fake_mode.from_tensor(t) for t in [*scaler.scales.parameters(), "
     "*scaler.scales.buffers()]}\n"
     "        )\n"),
    ("* scaler.scales[group]", "* scales_fake[group]"),
)

FUNC_GRAD = HEAD + '''from torch.func import functional_call, grad


def loss_fn(params, model, x):
    return functional_call(model, params, (x,)).sum()


def step(model, opt):
    params = dict(model.named_parameters())
    with FakeTensorMode(allow_non_fake_inputs=True):
        grads = grad(loss_fn)(params, model, torch.randn(2, 3))  # FGL001
        for name, p in model.named_parameters():
            p.grad = grads[name]
        opt.step()
        return {k: tuple(v.shape) for k, v in grads.items()}


net = nn.Linear(3, 2)
print(step(net, torch.optim.SGD(net.parameters(), lr=0.1)))
'''

FUNC_GRAD_FIXED = fixed(
    FUNC_GRAD,
    ("    with FakeTensorMode(allow_non_fake_inputs=True):\n"
     "        grads = grad(loss_fn)(params, model,",
     "    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n"
     "        params_fake = {k: (fake_mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) "
     "for k, v in params.items()}\n"
     "        grads = grad(loss_fn)(params_fake, model,"),
    ("            p.grad = grads[name]", "            fake_mode.from_tensor(p).grad = grads[name]"),
)

NESTED = '''import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

enc = nn.Linear(3, 4)
head = nn.Linear(4, 2)


def f(x):
    return head(enc(x))  # FGL002


print("tracing")
g = make_fx(f, tracing_mode="symbolic")(torch.randn(5, 3))
print("addmm in graph:", "addmm" in g.code)
'''

NESTED_FIXED = fixed(
    NESTED,
    ("    return head(enc(x))  # FGL002\n",
     "    return torch.func.functional_call(head, {name: x.fake_mode.from_tensor(t, static_shapes=True) for name, t in "
     "[*head.named_parameters(), *head.named_buffers()]}, (torch.func.functional_call(\n"
     "        enc,\n"
     "        {name: x.fake_mode.from_tensor(t, static_shapes=True) for name, t in "
     "[*enc.named_parameters(), *enc.named_buffers()]},\n"
     "        (x,),\n"
     "    ),))  # FGL002\n"),
)

LEAKED_READ = HEAD + '''

def calibrate(n):
    with FakeTensorMode(allow_non_fake_inputs=True):
        scale = torch.randn(64, n).abs().amax(dim=0)
    return scale


layer = nn.Linear(8, 4)
scale = calibrate(8)
scaled_w = layer.weight * scale  # FGL003
(torch.randn(2, 8) @ scaled_w.t()).sum().backward()
print("weight grad shape:", tuple(layer.weight.grad.shape))
'''

LEAKED_READ_FIXED = fixed(
    LEAKED_READ,
    ("scaled_w = layer.weight * scale", "scaled_w = scale.fake_mode.from_tensor(layer.weight) * scale"),
    ("tuple(layer.weight.grad.shape)", "tuple(scale.fake_mode.from_tensor(layer.weight).grad.shape)"),
)

TIED = HEAD + '''

class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.embed(ids))


def grad_shape(model):
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = model(torch.randint(0, 10, (3,)))  # FGL001
        (g,) = torch.autograd.grad(out.sum(), [model.embed.weight])
        return tuple(g.shape)


print(grad_shape(Tied()))
'''

TIED_FIXED = fixed(
    TIED,
    ("    with FakeTensorMode(allow_non_fake_inputs=True):\n"
     "        out = model(torch.randint(0, 10, (3,)))  # FGL001\n"
     "        (g,) = torch.autograd.grad(out.sum(), [model.embed.weight])\n",
     "    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n"
     "        model_fake_state = {\n"
     "            name: fake_mode.from_tensor(t)\n"
     "            for name, t in [*model.named_parameters(), *model.named_buffers()]\n"
     "        }\n"
     "        out = torch.func.functional_call(\n"
     "            model, model_fake_state, (torch.randint(0, 10, (3,)),),\n"
     "        )  # FGL001\n"
     "        (g,) = torch.autograd.grad(\n"
     "            out.sum(),\n"
     "            [fake_mode.from_tensor(model.embed.weight)],\n"
     "        )\n"),
)

INVALID = [
    ("autograd_grad_over_tied_parameter", TIED, TIED_FIXED),
    ("leaked_fake_times_weight_grad_read", LEAKED_READ, LEAKED_READ_FIXED),
    ("enumerate_over_container_attribute", STAGES, STAGES_FIXED),
    ("parameterdict_computed_key_strict", SCALES, SCALES_FIXED),
    ("func_grad_over_named_parameters_dict", FUNC_GRAD, FUNC_GRAD_FIXED),
    ("make_fx_nested_module_calls", NESTED, NESTED_FIXED),
]

VALID = [
    ("parameterdict_shapes_only", HEAD + '''
scales = nn.ParameterDict({"a": nn.Parameter(torch.ones(3))})
with FakeTensorMode():
    for key in ["a"]:
        print(key, tuple(torch.randn(2, scales[key].shape[0]).shape))
'''),
    ("enumerate_over_fake_container", HEAD + '''
with FakeTensorMode(allow_non_fake_inputs=True):
    blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
    x = torch.randn(2, 4)
    for i, blk in enumerate(blocks):
        blk(x).sum().backward()
print("ok")
'''),
]

globals().update(example_tests(INVALID, VALID, "coverage"))


def _step(kind, row, col, end_row, end_col):
    return TraceStep(kind, "", "f.py", Location(row, col), Location(end_row, end_col))


def _finding(code, leak_row, source_row=1, region_row=2):
    trace = (_step("source", source_row, 1, source_row, 6), _step("region", region_row, 6, region_row, 9),
             _step("leak", leak_row, 5, leak_row, 9))
    return Finding(code, "m", "f.py", Location(leak_row, 5), Location(leak_row, 20), trace=trace)


def test_masked_crash_only_in_the_statement_that_crashed():
    source = "a = 1\nwith m:\n    f(g(x))\n    h(y)\n"
    # the fix inserted one line above row 3: rows 4 and 5 of the fixed text are rows 3 and 4
    spans = [(len("a = 1\nwith m:\n"), len("a = 1\nwith m:\n"), "    c = 2\n")]
    new = "a = 1\nwith m:\n    c = 2\n    f(g(x))\n    h(y)\n"
    target = _finding("FGL002", 3)
    assert proof._masked_crash(_finding("FGL002", 4), target, spans, source, new)
    assert not proof._masked_crash(_finding("FGL002", 5), target, spans, source, new)  # another statement
    assert not proof._masked_crash(_finding("FGL002", 3), target, spans, source, new)  # the inserted line


def test_same_object_needs_the_same_source_and_region():
    text = "m = Net()\nwith FakeTensorMode() as fake_mode:\n    pass\n"
    f = _finding("FGL004", 3)
    assert proof._source_and_region(f, text) == ("m = N", "Fak")
    assert proof._source_and_region(Finding("FGL004", "m", "f.py", Location(3, 1), Location(3, 2)), text) is None


def test_container_element_plan_says_fixable(tmp_path):
    path = tmp_path / "scales.py"
    path.write_text(SCALES, encoding="utf-8")
    proc = cli(*BASE_ARGS, "--unsafe-fixes", str(path))
    assert "FGL002 [*]" in proc.stdout, proc.stdout


def test_a_read_after_another_use_keeps_the_leaked_fix_display_only(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(fixed(LEAKED_READ, ("print(", "layer.weight.data.mul_(0.5)\nprint(")), encoding="utf-8")
    proc = cli(*BASE_ARGS, "--output-format", "json", "--unsafe-fixes", str(path))
    (fix,) = [f["fix"] for f in json.loads(proc.stdout)]
    assert fix["applicability"] == "display-only"
    assert "not applied: line 17 reads the real gradient of `layer.weight`" in fix["message"]
