"""The function-level call graph (``analysis/callgraph.py``) behind the project's hot
names (``analysis/project.hot_names``) and the units analysed on their own: a def is
hot only when its *code* opens a region, names a mode, or calls or reads a hot def
(resolved through the module's imports, ``m.f`` by ``f``); annotations, docstrings,
type tests and names bound inside a def do not count; what cannot be resolved
(``globals()``, a module passed on whole) stays hot. Each narrowing has a look-alike
that must stay hot, and the findings of a project are the same either way."""

import ast
import json
import os
import subprocess
import sys

import pytest

from fakegrad_lint.analysis import callgraph, interpreter, project, relevance
from fakegrad_lint.analysis.roots import Project


def words_of(src):
    info, _regs = callgraph.statements(src, frozenset({"clang", "FakeTensorMode", "os"}))
    return {b: w for b, w, _line in info}


def test_annotations_docstrings_and_type_tests_are_not_code():
    got = words_of(
        "def f(m: FakeTensorMode) -> FakeTensorMode:\n"
        "    '''Uses a FakeTensorMode.'''\n"
        "    x: FakeTensorMode = None\n"
        "    return isinstance(m, FakeTensorMode)\n")
    assert "FakeTensorMode" not in got[frozenset({"f"})]
    assert "isinstance" in got[frozenset({"f"})]


def test_the_mode_in_code_is_a_word_wherever_it_stands():
    got = words_of(
        "def f(m):\n    with FakeTensorMode():\n        pass\n"
        "def g(f):\n    return make_fx(f, tracing_mode='fake')\n"
        "def h(t):\n    return t.fake_mode.detect_fake_mode\n")
    assert "FakeTensorMode" in got[frozenset({"f"})]
    assert "tracing_mode" in got[frozenset({"g"})]
    assert "detect_fake_mode" in got[frozenset({"h"})]


def test_names_bound_inside_a_def_are_not_module_bindings_but_globals_are():
    got = words_of("def f():\n    device = 1\n    global STATE\n    STATE = device\n")
    assert set(got) == {frozenset({"f", "STATE"})}


def test_chains_of_imported_names_are_kept_whole_and_dynamic_reads_marked():
    got = words_of("def f():\n    return clang.full(1), os.path.join('a')\n"
                   "def g(name):\n    return globals()[name]\n"
                   "def h(name):\n    return getattr(clang, name)\n")
    assert {"clang.full", "os.path.join"} <= got[frozenset({"f"})]
    assert "clang" not in got[frozenset({"f"})]
    assert callgraph.DYNAMIC in got[frozenset({"g"})]
    assert "clang" in got[frozenset({"h"})]  # the module itself, passed on: hot when it holds a hot name


def test_what_a_region_at_import_binds_is_hot(tmp_path):
    make(tmp_path, {"m.py": "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
                            "with FakeTensorMode(allow_non_fake_inputs=True):\n    LEAKED = torch.ones(2)\n"
                            "COLD = torch.ones(2)\n"})
    hot = project.hot_names_of(str(tmp_path / "m.py"), 0)
    assert "LEAKED" in hot and "COLD" not in hot


def test_a_statement_that_does_not_parse_alone_keeps_its_text_summary(tmp_path):
    assert callgraph.statements("def f(:\n", frozenset()) is None
    assert project._code_statements("except ImportError:\n    x = 1\n", ()) == ()
    make(tmp_path, {"m.py": "from torch._subclasses.fake_tensor import FakeTensorMode\n"
                            "try:\n    import numpy\nexcept ImportError:\n"
                            "    def region():\n        return FakeTensorMode()\n"})
    assert "region" in project.hot_names_of(str(tmp_path / "m.py"), 0)


CLANG = (
    "from torch._subclasses.fake_tensor import FakeTensorMode\n"
    "import torch\n\n"
    "def full(n):\n"
    "    with FakeTensorMode():\n"
    "        return torch.zeros(n)\n\n"
    "def add(a: FakeTensorMode, b):\n"
    "    '''Not under a FakeTensorMode.'''\n"
    "    device = 'cpu'\n"
    "    return a + b\n\n"
    "def uses_device():\n"
    "    return device\n\n"
    "def by_name(name):\n"
    "    return globals()[name]\n"
)
OPS = (
    "import pkg.clang as clang\n"
    "from pkg.clang import add\n\n"
    "def cold(a, b):\n"
    "    return clang.add(a, b) + add(a, b)\n\n"
    "def warm(n):\n"
    "    return clang.full(n)\n\n"
    "def passes_module(name):\n"
    "    return getattr(clang, name)\n"
)


