"""The hostile-script suite for ``confirm`` (issue 15): scripts that start
their own sessions, leave processes behind, crash, kill themselves, close the
tool's descriptors or delete its files. Whatever the script does, every
process it started is gone when ``confirm`` returns, and a run that could not
report never exits 0.

Each run imports torch in the child (seconds), so the suite is in the ``slow``
tier; ``test_faults.py`` keeps two fast cases (a segfault, a module lookup
that would run user code) in the default run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_faults import _alive as alive

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process tracking reads /proc"),
]

HAZARD = textwrap.dedent(
    """\
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(2, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = (x * 2).sum()
        y.backward()
    """
)


def confirm(tmp: Path, script: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    (tmp / "s.py").write_text(script)
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "confirm", "s.py", *args],
        cwd=tmp, capture_output=True, text=True, timeout=timeout,
    )


def pids(tmp: Path) -> list[int]:
    return [int(x) for x in (tmp / "pids").read_text().split()] if (tmp / "pids").exists() else []


def gone(pid_list: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pid_list) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(p) for p in pid_list)


SPAWN = textwrap.dedent(
    """\
    import os, subprocess
    def note(pid):
        with open("pids", "a") as fh:
            fh.write(f"{pid}\\n")
    """
)


def test_children_in_their_own_session_die_on_timeout(tmp_path):
    script = SPAWN + textwrap.dedent(
        """\
        p = subprocess.Popen(["sleep", "300"], start_new_session=True)
        note(p.pid)
        q = subprocess.Popen(["sh", "-c", "setsid sleep 301 & echo $! >> pids; wait"])
        note(q.pid)
        import time
        time.sleep(300)
        """
    )
    proc = confirm(tmp_path, script, "--timeout", "15")
    assert proc.returncode == 2
    assert "timed out after 15 s" in proc.stderr
    found = pids(tmp_path)
    assert len(found) == 3 and gone(found)


def test_processes_left_running_by_a_script_that_exits_are_killed(tmp_path):
    script = SPAWN + textwrap.dedent(
        """\
        note(subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
        subprocess.run(["sh", "-c", "sleep 302 & echo $! >> pids"])
        if os.fork() == 0:
            import time
            time.sleep(300)
            os._exit(0)
        """
    )
    proc = confirm(tmp_path, script, "--timeout", "60")
    assert proc.returncode == 0, proc.stderr
    found = pids(tmp_path)
    assert len(found) == 2 and gone(found)
    assert "killed 3 processes the run left behind" in proc.stderr


def test_a_deleted_temporary_folder_changes_nothing(tmp_path):
    script = "import glob, shutil, tempfile, os\n" + (
        "for d in glob.glob(os.path.join(tempfile.gettempdir(), 'fakegrad-*')):\n"
        "    shutil.rmtree(d, ignore_errors=True)\n"
    ) + HAZARD
    proc = confirm(tmp_path, script, "--timeout", "120")
    assert proc.returncode == 1, proc.stderr
    assert "FGL001 confirmed (hazard)" in proc.stdout


@pytest.mark.parametrize(
    "ending, status",
    [
        ("os.closerange(3, 65536)", "process exit status 0, and the final record is missing"),
        ("os._exit(0)", "process exit status 0, and the final record is missing"),
        ("os.kill(os.getpid(), 9)", "killed by SIGKILL, exit status -9"),
        ("import ctypes; ctypes.string_at(0)", "killed by SIGSEGV, exit status -11"),
    ],
)
def test_a_run_that_could_not_report_never_passes(tmp_path, ending, status):
    proc = confirm(tmp_path, HAZARD + "import os\n" + ending + "\n", "--timeout", "120")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"s.py ended without reporting ({status}); the results are incomplete" in proc.stderr
    # what the run did report before it ended is still shown
    assert "FGL001 confirmed (hazard)" in proc.stdout


def test_a_reused_descriptor_never_receives_records(tmp_path):
    script = textwrap.dedent(
        """\
        import os
        os.closerange(3, 65536)
        files = [open(f"f{i}.txt", "w") for i in range(300)]
        """
    ) + HAZARD
    proc = confirm(tmp_path, script, "--timeout", "120")
    assert proc.returncode == 2
    leaked = [p.name for p in tmp_path.glob("f*.txt") if p.stat().st_size]
    assert leaked == []


def test_the_run_dies_with_confirm(tmp_path):
    (tmp_path / "s.py").write_text("import os, time\nopen('pids', 'w').write(str(os.getpid()))\ntime.sleep(300)\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakegrad_lint", "confirm", "s.py", "--timeout", "300"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not pids(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    (child,) = pids(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert gone([child], within=10)
