"""``fakegrad-lint confirm``: run the static checks, then the code under the runtime watcher.

    fakegrad-lint confirm SCRIPT [-- ARGS...]
    fakegrad-lint confirm -m MODULE [-- ARGS...]
    fakegrad-lint confirm --pytest PATHS... [-- PYTEST-ARGS...]

Each static finding is printed as ``confirmed`` (a runtime event of the
matching kind happened at its line) or ``not-reproduced``; each runtime event
that no finding covers is ``missed``. Each rule names the event that confirms
it (``Rule.runtime_kind``): FGL001/FGL003 match ``hazard`` events,
FGL002 matches ``crash`` events (FGL004, opt-in, matches raw forward-only
entries). The code runs in a subprocess with a timeout; its process group is
killed when the time is up.

Exit status: 1 when a hazard or crash was confirmed or missed, 0 otherwise,
2 for tool errors (target not found, timeout, torch or CUDA missing) and for a
run that could not report (it crashed, was killed, called ``os._exit`` or
closed the report pipe before the final record).

User code (the script, the module, the tests, and the package ``__init__``
that looking up ``-m pkg.mod`` needs) runs only in child processes, under
the timeout. The records come through an inherited pipe, never a file the
script could delete. Every process the run started is killed when it ends
(its process group, and through the child subreaper on Linux, every
descendant, also in another session or left running by a script that exited).

This module never imports torch (the child process does).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys

from fakegrad_lint.runtime import RUNTIME_EXTRA_HINT  # does not import torch
from fakegrad_lint.runtime.messages import add_tensor

DEFAULT_TIMEOUT = 120.0


class _ToolError(Exception):
    pass


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fakegrad-lint confirm",
        description="Check code statically, run it under the runtime watcher, and confirm each finding.",
    )
    p.add_argument("script", nargs="?", help="the Python script to run")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module (like python -m)")
    p.add_argument("--pytest", nargs="+", metavar="PATH", help="run pytest on these test files or folders")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help=f"seconds before the run is killed (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="default torch device for the run")
    p.add_argument("--output-format", choices=("text", "json"), default="text")
    p.add_argument("--select", help="comma-separated rule codes (default: the default rules)")
    return p


# -- static side ----------------------------------------------------------------


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


def _test_files(paths: list[str]) -> list[str]:
    out = []
    for path in paths:
        path = path.split("::", 1)[0]
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
                for fn in sorted(filenames):
                    if fn.endswith(".py") and (fn.startswith("test_") or fn.endswith("_test.py") or fn == "conftest.py"):
                        out.append(os.path.join(dirpath, fn))
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise _ToolError(f"{path}: error: no such file or directory")
    return out


PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root(path: str) -> str:
    """The project a script belongs to: the nearest folder above it with a
    ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``; else its own folder."""
    start = os.path.dirname(os.path.abspath(path))
    cur = start
    while True:
        if any(os.path.exists(os.path.join(cur, m)) for m in PROJECT_MARKERS):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return start
        cur = parent


def _project_findings(root: str, targets: list[str], select: frozenset[str] | None) -> tuple[list, dict]:
    """Check the project under ``root`` the way ``fakegrad-lint check ROOT``
    would (discovery, each file's nearest configuration, ``# noqa``), plus the
    targets. Returns (findings, {real path: one-line error})."""
    from fakegrad_lint.config import discover
    from fakegrad_lint.config.settings import Overrides, Settings
    from fakegrad_lint.engine import process as pipeline

    from fakegrad_lint.analysis.project import set_run_roots

    set_run_roots([root])
    settings = Settings.load([targets[0] if targets else root], Overrides(select=tuple(sorted(select)) if select else None))
    found = discover.discover([root], settings)
    seen = {_real(f) for f in found.files}
    paths = found.files + [t for t in targets if _real(t) not in seen]
    result = pipeline.run(paths, settings.codes_for, pipeline.Options(mode="check"))
    errors = {_real(e.filename): str(e) for e in result.all_errors}
    return result.findings, errors


# -- running --------------------------------------------------------------------


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


def _read_records(path: str) -> list[dict]:
    try:
        with open(path, "rb") as fh:
            return _parse_records(fh.read())
    except OSError:
        return []


# -- matching and output ----------------------------------------------------------


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _user_events(records: list[dict]) -> list[dict]:
    seen: dict = {}
    for rec in records:
        t = rec.get("type")
        if t == "hazard" or (t == "crash" and rec.get("requires_grad", True) is not False):
            key = (t, _real(rec["filename"]), rec["line"])
            if key in seen:
                seen[key]["count"] += 1
            else:
                seen[key] = dict(rec, count=1)
            add_tensor(seen[key], rec)
    return list(seen.values())


def _frames(rec: dict) -> set:
    frames = {(_real(rec["filename"]), rec["line"])}
    for fn, line in rec.get("stack") or ():
        frames.add((_real(fn), line))
    return frames


def _event_message(rec: dict) -> str:
    from fakegrad_lint.runtime.messages import event_message

    return event_message(rec)


def _kind_of_code() -> dict[str, str]:
    """The runtime event that confirms each rule's findings (``Rule.runtime_kind``)."""
    from fakegrad_lint.rules import RULES

    return {r.code: r.runtime_kind for r in RULES if r.runtime_kind is not None}


def _match(findings, records):
    kind_of_code = _kind_of_code()
    events = _user_events(records)
    entries = [r for r in records if r.get("type") == "entry"]
    items = []
    covered = set()
    for f in findings:
        kind = kind_of_code.get(f.code, "hazard")
        key = (_real(f.filename), f.location.row)
        pool = entries if kind == "entry" else [e for e in events if e["type"] == kind]
        hit = None
        for i, ev in enumerate(pool):
            if key in _frames(ev):
                hit = ev
                if kind != "entry":
                    covered.add(id(ev))
        items.append((f, kind, hit))
    # an event is covered when any finding of its kind sits on one of its user frames
    for ev in events:
        if id(ev) in covered:
            continue
        frames = _frames(ev)
        for f in findings:
            if kind_of_code.get(f.code) == ev["type"] and (_real(f.filename), f.location.row) in frames:
                covered.add(id(ev))
                break
    missed = [ev for ev in events if id(ev) not in covered]
    return items, missed


def _display(path: str, spellings: dict) -> str:
    from fakegrad_lint.findings import display_path

    real = _real(path)
    if real in spellings:
        return display_path(spellings[real])
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return display_path(path)
    return display_path(path if rel.startswith(os.pardir) else rel)


def _report(items, missed, spellings, fmt: str, failure: dict | None = None) -> list[dict]:
    out = []
    for f, kind, hit in items:
        obj = {
            "status": "confirmed" if hit is not None else "not-reproduced",
            "kind": "hazard" if kind == "entry" else kind,
            "filename": _display(f.filename, spellings),
            "line": f.location.row,
            "column": f.location.column + 1,
            "code": f.code,
            "message": f.message,
        }
        if hit is not None:
            obj["runtime"] = _event_message(hit) if kind != "entry" else f"entered `{hit.get('op')}` under {hit.get('mode')}"
            if (_real(hit["filename"]), hit["line"]) != (_real(f.filename), f.location.row):
                # the op ran deeper (a module's forward): the finding's frame
                # is where the real value was handed in; keep the inner frame
                obj["op_filename"] = _display(hit["filename"], spellings)
                obj["op_line"] = hit["line"]
                obj["runtime"] += f" (the op ran at {obj['op_filename']}:{hit['line']})"
            if hit.get("sink_line") is not None:
                obj["sink_filename"] = _display(hit["sink_filename"], spellings)
                obj["sink_line"] = hit["sink_line"]
        elif failure is not None:
            obj["status"] = "script-error"
            obj["runtime"] = f"not confirmed: the run failed first ({failure['exception']})"
        out.append(obj)
    if failure is not None:
        obj = {
            "status": "script-error",
            "kind": "error",
            "filename": _display(failure.get("exception_filename") or "-", spellings),
            "line": failure.get("exception_line") or 0,
            "code": None,
            "message": failure["exception"],
        }
        out.append(obj)
    for ev in missed:
        obj = {
            "status": "missed",
            "kind": ev["type"],
            "filename": _display(ev["filename"], spellings),
            "line": ev["line"],
            "code": None,
            "message": _event_message(ev),
        }
        if ev.get("sink_line") is not None:
            obj["sink_filename"] = _display(ev["sink_filename"], spellings)
            obj["sink_line"] = ev["sink_line"]
        out.append(obj)
    out.sort(key=lambda o: (o["filename"], o["line"], o.get("code") or "~"))
    return out


def _print_text(objs: list[dict], summary: str) -> None:
    for o in objs:
        col = f":{o['column']}" if o.get("column") else ""
        code = f"{o['code']} " if o.get("code") else ""
        line = f"{o['filename']}:{o['line']}{col}: {code}{o['status']} ({o['kind']}): {o['message']}"
        if o["status"] in ("confirmed", "script-error") and o.get("runtime"):
            line += f" [runtime: {o['runtime']}]"
        print(line)
    print(summary)


def _how_it_ended(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}, exit status {returncode}"
    return f"process exit status {returncode}, and the final record is missing"


# -- entry point ----------------------------------------------------------------


def main(argv: list[str]) -> int:
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    parser = _build_parser()
    ns = parser.parse_args(argv)
    chosen = [x for x in (ns.script, ns.module, ns.pytest) if x]
    if len(chosen) != 1:
        parser.error("give exactly one of SCRIPT, -m MODULE or --pytest PATHS")
    if ns.timeout <= 0:
        parser.error("--timeout must be positive")

    from fakegrad_lint.rules import ALL_CODES, DEFAULT_CODES

    codes = DEFAULT_CODES
    if ns.select:
        wanted = {c.strip().upper() for c in ns.select.split(",") if c.strip()}
        unknown = sorted(wanted - set(ALL_CODES))
        if unknown:
            _err(f"fakegrad-lint confirm: error: unknown rule code(s): {', '.join(unknown)}")
            return 2
        codes = frozenset(wanted)

    # what to run and which files to check statically
    try:
        if ns.script:
            if not os.path.isfile(ns.script):
                raise _ToolError(f"{ns.script}: error: no such file")
            files = [ns.script]
            target = ["--script", ns.script]
        elif ns.module:
            path = _resolve_module(ns.module, ns.timeout)
            if path is None:
                raise _ToolError(f"{ns.module}: error: no module named {ns.module!r}")
            files = [path]
            target = ["--module", ns.module]
        else:
            files = _test_files(ns.pytest)
            target = ["--pytest"]
            extra = [*ns.pytest, *extra]
    except _ToolError as exc:
        _err(str(exc))
        return 2

    try:
        import importlib.util

        has_torch = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        has_torch = False
    if not has_torch:
        _err(f"fakegrad-lint confirm: error: torch is not installed; the runtime checker needs it: {RUNTIME_EXTRA_HINT}")
        return 2

    first = files[0] if files else os.path.join(os.path.abspath(ns.pytest[0] if ns.pytest else "."), "-")
    root = project_root(first)
    try:
        findings, file_errors = _project_findings(root, files, codes if ns.select else None)
    except Exception as exc:  # a bad configuration: one line, as check prints it
        _err(f"fakegrad-lint confirm: error: {exc}")
        return 2

    try:
        records, returncode, timed_out, left_behind = _run_child(target, extra, ns.device, ns.timeout, root)
    except OSError as exc:
        _err(f"fakegrad-lint confirm: error: cannot start {sys.executable}: {exc}")
        return 2
    if left_behind:
        _err(f"fakegrad-lint confirm: killed {left_behind} process{'es' if left_behind != 1 else ''} the run left behind")

    for rec in records:
        if rec.get("type") == "error":
            reason = rec.get("reason", "the run could not start")
            if "torch" in reason and "install" not in reason:
                reason += f"; {RUNTIME_EXTRA_HINT}"
            _err(f"fakegrad-lint confirm: error: {reason}")
            return 2

    exit_rec = next((r for r in records if r.get("type") == "exit"), None)
    # Report the code that ran: the targets, the project modules the run
    # loaded, and (when the run was cut short) the files on the events' stacks.
    ran = {_real(p) for p in files}
    if exit_rec is not None:
        ran |= {_real(p) for p in exit_rec.get("files") or ()}
    for rec in records:
        ran |= {fn for fn, _line in _frames(rec)} if rec.get("filename") else set()
    findings = [f for f in findings if _real(f.filename) in ran]
    errors = [msg for path, msg in sorted(file_errors.items()) if path in ran]
    for e in errors:
        _err(e)
    failure = exit_rec if exit_rec is not None and exit_rec.get("exception") else None

    items, missed = _match(findings, records)
    spellings = {_real(p): p for p in files}
    objs = _report(items, missed, spellings, ns.output_format, failure)

    from fakegrad_lint.findings import display_path

    what = display_path(ns.script) if ns.script else (f"-m {ns.module}" if ns.module else "pytest")
    if timed_out:
        status_text = f"{what} timed out after {ns.timeout:g} s (process group killed)"
    elif exit_rec is not None:
        status_text = f"{what} exited with status {exit_rec['status']}"
    else:
        status_text = f"{what} ended without reporting ({_how_it_ended(returncode)}); the results are incomplete"
    n_conf = sum(o["status"] == "confirmed" for o in objs)
    n_nr = sum(o["status"] == "not-reproduced" for o in objs)
    n_missed = sum(o["status"] == "missed" for o in objs)
    summary = f"{n_conf} confirmed, {n_nr} not reproduced, {n_missed} missed; {status_text}"
    if failure is not None and not timed_out:
        n_err = sum(o["status"] == "script-error" for o in objs)
        status = exit_rec.get("status")
        summary = (
            f"{n_conf} confirmed, {n_nr} not reproduced, {n_missed} missed, {n_err} script-error; "
            f"{what} failed with {failure['exception']} (exit status {status})"
        )

    if ns.output_format == "json":
        print(json.dumps(objs, indent=2))
        _err(summary)
    else:
        _print_text(objs, summary)

    if timed_out or exit_rec is None:
        # A run that could not report (killed, crashed, its report channel
        # closed by the script) never passes: what it did not say is unknown.
        _err(f"fakegrad-lint confirm: error: {status_text}")
        return 2
    if errors:
        return 2
    # a confirmed forward-only entry (FGL004's runtime kind) is no hazard yet
    entry_codes = {code for code, kind in _kind_of_code().items() if kind == "entry"}
    bad = any(
        o["status"] in ("missed", "script-error")
        or (o["status"] == "confirmed" and o["kind"] in ("hazard", "crash") and o["code"] not in entry_codes)
        for o in objs
    )
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
