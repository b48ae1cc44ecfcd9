"""Whole-project analysis: imports of project modules are followed (helpers in
``utils.py``, model classes in ``models.py``, package re-exports, relative
imports, ``src/`` layouts, module-level modes), findings are reported where the
linted file hands the real value to the other module, and each finding carries
its trace. Every hazard has a safe look-alike next to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fakegrad_lint.engine.lint import check_source
from markers import markers_in_source
from test_sarif import assert_valid, validator  # noqa: F401  (fixture)

NET = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""

MEM = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


def estimate(model, batch):
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = model(batch)
        out.sum().backward()
    return 0
"""

TRAIN = """\
import torch
from models import Net
from utils.memory import estimate

model = Net()
estimate(model, torch.randn(2, 4))  # FGL001
"""


def make(root, files: dict[str, str]):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def findings_of(path):
    return check_source(path.read_text(encoding="utf-8"), str(path))


def assert_markers(root):
    """Every .py file of the project: findings (default rules) == its markers."""
    for p in sorted(root.rglob("*.py")):
        src = p.read_text(encoding="utf-8")
        got = {(f.location.row, f.code) for f in findings_of(p) if f.code != "FGL004"}
        want = {m for m in markers_in_source(src) if m[1] != "FGL004"}
        assert got == want, f"{p.relative_to(root)}: got {sorted(got)}, want {sorted(want)}"


# --------------------------------------------------------------------------- hazards


def test_helper_in_utils_package_reported_at_the_call_with_trace(tmp_path):
    make(tmp_path, {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN})
    assert_markers(tmp_path)
    (f,) = [f for f in findings_of(tmp_path / "train.py") if f.code == "FGL001"]
    assert (f.location.row, f.location.column) == (6, 0)
    assert "utils/memory.py line 6" in f.message and "utils/memory.py line 8" in f.message
    kinds = [(t.kind, os.path.basename(t.filename), t.location.row) for t in f.trace]
    assert kinds == [
        ("source", "train.py", 5),
        ("call", "train.py", 6),
        ("region", "memory.py", 6),
        ("leak", "memory.py", 7),
        ("sink", "memory.py", 8),
    ]
    # the helper alone proves nothing (its arguments are unknown there)
    assert findings_of(tmp_path / "utils" / "memory.py") == []


def test_no_project_context_for_a_string(tmp_path):
    make(tmp_path, {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN})
    src = (tmp_path / "train.py").read_text()
    assert check_source(src, "<string>") == []
    assert check_source(src, str(tmp_path / "train.py"), project=None) == []


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            {
                "models.py": NET,
                "pkg/__init__.py": "from .memory import estimate\n",
                "pkg/memory.py": MEM,
                "train.py": "import torch\nfrom models import Net\nfrom pkg import estimate\n"
                "estimate(Net(), torch.randn(2, 4))  # FGL001\n",
            },
            id="package-re-export",
        ),
        pytest.param(
            {
                "pkg/__init__.py": "",
                "pkg/models.py": NET,
                "pkg/memory.py": MEM,
                "pkg/loop.py": "import torch\nfrom .models import Net\nfrom . import memory\n\n\ndef run():\n"
                "    m = Net()\n    memory.estimate(m, torch.randn(2, 4))  # FGL001\n",
            },
            id="relative-import-from-package-import-module",
        ),
        pytest.param(
            {
                "pyproject.toml": "[project]\nname = 'x'\n",
                "src/mypkg/__init__.py": "",
                "src/mypkg/models.py": NET,
                "src/mypkg/utils.py": MEM,
                "scripts/train.py": "import torch\nfrom mypkg.models import Net\nimport mypkg.utils as U\n"
                "U.estimate(Net(), torch.randn(2, 4))  # FGL001\n",
            },
            id="src-layout",
        ),
        pytest.param(
            {
                "models/__init__.py": "from .net import Net\n",
                "models/base.py": "from torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n",
                "models/net.py": "from .base import Base\n\n\nclass Net(Base):\n    def forward(self, x):\n"
                "        return self.fc(x)\n",
                "utils.py": MEM,
                "train.py": "import torch\nfrom models import Net\nfrom utils import estimate\n\n\ndef main():\n"
                "    net = Net()\n    estimate(net, torch.randn(2, 4))  # FGL001\n\n\nif __name__ == '__main__':\n    main()\n",
            },
            id="base-class-in-another-module",
        ),
        pytest.param(
            {
                "config.py": "from torch._subclasses.fake_tensor import FakeTensorMode\n"
                "FAKE = FakeTensorMode(allow_non_fake_inputs=True)\n",
                "models.py": NET,
                "train.py": "import torch\nfrom models import Net\nfrom config import FAKE\nnet = Net()\nwith FAKE:\n"
                "    out = net(torch.randn(2, 4))  # FGL001\n    out.sum().backward()\n",
            },
            id="module-level-mode",
        ),
        pytest.param(
            {
                "fk.py": "import contextlib\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n\n"
                "@contextlib.contextmanager\ndef fake_region():\n"
                "    with FakeTensorMode(allow_non_fake_inputs=True) as m:\n        yield m\n",
                "models.py": NET,
                "train.py": "import torch\nfrom models import Net\nfrom fk import fake_region\nnet = Net()\n"
                "with fake_region():\n    loss = net(torch.randn(2, 4)).sum()  # FGL001\n    loss.backward()\n",
            },
            id="contextmanager-helper",
        ),
        pytest.param(
            {
                "models.py": NET,
                "h.py": MEM.replace("allow_non_fake_inputs=True", ""),
                "train.py": "import torch\nfrom models import Net\nfrom h import estimate\n"
                "estimate(Net(), torch.randn(2, 4))  # FGL002\n",
            },
            id="strict-helper-crash",
        ),
        pytest.param(
            {
                "helpers.py": "def step(model, x):\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n",
                "models.py": NET,
                "train.py": "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\nfrom models import Net\n"
                "from helpers import step\nnet = Net()\nwith FakeTensorMode(allow_non_fake_inputs=True):\n"
                "    step(net, torch.randn(2, 4))  # FGL001\n",
            },
            id="helper-called-inside-the-region",
        ),
        pytest.param(
            {
                "mlp.py": "from torch import nn\n\n\nclass MLP(nn.Module):\n    def __init__(self, depth=2):\n"
                "        super().__init__()\n        layers = []\n        for _ in range(depth):\n"
                "            layers += [nn.Linear(4, 4), nn.ReLU()]\n        self.net = nn.Sequential(*layers)\n\n"
                "    def forward(self, x):\n        return self.net(x)\n",
                "utils.py": MEM,
                "train.py": "import torch\nfrom mlp import MLP\nfrom utils import estimate\n"
                "estimate(MLP(), torch.randn(2, 4))  # FGL001\n",
            },
            id="layers-list-built-with-augmented-assignment",
        ),
        pytest.param(
            {
                "models.py": NET,
                "nsutil/memory.py": MEM,  # a namespace package: no __init__.py
                "train.py": "import torch\nimport nsutil.memory\nfrom models import Net\n"
                "nsutil.memory.estimate(Net(), torch.randn(2, 4))  # FGL001\n",
            },
            id="namespace-package-dotted-import",
        ),
        pytest.param(
            {"models.py": NET, "utils.py": MEM,
             "train.py": "import torch\nfrom models import Net\nfrom utils import estimate\nnet = Net()\n"
                         "estimate(batch=torch.randn(2, 4), model=net)  # FGL001\n"},
            id="real-value-passed-by-keyword",
        ),
        pytest.param(
            {"models.py": NET,
             "mem.py": MEM.replace("from torch._subclasses.fake_tensor import FakeTensorMode",
                                   "from torch._subclasses import FakeTensorMode as FTM").replace(
                 "with FakeTensorMode(", "with FTM("),
             "train.py": "import torch\nfrom models import Net\nfrom mem import estimate\n"
                         "estimate(Net(), torch.randn(2, 4))  # FGL001\n"},
            id="helper-with-an-aliased-mode",
        ),
        pytest.param(
            {"models.py": NET, "utils.py": MEM,
             "trainer.py": "from utils import estimate\n\n\nclass Trainer:\n    def __init__(self, model):\n"
                           "        self.model = model\n\n    def check(self, batch):\n        return estimate(self.model, batch)\n",
             "train.py": "import torch\nfrom models import Net\nfrom trainer import Trainer\n"
                         "Trainer(Net()).check(torch.randn(2, 4))  # FGL001\n"},
            id="real-value-held-by-an-object",
        ),
    ],
)
def test_cross_module_hazards(tmp_path, files):
    assert_markers(make(tmp_path, files))


