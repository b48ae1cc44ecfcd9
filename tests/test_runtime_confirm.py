"""``fakegrad-lint confirm``: real subprocess runs with real torch.

Each run imports torch in a child process (seconds), so the cases are grouped:
one script shows a confirmed hazard, a missed hazard (a helper in a second
module opens the region) and a confirmed crash together.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = "import torch\nfrom torch import nn\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
RUN_LIMIT = 300  # the test's own guard against a hang; confirm has its own --timeout


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.setdefault("OMP_NUM_THREADS", "1")
    return e


def confirm(*args, cwd=None, via_cli=False):
    head = [sys.executable, "-m", "fakegrad_lint", "confirm"] if via_cli else [sys.executable, "-m", "fakegrad_lint.cli.confirm"]
    return subprocess.run([*head, *args], cwd=cwd, env=env(), capture_output=True, text=True, timeout=RUN_LIMIT)


def write(path, body, header=True):
    path.write_text((HEADER if header else "") + textwrap.dedent(body))
    return str(path)


def line_of(path, needle):
    with open(path) as fh:
        for i, line in enumerate(fh, 1):
            if needle in line:
                return i
    raise AssertionError(needle)


def torch_available():
    import importlib.util

    return importlib.util.find_spec("torch") is not None


needs_torch = pytest.mark.skipif(not torch_available(), reason="torch not installed")


def cuda_available():
    if not torch_available():
        return False
    import torch

    return torch.cuda.is_available()


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
@needs_torch
def test_confirmed_hazard_missed_helper_and_confirmed_crash_json(tmp_path):
    write(
        tmp_path / "helper.py",
        """
        def train_shapes(model, x):
            with FakeTensorMode(allow_non_fake_inputs=True):
                out = model(x)  # train entry
                out.sum().backward()
            return tuple(out.shape)


        def probe(model, x):
            with FakeTensorMode(allow_non_fake_inputs=True):
                out = model(x)  # helper entry
                out.sum().backward()
            return tuple(out.shape)
        """,
    )
    script = write(
        tmp_path / "main.py",
        """
        from helper import probe, train_shapes

        x = torch.randn(4, 3, requires_grad=True)
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = (x * 2).sum()  # hazard
            y.backward()
        print(train_shapes(nn.Linear(3, 2), torch.randn(4, 3)))  # call
        built = eval("nn.Linear(3, 2)")  # a model the static side cannot know
        print(probe(built, torch.randn(4, 3)))
        w = torch.randn(3, 3, requires_grad=True)
        with FakeTensorMode():
            z = w @ torch.randn(3, 5)  # crash
        """,
    )
    helper = str(tmp_path / "helper.py")
    proc = confirm(script, "--output-format", "json", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    objs = json.loads(proc.stdout)
    got = {(o["status"], o["kind"], os.path.basename(o["filename"]), o["line"], o.get("code")) for o in objs}
    assert got == {
        ("confirmed", "hazard", "main.py", line_of(script, "# hazard"), "FGL001"),
        ("confirmed", "hazard", "main.py", line_of(script, "# call"), "FGL001"),  # whole-project analysis
        # ... and at the helper's own line, since helper.py is checked with the script's project
        ("confirmed", "hazard", "helper.py", line_of(helper, "# train entry"), "FGL001"),
        ("missed", "hazard", "helper.py", line_of(helper, "# helper entry"), None),
        ("confirmed", "crash", "main.py", line_of(script, "# crash"), "FGL002"),
    }
    for o in objs:
        assert set(o) >= {"status", "kind", "filename", "line", "code", "message"}
    missed = next(o for o in objs if o["status"] == "missed")
    assert "Parameter" in missed["message"] and missed["sink_line"] == line_of(helper, "# helper entry") + 1
    # the script's AssertionError is reported, not a tool error; its status is mentioned
    assert "exited with status 1" in proc.stderr and "AssertionError" in proc.stderr


@needs_torch
def test_script_exception_is_a_script_error_not_a_tool_error(tmp_path):
    script = write(
        tmp_path / "never.py",
        """
        def never_called():
            x = torch.randn(2, requires_grad=True)
            with FakeTensorMode(allow_non_fake_inputs=True):
                y = (x * 2).sum()  # static only
            y.backward()


        raise ValueError("the script's own bug")
        """,
    )
    proc = confirm(script, cwd=str(tmp_path))
    # the run failed: CI must not read it as all clear (1), but it is the
    # script's failure, not the tool's (2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(f":{line_of(script, '# static only')}:" in ln and "FGL001 script-error (hazard)" in ln for ln in lines), proc.stdout
    assert f"{script}:{line_of(script, 'raise ValueError')}: script-error (error): ValueError: the script's own bug" in lines
    assert lines[-1] == (
        f"0 confirmed, 0 not reproduced, 0 missed, 2 script-error; {script} failed with "
        "ValueError: the script's own bug (exit status 1)"
    )
    assert "ValueError: the script's own bug" in proc.stderr


@pytest.mark.slow
@needs_torch
def test_module_mode_with_arguments_forward_only_is_clean(tmp_path):
    pkg = tmp_path / "shapes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    write(
        pkg / "infer.py",
        """
        import sys

        if sys.argv[1:] != ["--batch", "4"]:
            sys.exit(5)
        model = nn.Linear(3, 2)
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = model(torch.randn(4, 3))  # forward only: safe
        print(tuple(out.shape))
        """,
    )
    proc = confirm("-m", "shapes.infer", "--", "--batch", "4", cwd=str(tmp_path), via_cli=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["0 confirmed, 0 not reproduced, 0 missed; -m shapes.infer exited with status 0"]
    assert "(4, 2)" in proc.stderr  # the script's own output goes to stderr, the report to stdout


@pytest.mark.slow
@needs_torch
def test_pytest_mode_confirms_a_leak_in_a_test_file(tmp_path):
    test_file = write(
        tmp_path / "test_model.py",
        """
        def test_shapes():
            model = nn.Linear(3, 2)
            with FakeTensorMode(allow_non_fake_inputs=True):
                out = model(torch.randn(4, 3))  # leak
                out.sum().backward()
            assert tuple(out.shape) == (4, 2)
        """,
    )
    proc = confirm("--pytest", "test_model.py", "--output-format", "json", "--", "-q", "-p", "no:cacheprovider", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    objs = json.loads(proc.stdout)
    assert [(o["status"], o["kind"], o["filename"], o["line"], o["code"]) for o in objs] == [
        ("confirmed", "hazard", "test_model.py", line_of(test_file, "# leak"), "FGL001")
    ]
    assert "pytest exited with status 0" in proc.stderr  # the test itself passes: the leak is silent


@pytest.mark.slow
@needs_torch
def test_timeout_kills_the_process_group_and_is_a_tool_error(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    script = write(
        tmp_path / "hang.py",
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(600)
        """,
        header=False,
    )
    proc = confirm(script, "--timeout", "15", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert f"fakegrad-lint confirm: error: {script} timed out after 15 s (process group killed)" in proc.stderr.splitlines()
    if pidfile.exists():  # the script got as far as starting its own child: it must be gone too
        pid = int(pidfile.read_text())
        try:
            os.kill(pid, 0)
            alive = open(f"/proc/{pid}/stat").read().split()[2] != "Z" if os.path.exists(f"/proc/{pid}/stat") else True
        except ProcessLookupError:
            alive = False
        if alive:
            os.kill(pid, signal.SIGKILL)
        assert not alive


@needs_torch
@pytest.mark.skipif(cuda_available(), reason="checks the message on a machine without CUDA")
def test_device_cuda_without_cuda_is_a_one_line_tool_error(tmp_path):
    script = write(tmp_path / "s.py", "x = 1\n")
    proc = confirm(script, "--device", "cuda", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip() == "fakegrad-lint confirm: error: --device cuda: CUDA is not available on this machine"


@needs_torch
@pytest.mark.skipif(not cuda_available(), reason="CUDA is not available")
def test_device_cuda_confirms_fixture_hazards(tmp_path):
    for name in ("hazard_linear_module.py", "hazard_strict_factory.py"):
        path = os.path.join(ROOT, "fixtures", name)
        if not os.path.exists(path):
            pytest.skip("fixture corpus not present")
        proc = confirm(path, "--device", "cuda", "--output-format", "json", cwd=ROOT)
        assert proc.returncode == 1, proc.stderr
        objs = json.loads(proc.stdout)
        assert objs and all(o["status"] == "confirmed" for o in objs), objs


def test_script_not_found_is_a_tool_error(tmp_path, capsys):
    from fakegrad_lint.cli.confirm import main

    missing = str(tmp_path / "nope.py")
    assert main([missing]) == 2
    assert capsys.readouterr().err.strip() == f"{missing}: error: no such file"
    assert main(["-m", "no_such_module_fakegrad_xyz"]) == 2
    assert "no module named 'no_such_module_fakegrad_xyz'" in capsys.readouterr().err


BLOCK_TORCH = textwrap.dedent(
    """
    import sys
    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch'", name=name)
            return None
    sys.meta_path.insert(0, Blocker())
    """
)


def test_torch_missing_message_names_the_runtime_extra(tmp_path):
    script = write(tmp_path / "s.py", "print('hi')\n", header=False)
    code = BLOCK_TORCH + f"from fakegrad_lint.cli.confirm import main\nsys.exit(main([{script!r}]))\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=RUN_LIMIT)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "fakegrad-lint confirm: error: torch is not installed; the runtime checker needs it: pip install 'torch>=2.4'"
    ]
    # the library side says the same thing when torch cannot be imported
    code = BLOCK_TORCH + "try:\n    from fakegrad_lint.runtime import watch\n    watch()\nexcept ImportError as e:\n    print(e)\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=RUN_LIMIT)
    assert "pip install 'torch>=2.4'" in proc.stdout


def test_runner_reports_missing_torch_as_an_error_record(tmp_path):
    events = tmp_path / "events.jsonl"
    script = write(tmp_path / "s.py", "print('hi')\n", header=False)
    code = BLOCK_TORCH + (
        "from fakegrad_lint.runtime.runner import main\n"
        f"sys.exit(main(['--events', {str(events)!r}, '--script', {script!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=RUN_LIMIT)
    assert proc.returncode == 3
    (rec,) = [json.loads(line) for line in events.read_text().splitlines()]
    assert rec["type"] == "error" and "pip install 'torch>=2.4'" in rec["reason"]


def test_confirm_cli_does_not_import_torch():
    code = "import sys, fakegrad_lint.cli.confirm, fakegrad_lint.runtime, fakegrad_lint.runtime.pytest_plugin; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=RUN_LIMIT)
    assert proc.stdout.strip() == "False", proc.stderr
