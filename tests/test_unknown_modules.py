"""Modules the analysis cannot follow (a third-party call's result), known to be modules
by a method only a module has, given real storage by ``to_empty(device=D)`` outside a
region, and proved to require grad by what the program itself does: a backward of an
output whose graph has no other leaf that can require grad raises unless the module's
parameters require grad (``analysis/dispatch.py``, ``_proves_rg``).

Each hazard case has safe look-alikes that differ in one link: the backward, the device,
where ``to_empty`` runs, grad mode, a frozen module, another possible requires-grad leaf
(a fake input, an unknown operand, a second unknown module), a backward whose error is
caught. Every case fails without the change: before it, nothing here was reported.
The realistic programs are ``fixtures/probes_eco`` (labelled by running them).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from markers import markers_in_source  # noqa: E402

from fakegrad_lint.engine.lint import check_source  # noqa: E402

# the third-party factory: a class named by a config string, looked up at run time
HEAD = """\
import importlib
import json

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

SPEC = json.loads('{"module": "torch.nn", "cls": "Linear"}')
build = getattr(importlib.import_module(SPEC["module"]), SPEC["cls"])
"""

CASES = {
    "to_empty_then_backward": """
with torch.device("meta"):
    m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    out = m(torch.randn(3, 4))  # FGL001
    out.sum().backward()
""",
    "to_empty_forward_only": """
m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    out = m(torch.randn(3, 4))
    print(out.shape)
""",
    "device_fstring_int_inputs_loop": """
def run(rank):
    device = torch.device(f"cuda:{rank}")
    m = build(4, 2)
    m.to_empty(device=device)
    batches = torch.split(torch.randint(0, 9, (8, 4), device=device), 2, dim=0)
    with FakeTensorMode(allow_non_fake_inputs=True):
        for x in batches:
            out = m(x)  # FGL001
            out.backward(torch.ones_like(out))
run(0)
""",
    "device_unknown": """
def run(device):
    m = build(4, 2)
    m.to_empty(device=device)
    with FakeTensorMode(allow_non_fake_inputs=True):
        m(torch.randn(3, 4)).sum().backward()
run(DEVICE)
""",
    "device_meta": """
m = build(4, 2)
m.to_empty(device="meta")
with FakeTensorMode(allow_non_fake_inputs=True):
    m(torch.randn(3, 4)).sum().backward()
""",
    "to_empty_inside_region": """
m = build(4, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    m.to_empty(device="cpu")
    m(torch.randn(3, 4)).sum().backward()
""",
    "no_grad_forward": """
m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
    out = m(torch.randn(3, 4))
""",
    "frozen_after_to_empty": """
m = build(4, 2)
m.to_empty(device="cpu")
m.requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    w = torch.ones(2, 2, requires_grad=True)
    (m(torch.randn(3, 4)) @ w).sum().backward()
""",
    "fake_input_requires_grad": """
m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.randn(3, 4, requires_grad=True)
    m(x).sum().backward()
""",
    "unknown_operand": """
def run(extra):
    m = build(4, 2)
    m.to_empty(device="cpu")
    with FakeTensorMode(allow_non_fake_inputs=True):
        (m(torch.randn(3, 4)) * extra).sum().backward()
run(EXTRA)
""",
    "two_unknown_modules": """
a = build(4, 4)
b = build(4, 2)
a.to_empty(device="cpu")
b.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    b(a(torch.randn(3, 4))).sum().backward()
""",
    "backward_error_caught": """
m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    out = m(torch.randn(3, 4))
    try:
        out.sum().backward()
    except RuntimeError:
        pass
""",
    "backward_under_unrelated_handler": """
m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    out = m(torch.randn(3, 4))  # FGL001
    try:
        out.sum().backward()
    except KeyError:
        pass
""",
    "to_empty_in_one_branch": """
def run(flag):
    m = build(4, 2)
    if flag:
        m.to_empty(device="cpu")
    with FakeTensorMode(allow_non_fake_inputs=True):
        m(torch.randn(3, 4)).sum().backward()
run(FLAG)
""",
    "chained_to_empty_result": """
net = build(4, 2).to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.randn(3, 4)).sum().backward()  # FGL001
""",
    "named_modules_only": """
m = build(4, 2)
print([n for n, _ in m.named_modules()])
with FakeTensorMode(allow_non_fake_inputs=True):
    m(torch.randn(3, 4)).sum().backward()
""",
    "attribute_of_opaque_module": """
m = build(4, 2)
m.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    (torch.randn(3, 4) @ m.weight.T).sum().backward()
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unknown_module_case(name):
    source = HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py")}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


def test_cases_have_hazards_and_look_alikes():
    marked = [n for n, src in CASES.items() if markers_in_source(HEAD + textwrap.dedent(src))]
    assert len(marked) >= 4 and len(CASES) - len(marked) >= 10


def test_trace_says_why_the_module_requires_grad():
    """The source step names the to_empty line and the backward that proves it; no fix is
    offered for a module of unknown class."""
    source = HEAD + textwrap.dedent(CASES["to_empty_then_backward"])
    (f,) = check_source(source, "t.py")
    kinds = [s.kind for s in f.trace]
    assert kinds == ["source", "region", "leak", "sink"], kinds
    src = f.trace[0]
    lines = source.splitlines()
    assert lines[src.location.row - 1].strip() == 'm.to_empty(device="cpu")'
    backward_line = next(i for i, t in enumerate(lines, 1) if ".backward()" in t)
    assert f"line {backward_line} would raise otherwise" in src.message, src.message
    assert f.fix is None


def test_known_requires_grad_input_is_reported_not_the_module():
    """A real requires-grad input is another possible requires-grad leaf: the input is
    the finding (proved by its own constructor), the unknown module is not proved."""
    source = HEAD + textwrap.dedent("""
    m = build(4, 2)
    m.to_empty(device="cpu")
    x = torch.randn(3, 4, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        m(x).sum().backward()
    """)
    values = sorted(f.message.split("`")[1] for f in check_source(source, "t.py") if f.code == "FGL001")
    assert values == ["x"], values


def test_known_module_in_the_graph_is_reported_not_the_unknown_one():
    source = HEAD + textwrap.dedent("""
    m = build(4, 4)
    m.to_empty(device="cpu")
    head = nn.Linear(4, 2)
    with FakeTensorMode(allow_non_fake_inputs=True):
        head(m(torch.randn(3, 4))).sum().backward()
    """)
    values = sorted(f.message.split("`")[1] for f in check_source(source, "t.py") if f.code == "FGL001")
    assert values == ["head"], values


def test_deepcopy_outside_keeps_requires_grad_unknown():
    """A real deep copy of an opaque module made outside the region is as unknown as the
    original: proved only by a backward, like it."""
    unproved = (HEAD + textwrap.dedent("""
    m = build(4, 2)
    m.to_empty(device="cpu")
    twin = copy.deepcopy(m)
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.randn(3, 4, requires_grad=True)
        twin(x).sum().backward()
    """)).replace("import json", "import copy\nimport json")
    assert check_source(unproved, "t.py") == []
    proved = unproved.replace("requires_grad=True", "requires_grad=False")
    assert [f.code for f in check_source(proved, "t.py")] == ["FGL001"]