# ------------------------------------------------------------------- safe look-alikes


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            {"models.py": NET, "utils.py": MEM.replace("        out.sum().backward()\n", ""),
             "train.py": "import torch\nfrom models import Net\nfrom utils import estimate\nestimate(Net(), torch.randn(2, 4))\n"},
            id="forward-only-helper",
        ),
        pytest.param(
            {"models.py": NET,
             "utils.py": MEM.replace("    with FakeTensorMode", "    with torch.no_grad(), FakeTensorMode").replace(
                 "        out.sum().backward()\n", "        out.sum()\n"),
             "train.py": "import torch\nfrom models import Net\nfrom utils import estimate\nestimate(Net(), torch.randn(2, 4))\n"},
            id="helper-with-no-grad",
        ),
        pytest.param(
            {"utils.py": "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n\ndef estimate(x):\n"
                         "    with FakeTensorMode(allow_non_fake_inputs=True) as m:\n        fx = m.from_tensor(x)\n"
                         "        (fx * 2).sum().backward()\n",
             "train.py": "import torch\nfrom utils import estimate\nw = torch.randn(3, requires_grad=True)\nestimate(w)\n"},
            id="helper-converts-with-from-tensor",
        ),
        pytest.param(
            {"models.py": NET,
             "utils.py": "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\nfrom models import Net\n\n\n"
                         "def estimate(batch):\n    with FakeTensorMode(allow_non_fake_inputs=True):\n        model = Net()\n"
                         "        model(batch).sum().backward()\n",
             "train.py": "import torch\nfrom utils import estimate\nestimate(torch.randn(2, 4))\n"},
            id="model-built-inside-the-helper-region",
        ),
        pytest.param(
            {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM,
             "train.py": "import torch\nfrom models import Net\nfrom utils.memory import estimate\nmodel = Net()\n"
                         "model.requires_grad_(False)\nestimate(model, torch.randn(2, 4))\n"},
            id="frozen-model",
        ),
        pytest.param(
            {"models.py": NET, "utils.py": MEM,
             "train.py": "import torch\nimport utils\nfrom models import Net\n\n\ndef unknown(m):\n"
                         "    utils.estimate(m, torch.randn(2, 4))\n"},
            id="unknown-argument",
        ),
        pytest.param(
            {"models.py": NET, "memory.py": MEM,
             "train.py": "import torch\nfrom models import Net\nif __name__ == '__main__':\n    pass\n"},
            id="imports-nothing-that-opens-a-region",
        ),
    ],
)
def test_safe_look_alikes(tmp_path, files):
    assert_markers(make(tmp_path, files))


def test_imported_module_main_guard_does_not_run(tmp_path):
    make(tmp_path, {
        "models.py": NET,
        "utils.py": MEM + "\n\nif __name__ == '__main__':\n    from models import Net\n    estimate(Net(), torch.randn(2, 4))\n",
        "train.py": "import torch\nfrom utils import estimate\nprint(estimate)\n",
    })
    assert findings_of(tmp_path / "train.py") == []
    # utils.py run as a script is a hazard (reported at the op in its helper, as for one file)
    assert [f.location.row for f in findings_of(tmp_path / "utils.py")] == [7]


TRAINER = """\
import contextlib

from torch._subclasses.fake_tensor import FakeTensorMode


class Trainer:
    def __init__(self, epochs=1, dry_run=True):
        self.epochs = epochs
        self.dry_run = dry_run

    def fit(self, model, batch):
        ctx = FakeTensorMode(allow_non_fake_inputs=True) if self.dry_run else contextlib.nullcontext()
        with ctx:
            model(batch).sum().backward()
"""


@pytest.mark.parametrize("flag, marker", [("", "  # FGL001"), (", dry_run=False", "")])
def test_attributes_set_by_init_of_a_class_of_another_module(tmp_path, flag, marker):
    make(tmp_path, {
        "models.py": NET,
        "lit/__init__.py": "from .trainer import Trainer\n",
        "lit/trainer.py": TRAINER,
        "train.py": f"import torch\nfrom lit import Trainer\nfrom models import Net\ntrainer = Trainer(epochs=2{flag})\n"
                    f"trainer.fit(Net(), torch.randn(2, 4)){marker}\n",
    })
    assert_markers(tmp_path)


def test_fixes_edit_only_the_linted_file(tmp_path):
    make(tmp_path, {
        "fk.py": "import contextlib\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n\n"
                 "@contextlib.contextmanager\ndef fake_region():\n    with FakeTensorMode(allow_non_fake_inputs=True):\n"
                 "        yield\n\n\n@contextlib.contextmanager\ndef fake_region_mode():\n"
                 "    with FakeTensorMode(allow_non_fake_inputs=True) as m:\n        yield m\n",
        "train.py": "import torch\nfrom fk import fake_region, fake_region_mode\n\nx = torch.randn(3, requires_grad=True)\n"
                    "with fake_region():\n    (x * 2).sum().backward()  # FGL001\nwith fake_region_mode() as fm:\n"
                    "    (x * 2).sum().backward()  # FGL001\n",
    })
    assert_markers(tmp_path)
    first, second = findings_of(tmp_path / "train.py")
    # the region's `with` is in fk.py and yields no mode: the block in train.py finds the
    # mode at run time (`torch._guards.detect_fake_mode()`) and converts x there
    assert first.fix is not None and all(e.filename is None and e.start.row >= 5 for e in first.fix.edits)
    assert any("detect_fake_mode" in e.content for e in first.fix.edits)
    # the helper yields its mode: the block in train.py binds it and converts x there
    assert second.fix is not None and [e.content for e in second.fix.edits if "from_tensor" in e.content]
    assert all(e.start.row >= 7 for e in second.fix.edits)


