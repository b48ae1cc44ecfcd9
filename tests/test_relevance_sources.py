"""The source gate (``analysis/sources_gate.py``): a unit analysed on its own with
unknown arguments can report only if a real requires-grad value can be made from its
code, so the standalone runs after the last one that can reach such a source are left
out. Each skip test fails without the gate (the unit runs); each look-alike keeps its
finding only if the gate follows the way the source reaches the unit (a callee, a
module-level value, ``__init__``, a flag handed on, an import inside the def, a class
attribute, a project module), and is compared with the run without the gate."""

import ast
import os
import sys

import pytest

from fakegrad_lint.analysis import interpreter, relevance
from fakegrad_lint.analysis.project import Project
from fakegrad_lint.analysis.sources_gate import source_qualname


_RUN = interpreter.Interpreter._run_standalone


def runs(monkeypatch, src, gate=True, path=None):
    """(names of the units run standalone, findings as (verdict, offset, value))."""
    ran = []
    orig = _RUN

    def spy(self, fv, self_val):
        ran.append(fv.node.name)
        return orig(self, fv, self_val)

    monkeypatch.setattr(interpreter.Interpreter, "_run_standalone", spy)
    monkeypatch.setattr(relevance, "SOURCE_GATE", gate)
    project = Project.for_file(path) if path else None
    it = interpreter.Interpreter(ast.parse(src), src, project, path)
    leaks = it.run()
    return ran, sorted((lk.verdict.name, lk.start, lk.value) for lk in leaks)


def same_findings(monkeypatch, src, path=None):
    """The findings with the gate, after checking they are those without it (and some)."""
    on = runs(monkeypatch, src, True, path)
    off = runs(monkeypatch, src, False, path)
    assert on[1] == off[1]
    assert on[1], "the look-alike must report"
    return on


REGION = (
    "import torch\n"
    "from torch._subclasses.fake_tensor import FakeTensorMode\n"
    "def shapes(x):\n"
    "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
    "        return (x * 2).shape\n"
)


def test_a_unit_that_can_reach_no_source_is_not_run(monkeypatch):
    assert runs(monkeypatch, REGION, gate=False)[0] == ["shapes"]
    assert runs(monkeypatch, REGION)[0] == []


def test_one_run_that_can_reach_a_source_keeps_every_run(monkeypatch):
    src = REGION + (
        "def train():\n"
        "    w = torch.nn.Parameter(torch.randn(4))\n"
        "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "        y = (w * 2).sum()\n"
        "    y.backward()\n"
        "def after(x):\n"
        "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "        return x + 1\n"
    )
    ran, found = same_findings(monkeypatch, src)
    # all or none: `shapes` may leave state to `train`, `train` a real value to `after`
    assert ran == ["shapes", "train", "after"]


@pytest.mark.parametrize("make", [
    "    w = torch.ones(4, requires_grad=True)\n",
    "    w = torch.ones(4).requires_grad_()\n",
    "    w = torch.ones(4)\n    w.requires_grad = True\n",
    "    w = torch.nn.Linear(4, 4).weight\n",
    "    from torch import nn\n    w = nn.Parameter(torch.ones(4))\n",
    "    import torch.nn as tnn\n    w = tnn.Linear(4, 4).weight\n",
    "    w = make()\n",
    "    w = FACTORY()\n",
    "    w = W\n",
    "    w = build(rg=True)\n",
    "    w = build2(requires_grad=True)\n",
    "    w = Holder().w\n",
    "    w = getattr(Holder(), 'm' + 'ake')()\n",
    "    w = torch.ones(4, requires_grad=CFG.requires_grad)\n",
])
def test_a_source_the_unit_reaches_keeps_its_finding(monkeypatch, make):
    src = (
        "import functools\n"
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def make():\n"
        "    return torch.nn.Parameter(torch.randn(4))\n"
        "FACTORY = functools.partial(torch.randn, 4, requires_grad=True)\n"
        "W = torch.randn(4, requires_grad=True)\n"
        "def build(rg=False):\n"
        "    return torch.ones(4, requires_grad=rg)\n"
        "def build2(*, requires_grad=False):\n"
        "    return torch.ones(4, requires_grad=requires_grad)\n"
        "class Holder:\n"
        "    def __init__(self):\n"
        "        self.w = make()\n"
        "    def make(self):\n"
        "        return torch.nn.Parameter(torch.randn(4))\n"
        "class Cfg:\n"
        "    requires_grad = True\n"
        "CFG = Cfg()\n"
        "def train():\n"
        + make +
        "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "        y = (w * 2).sum()\n"
        "    y.backward()\n"
    )
    ran, _found = same_findings(monkeypatch, src)
    assert "train" in ran