def make(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)


@pytest.fixture
def call_graph_on(monkeypatch):
    """The call-graph refinement of hot names and the gate's recomputation are off by
    default (their cost on large trees, ``project.CALL_GRAPH``); these tests run them."""
    monkeypatch.setattr(project, "CALL_GRAPH", True)
    monkeypatch.setattr(project, "GATE_RECOMPUTE", True)


def test_hot_names_follow_the_code_not_the_words(tmp_path, call_graph_on):
    make(tmp_path, {"pkg/__init__.py": "", "pkg/clang.py": CLANG, "pkg/ops.py": OPS})
    clang = project.hot_names_of(str(tmp_path / "pkg" / "clang.py"), 0)
    assert {"full", "by_name", "FakeTensorMode"} <= clang
    assert not {"add", "uses_device", "device"} & clang  # the text-level summary had all three
    ops = project.hot_names_of(str(tmp_path / "pkg" / "ops.py"), 0)
    assert {"warm", "passes_module", "clang"} <= ops
    assert "cold" not in ops and "add" not in ops


def standalone_units(monkeypatch, path):
    ran = []
    orig = interpreter.Interpreter._run_standalone

    def spy(self, fv, self_val):
        ran.append(fv.node.name)
        return orig(self, fv, self_val)

    monkeypatch.setattr(interpreter.Interpreter, "_run_standalone", spy)
    monkeypatch.setattr(relevance, "SOURCE_GATE", False)  # (which units are relevant; the source gate: test_relevance_sources)
    with open(path) as fh:
        src = fh.read()
    interpreter.Interpreter(ast.parse(src), src, Project.for_file(path), path).run()
    return ran


def test_a_unit_reading_a_cold_attribute_of_a_hot_module_is_not_analysed_alone(tmp_path, monkeypatch, call_graph_on):
    make(tmp_path, {"pkg/__init__.py": "", "pkg/clang.py": CLANG, "train.py": OPS})
    assert standalone_units(monkeypatch, str(tmp_path / "train.py")) == ["warm", "passes_module"]


TRAIN = (
    "import torch\n"
    "import pkg.clang as clang\n\n"
    "def main():\n"
    "    model = torch.nn.Linear(2, 2)\n"
    "    with clang.region():\n"
    "        out = model(torch.ones(2))  # FGL001\n"
    "    out.sum().backward()\n"
)
REGION = (
    "import contextlib\n"
    "from torch._subclasses.fake_tensor import FakeTensorMode\n\n"
    "def helper(m: FakeTensorMode):\n"
    "    return m\n\n"
    "@contextlib.contextmanager\n"
    "def region():\n"
    "    with FakeTensorMode(allow_non_fake_inputs=True) as m:\n"
    "        yield m\n"
)


def test_a_project_finding_through_a_module_attribute_is_kept(tmp_path):
    make(tmp_path, {"pkg/__init__.py": "", "pkg/clang.py": REGION, "train.py": TRAIN})
    proc = subprocess.run([sys.executable, "-m", "fakegrad_lint", "--no-cache", "--output-format", "json", "."],
                          cwd=tmp_path, capture_output=True, text=True)
    got = {(os.path.basename(f["filename"]), f["location"]["row"], f["code"]) for f in json.loads(proc.stdout)}
    assert ("train.py", 7, "FGL001") in got


def test_hot_names_are_the_same_after_the_gate_gives_up(tmp_path, monkeypatch, call_graph_on):
    # the prefilter's gate follows at most MAX_HOT_FILES possible files; when it gives
    # up, the modules it had not reached must not keep "no hot name" for the analysis
    make(tmp_path, {
        "lib/__init__.py": "",
        "lib/modes.py": "from torch._subclasses.fake_tensor import FakeTensorMode\n\n"
                        "def region():\n    return FakeTensorMode(allow_non_fake_inputs=True)\n",
        "lib/helpers.py": "from lib.modes import region\n\ndef run(f):\n    with region():\n        return f()\n",
        "lib/api.py": "from lib.helpers import run\n\ndef fit(m):\n    return run(m)\n",
        "train.py": "from lib.api import fit\n",
    })
    monkeypatch.setattr(project, "MAX_HOT_FILES", 1)
    train = str(tmp_path / "train.py")
    with open(train) as fh:
        project.reaches_region(train, fh.read())
    assert "fit" in project.hot_names_of(str(tmp_path / "lib" / "api.py"), 0)