def test_a_hazard_of_the_other_module_is_reported_there_once(tmp_path):
    make(tmp_path, {
        "dry.py": "import torch\nfrom torch import nn\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n\n"
                  "def dry_run():\n    model = nn.Linear(4, 2)\n    with FakeTensorMode(allow_non_fake_inputs=True):\n"
                  "        model(torch.randn(2, 4)).sum().backward()  # FGL001\n",
        "train.py": "from dry import dry_run\ndry_run()\n",
    })
    assert_markers(tmp_path)


def test_torch_is_never_a_project_module(tmp_path):
    # a checkout with a folder named torch next to the script: still torch's semantics
    make(tmp_path, {
        "torch/__init__.py": "def randn(*a, **k):\n    return None\n",
        "train.py": "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
                    "x = torch.randn(3, requires_grad=True)\nwith FakeTensorMode(allow_non_fake_inputs=True):\n"
                    "    (x * 2).sum().backward()  # FGL001\n",
    })
    assert_markers(tmp_path)


# ------------------------------------------------------------------- CLI: prefilter, cache, formats


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "fakegrad_lint", *args], cwd=cwd, capture_output=True, text=True)


def test_cli_prefilter_cache_and_formats(tmp_path):
    proj = make(tmp_path / "proj", {
        "models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN,
        # cannot reach a region: never parsed, so its syntax error is not reported
        "plain.py": "from models import Net\ndef f(:\n",
        # reaches one through a project import: parsed, its error reported
        "broken.py": "from utils.memory import estimate\ndef f(:\n",
    })
    cache = str(tmp_path / "cache")
    r = cli("--cache-dir", cache, "--output-format", "json", "--show-trace", ".", cwd=proj)
    assert r.returncode == 2, r.stderr
    assert "broken.py: error: SyntaxError" in r.stderr and "plain.py" not in r.stderr
    found = json.loads(r.stdout)
    (d,) = [x for x in found if x["filename"].endswith("train.py")]
    assert d["location"] == {"row": 6, "column": 1}
    # utils/memory.py is checked too: the leak is also reported at its line there
    (h,) = [x for x in found if x["filename"].endswith("memory.py")]
    assert h["location"] == {"row": 7, "column": 15} and h["trace"] == d["trace"], h
    assert [t["kind"] for t in d["trace"]] == ["source", "call", "region", "leak", "sink"]
    assert d["trace"][2]["filename"] == str(proj / "utils" / "memory.py")
    r = cli("--cache-dir", cache, "--show-trace", "train.py", cwd=proj)
    assert r.returncode == 1
    assert "trace: source L5, call L6, region utils/memory.py:L6, op utils/memory.py:L7, backward utils/memory.py:L8" in r.stdout
    # the cached entry of train.py depends on utils/memory.py: a change there is seen
    mem = proj / "utils" / "memory.py"
    mem.write_text(MEM.replace("        out.sum().backward()\n", "        out.sum()\n"))
    r = cli("--cache-dir", cache, "train.py", cwd=proj)
    assert r.returncode == 0, r.stdout
    mem.write_text(MEM)
    r = cli("--cache-dir", cache, "train.py", cwd=proj)
    assert r.returncode == 1, r.stdout


def test_flake8_plugin_finds_the_project_from_the_path(tmp_path):
    proj = make(tmp_path, {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN})
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "FGL", "train.py"],
                          cwd=proj, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("train.py:6:1: FGL001 real requires-grad module `model`"), proc.stdout


def test_sarif_code_flows_cross_files_and_validate(tmp_path, monkeypatch, validator):
    from fakegrad_lint.report import ReportContext, sarif

    proj = make(tmp_path, {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN})
    monkeypatch.chdir(proj)
    findings = findings_of(proj / "train.py")
    log = sarif.build(ReportContext(findings=findings))
    (res,) = log["runs"][0]["results"]
    (flow,) = res["codeFlows"]
    locs = flow["threadFlows"][0]["locations"]
    uris = [loc["location"]["physicalLocation"]["artifactLocation"]["uri"] for loc in locs]
    assert uris == ["train.py", "train.py", "utils/memory.py", "utils/memory.py", "utils/memory.py"]
    assert [loc["executionOrder"] for loc in locs] == [1, 2, 3, 4, 5]
    assert_valid(validator, log)


def test_single_file_findings_carry_a_trace():
    src = textwrap.dedent("""\
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode

        x = torch.randn(4, 3, requires_grad=True)
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = (x * 2).sum()  # FGL001
            y.backward()
        """)
    (f,) = check_source(src, "t.py")
    assert [(t.kind, t.location.row, t.filename) for t in f.trace] == [
        ("source", 4, "t.py"), ("region", 5, "t.py"), ("leak", 6, "t.py"), ("sink", 7, "t.py")]
    assert f.trace[1].message.endswith("(allows non-fake inputs)")


def test_prefilter_follows_the_names_a_region_opening_module_exports(tmp_path):
    from fakegrad_lint.analysis.project import reaches_region

    make(tmp_path, {
        "utils.py": MEM + "\n\nCONST = 3\n\n\ndef wrapper(model, batch):\n    return estimate(model, batch)\n",
        "pkg/__init__.py": "from .inner import estimate as measure\nfrom .plain import helper\n",
        "pkg/inner.py": MEM,
        "pkg/plain.py": "def helper():\n    return 1\n",
        "a.py": "from utils import CONST\nprint(CONST)\n",
        "b.py": "from utils import wrapper\nwrapper(1, 2)\n",
        "c.py": "from pkg import measure\nmeasure(1, 2)\n",
        "d.py": "import pkg\npkg.helper()\n",
        "e.py": "import utils as u\nu.estimate(1, 2)\n",
        "f.py": "from pkg import helper\nhelper()\n",
    })
    got = {n: reaches_region(str(tmp_path / f"{n}.py"), (tmp_path / f"{n}.py").read_text()) for n in "abcdef"}
    assert got == {"a": False, "b": True, "c": True, "d": False, "e": True, "f": False}


def test_star_reexport_through_a_namespace_package_passes_the_prefilter(tmp_path):
    """``core/__init__.py`` re-exports with ``from .regions import *`` and names no
    hot word itself; the prefilter's fixed point must still follow it (the linted
    folder is the run root, as in ``cd project && fakegrad-lint .``)."""
    make(tmp_path, {
        "core/__init__.py": "from .regions import *  # noqa: F401,F403\n",
        "core/regions.py": (
            "from contextlib import contextmanager\n\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n\n"
            "__all__ = [\"fake_region\"]\n\n\n"
            "@contextmanager\ndef fake_region():\n"
            "    with FakeTensorMode(allow_non_fake_inputs=True) as mode:\n        yield mode\n"
        ),
        "estimators/grads.py": (
            "import torch\n\nfrom core import fake_region\n\n\n"
            "def footprint(model):\n    with fake_region():\n"
            "        model(torch.randn(2, 4)).sum().backward()\n"
        ),
        "main.py": "from torch import nn\n\nfrom estimators.grads import footprint\n\nfootprint(nn.Linear(4, 2))\n",
    })
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "--isolated", "--no-cache", "--output-format", "json", "."],
        cwd=tmp_path, capture_output=True, text=True,
    )
    got = {(os.path.basename(d["filename"]), d["location"]["row"], d["code"]) for d in json.loads(proc.stdout)}
    assert ("main.py", 5, "FGL001") in got, proc.stdout + proc.stderr


