"""Fix forms of issue 12's second round, tested like Fixit's rules (``fix_examples.py``):

- a read that only asks ``type()`` of the real gradient (``type(p.grad).__name__``, in a
  function the fix cannot redirect) no longer holds a fix back: it stays unsafe and sees
  ``NoneType`` after it (``fakegrad_lint/fix/probes.py``); any other read (``.grad.shape``)
  keeps the fix display-only;
- a real operand computed at the op that mixes it with a leaked fake (FGL003/FGL002:
  ``enc(x) + table``) is converted whole, as a fake leaf of the leaked fake's mode;
- a function traced by ``make_fx(..., tracing_mode="symbolic")``: the fake copies are made
  with ``from_tensor(t, static_shapes=True)`` (without it the traced program fails:
  ``RuntimeError: s0 ... is not tracked with proxy``).
"""

from __future__ import annotations

import ast
import json

from fix_examples import HEAD, example_tests, fixed
from regen_golden import BASE_ARGS, cli

from fakegrad_lint.fix import probes

_DRY_RUN = HEAD + '''

def dry_run(model, batch):
    with FakeTensorMode(allow_non_fake_inputs=True):
        loss = model(torch.randn(batch, 3)).sum()  # FGL001
        loss.backward()
    return tuple(loss.shape)


def main():
    model = nn.Linear(3, 2)
    print("dry run:", dry_run(model, 4))
'''

PROBE = _DRY_RUN + '''    kinds = {type(p.grad).__name__ for p in model.parameters()}
    print("one kind of grad:", len(kinds) == 1)


main()
'''

PROBE_FIXED = fixed(
    PROBE,
    ("    with FakeTensorMode(allow_non_fake_inputs=True):\n"
     "        loss = model(torch.randn(batch, 3)).sum()  # FGL001\n",
     "    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n"
     "        model_fake_state = {\n"
     "            name: fake_mode.from_tensor(t)\n"
     "            for name, t in [*model.named_parameters(), *model.named_buffers()]\n"
     "        }\n"
     "        loss = torch.func.functional_call(\n"
     "            model, model_fake_state, (torch.randn(batch, 3),),\n"
     "        ).sum()  # FGL001\n"),
)

REAL_READ = _DRY_RUN + '''    print("grad shape:", tuple(model.weight.grad.shape))


main()
'''

LEAKED_OPERAND = HEAD + '''
enc = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    table = torch.zeros(3, 4)
h = enc(torch.randn(3, 4)) + table  # FGL003
h.sum().backward()
print("h:", tuple(h.shape))
'''

MAKE_FX_SYMBOLIC = '''import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

lin = nn.Linear(3, 2)


def f(x):
    return lin(x).relu()  # FGL002


print("tracing")
g = make_fx(f, tracing_mode="symbolic")(torch.randn(4, 3))
print("relu in graph:", "relu" in g.code)
'''

INVALID = [
    ("type_probe_in_another_function", PROBE, PROBE_FIXED),
    ("leaked_fake_plus_module_output", LEAKED_OPERAND, fixed(
        LEAKED_OPERAND, ("h = enc(torch.randn(3, 4)) + table",
                         "h = table.fake_mode.from_tensor(enc(torch.randn(3, 4))).detach().requires_grad_() + table"))),
    ("make_fx_symbolic_static_shapes", MAKE_FX_SYMBOLIC, fixed(
        MAKE_FX_SYMBOLIC, ("    return lin(x).relu()  # FGL002\n",
                           "    return torch.func.functional_call(\n"
                           "        lin,\n"
                           "        {name: x.fake_mode.from_tensor(t, static_shapes=True) for name, t in "
                           "[*lin.named_parameters(), *lin.named_buffers()]},\n"
                           "        (x,),\n"
                           "    ).relu()  # FGL002\n"))),
]

VALID = [
    ("leaked_fake_plus_detached_output", HEAD + '''
enc = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    table = torch.zeros(3, 4)
h = enc(torch.randn(3, 4)).detach() + table
print("h:", tuple(h.shape))
'''),
]

globals().update(example_tests(INVALID, VALID, "probes"))


def _fixes(tmp_path, code):
    path = tmp_path / "prog.py"
    path.write_text(code, encoding="utf-8")
    proc = cli(*BASE_ARGS, "--output-format", "json", "--unsafe-fixes", str(path))
    return [f["fix"] for f in json.loads(proc.stdout)]


def test_probe_read_makes_the_fix_unsafe_and_says_so(tmp_path):
    (fix,) = _fixes(tmp_path, PROBE)
    assert fix["applicability"] == "unsafe"
    assert "line 16 then sees `type(...grad)` of the real value as `NoneType`" in fix["message"]


def test_a_real_read_of_the_gradient_keeps_the_fix_display_only(tmp_path):
    (fix,) = _fixes(tmp_path, REAL_READ)
    assert fix["applicability"] == "display-only"
    assert "not applied: line 16 reads the real gradient of `model`" in fix["message"]


def test_probe_lines():
    tree = ast.parse("a = type(x.grad)\nb = x.grad.shape\nc = type(x.grad), x.grad.norm()\nd = 1\n")
    assert probes.probe_lines(tree, [1, 2, 3, 4]) == [1]
    assert probes.real_reads(tree, [1, 2, 3, 4]) == [2, 3, 4]


def test_a_rebound_type_is_no_probe():
    tree = ast.parse("def type(v):\n    return v\n\na = type(x.grad)\n")
    assert probes.probe_lines(tree, [4]) == []
