"""``fakegrad-lint confirm``'s child processes: finding ``-m MODULE``'s file, and
running the code under the runtime watcher while its records are collected.

User code (the script, the module, the tests, and the package ``__init__``
that looking up ``-m pkg.mod`` needs) runs only in child processes, under the
timeout. The records come through an inherited pipe, never a file the script
could delete. Every process the run started is killed when it ends (its
process group, and through the child subreaper on Linux, every descendant,
also in another session or left running by a script that exited).

This module never imports torch (the child process does).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

DEFAULT_TIMEOUT = 120.0


class _ToolError(Exception):
    pass


def _resolve_module(name: str, timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """The file ``python -m name`` would run. Looked up on disk without
    importing anything; when that does not find it (a module inside a
    package whose ``__init__`` extends ``__path__``, a zip ...), the lookup
    runs in a child process under ``timeout``: finding ``pkg.mod`` imports
    ``pkg``, which is user code and never runs in this process."""
    found = _module_on_disk(name)
    if found is not None:
        return found or None
    return _module_in_child(name, timeout)


def _module_on_disk(name: str) -> str | None:
    """The file, ``""`` when the module is known not to be runnable (a package
    without ``__main__.py``), ``None`` when the disk alone cannot tell."""
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for base in [os.getcwd(), *[p for p in sys.path if p]]:
        cur = base
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            pkg = os.path.join(cur, part)
            if os.path.isdir(pkg) and (os.path.isfile(os.path.join(pkg, "__init__.py")) or not last):
                cur = pkg
                if last:
                    main = os.path.join(pkg, "__main__.py")
                    return main if os.path.isfile(main) else ""
                continue
            mod = pkg + ".py"
            if last and os.path.isfile(mod):
                return mod
            break
    return None


_FIND_SPEC = (
    "import sys\n"
    "if sys.path and sys.path[0] == '': sys.path.pop(0)\n"
    "import importlib.util, os\n"
    "sys.path.insert(0, os.getcwd())\n"
    "try:\n"
    "    spec = importlib.util.find_spec(sys.argv[1])\n"
    "except BaseException:\n"
    "    spec = None\n"
    "origin = spec.origin if spec is not None and spec.origin else ''\n"
    "if spec is not None and spec.submodule_search_locations and origin:\n"
    "    origin = os.path.join(os.path.dirname(origin), '__main__.py')\n"
    "sys.stdout.flush()\n"
    "os.write(int(sys.argv[2]), origin.encode('utf-8', 'surrogateescape'))\n"
)


def _module_in_child(name: str, timeout: float) -> str | None:
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _FIND_SPEC, name, str(w)],
            stdin=subprocess.DEVNULL,
            stdout=_child_output(),
            stderr=_child_output(),
            pass_fds=(w,),
            start_new_session=True,
        )
    except OSError:
        os.close(r)
        os.close(w)
        return None
    os.close(w)
    data, timed_out, _ = _collect(proc, r, timeout)
    os.close(r)
    if timed_out:
        raise _ToolError(f"{name}: error: looking up the module timed out after {timeout:g} s (its package's __init__ runs)")
    origin = data.decode("utf-8", "surrogateescape").strip()
    return origin if origin and os.path.isfile(origin) else None


def _child_output():
    try:
        sys.stderr.flush()
        fd = sys.stderr.fileno()
        os.fstat(fd)
        return fd
    except (AttributeError, OSError, ValueError):
        return subprocess.PIPE


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _drain(fd: int, buf: bytearray) -> bool:
    """Read what ``fd`` (non-blocking) holds now; True at end of file."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if not chunk:
            return True
        buf += chunk


def _collect(proc: subprocess.Popen, fd: int, timeout: float) -> tuple[bytes, bool, int]:
    """Wait for ``proc`` (at most ``timeout`` seconds, then its process group
    is killed) while reading the report pipe ``fd``. The pipe is never waited
    on past the child's end: a grandchild that kept it open cannot hang us.
    Returns (what was read, timed out, exit status)."""
    import select
    import time

    os.set_blocking(fd, False)
    buf = bytearray()
    eof = False
    deadline = time.monotonic() + timeout
    timed_out = False
    while proc.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        if eof:
            try:
                proc.wait(timeout=min(left, 0.5))
            except subprocess.TimeoutExpired:
                pass
            continue
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if ready:
            eof = _drain(fd, buf)
    if timed_out:
        _kill_group(proc)
    try:
        proc.wait()
    finally:
        if proc.poll() is None:  # pragma: no cover - interrupted
            _kill_group(proc)
            proc.wait()
    if not eof:
        _drain(fd, buf)
    return bytes(buf), timed_out, proc.returncode


def _child_command(target_args: list[str], extra: list[str], device: str, fd: int) -> list[str]:
    # ``-c`` and not ``-m``: ``python -m`` would put the current folder first on
    # sys.path, and an ``argparse.py`` there would run inside the runner
    # before the user's code is even started.
    boot = (
        "import sys\n"
        "if sys.path and sys.path[0] == '': sys.path.pop(0)\n"
        "import runpy\n"
        "runpy.run_module('fakegrad_lint.runtime.runner', run_name='__main__', alter_sys=True)\n"
    )
    cmd = [sys.executable, "-c", boot, "--events-fd", str(fd), "--device", device, *target_args]
    if extra:
        cmd += ["--", *extra]
    return cmd


def _run_child(target_args: list[str], extra: list[str], device: str, timeout: float, project: str | None = None):
    """Run the runner; returns (records, exit status, timed out, processes
    left behind and killed).

    The records come through a pipe the child inherits (a temporary file
    could be deleted by the script). Every process the run started is
    killed when it ends, whichever way: the process group on timeout, and,
    through the subreaper (Linux), every descendant, also those that started
    their own session or were left running by a script that exited."""
    from fakegrad_lint.engine import subprocs as _proc

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["FAKEGRAD_RUNNER_ROOT"] = root
    env["FAKEGRAD_CONFIRM_PID"] = str(os.getpid())
    if project:
        env["FAKEGRAD_PROJECT_ROOT"] = project  # the runner lists the project files the run loaded
    _proc.become_subreaper()
    before = set(_proc.children_of(os.getpid()))
    out = _child_output()
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(
            _child_command(target_args, extra, device, w),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=env,
            start_new_session=True,
            pass_fds=(w,),
        )
    except OSError:
        os.close(r)
        os.close(w)
        raise
    os.close(w)
    try:
        if out is subprocess.PIPE:  # pragma: no cover - no usable stderr
            import threading

            def relay(stream):
                for chunk in iter(lambda: stream.read1(65536), b""):
                    sys.stderr.write(chunk.decode("utf-8", "replace"))

            for stream in (proc.stdout, proc.stderr):
                threading.Thread(target=relay, args=(stream,), daemon=True).start()
        data, timed_out, returncode = _collect(proc, r, timeout)
    finally:
        os.close(r)
    left = _proc.kill_descendants(exclude=before)
    return _parse_records(data), returncode, timed_out, left


def _parse_records(data: bytes) -> list[dict]:
    records = []
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a kill
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records