# ----------------------------------------------- a leak inside a helper: also at its own line there


def _json_findings(proj, *paths):
    r = cli("--isolated", "--no-cache", "--output-format", "json", *paths, cwd=proj)
    assert r.returncode in (0, 1), r.stderr
    return {(os.path.relpath(d["filename"], proj).replace(os.sep, "/"), d["location"]["row"], d["code"])
            for d in json.loads(r.stdout)}, json.loads(r.stdout)


def test_leak_in_a_checked_helper_is_also_reported_at_its_line(tmp_path):
    second = "import torch\nfrom models import Net\nfrom utils.memory import estimate\n\nestimate(Net(), torch.ones(1, 4))\n"
    proj = make(tmp_path / "p", {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM,
                                  "train.py": TRAIN, "again.py": second})
    got, raw = _json_findings(proj, ".")
    # the call sites stay; the helper's line is reported once for both callers
    assert got == {("train.py", 6, "FGL001"), ("again.py", 5, "FGL001"), ("utils/memory.py", 7, "FGL001")}, got
    (h,) = [d for d in raw if d["filename"].endswith("memory.py")]
    assert [t["kind"] for t in h["trace"]] == ["source", "call", "region", "leak", "sink"]
    assert h["trace"][1]["filename"].endswith(("train.py", "again.py")) and h["fix"] is None
    assert "the real value comes from the call at ../" in h["message"] and "utils/memory.py" not in h["message"]
    # only when the helper is one of the files checked; linting the helper alone proves nothing
    assert _json_findings(proj, "train.py")[0] == {("train.py", 6, "FGL001")}
    assert _json_findings(proj, "utils")[0] == set()
    # the helper's own `# noqa` silences the finding at its line, not the call's
    mem = proj / "utils" / "memory.py"
    mem.write_text(MEM.replace("out = model(batch)", "out = model(batch)  # noqa: FGL001"))
    assert _json_findings(proj, ".")[0] == {("train.py", 6, "FGL001"), ("again.py", 5, "FGL001")}
    # and that directive is used (FGL100 says so only when the helper is linted alone)
    assert _json_findings(proj, "--extend-select", "FGL100", ".")[0] == {("train.py", 6, "FGL001"), ("again.py", 5, "FGL001")}
    assert _json_findings(proj, "--extend-select", "FGL100", "utils")[0] == {("utils/memory.py", 7, "FGL100")}


def test_safe_caller_of_a_checked_helper_reports_nowhere(tmp_path):
    safe = TRAIN.replace("model = Net()\n", "model = Net().requires_grad_(False)\n").replace("  # FGL001", "")
    proj = make(tmp_path / "p", {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": safe})
    assert _json_findings(proj, ".")[0] == set()


def test_helper_line_findings_survive_the_cache(tmp_path):
    proj = make(tmp_path / "p", {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN})
    cache = str(tmp_path / "cache")
    runs = []
    for _ in range(2):
        r = cli("--isolated", "--cache-dir", cache, "--output-format", "json", ".", cwd=proj)
        runs.append(sorted((os.path.basename(d["filename"]), d["location"]["row"]) for d in json.loads(r.stdout)))
    assert runs[0] == runs[1] == [("memory.py", 7), ("train.py", 6)], runs


# ----------------------------------------------- registries filled by import side effects

REGISTRY = """\
BACKENDS = {}


def register(name):
    def deco(cls):
        BACKENDS[name] = cls
        return cls

    return deco


def get_backend(name, **kwargs):
    return BACKENDS[name](**kwargs)
"""

FAKE_BACKEND = """\
from torch._subclasses.fake_tensor import FakeTensorMode

from registry import register


@register("fake")
class FakeBackend:
    def run_step(self, step_fn, *args):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return step_fn(*args)
"""

EAGER_BACKEND = """\
from registry import register


@register("eager")
class EagerBackend:
    def run_step(self, step_fn, *args):
        return step_fn(*args)
"""


def _plugin_main(key_expr):
    return f"""\
import torch
from torch import nn

import backends  # noqa: F401  (registers the backends)
from registry import get_backend


def step(model):
    loss = model(torch.randn(2, 3)).sum()  # MARK
    loss.backward()


model = nn.Linear(3, 1)
get_backend({key_expr}).run_step(step, model)
"""


@pytest.mark.parametrize("reexported", [False, True])
@pytest.mark.parametrize("key, hazard", [('"fake"', True), ('"eager"', False), ("input()", False)])
def test_registry_filled_by_a_package_init_side_effect(tmp_path, key, hazard, reexported):
    """``backends/__init__.py`` imports its submodules, whose decorators fill
    ``registry.BACKENDS``; main.py names no fake mode and imports only
    ``get_backend``. The "eager" look-alike and an unknown key (a may-value: one
    candidate is safe) report nothing."""
    from fakegrad_lint.analysis.project import reaches_region

    main = _plugin_main(key).replace("# MARK", "# FGL001" if hazard else "")
    files = {"registry.py": REGISTRY, "backends/__init__.py": "from . import eager, fake  # noqa: F401\n",
             "backends/fake.py": FAKE_BACKEND, "backends/eager.py": EAGER_BACKEND, "main.py": main}
    if reexported:
        # the registry lives in core/registry.py; core/__init__.py re-exports it
        files = {k.replace("registry.py", "core/registry.py"): v.replace("from registry import", "from core import")
                 for k, v in files.items()}
        files["core/__init__.py"] = "from .registry import BACKENDS, get_backend, register\n"
    proj = make(tmp_path / "p", files)
    assert reaches_region(str(proj / "main.py"), (proj / "main.py").read_text())  # the prefilter lets it through
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 9, "FGL001")} if hazard else set()), got


# ----------------------------------------------- module summaries, once per content


def test_module_summaries_are_made_once_per_content_and_kept_on_disk(tmp_path):
    """Two copies of the same module (same bytes, two projects) are summarised
    once; a second process reads the summaries from the store under the cache
    folder instead of making them; an edited module is summarised again; the
    findings are the same with and without the store."""
    for name in ("a", "b"):
        make(tmp_path / name, {"models.py": NET, "utils/__init__.py": "", "utils/memory.py": MEM, "train.py": TRAIN})
    cache = tmp_path / "cache"
    code = textwrap.dedent(f"""
        import json, sys
        from fakegrad_lint.analysis import summaries
        from fakegrad_lint.engine import process
        from fakegrad_lint.engine.cache import Cache
        from fakegrad_lint.rules import DEFAULT_CODES
        files = [str(p) for p in sorted(__import__("pathlib").Path({str(tmp_path)!r}).glob("[ab]/**/*.py"))]
        cache = Cache(sys.argv[1]) if sys.argv[1] != "-" else None
        r = process.run(files, lambda p: DEFAULT_CODES, process.Options(), jobs=1, cache=cache)
        print(json.dumps([sorted((f.filename[len({str(tmp_path)!r}):], f.location.row) for f in r.findings),
                          summaries.store_stats]))
    """)

    def run(cache_dir):
        proc = subprocess.run([sys.executable, "-c", code, cache_dir], capture_output=True, text=True, check=True)
        return json.loads(proc.stdout)

    plain, stats0 = run("-")
    assert plain == [["/a/train.py", 6], ["/a/utils/memory.py", 7], ["/b/train.py", 6], ["/b/utils/memory.py", 7]]
    assert stats0["memory"] > 0  # b's modules: the same bytes as a's
    cold, stats1 = run(str(cache))
    assert cold == plain and stats1["made"] == stats0["made"] and stats1["disk"] == 0
    assert list((cache / "summaries").rglob("*-imports")) and (cache / ".gitignore").is_file()
    (tmp_path / "b" / "train.py").write_text(TRAIN + "\n")  # a new content: the cached findings of b/train.py go too
    warm, stats2 = run(str(cache))
    assert warm == plain and stats2["made"] >= 1 and stats2["disk"] >= 1


