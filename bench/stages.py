#!/usr/bin/env python
"""Where the time goes: CPU seconds per pipeline stage and per file, in one process.

Not a test. For each file of the folders (or files) given, as the pipeline
does it: read (and decode), prefilter, parse, then ``engine.lint.lint_source`` with
the parsed tree, split into summaries (when the analyzer has such a stage,
see :data:`HOOKS`), analysis, fixes (building the proved fixes) and the rest
(rules, ``# noqa``). Times are ``time.process_time`` (CPU of this process),
exclusive (a stage nested in another counts only once). With ``--runs N``
each tree is profiled N times, each time in a fresh process (the analysis keeps
the project modules it parsed for the rest of the process, so repeating a file
in one process would time it warm), and the pass with the least total CPU is
kept: a busy machine disturbs CPU seconds less than wall time, but still
(on 2 shared cores, one pass can take several times another).

    python bench/stages.py /path/to/tree [more paths]      # every file
    python bench/stages.py --fake-only /path/to/torch      # only files past the prefilter
    python bench/stages.py --select ALL --top 20 --json out.json TREE
    python bench/stages.py --ruff TREE                     # and ruff's CPU on the same files

Also usable as a module: ``profile(paths, codes)`` returns the per-stage and
per-file numbers (bench/bench.py prints them with its table).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

STAGES = ("read", "prefilter", "parse", "summaries", "analysis", "fixes", "rest")
# (stage, module, function): functions wrapped with a timer when they exist.
# The whole-project analysis can add its module-summary entry point here.
HOOKS = (
    ("summaries", "fakegrad_lint.analysis.summaries", "summarize"),
    ("analysis", "fakegrad_lint.engine.lint", "analyze"),
    # bodies parsed on first use count as parse time, not analysis
    ("parse", "fakegrad_lint.sources.lazyparse", "_materialize"),
    # and so does every other ``ast.parse``: the project modules the analysis reads
    ("parse", "ast", "parse"),
    ("fixes", "fakegrad_lint.fix.builders", "build_fix"),
)


class Clock:
    """Exclusive CPU time per stage: entering a stage pauses the one around it."""

    def __init__(self):
        self.totals = dict.fromkeys(STAGES, 0.0)
        self.entries = dict.fromkeys(STAGES, 0)  # times each stage was entered, all files and runs
        self.stack: list[list] = []  # [stage, start]

    @contextmanager
    def stage(self, name: str):
        now = time.process_time()
        self.entries[name] += 1
        if self.stack:
            outer = self.stack[-1]
            self.totals[outer[0]] += now - outer[1]
        self.stack.append([name, now])
        try:
            yield
        finally:
            end = time.process_time()
            stage, start = self.stack.pop()
            self.totals[stage] += end - start
            if self.stack:
                self.stack[-1][1] = end

    def take(self) -> dict:
        out, self.totals = self.totals, dict.fromkeys(STAGES, 0.0)
        return out


# hooks that must exist: without them a stage's time silently lands in "rest"
REQUIRED_HOOKS = {("fakegrad_lint.engine.lint", "analyze"), ("fakegrad_lint.sources.lazyparse", "_materialize"),
                  ("ast", "parse")}


def install_hooks(clock: Clock) -> list:
    """Wrap the stage functions that exist; returns what to undo."""
    undo = []
    for stage, modname, fname in HOOKS:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            mod = None
        fn = getattr(mod, fname, None)
        if fn is None:
            if (modname, fname) in REQUIRED_HOOKS:
                raise RuntimeError(f"bench/stages.py: {modname}.{fname} is gone; update HOOKS")
            continue

        def wrapped(*a, __fn=fn, __stage=stage, **kw):
            with clock.stage(__stage):
                return __fn(*a, **kw)

        setattr(mod, fname, wrapped)
        undo.append((mod, fname, fn))
    return undo


def _lines(raw: bytes) -> int:
    return raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)


def discover_files(paths: list[str]) -> list[str]:
    from fakegrad_lint.config import discover
    from fakegrad_lint.config import settings

    files: list[str] = []
    for p in paths:
        if os.path.isfile(p):
            files.append(p)
        else:
            files.extend(discover.discover([p], settings.resolve({}, root=p)).files)
    return files


def profile(files: list[str], codes: frozenset[str], runs: int = 1, fake_only: bool = False) -> dict:
    """Per-stage totals (files, lines, CPU seconds) and per-file rows."""
    import gc

    from fakegrad_lint.engine import lint as linter
    from fakegrad_lint.engine import prefilter as pf
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.sources.sourcefile import SourceError, read_source

    # the analyzer's own modules are imported once per process, on the first file
    # that reaches the analysis: timed apart ("imports"), not as that file's analysis
    # (and several times more without cached bytecode: PYTHONDONTWRITEBYTECODE=1
    # recompiles them in every process, 0.3 s instead of 0.1)
    t0 = time.process_time()
    importlib.import_module("fakegrad_lint.analysis.interpreter")
    imports = time.process_time() - t0
    clock = Clock()
    undo = install_hooks(clock)
    # the thresholds a real run checks with (engine/process.py), and the CPU spent
    # in cyclic-GC collections (part of whichever stage triggered them)
    gc_was = gc.get_threshold()
    gc.set_threshold(*getattr(pipeline, "GC_THRESHOLD", gc_was))
    gc_cpu = [0.0, 0.0]  # total, start of the current collection

    def on_gc(phase, _info):
        now = time.process_time()
        if phase == "start":
            gc_cpu[1] = now
        else:
            gc_cpu[0] += now - gc_cpu[1]

    gc.callbacks.append(on_gc)
    stage_files = dict.fromkeys(STAGES, 0)
    stage_lines = dict.fromkeys(STAGES, 0)
    totals = dict.fromkeys(STAGES, 0.0)
    rows = []
    errors = 0
    try:
        for path in files:
            if path.endswith(".ipynb"):
                continue  # notebooks: their own stages (cells), not timed here
            best: dict | None = None
            for _ in range(max(1, runs)):
                t = _one_file(path, codes, clock, pf, linter, read_source, SourceError)
                if best is None or sum(t["times"].values()) < sum(best["times"].values()):
                    best = t
            assert best is not None
            if fake_only and not best["passed"]:
                continue
            for s in best["reached"]:
                stage_files[s] += 1
                stage_lines[s] += best["lines"]
            for s, v in best["times"].items():
                totals[s] += v
            errors += best["error"] is not None
            if best["passed"]:
                rows.append({"path": path, "lines": best["lines"], "error": best["error"],
                             "findings": best["findings"], **{s: round(v, 4) for s, v in best["times"].items()}})
    finally:
        for mod, fname, fn in undo:
            setattr(mod, fname, fn)
        gc.callbacks.remove(on_gc)
        gc.set_threshold(*gc_was)
    rows.sort(key=lambda r: -sum(r[s] for s in STAGES))
    return {
        # seconds are rounded to the millisecond, so a small file's parse can read 0.0:
        # "entries" says whether a stage's hook ran at all
        "stages": {s: {"files": stage_files[s], "lines": stage_lines[s], "seconds": round(totals[s], 3),
                       "entries": clock.entries[s]} for s in STAGES},
        "total_seconds": round(sum(totals.values()), 3),
        "gc_seconds": round(gc_cpu[0], 3),  # every file's, not only those past the prefilter
        "imports_seconds": round(imports, 3),  # the analyzer's modules, once (not in total_seconds)
        "errors": errors,
        "files": rows,
    }


def _one_file(path, codes, clock: Clock, pf, linter, read_source, SourceError) -> dict:
    reached = ["read"]
    out = {"passed": False, "lines": 0, "error": None, "findings": 0, "reached": reached}
    try:
        with clock.stage("read"):
            sf = read_source(path)
    except SourceError as exc:
        out["error"] = str(exc)
        out["times"] = clock.take()
        return out
    out["lines"] = _lines(sf.raw)
    reached.append("prefilter")
    with clock.stage("prefilter"):
        # as the engine does it: (anything to report, can it reach a fake region)
        passed, region = pf.prefilter(sf.text, codes, path)
        if passed and region is None:  # only FGL100 can report: lint_source asks
            region = pf.may_reach_region(sf.text, path)
    out["passed"] = passed
    if passed:
        reached.append("parse")
        tree = None
        try:
            with clock.stage("parse"):
                if region:
                    tree = linter.parse(sf.text, path)
        except (SyntaxError, ValueError) as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        if out["error"] is None:
            reached.extend(["summaries", "analysis", "fixes", "rest"])
            try:
                with clock.stage("rest"):
                    out["findings"] = len(linter.lint_source(sf.text, path, codes, tree=tree, region=region))
            except Exception as exc:  # an analyzer bug: counted, the run goes on
                out["error"] = f"internal error: {type(exc).__name__}: {exc}"
    out["times"] = clock.take()
    return out


def ruff_cpu(files: list[str], runs: int) -> dict | None:
    """ruff check --isolated --no-cache on ``files``: best wall and CPU seconds."""
    ruff = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    if not os.path.exists(ruff):
        return None
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        before = os.times()
        subprocess.run([ruff, "check", "--isolated", "--no-cache", "--exit-zero", "-q", *files],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = os.times()
        wall = time.perf_counter() - t0
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        if best is None or cpu < best["cpu"]:
            best = {"wall": round(wall, 3), "cpu": round(cpu, 3)}
    return best


def report(res: dict, top: int = 10, ruff: dict | None = None) -> str:
    lines = [f"  {'stage':<10}{'files':>8}{'lines':>11}{'CPU s':>9}"]
    for s, d in res["stages"].items():
        if s == "summaries" and not d["seconds"]:
            lines.append(f"  {s:<10}{'-':>8}{'-':>11}{'-':>9}   (no summary stage in this analyzer)")
            continue
        lines.append(f"  {s:<10}{d['files']:>8,}{d['lines']:>11,}{d['seconds']:>9.3f}")
    lines.append(f"  {'total':<10}{'':>8}{'':>11}{res['total_seconds']:>9.3f}")
    if "gc_seconds" in res:
        lines.append(f"  of which cyclic GC (in whichever stage ran): {res['gc_seconds']:.3f} s")
    if "imports_seconds" in res:
        cached = "" if not sys.flags.dont_write_bytecode else " (PYTHONDONTWRITEBYTECODE is set: compiled, not cached)"
        lines.append(f"  not in the total: importing the analyzer, once: {res['imports_seconds']:.3f} s{cached}")
    if ruff:
        lines.append(f"  ruff on the same files: {ruff['cpu']:.3f} s CPU ({ruff['wall']:.3f} s wall); "
                     f"fakegrad-lint stages / ruff CPU = {res['total_seconds'] / max(ruff['cpu'], 1e-9):.2f}x")
    if top and res["files"]:
        lines.append("  slowest files past the prefilter (CPU s: parse / analysis / all):")
        for r in res["files"][:top]:
            tot = sum(r[s] for s in STAGES)
            lines.append(f"    {tot:7.3f}  {r['parse']:.3f} / {r['analysis']:.3f}  {r['lines']:>7,} lines  {r['path']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    from fakegrad_lint.rules import ALL_CODES, DEFAULT_CODES, UNUSED_NOQA_CODE

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--fake-only", action="store_true", help="report only the files past the prefilter")
    ap.add_argument("--select", default="default", help="default, or ALL (every rule and FGL100)")
    ap.add_argument("--runs", type=int, default=1,
                    help="profile each tree N times, each in a fresh process, and keep the least total (default 1)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--ruff", action="store_true", help="also time ruff on the same files (best of --runs)")
    ap.add_argument("--json", help="write the numbers (per file too) here")
    ap.add_argument("--each", action="store_true",
                    help="one profile per path given (each tree alone), then a markdown table of all")
    args = ap.parse_args(argv)
    codes = DEFAULT_CODES if args.select == "default" else ALL_CODES | {UNUSED_NOQA_CODE}
    groups = [[p] for p in args.paths] if args.each else [args.paths]
    out = {}
    for paths in groups:
        files = discover_files(paths)
        res = best_of_processes(paths, args) if args.runs > 1 else profile(files, codes, fake_only=args.fake_only)
        ruff = None
        if args.ruff:
            chosen = [r["path"] for r in res["files"]] if args.fake_only else files
            ruff = ruff_cpu(chosen, max(1, args.runs)) if chosen else None
            res["ruff"] = ruff
        name = " ".join(paths)
        print(f"{name}: {len(files)} files; {'only those past the prefilter' if args.fake_only else 'all'}:")
        print(report(res, args.top, ruff), flush=True)
        out[name] = res
    if args.each:
        print()
        print(markdown(out))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out if args.each else out[" ".join(args.paths)], fh, indent=1)
    return 0


def best_of_processes(paths: list[str], args) -> dict:
    """``profile`` of ``paths`` in ``args.runs`` fresh processes: the pass with the least total CPU."""
    import tempfile

    best = None
    for _ in range(args.runs):
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            cmd = [sys.executable, os.path.abspath(__file__), "--runs", "1", "--top", "0", "--select", args.select,
                   "--json", tmp.name, *(["--fake-only"] if args.fake_only else []), *paths]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            with open(tmp.name) as fh:
                res = json.load(fh)
        if best is None or res["total_seconds"] < best["total_seconds"]:
            best = res
    assert best is not None
    best["passes"] = args.runs
    return best


def markdown(results: dict) -> str:
    """One row per tree: files and lines profiled, CPU seconds per stage, ruff, ratio."""
    head = ["tree", "files", "lines", *STAGES, "imports (once, not in total)", "total", "of which GC", "ruff CPU", "x ruff"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, res in results.items():
        st = res["stages"]
        ruff = res.get("ruff")
        ratio = f"{res['total_seconds'] / ruff['cpu']:.1f}" if ruff and ruff["cpu"] else "-"
        cells = [os.path.basename(os.path.normpath(name)), f"{st['read']['files']:,}", f"{st['read']['lines']:,}",
                 *(f"{st[s]['seconds']:.2f}" for s in STAGES),
                 f"{res['imports_seconds']:.2f}" if "imports_seconds" in res else "-", f"{res['total_seconds']:.2f}",
                 f"{res['gc_seconds']:.2f}" if "gc_seconds" in res else "-",
                 f"{ruff['cpu']:.2f}" if ruff else "-", ratio]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
