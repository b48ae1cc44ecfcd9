"""The child process of ``fakegrad-lint confirm``: run user code under the watcher.

    python -m fakegrad_lint.runtime.runner (--events FILE | --events-fd FD) [--device cpu|cuda]
        (--script PATH | --module NAME | --pytest) [-- ARGS...]

Every record is appended to FILE (or written to the inherited pipe FD, as
``confirm`` does) as one JSON line the moment it happens, so a run killed on
timeout still leaves what it saw. The last line is
``{"type": "exit", "status": N}`` when the code finished (exception or not).
A ``{"type": "error", "reason": ...}`` line means the run could not start
(torch missing, CUDA unavailable); the process then exits with status 3.
"""

from __future__ import annotations

import sys

# ``confirm`` starts this file with the current folder taken off sys.path
# (see ``confirm_cli._child_command``), so nothing below can be shadowed by a
# file of the user's tree; the user's code gets the path ``python`` would give it.
import argparse
import json
import os
import runpy
import stat
import traceback

ERROR_STATUS = 3


REPORT_FD_MIN = 200  # the report pipe is moved up here, out of the way of the user's code


def _writer(path: str):
    fh = open(path, "a", encoding="utf-8")

    def write(rec: dict) -> None:
        fh.write(json.dumps(rec, default=str) + "\n")
        fh.flush()

    return write


def _fd_writer(fd: int):
    """Records to the report pipe inherited from ``confirm``: moved to a high,
    close-on-exec descriptor (so the user's subprocesses do not hold it), and
    checked before every write, so a script that closes it and opens a file
    that gets the same number never receives records. A write that cannot be
    made is dropped: ``confirm`` sees the final record missing and says the
    run could not report."""
    try:
        import fcntl

        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, REPORT_FD_MIN)
        os.close(fd)
    except (ImportError, AttributeError, OSError):  # pragma: no cover - not POSIX
        high = fd
    try:
        ident = os.fstat(high)
        ident = (ident.st_dev, ident.st_ino)
    except OSError:
        ident = None

    def write(rec: dict) -> None:
        data = (json.dumps(rec, default=str) + "\n").encode("utf-8")
        try:
            st = os.fstat(high)
            if ident is None or (st.st_dev, st.st_ino) != ident or not stat.S_ISFIFO(st.st_mode):
                return
            view = memoryview(data)
            while view:
                view = view[os.write(high, view):]
        except OSError:
            return

    return write


def _die_with_confirm() -> None:
    parent = os.environ.pop("FAKEGRAD_CONFIRM_PID", None)
    if not parent or not parent.isdigit():
        return
    from fakegrad_lint.engine.subprocs import PR_SET_PDEATHSIG, _prctl

    import signal

    _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != int(parent):
        os._exit(ERROR_STATUS)