# ----------------------------------------------- layouts: import cycles, namespace packages, importlib

CYCLE = {
    "pkg/__init__.py": "from .a import estimate\n",
    "pkg/a.py": "from . import b\n" + MEM + "\n\ndef g():\n    return b.h()\n",
    "pkg/b.py": "from .a import estimate\n\n\ndef h():\n    return estimate\n",
}


@pytest.mark.parametrize("frozen", [False, True])
def test_import_cycle_does_not_hide_a_reexport_whatever_the_order(tmp_path, frozen):
    """``pkg/__init__`` re-exports ``a.estimate``; ``a`` imports ``pkg.b``, which
    imports from ``a``. Linting ``pkg/b.py`` first used to leave ``pkg/__init__``
    with no hot name (computed inside the cycle), so train.py stopped at the
    prefilter. The frozen model is the safe look-alike."""
    model = "nn.Linear(4, 2).requires_grad_(False)" if frozen else "nn.Linear(4, 2)"
    train = f"import torch\nfrom torch import nn\nfrom pkg import estimate\n\nmodel = {model}\nestimate(model, torch.randn(2, 4))\n"
    proj = make(tmp_path / "p", {**CYCLE, "train.py": train})
    want = set() if frozen else {("train.py", 6, "FGL001"), ("pkg/a.py", 8, "FGL001")}
    assert _json_findings(proj, "pkg/b.py", "train.py", "pkg/a.py")[0] == want
    assert _json_findings(proj, ".")[0] == want


def _helper_call(imports, call, frozen=False):
    model = "nn.Linear(4, 2).requires_grad_(False)" if frozen else "nn.Linear(4, 2)"
    return f"import torch\nfrom torch import nn\n{imports}\n\nmodel = {model}\n{call}(model, torch.randn(2, 4))\n"


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("files, imports, call", [
    # `import ns.sub.mem`: ns and ns/sub are namespace packages (no __init__.py)
    ({"ns/sub/mem.py": MEM}, "import ns.sub.mem", "ns.sub.mem.estimate"),
    ({"pkg/__init__.py": "", "pkg/mem.py": MEM}, "import importlib\nm = importlib.import_module('pkg.mem')", "m.estimate"),
    ({"pkg/__init__.py": "", "pkg/mem.py": MEM}, "from importlib import import_module\nm = import_module('pkg.mem')",
     "m.estimate"),
    ({"pkg/__init__.py": "", "pkg/mem.py": MEM, "pkg/sibling.py": ""},
     "import importlib\nm = importlib.import_module('.mem', __package__)", "m.estimate"),
    # a fallback import that cannot be taken: pkg.mem imports only torch
    ({"pkg/__init__.py": "", "pkg/mem.py": MEM},
     "try:\n    from pkg.mem import estimate\nexcept ImportError:\n    estimate = None", "estimate"),
], ids=["namespace-dotted", "import_module", "import_module-from", "import_module-relative", "try-except-ImportError"])
def test_project_layouts_are_followed(tmp_path, files, imports, call, frozen):
    where = "pkg/train.py" if "__package__" in imports else "train.py"
    proj = make(tmp_path / "p", {**files, where: _helper_call(imports, call, frozen)})
    got = _json_findings(proj, ".")[0]
    helper = next(f for f in files if f.endswith("mem.py"))
    assert got == (set() if frozen else {(where, 6 + imports.count("\n"), "FGL001"), (helper, 7, "FGL001")}), got


def test_fallback_import_that_may_be_taken_stays_a_may_value(tmp_path):
    """The module tried imports a third-party package (it may be missing, and the
    handler then runs): the helper may be None, nothing is reported."""
    mem = "import triton  # noqa: F401\n" + MEM
    imports = "try:\n    from pkg.mem import estimate\nexcept ImportError:\n    estimate = None"
    proj = make(tmp_path / "p", {"pkg/__init__.py": "", "pkg/mem.py": mem, "train.py": _helper_call(imports, "estimate")})
    assert _json_findings(proj, ".")[0] == set()


CONTEXTS = """\
import contextlib
import functools

from torch._subclasses import FakeTensorMode

CONTEXTS = {
    "fake": functools.partial(FakeTensorMode, allow_non_fake_inputs=True),
    "off": contextlib.nullcontext,
}


def make_context(key):
    return CONTEXTS[key]()
"""


