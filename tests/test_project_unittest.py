"""TestCase classes run as a test runner runs them (unittest discovery, pytest): a test
file with no ``unittest.main()`` still has its ``setUpClass`` / ``setUp`` run before each
``test*`` method, so a real model built in a fixture and backpropagated in a test's
allow-mode region is reported in the test, and a frozen look-alike is not. The labels
are the oracle's: ``run_tests.py`` discovers the tests and runs them with real torch."""

from __future__ import annotations

import pytest

from test_project import assert_markers, make

LAYERS = """
import torch
from torch import nn


class GatedUnit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.value = nn.Linear(d, d)
        self.gate = nn.Linear(d, d)

    def forward(self, x):
        return self.value(x) * torch.sigmoid(self.gate(x))
"""

TEST = """
import unittest

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from mylib import GatedUnit


class GatedUnitMemoryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.unit = GatedUnit(8){freeze}

    def setUp(self):
        self.batch = 64

    def test_backward_fits(self):
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = self.unit(torch.randn(self.batch, 8)){marker}
            out.sum().backward()
        self.assertEqual(tuple(out.shape), (64, 8))
"""

RUN = """
import io
import unittest

suite = unittest.defaultTestLoader.discover("tests", pattern="test_*.py", top_level_dir=".")
result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
print("ran", result.testsRun, "ok", result.wasSuccessful())
"""

CASES = {"hazard": ("", "  # FGL001"), "safe": (".requires_grad_(False)", "")}


def _project(root, kind):
    freeze, marker = CASES[kind]
    return make(root, {"mylib/__init__.py": "from .layers import GatedUnit\n", "mylib/layers.py": LAYERS,
                       "tests/__init__.py": "", "tests/test_memory.py": TEST.format(freeze=freeze, marker=marker),
                       "run_tests.py": RUN, "project.json": '{"entry": "run_tests.py"}'})


@pytest.mark.parametrize("kind", sorted(CASES))
def test_testcase_fixtures_run_before_each_test(tmp_path, kind):
    assert_markers(_project(tmp_path, kind))


@pytest.mark.slow
def test_labels_by_running():
    import tempfile
    from pathlib import Path

    import oracle

    pytest.importorskip("torch")
    with tempfile.TemporaryDirectory() as tmp:
        roots = {kind: _project(Path(tmp) / kind, kind) for kind in CASES}
        results = oracle.run_projects(list(roots.values()), jobs=2)
        got = {kind: results[str(root)].outcome if str(root) in results else results[root].outcome
               for kind, root in roots.items()}
    assert got == {"hazard": "hazard", "safe": "clean"}