def _fallback_crash(exc: BaseException, records: list[dict], write) -> None:
    """The fake-mode AssertionError escaped without the watcher seeing the op: locate it from the traceback."""
    if any(r.get("type") == "crash" for r in records):
        return
    from fakegrad_lint.runtime.watcher import _is_internal

    tb = exc.__traceback__
    frames = []
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not _is_internal(fn):
            frames.append((os.path.abspath(fn), tb.tb_lineno))
        tb = tb.tb_next
    frames.reverse()
    if not frames:
        return
    write(
        {
            "type": "crash",
            "kind": "crash",
            "filename": frames[0][0],
            "line": frames[0][1],
            "stack": [list(f) for f in frames],
            "op": "?",
            "mode": "FakeTensorMode()",
            "requires_grad": None,
            "message": str(exc).splitlines()[0],
        }
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    parser = argparse.ArgumentParser(prog="fakegrad_lint.runtime.runner")
    events = parser.add_mutually_exclusive_group(required=True)
    events.add_argument("--events", help="append the records to this file")
    events.add_argument("--events-fd", type=int, help="write the records to this inherited pipe")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--script")
    target.add_argument("--module")
    target.add_argument("--pytest", action="store_true")
    ns = parser.parse_args(argv)

    root = os.environ.pop("FAKEGRAD_RUNNER_ROOT", None)
    if root and root in sys.path:
        sys.path.remove(root)

    _die_with_confirm()
    write = _fd_writer(ns.events_fd) if ns.events_fd is not None else _writer(ns.events)
    try:
        from fakegrad_lint.runtime import torch_compat as tc
    except ImportError as exc:
        write({"type": "error", "reason": str(exc)})
        return ERROR_STATUS
    if ns.device == "cuda":
        if not tc.cuda_available():
            write({"type": "error", "reason": "--device cuda: CUDA is not available on this machine"})
            return ERROR_STATUS
        tc.set_default_device("cuda")

    from fakegrad_lint.runtime.watcher import Watcher

    records: list[dict] = []

    def on_record(rec: dict) -> None:
        records.append(rec)
        write(rec)

    status = 0
    failure: dict = {}
    with Watcher(on_record=on_record):
        try:
            if ns.script is not None:
                script = os.path.abspath(ns.script)
                sys.argv = [ns.script, *extra]
                sys.path.insert(0, os.path.dirname(script))
                runpy.run_path(script, run_name="__main__")
            elif ns.module is not None:
                sys.argv = [ns.module, *extra]
                sys.path.insert(0, os.getcwd())
                runpy.run_module(ns.module, run_name="__main__", alter_sys=True)
            else:
                import pytest

                sys.path.insert(0, os.getcwd())
                status = int(pytest.main(extra))
                if status in PYTEST_FAILED_TO_RUN:
                    failure = {"exception": f"pytest could not run the tests ({PYTEST_FAILED_TO_RUN[status]}, exit status {status})"}
        except SystemExit as exc:
            code = exc.code
            if code is None:
                status = 0
            elif isinstance(code, int):
                status = code
            else:
                print(code, file=sys.stderr)
                status = 1
        except BaseException as exc:  # the script's own failure: report it, do not die with it
            fake_crash = isinstance(exc, AssertionError) and tc.FAKE_ASSERTION_TEXT in str(exc)
            if fake_crash:
                _fallback_crash(exc, records, write)
            else:
                failure = _failure(exc)
            # as python prints it, without the runner's own frame
            traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
            status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    write({"type": "exit", "status": status, **failure, "files": _loaded_files(ns.script)})
    return status


# pytest exit statuses that mean the tests did not run (collection or usage errors)
PYTEST_FAILED_TO_RUN = {2: "interrupted, e.g. a collection error", 3: "internal error", 4: "usage error"}


def _failure(exc: BaseException) -> dict:
    """The script's own uncaught exception: its first line and the innermost user frame."""
    from fakegrad_lint.runtime.watcher import _is_internal

    text = str(exc).splitlines()[0] if str(exc) else ""
    out: dict = {"exception": f"{type(exc).__name__}: {text}" if text else type(exc).__name__}
    tb = exc.__traceback__
    where = None
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not _is_internal(fn) and not os.path.abspath(fn).startswith(_RUNNER_FILES):
            where = (os.path.abspath(fn), tb.tb_lineno)
        tb = tb.tb_next
    if where is not None:
        out["exception_filename"], out["exception_line"] = where
    return out


_RUNNER_FILES = (os.path.abspath(__file__),)


def _loaded_files(script: str | None) -> list[str]:
    """The project's source files this run executed (modules under
    ``FAKEGRAD_PROJECT_ROOT`` plus the script), for ``confirm`` to report only
    the findings of code that ran."""
    root = os.environ.get("FAKEGRAD_PROJECT_ROOT")
    files = set()
    if script:
        files.add(os.path.abspath(script))
    if root:
        prefix = os.path.join(os.path.abspath(root), "")
        try:
            for mod in list(sys.modules.values()):
                fn = getattr(mod, "__file__", None)
                if isinstance(fn, str) and os.path.abspath(fn).startswith(prefix):
                    files.add(os.path.abspath(fn))
        except Exception:  # a script that left odd objects in sys.modules
            pass
    return sorted(files)


if __name__ == "__main__":
    raise SystemExit(main())