@pytest.mark.parametrize("key, hazard", [('"fake"', True), ('"off"', False)])
def test_context_registry_of_partials_in_another_module(tmp_path, key, hazard):
    """``toolkit/contexts.py`` maps keys to ``functools.partial(FakeTensorMode, ...)``
    or ``nullcontext``; the helper that looks one up names no fake mode itself."""
    step = ("import torch\n\nfrom .contexts import make_context\n\n\n"
            f"def step(model, x):\n    with make_context({key}):\n        model(x).sum().backward()\n")
    main = "import torch\nfrom torch import nn\n\nfrom toolkit.sizing import step\n\nstep(nn.Linear(3, 1), torch.randn(2, 3))\n"
    proj = make(tmp_path / "p", {"toolkit/__init__.py": "", "toolkit/contexts.py": CONTEXTS, "toolkit/sizing.py": step,
                                  "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 6, "FGL001"), ("toolkit/sizing.py", 8, "FGL001")} if hazard else set())


SHIM = """\
try:
    from torch._subclasses.fake_tensor import FakeTensorMode
except ImportError:  # old torch

    class FakeTensorMode:
        def __init__(self, allow_non_fake_inputs=False):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
"""


@pytest.mark.parametrize("shim, hazard", [(SHIM, True), ("\n".join(SHIM.splitlines()[4:]).replace("    ", "", 1) + "\n", False)],
                         ids=["torch-first", "local-class-only"])
def test_compat_shim_that_imports_torchs_fake_mode(tmp_path, shim, hazard):
    """A shim that imports torch's FakeTensorMode (its stand-in only on ImportError)
    is torch's; a module that defines its own class of that name is not."""
    main = ("import torch\nfrom torch import nn\n\nfrom simkit import FakeTensorMode\n\nmodel = nn.Linear(3, 1)\n"
            "with FakeTensorMode(allow_non_fake_inputs=True):\n    model(torch.randn(2, 3)).sum().backward()\n")
    proj = make(tmp_path / "p", {"simkit/__init__.py": "from .fake import FakeTensorMode\n", "simkit/fake.py": shim,
                                  "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 8, "FGL001")} if hazard else set())


def test_import_module_of_a_module_outside_the_project(tmp_path):
    """``importlib.import_module`` of torch (not a project module) is torch's module;
    an unknown or relative name outside a package is an unknown value, never an error."""
    main = ("import importlib\nimport torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n"
            "nn = importlib.import_module('torch.nn')\nother = importlib.import_module(input())\n"
            "rel = importlib.import_module('.x')\nmodel = nn.Linear(3, 1)\n"
            "with FakeTensorMode(allow_non_fake_inputs=True):\n    model(torch.randn(2, 3)).sum().backward()\n")
    proj = make(tmp_path / "p", {"pkg/__init__.py": "", "main.py": main})
    r = cli("--isolated", "--no-cache", "--output-format", "json", ".", cwd=proj)
    assert r.returncode == 1 and not r.stderr, r.stderr
    assert {(d["location"]["row"], d["code"]) for d in json.loads(r.stdout)} == {(10, "FGL001")}


@pytest.mark.parametrize("call, hazard", [("manual_backward(loss)", True), ("manual_backward(loss, inputs=[x])", False)])
def test_backward_helper_passing_its_default_inputs_none(tmp_path, call, hazard):
    """``lit/core.py``'s ``manual_backward(loss, inputs=None)`` hands its default on
    to ``torch.autograd.backward``: every leaf gets a gradient (the real parameters
    too). The look-alike asks for the fake input's gradient only."""
    core = "import torch\n\n\ndef manual_backward(loss, inputs=None):\n    torch.autograd.backward(loss, inputs=inputs)\n"
    main = ("import torch\nfrom torch import nn\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n"
            "from lit.core import manual_backward\n\nmodel = nn.Linear(3, 1)\n"
            "with FakeTensorMode(allow_non_fake_inputs=True):\n    x = torch.randn(2, 3, requires_grad=True)\n"
            f"    loss = model(x).sum()\n    {call}\n")
    proj = make(tmp_path / "p", {"lit/__init__.py": "", "lit/core.py": core, "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 10, "FGL001")} if hazard else set())


# --------------------------------------------------------------------------- module state, hooks, start/stop
# Each project below was labelled by running it (tests/oracle.py run_project); the
# safe look-alike of each hazard runs clean.

_NETS = """\
from torch import nn


def make_net(d=4):
    return nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 1))
"""

_HOLDER = """\
class Holder:
    current = None

    @classmethod
    def keep(cls, net):
        cls.current = net


def last():
    return Holder.current
"""

_BENCH = """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from . import holder


class Bench:
    def __init__(self, allow):
        self.allow = allow

    @classmethod
    def create(cls):
        return cls(allow=True)

    def run(self):
        with FakeTensorMode(allow_non_fake_inputs=self.allow):
            net = holder.last()
            if net is None:
                net = nn.Linear(4, 1)
            net(torch.randn(3, 4)).sum().backward()
"""


@pytest.mark.parametrize("order, hazard", [("keep-then-run", True), ("run-then-keep", False)])
def test_real_model_handed_over_through_module_state_filled_by_an_earlier_call(tmp_path, order, hazard):
    """``main.py`` builds a real net with a factory of ``nets.py`` and keeps it in a
    class attribute of ``tools/holder.py``; a bench made by a classmethod of
    ``tools/bench.py`` reads it back inside an allow-mode region and backpropagates.
    The real net comes from the linted file (an earlier call made it), so the call
    of ``run()`` is the leak. Run before the net is kept, the bench builds its own
    inside the region: clean."""
    steps = ["holder.Holder.keep(net)", "bench.run()"] if hazard else ["bench.run()", "holder.Holder.keep(net)"]
    main = ("from nets import make_net\nfrom tools import holder\nfrom tools.bench import Bench\n\n"
            "net = make_net()\nbench = Bench.create()\n" + "\n".join(steps) + "\n")
    proj = make(tmp_path / "p", {"nets.py": _NETS, "tools/__init__.py": "", "tools/holder.py": _HOLDER,
                                  "tools/bench.py": _BENCH, "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 8, "FGL001"), ("tools/bench.py", 21, "FGL001")} if hazard else set()), got
    # the bench module alone: what `holder.last()` holds is not known there
    assert findings_of(proj / "tools" / "bench.py") == []


_TRACER = """\
from torch._subclasses.fake_tensor import FakeTensorMode

from . import flags


class Tracer:
    def __init__(self):
        self._mode = FakeTensorMode(allow_non_fake_inputs=True) if flags.TRACE_FAKE else None

    def begin(self):
        if self._mode is not None:
            self._mode.__enter__()

    def end(self):
        if self._mode is not None:
            self._mode.__exit__(None, None, None)


TRACER = Tracer()
"""


@pytest.mark.parametrize("flag, hazard", [("True", True), ("False", False)])
def test_region_opened_by_one_method_and_closed_by_another_of_a_package_singleton(tmp_path, flag, hazard):
    """``sim.TRACER.begin()`` enters the mode it holds and ``end()`` leaves it (the
    region spans the caller's code between them); whether it holds one is read from
    ``sim/flags.py`` through ``from . import flags`` (a submodule bound while its
    package's ``__init__`` imports it too)."""
    main = ("import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'src'))\n\n"
            "import torch  # noqa: E402\nfrom torch import nn  # noqa: E402\n\nfrom sim import TRACER  # noqa: E402\n\n"
            "net = nn.Linear(4, 2)\nTRACER.begin()\nloss = net(torch.randn(3, 4)).sum()\nloss.backward()\nTRACER.end()\n")
    proj = make(tmp_path / "p", {"src/sim/__init__.py": "from . import flags\nfrom .tracer import TRACER\n\n__all__ = ['TRACER', 'flags']\n",
                                  "src/sim/flags.py": f"TRACE_FAKE = {flag}\n", "src/sim/tracer.py": _TRACER,
                                  "main.py": main, "pyproject.toml": "[project]\nname = 'sim'\n"})
    assert _json_findings(proj, ".")[0] == ({("main.py", 13, "FGL001")} if hazard else set())


_PROBES = """\
from torch._subclasses.fake_tensor import FakeTensorMode


class _Probe:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)

    def before(self, module, args):
        self.mode.__enter__()

    def after(self, module, args, out):
        self.mode.__exit__(None, None, None)


def attach(model):
    probe = _Probe()
    return [model.register_forward_pre_hook(probe.before), model.register_forward_hook(probe.after)]
"""


@pytest.mark.parametrize("removed_first, hazard", [(False, True), (True, False)])
def test_forward_hooks_of_another_module_open_the_region_of_the_call(tmp_path, removed_first, hazard):
    """``probes.attach(model)`` registers a pre hook that enters an allow-mode mode
    and a hook that leaves it: each call of the model runs its forward in the region
    (the backward then leaves fake grads). With the hooks removed after a forward
    used for its shape only, the training step is real: clean."""
    if removed_first:
        body = ("print(net(x).shape)\nfor h in handles:\n    h.remove()\n"
                "loss = net(x).sum()\nloss.backward()\n")
    else:
        body = "loss = net(x).sum()\nloss.backward()\n"
    main = ("import torch\nfrom torch import nn\n\nfrom probes import attach\n\nnet = nn.Linear(4, 2)\n"
            "x = torch.randn(3, 4)\nhandles = attach(net)\n" + body)
    proj = make(tmp_path / "p", {"probes.py": _PROBES, "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 9, "FGL001")} if hazard else set())


_HOOKED = """\
import contextlib

from probes import attach


@contextlib.contextmanager
def hooked(model):
    handles = attach(model)
    yield model
    for h in handles:
        h.remove()
"""


@pytest.mark.parametrize("inside, hazard", [(True, True), (False, False)])
def test_contextmanager_cleanup_after_its_yield_runs_when_the_block_ends(tmp_path, inside, hazard):
    """``hooked(model)`` attaches the hooks, yields, and removes them when the
    ``with`` block ends (the generator resumes after its yield): a training step
    inside the block is in the region, one after it is real."""
    step = "    loss = net(x).sum()\n    loss.backward()\n" if inside else \
        "    print(net(x).shape)\nloss = net(x).sum()\nloss.backward()\n"
    main = ("import torch\nfrom torch import nn\n\nfrom hooks_ctx import hooked\n\nnet = nn.Linear(4, 2)\n"
            "x = torch.randn(3, 4)\nwith hooked(net):\n" + step)
    proj = make(tmp_path / "p", {"probes.py": _PROBES, "hooks_ctx.py": _HOOKED, "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 9, "FGL001")} if hazard else set())


@pytest.mark.parametrize("mode, hazard", [("fake", True), ("real", False)])
def test_make_fx_options_built_by_a_function_of_another_module(tmp_path, mode, hazard):
    """``make_fx(step, **trace_options())``: the keywords come from a dict another
    module builds; with ``tracing_mode="fake"`` and non-fake inputs allowed, the
    closure's backward leaves fake grads on the real net; a real trace is real."""
    options = f"def trace_options():\n    return dict(tracing_mode={mode!r}, _allow_non_fake_inputs=True)\n"
    capture = ("from torch.fx.experimental.proxy_tensor import make_fx\n\nfrom .options import trace_options\n\n\n"
               "def capture(net, x):\n    def step(inp):\n        net(inp).sum().backward()\n        return inp\n\n"
               "    return make_fx(step, **trace_options())(x)\n")
    main = ("import torch\nfrom torch import nn\n\nfrom fxtools.capture import capture\n\nnet = nn.Linear(4, 2)\n"
            "capture(net, torch.randn(3, 4))\n")
    proj = make(tmp_path / "p", {"fxtools/__init__.py": "", "fxtools/options.py": options, "fxtools/capture.py": capture,
                                  "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 7, "FGL001"), ("fxtools/capture.py", 8, "FGL001")} if hazard else set()), got


_LAYERS = """\
import torch
from torch import nn

from .runtime import SHAPES_MODE


class ShapeCheckedLinear(nn.Linear):
    def __init__(self, *args, fake_forward=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fake_forward = fake_forward

    def forward(self, x):
        if self.fake_forward:
            with SHAPES_MODE:
                return super().forward(x)
        y = super().forward(x)
        with SHAPES_MODE:
            torch.empty(y.shape)
        return y
"""


@pytest.mark.parametrize("fake_forward, hazard", [(True, True), (False, False)])
def test_torch_layer_subclass_in_a_sequential_runs_its_base_forward_in_a_shared_mode(tmp_path, fake_forward, hazard):
    """The second child of an ``nn.Sequential`` is an ``nn.Linear`` subclass whose
    forward runs ``super().forward(x)`` (torch's, on its real weight) inside the
    package's module-level allow-mode mode: the fake output is backpropagated in
    ``main.py``. Its look-alike runs the base forward outside the mode and only
    makes a fake tensor of the output's shape inside it."""
    main = ("import torch\nfrom torch import nn\n\nfrom blocks.layers import ShapeCheckedLinear\n\n"
            f"net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), ShapeCheckedLinear(6, 2, fake_forward={fake_forward}))\n"
            "loss = net(torch.randn(3, 4)).sum()\nloss.backward()\n")
    proj = make(tmp_path / "p", {"blocks/__init__.py": "", "blocks/layers.py": _LAYERS,
                                  "blocks/runtime.py": "from torch._subclasses import FakeTensorMode\n\n"
                                  "SHAPES_MODE = FakeTensorMode(allow_non_fake_inputs=True)\n", "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 7, "FGL001"), ("blocks/layers.py", 15, "FGL001")} if hazard else set()), got


_FACTORY = """\
import torch
from torch import nn


class Factory:
    def __call__(self):
        return self.on_meta()

    def on_meta(self):
        with torch.device("meta"):
            return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
"""

_SIZING = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


def grad_bytes(net):
    with FakeTensorMode(allow_non_fake_inputs=True):
        if not all(not p.is_meta for p in net.parameters()):
            net = net.to_empty(device="cpu")
        net(torch.randn(2, 4)).sum().backward()
        return sum(p.grad.numel() for p in net.parameters())
"""


@pytest.mark.parametrize("materialised, hazard", [(True, True), (False, False)])
def test_device_known_after_to_empty_decides_a_helpers_is_meta_check(tmp_path, materialised, hazard):
    """A factory object's ``__call__`` builds on the meta device (through a method
    of its class); ``main.py`` gives it real storage with ``to_empty(device="cpu")``
    before handing it to the sizing helper, whose ``is_meta`` check is then known
    False: its region runs the real net. Handed over on meta, the helper
    materialises it inside the region (fake parameters): clean."""
    net = "Factory()().to_empty(device=\"cpu\")" if materialised else "Factory()()"
    main = f"from factory import Factory\nfrom sizing import grad_bytes\n\nnet = {net}\nprint(grad_bytes(net))\n"
    proj = make(tmp_path / "p", {"factory.py": _FACTORY, "sizing.py": _SIZING, "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 5, "FGL001"), ("sizing.py", 9, "FGL001")} if hazard else set()), got


_BATCHES = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily


class Sizer:
    def fitting(self, sizes):
        with FakeTensorMode(allow_non_fake_inputs=True):
            for n in sizes:
                if torch.empty(n, 4).numel() <= 64:
{yield_block}
"""


@pytest.mark.parametrize("unset, hazard", [(False, True), (True, False)])
def test_generator_method_of_another_module_yields_inside_its_region(tmp_path, unset, hazard):
    """``Sizer().fitting(...)`` yields inside its mode: the consumer's loop body runs
    in the region (its training step leaves fake grads). Yielding inside
    ``unset_fake_temporarily()`` turns the mode off for the consumer: clean."""
    block = ("                    with unset_fake_temporarily():\n                        yield n" if unset
             else "                    yield n")
    main = ("import torch\nfrom torch import nn\n\nfrom batches import Sizer\n\nnet = nn.Linear(4, 1)\n"
            "for n in Sizer().fitting([2, 8, 32]):\n    loss = net(torch.randn(n, 4)).sum()\n    loss.backward()\n")
    proj = make(tmp_path / "p", {"batches.py": _BATCHES.format(yield_block=block), "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 8, "FGL001")} if hazard else set())


_SETTINGS = """\
CURRENT = None


def use(net):
    global CURRENT
    CURRENT = net
"""


@pytest.mark.parametrize("read, hazard", [("import settings", True), ("from settings import CURRENT", False)])
def test_from_import_binds_what_the_module_held_when_it_ran(tmp_path, read, hazard):
    """``settings.use(net)`` rebinds a module global after ``probe.py`` was imported:
    read as ``settings.CURRENT`` it is the real net (a hazard), but a ``from
    settings import CURRENT`` run at import time still holds ``None`` and the probe
    builds its own model inside the region (clean)."""
    current = "settings.CURRENT" if hazard else "CURRENT"
    probe = ("import torch\nfrom torch import nn\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
             f"{read}\n\n\ndef probe():\n    with FakeTensorMode(allow_non_fake_inputs=True):\n"
             f"        net = {current} if {current} is not None else nn.Linear(4, 2)\n"
             "        net(torch.randn(3, 4)).sum().backward()\n")
    main = "from torch import nn\n\nimport probe\nimport settings\n\nsettings.use(nn.Linear(4, 2))\nprobe.probe()\n"
    proj = make(tmp_path / "p", {"settings.py": _SETTINGS, "probe.py": probe, "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 7, "FGL001"), ("probe.py", 10, "FGL001")} if hazard else set()), got


_DRYRUN = """\
import contextlib

from torch._subclasses.fake_tensor import FakeTensorMode

_STACK = contextlib.ExitStack()
_STACK.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
"""


@pytest.mark.parametrize("before, hazard", [(True, True), (False, False)])
def test_mode_entered_by_an_imported_modules_body_stays_entered_after_the_import(tmp_path, before, hazard):
    """``dryrun.py`` enters an allow-mode mode at import time and never leaves it:
    every op after ``import dryrun`` runs in the region (the backward then leaves
    fake grads on the real net). Trained before the import: clean."""
    step = "loss = net(torch.randn(3, 4)).sum()\nloss.backward()\n"
    head = "import torch\nfrom torch import nn\n\nnet = nn.Linear(4, 2)\n"
    main = head + ("import dryrun  # noqa: E402,F401\n\n" + step if before else step + "import dryrun  # noqa: E402,F401\n")
    proj = make(tmp_path / "p", {"dryrun.py": _DRYRUN, "main.py": main})
    assert _json_findings(proj, ".")[0] == ({("main.py", 7, "FGL001")} if hazard else set())


@pytest.mark.parametrize("kind, hazard", [("train", True), ("forward", False)])
def test_module_imported_by_a_computed_name_through_a_lazy_package(tmp_path, kind, hazard):
    """``estimators/__init__.py`` loads its submodules lazily from a module
    ``__getattr__`` (PEP 562) and ``main.py`` picks one by a name it computes for
    ``importlib.import_module``: neither names the estimator's function or its mode.
    The ``train`` estimator backpropagates in an allow-mode region; the ``forward``
    one only runs forward there (clean)."""
    head = "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n\ndef estimate(net, x):\n" \
           "    with FakeTensorMode(allow_non_fake_inputs=True):\n        out = net(x)\n"
    lazy = ("import importlib\n\n\ndef __getattr__(name):\n"
            "    return importlib.import_module('.' + name, __name__)\n")
    main = ("import importlib\n\nimport torch\nfrom torch import nn\n\nimport estimators\n\n"
            f"KIND = {kind!r}\nnet = nn.Linear(4, 2)\nx = torch.randn(3, 4)\n"
            "estimators.train.estimate(net, x)\n"
            "importlib.import_module(f'estimators.{KIND}').estimate(net, x)\n")
    if not hazard:
        main = main.replace("estimators.train.estimate(net, x)\n", "estimators.forward.estimate(net, x)\n")
    proj = make(tmp_path / "p", {"estimators/__init__.py": lazy,
                                  "estimators/train.py": head + "        out.sum().backward()\n",
                                  "estimators/forward.py": head + "        return out.shape\n", "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 11, "FGL001"), ("main.py", 12, "FGL001"), ("estimators/train.py", 7, "FGL001")}
                   if hazard else set()), got


@pytest.mark.parametrize("fake, hazard", [(True, True), (False, False)])
def test_flag_returned_by_a_config_function_of_another_module_decides_the_context(tmp_path, fake, hazard):
    """``settings.load()`` returns a dataclass whose ``dry_run`` flag picks an
    allow-mode mode or ``nullcontext()`` in ``steps.py``: a one-line function that
    names nothing of interest still runs (its value decides the branch)."""
    settings = ("from dataclasses import dataclass\n\n\n@dataclass\nclass Settings:\n    dry_run: bool = False\n\n\n"
                f"def load():\n    return Settings(dry_run={fake})\n")
    steps = ("import contextlib\n\nimport torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n\n"
             "def train_step(net, opts):\n"
             "    ctx = FakeTensorMode(allow_non_fake_inputs=True) if opts.dry_run else contextlib.nullcontext()\n"
             "    with ctx:\n        net(torch.randn(3, 4)).sum().backward()\n")
    main = "from torch import nn\n\nfrom settings import load\nfrom steps import train_step\n\ntrain_step(nn.Linear(4, 2), load())\n"
    proj = make(tmp_path / "p", {"settings.py": settings, "steps.py": steps, "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 6, "FGL001"), ("steps.py", 10, "FGL001")} if hazard else set()), got


_ESTIMATORS = """\
ESTIMATORS = {}


def register(name):
    def deco(fn):
        ESTIMATORS[name] = fn
        return fn

    return deco


def get(name):
    return ESTIMATORS.get(name)
"""

_PLUGIN = """\
from torch._subclasses.fake_tensor import FakeTensorMode

import registry


@registry.register("fake")
def fake_estimate(net, x):
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(x).sum().backward()
"""


@pytest.mark.parametrize("plugin_first, hazard", [(True, True), (False, False)])
def test_import_order_decides_what_a_registry_filled_at_import_holds(tmp_path, plugin_first, hazard):
    """``plugin.py`` registers its estimator with ``@registry.register("fake")`` (the
    registry module imported whole) when it is imported; ``main.py`` looks it up by
    key. Imported before the lookup, the estimator runs the real net forward and
    backward in its region; imported after it, the lookup finds nothing (clean)."""
    head = "import torch\nfrom torch import nn\n\nimport registry\n"
    look = "est = registry.get('fake')\n"
    plug = "import plugin  # noqa: E402,F401\n"
    main = head + (plug + look if plugin_first else look + plug) + \
        "if est is not None:\n    est(nn.Linear(4, 2), torch.randn(3, 4))\n"
    proj = make(tmp_path / "p", {"registry.py": _ESTIMATORS, "plugin.py": _PLUGIN, "main.py": main})
    got = _json_findings(proj, ".")[0]
    assert got == ({("main.py", 8, "FGL001"), ("plugin.py", 9, "FGL001")} if hazard else set()), got