def test_a_method_whose_instance_holds_a_real_module_is_run(monkeypatch):
    src = (
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "class Runner:\n"
        "    def __init__(self):\n"
        "        self.model = torch.nn.Linear(4, 4)\n"
        "    def step(self, x):\n"
        "        with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "            y = self.model(x).sum()\n"
        "        y.backward()\n"
    )
    ran, _found = same_findings(monkeypatch, src)
    assert ran == ["step"]
    plain = src.replace("torch.nn.Linear(4, 4)", "None").replace("self.model(x)", "x")
    assert runs(monkeypatch, plain)[0] == []


def test_a_source_in_another_module_of_the_project_is_followed(tmp_path, monkeypatch):
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": "import torch\n\ndef build():\n    return torch.nn.Linear(4, 4)\n",
        "pkg/shapes.py": "def double(x):\n    return x * 2\n",
        "train.py": (
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "from pkg import models\n"
            "from pkg.shapes import double\n"
            "def train(x):\n"
            "    m = models.build()\n"
            "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
            "        y = m(x).sum()\n"
            "    y.backward()\n"
            "def shapes(x):\n"
            "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
            "        return double(x)\n"
        ),
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    path = str(tmp_path / "train.py")
    src = files["train.py"]
    ran, _found = same_findings(monkeypatch, src, path)
    assert ran == ["train", "shapes"]
    # without `train`: `shapes` reaches only `double` in the other module, no source
    alone = src[: src.index("def train")] + src[src.index("def shapes"):]
    assert runs(monkeypatch, alone, False, path)[0] == ["shapes"]
    assert runs(monkeypatch, alone, True, path)[0] == []


def test_state_left_by_a_unit_without_a_source_is_kept(monkeypatch):
    src = (
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "MODE = None\n"
        "def setup():\n"
        "    global MODE\n"
        "    MODE = FakeTensorMode(allow_non_fake_inputs=True)\n"
        "    with MODE:\n"
        "        pass\n"
        "def train():\n"
        "    w = torch.nn.Parameter(torch.randn(4))\n"
        "    with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "        y = (w * 2).sum()\n"
        "    y.backward()\n"
    )
    ran, _found = same_findings(monkeypatch, src)
    assert ran == ["setup", "train"]


def test_a_method_reached_by_its_name_on_self_is_followed(monkeypatch):
    src = (
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "class Trainer:\n"
        "    def build(self):\n"
        "        self.model = torch.nn.Linear(4, 4)\n"
        "    def step(self, x):\n"
        "        self.build()\n"
        "        with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "            y = self.model(x).sum()\n"
        "        y.backward()\n"
    )
    ran, _found = same_findings(monkeypatch, src)
    assert ran == ["step"]
    # the method is in the closure by its name only: without the call, no source
    assert runs(monkeypatch, src.replace("        self.build()\n", ""))[0] == []


def test_a_testcase_whose_source_is_made_in_setupclass_keeps_its_finding(monkeypatch):
    """A test runner calls setUpClass by itself: no attribute read names it (a vault2
    project lost its finding before the gate followed every method of a TestCase)."""
    src = (
        "import unittest\n"
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "class T(unittest.TestCase):\n"
        "    @classmethod\n"
        "    def setUpClass(cls):\n"
        "        cls.unit = torch.nn.Linear(4, 4)\n"
        "    def test_step(self):\n"
        "        with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "            out = self.unit(torch.randn(2, 4))\n"
        "            out.sum().backward()\n"
    )
    same_findings(monkeypatch, src)


@pytest.mark.parametrize("q, expected", [
    ("torch.nn.Linear", True), ("torch.nn", True), ("torch.nn.Parameter", True), ("torch.nn.modules.linear", True),
    ("torchvision.models.resnet18", True), ("torchvision", True), ("transformers.AutoModel", True),
    ("torch.Tensor.requires_grad_", True), ("torch.nn.functional.relu", False), ("torch.ones", False),
    ("torch", False), ("torch.nn.init.normal_", False), ("os.path", False),
])
def test_source_qualnames(q, expected):
    assert source_qualname(q) is expected


def test_torchs_fake_mode_files_keep_their_findings_with_fewer_runs(monkeypatch):
    """On the installed torch's files that name a fake mode the gate leaves out the runs
    of a file none of whose runs can make a real requires-grad value, with the same
    findings (proxy_tensor.py builds `torch.nn.Sequential(...)`, serialize.py
    `torch.nn.Module()`: all their runs stay)."""
    torch = pytest.importorskip("torch")
    root = os.path.dirname(torch.__file__)
    names = ["_functorch/partitioners.py", "fx/experimental/proxy_tensor.py", "_export/serde/serialize.py"]
    total_on = total_off = 0
    for rel in names:
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        on, off = runs(monkeypatch, src, True), runs(monkeypatch, src, False)
        assert on[1] == off[1], rel
        assert set(on[0]) <= set(off[0])
        total_on, total_off = total_on + len(on[0]), total_off + len(off[0])
    assert total_on < total_off, (total_on, total_off)  # (partitioners.py: none of its 3 runs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
