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

The static side is ``fakegrad-lint check`` on the script's project (the same
settings, discovery, engine path and cache); the run is in child processes
(:mod:`fakegrad_lint.cli.confirm_run`).

This module never imports torch (the child process does).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from fakegrad_lint.runtime import RUNTIME_EXTRA_HINT  # does not import torch
from fakegrad_lint.cli.confirm_run import DEFAULT_TIMEOUT, _resolve_module, _run_child, _ToolError
from fakegrad_lint.runtime.messages import add_tensor



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


def _is_collected(name: str) -> bool:
    """A file pytest collects by default (``python_files``) or its ``conftest.py``."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


def _test_files(paths: list[str]) -> list[str]:
    """The files ``pytest PATHS`` runs: each file given, and the test files
    the discovery ``check`` uses finds under each folder given."""
    from fakegrad_lint.config import discover

    out = []
    for path in paths:
        path = path.split("::", 1)[0]
        if os.path.isfile(path):
            out.append(path)
        elif os.path.isdir(path):
            out += [f for f in discover.discover([path]).files if _is_collected(os.path.basename(f))]
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


def _project_findings(root: str, targets: list[str], select: list[str] | None) -> tuple[list, dict]:
    """Check the project under ``root`` the way ``fakegrad-lint check ROOT``
    would, through the same engine path (discovery, each file's nearest
    configuration, notebooks, ``# noqa``, the cache), plus the targets. Returns
    (findings, {real path: one-line error}); a bad configuration or ``--select``
    raises :class:`fakegrad_lint.config.settings.ConfigError`."""
    from fakegrad_lint.analysis.project import set_run_roots
    from fakegrad_lint.config import discover
    from fakegrad_lint.config.settings import Overrides, Settings
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.engine.cache import open_cache

    set_run_roots([root])
    first = targets[0] if targets else root
    settings = Settings.load([first], Overrides(select=tuple(sorted(select)) if select else None))
    found = discover.discover([root], settings)
    seen = {_real(f) for f in found.files}
    paths = found.files + [t for t in targets if _real(t) not in seen]
    cache = open_cache(True, settings.config_path)
    result = pipeline.run(paths, settings.codes_for, pipeline.Options(mode="check"), cache=cache)
    errors = {_real(e.filename): str(e) for e in result.all_errors}
    return result.findings, errors


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

    from fakegrad_lint.config.settings import split_codes

    select = split_codes(ns.select) if ns.select else None  # checked with the settings, as `check --select`

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
        findings, file_errors = _project_findings(root, files, select)
    except Exception as exc:  # a bad configuration or --select: one line, as check prints it
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
