"""``pytest --fakegrad``: real pytest subprocesses on temporary test files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.setdefault("OMP_NUM_THREADS", "1")
    return e


def pytest_run(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=str(tmp_path),
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


TESTS = textwrap.dedent(
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode


    def test_leaks():
        model = torch.nn.Linear(3, 2)
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = model(torch.randn(4, 3))  # leak line
        out.sum().backward()


    def test_forward_only_is_fine():
        model = torch.nn.Linear(3, 2)
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = model(torch.randn(4, 3))
        assert tuple(out.shape) == (4, 2)


    def test_from_tensor_is_fine():
        x = torch.randn(3, requires_grad=True)
        with FakeTensorMode() as m:
            (m.from_tensor(x) * 2).sum().backward()
    """
)


@pytest.mark.slow
@pytest.mark.skipif(__import__("importlib").util.find_spec("torch") is None, reason="torch not installed")
def test_fakegrad_flag_fails_the_leaking_test_naming_the_line(tmp_path):
    (tmp_path / "test_shapes.py").write_text(TESTS)
    leak_line = next(i for i, line in enumerate(TESTS.splitlines(), 1) if "# leak line" in line)
    with_flag = pytest_run(tmp_path, "--fakegrad")
    assert with_flag.returncode == 1, with_flag.stdout
    assert "1 failed, 2 passed" in with_flag.stdout
    assert "FAILED test_shapes.py::test_leaks" in with_flag.stdout
    assert f"test_shapes.py:{leak_line}: real requires-grad Parameter `model.weight` of shape (2, 3)" in with_flag.stdout
    assert f"after backward at test_shapes.py:{leak_line + 1}" in with_flag.stdout
    without = pytest_run(tmp_path)
    assert without.returncode == 0 and "3 passed" in without.stdout, without.stdout


def test_plugin_without_the_flag_does_not_import_torch(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\ndef test_no_torch():\n    assert 'torch' not in sys.modules\n"
    )
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
    helped = pytest_run(tmp_path, "--help")
    assert "--fakegrad" in helped.stdout
