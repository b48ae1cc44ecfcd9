"""Process hygiene: children that die with their parent, a parent that can
find (and kill) the grandchildren its children leave behind, and the per-file
alarm (:func:`time_limit`) that stops an analysis that runs too long.

Linux only where it must be (``prctl`` through :mod:`ctypes`); elsewhere the
functions fall back to what POSIX offers (a watchdog thread polling the
parent's pid) or do nothing. Nothing here imports anything heavy.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
WATCHDOG_INTERVAL = 0.5  # seconds between two looks at the parent's pid


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):  # pragma: no cover - no libc
        return False


def die_with_parent(parent_pid: int, signum: int | None = None) -> None:
    """Make this process end when ``parent_pid`` (its parent) ends, even by
    ``kill -9``: the kernel's parent-death signal (Linux), plus a daemon thread
    that exits the process as soon as its parent pid changes (any POSIX, and
    the case where the parent died before the signal was armed)."""
    import signal

    _prctl(PR_SET_PDEATHSIG, int(signum if signum is not None else signal.SIGKILL))
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="fakegrad-parent-watchdog", daemon=True).start()


def become_subreaper() -> bool:
    """Make orphaned descendants of this process reparent to it (Linux), so
    they can be found and killed; True when that worked."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def children_of(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux ``/proc``; empty elsewhere)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    if not os.path.exists(f"/proc/{pid}/task/{tasks[0]}/children") if tasks else True:
        return _children_by_scan(pid)
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                out.extend(int(x) for x in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _children_by_scan(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(name))
    return out


def descendants_of(pid: int, exclude: frozenset[int] | set[int] = frozenset()) -> list[int]:
    """Every process below ``pid``, skipping the subtrees of ``exclude``."""
    seen: list[int] = []
    todo = [c for c in children_of(pid) if c not in exclude]
    while todo:
        child = todo.pop()
        if child in seen:
            continue
        seen.append(child)
        todo.extend(children_of(child))
    return seen


def kill_descendants(pid: int | None = None, *, exclude: frozenset[int] | set[int] = frozenset(), rounds: int = 50) -> int:
    """SIGKILL every descendant of ``pid`` (default: this process) outside the
    subtrees of ``exclude`` (children that existed before), and reap those
    that are our children; repeat until none is left (a dying process's
    children reparent to a subreaper while we work). Returns how many
    processes were found alive and killed."""
    import signal

    me = os.getpid() if pid is None else pid
    killed: set[int] = set()
    for _ in range(rounds):
        found = [p for p in descendants_of(me, exclude) if not _is_zombie(p)]
        for child in found:
            try:
                os.kill(child, signal.SIGKILL)
                killed.add(child)
            except (ProcessLookupError, PermissionError):
                pass
        _reap(killed | set(descendants_of(me, exclude)))
        if not found:
            break
        time.sleep(0.02)
    return len(killed)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _reap(pids) -> None:
    """Collect those of ``pids`` that are our exited children (an orphan
    reparented to a subreaper is ours to wait for); others are left alone."""
    for p in pids:
        try:
            os.waitpid(p, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


# ---------------------------------------------------------------------------
# the per-file alarm


class FileTimeout(BaseException):
    """Raised by the per-file alarm (a BaseException so no ``except Exception``
    inside the analyzer swallows it)."""


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the body after ``seconds`` with :class:`FileTimeout`.

    Uses ``SIGALRM``, so it only works in the main thread on POSIX; elsewhere it
    does nothing. Yields a dict whose ``"fired"`` is True once the alarm went
    off: Python wraps an exception raised in some places (``__set_name__``,
    finalizers ...) in another one, and the caller must still see a timeout.
    """
    usable = (
        seconds
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    state = {"fired": False}
    if not usable:
        yield state
        return

    def on_alarm(signum, frame):
        state["fired"] = True
        raise FileTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    loaded = set(sys.modules)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield state
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if state["fired"]:
            forget_cut_imports(loaded)


def forget_cut_imports(loaded: set) -> None:
    """After an alarm: drop the modules imported since ``loaded`` whose package's
    import the alarm cut off. Python removes the package that raised, but its
    submodules imported so far stay, so the next import of the package runs its
    ``__init__`` again without binding them as its attributes (``module 'libcst' has
    no attribute '_maybe_sentinel'`` for every later file of the worker)."""
    for name in sorted(set(sys.modules) - loaded):
        parts = name.split(".")
        if any(".".join(parts[:i]) not in sys.modules for i in range(1, len(parts))):
            sys.modules.pop(name, None)


def disarm_alarm() -> None:
    """Cancel the per-file alarm: called right before a fixed file is written,
    so a timeout can never cut a write short nor report a file that was
    written as skipped (the work is done; only the write is left)."""
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)
