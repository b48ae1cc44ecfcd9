#!/usr/bin/env python
"""Benchmark fakegrad-lint against ruff, flake8, TorchFix and the floor of reading.

Not a test. One run times every tool on two trees nobody here wrote:

- typical: the ``transformers`` package source (``pip install --no-deps
  --target /tmp/bench-trees/transformers transformers==5.23.0``);
- dense:   the installed ``torch`` package source.

Tools (each a fresh subprocess, interleaved round by round so a change of load
hits all of them alike):

- ``floor``       reading every file the linter would check (one process)
- ``fgl-cold``    ``fakegrad-lint --no-cache``
- ``fgl-all``     the same with ``--select ALL`` (every opt-in rule, FGL100 too)
- ``fgl-warm``    ``fakegrad-lint`` with a cache filled by an untimed run
- ``fgl-fake``    ``fakegrad-lint --no-cache`` on the tree's files that name a fake
                  mode (those past the prefilter), and ``ruff-fake``: ruff on them
- ``fgl-version`` ``fakegrad-lint --version`` (startup)
- ``ruff``        ``ruff check --isolated --no-cache`` (default rules)
- ``flake8``      ``flake8 -j 2``, once per tree (``--flake8-runs``; ``--skip flake8``:
                  it takes minutes; the fakegrad-lint flake8 plugin is installed
                  here too and runs inside it)
- ``torchfix``    ``python -m torchfix`` when importable (or ``--torchfix-path``),
                  on a sample of the tree's files (``--torchfix-sample``), and
- ``fgl-sample``  ``fakegrad-lint --no-cache`` on the same sample

Per tool: minimum and median wall time, median CPU time (user+sys of the whole
process tree), peak memory (the largest single process of the tree:
``ru_maxrss`` from ``wait4``), ratios to ruff. Also files and lines per
pipeline stage. A table goes to stdout, everything to ``bench/results.json``
(gitignored)::

    python bench/bench.py                    # both trees, 3 runs
    python bench/bench.py --runs 5 --skip flake8,torchfix
    python bench/bench.py --tree dense=/path/to/torch --tree typical=/path/to/transformers
    python bench/bench.py --tree /work/eco/autoparallel --skip flake8,torchfix   # any folder

Per-stage CPU seconds come from bench/stages.py (also runnable alone).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_TRANSFORMERS = "/tmp/bench-trees/transformers/transformers"
DEFAULT_TORCHFIX_PATH = "/tmp/bench-trees/_torchfix"
TARGETS = {  # ratio of fakegrad-lint's minimum wall time to ruff's (None: every tree)
    ("typical", "fgl-cold"): 1.0,
    ("dense", "fgl-cold"): 1.0,
    ("typical", "fgl-warm"): 0.3,
    ("dense", "fgl-warm"): 0.3,
    (None, "fgl-fake"): 4.0,  # over ruff-fake: the tree's files that name a fake mode
}
SELECT_ALL_FACTOR = 1.2  # fgl-all (--select ALL) over fgl-cold
VERSION_TARGET_S = 0.150
MEMORY_TARGET_MB = 300
TORCHFIX_FACTOR = 10
# tools whose ratio is taken to another tool than ruff
BASELINE_OF = {"fgl-fake": "ruff-fake", "fgl-all": "fgl-cold"}

FLOOR = r"""
import sys
from fakegrad_lint.config import discover
from fakegrad_lint.config import settings
files = discover.discover([sys.argv[1]], settings.resolve({}, root=sys.argv[1])).files
n = 0
for p in files:
    with open(p, 'rb') as fh:
        n += len(fh.read())
print(len(files), n)
"""


def package_dir(name: str) -> str | None:
    """Where a package's source is, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def run_once(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> dict:
    """Run ``cmd``; wall seconds, CPU seconds and peak RSS (MB) of its tree."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    # Read stderr fully (it can be long) before reaping with wait4 for the rusage.
    err = proc.stderr.read()
    proc.stderr.close()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,  # KiB on Linux; the largest process of the tree
        "rc": proc.returncode,
        "stderr_lines": len(err.splitlines()),
    }


def tools(tree: str, args, cache_dir: str) -> dict[str, list[str] | None]:
    py = sys.executable
    fgl = [py, "-m", "fakegrad_lint", "check", "--isolated", "-q", "--exit-zero", "--output-format", "concise"]
    if args.jobs:
        fgl += ["--jobs", str(args.jobs)]
    ruff = [ruff_path(), "check", "--isolated", "--no-cache",
            "--exit-zero", "-q"]
    out: dict[str, list[str] | None] = {
        "floor": [py, "-c", FLOOR, tree],
        "fgl-cold": fgl + ["--no-cache", tree],
        "fgl-all": fgl + ["--no-cache", "--select", "ALL", tree],
        "fgl-warm": fgl + ["--cache-dir", cache_dir, tree],
        "ruff": ruff + [tree],
        "flake8": [py, "-m", "flake8", "-j", "2", "--exit-zero", "-q", tree],
        "fgl-version": [py, "-m", "fakegrad_lint", "--version"],
    }
    fake = fake_files(tree)
    if fake:
        # the files that name a fake mode, alone: where the analysis works
        out["fgl-fake"] = fgl + ["--no-cache", *fake]
        out["ruff-fake"] = ruff + fake
    if "torchfix" not in args.skip:
        # TorchFix (libcst) takes minutes per thousand files: it and
        # fakegrad-lint cold both get the same sample of the tree's files.
        sample = sample_files(tree, args.torchfix_sample)
        out["fgl-sample"] = fgl + ["--no-cache", *sample]
        out["torchfix"] = [py, "-m", "torchfix", *sample]
    return {k: v for k, v in out.items() if k not in args.skip}


def ruff_path() -> str:
    """ruff on PATH, or beside this interpreter (a venv's bin/)."""
    return shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")


def fake_files(tree: str) -> list[str]:
    """The tree's files past the prefilter (they name a fake mode in code)."""
    from fakegrad_lint.config import discover
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.config import settings
    from fakegrad_lint.rules import DEFAULT_CODES
    from fakegrad_lint.sources.sourcefile import SourceError, read_source

    out = []
    for p in discover.discover([tree], settings.resolve({}, root=tree)).files:
        if p.endswith(".ipynb"):
            continue
        try:
            if pipeline.needs_work(read_source(p).text, DEFAULT_CODES, p):
                out.append(p)
        except SourceError:
            pass
    return out


def sample_files(tree: str, n: int) -> list[str]:
    """Every k-th file of the tree (as discovered), about ``n`` of them."""
    from fakegrad_lint.config import discover
    from fakegrad_lint.config import settings

    files = discover.discover([tree], settings.resolve({}, root=tree)).files
    step = max(1, len(files) // max(n, 1))
    return files[::step][:n]


def torchfix_env(args) -> dict | None:
    """The environment to run TorchFix in, or None when it is not there."""
    env = dict(os.environ)
    path = args.torchfix_path
    if path and os.path.isdir(path):
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    probe = subprocess.run([sys.executable, "-c", "import torchfix"], env=env, capture_output=True)
    return env if probe.returncode == 0 else None


def stage_stats(tree: str, jobs: int | None) -> dict:
    """Files and lines per pipeline stage (``pipeline.run(stats=True)``), and CPU
    seconds per stage in one process (bench/stages.py)."""
    from fakegrad_lint.config import discover
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.config import settings
    from fakegrad_lint.rules import DEFAULT_CODES

    sys.path.insert(0, HERE)
    import stages

    st = settings.resolve({}, root=tree)
    files = discover.discover([tree], st).files
    t0 = time.perf_counter()
    res = pipeline.run(files, st.codes_for, pipeline.Options(), jobs=jobs, stats=True)
    d = dict(res.stats)
    d["seconds"] = round(time.perf_counter() - t0, 3)
    d["read_errors"] = len(res.errors)
    prof = stages.profile(files, DEFAULT_CODES)
    d["cpu_by_stage"] = prof["stages"]
    d["slowest"] = [{k: r[k] for k in ("path", "lines", "parse", "analysis")} for r in prof["files"][:5]]
    return d


def summarize(samples: list[dict]) -> dict:
    walls = [s["wall"] for s in samples]
    return {
        "runs": len(samples),
        "min": min(walls),
        "median": statistics.median(walls),
        "cpu_median": statistics.median(s["cpu"] for s in samples),
        "rss_mb": max(s["rss_mb"] for s in samples),
        "rc": sorted({s["rc"] for s in samples}),
        "stderr_lines": max(s["stderr_lines"] for s in samples),
    }


def bench_tree(name: str, tree: str, args) -> dict:
    print(f"\n== {name}: {tree}", flush=True)
    cache_dir = tempfile.mkdtemp(prefix="fgl-bench-cache-")
    try:
        cmds = tools(tree, args, cache_dir)
        envs: dict[str, dict | None] = {}
        if "torchfix" in cmds:
            env = torchfix_env(args)
            if env is None:
                print("   torchfix: not installed (pip install torchfix, or --torchfix-path); skipped")
                del cmds["torchfix"]
                cmds.pop("fgl-sample", None)
            envs["torchfix"] = env
        if "fgl-warm" in cmds:  # fill the cache (untimed)
            run_once(cmds["fgl-warm"])
        samples: dict[str, list[dict]] = {k: [] for k in cmds}
        for r in range(args.runs):
            for tool, cmd in cmds.items():
                if tool in ("torchfix", "fgl-sample") and r >= args.torchfix_runs:
                    continue
                if tool == "flake8" and r >= args.flake8_runs:
                    continue
                s = run_once(cmd, env=envs.get(tool))
                samples[tool].append(s)
                print(f"   run {r + 1} {tool:<9} {s['wall']:7.2f} s wall {s['cpu']:7.2f} s cpu {s['rss_mb']:6.0f} MB", flush=True)
        result = {"tree": tree, "tools": {k: summarize(v) for k, v in samples.items() if v}}
        if "torchfix" in cmds:
            result["sample_files"] = len(cmds["torchfix"]) - 3
        if not args.no_stats:
            result["stages"] = stage_stats(tree, args.jobs)
        return result
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def table(results: dict) -> str:
    lines = []
    for name, res in results["trees"].items():
        tl = res["tools"]
        ruff = tl.get("ruff")
        lines.append(f"\n{name}: {res['tree']}")
        lines.append(f"  {'tool':<12}{'min s':>8}{'median s':>10}{'cpu s':>8}{'x ruff':>8}{'cpu x ruff':>11}{'peak MB':>9}"
                     "   (fgl-fake: x ruff-fake; fgl-all: x fgl-cold)")
        for tool, t in tl.items():
            base = tl.get(BASELINE_OF.get(tool, "ruff"))
            ratio = f"{t['min'] / base['min']:.2f}" if base else "-"
            cratio = f"{t['cpu_median'] / base['cpu_median']:.2f}" if base and base["cpu_median"] else "-"
            lines.append(
                f"  {tool:<12}{t['min']:8.2f}{t['median']:10.2f}{t['cpu_median']:8.2f}{ratio:>8}{cratio:>11}{t['rss_mb']:9.0f}"
            )
        st = res.get("stages")
        if st:
            lines.append(
                "  stages: {files} files / {lines} lines read -> {prefilter_files} files / {prefilter_lines} lines "
                "past the prefilter -> {parsed_files} parsed and analyzed ({parsed_lines} lines) -> "
                "{finding_files} files with {findings} findings; {errors} errors".format(**st)
            )
            cpu = st.get("cpu_by_stage")
            if cpu:
                lines.append("  CPU s per stage (one process): " + ", ".join(
                    f"{k} {v['seconds']:.2f} ({v['files']} files, {v['lines']:,} lines)" for k, v in cpu.items() if v["files"]))
    lines.append("")
    for check in results["checks"]:
        lines.append(check)
    return "\n".join(lines)


def checks(results: dict) -> list[str]:
    out = []
    for name, res in results["trees"].items():
        tl = res["tools"]
        ruff = tl.get("ruff")
        for (tree_kind, tool), limit in TARGETS.items():
            base_name = BASELINE_OF.get(tool, "ruff")
            base = tl.get(base_name)
            if tree_kind in (name, None) and base and tool in tl:
                ratio = tl[tool]["min"] / base["min"]
                cpu = tl[tool]["cpu_median"] / base["cpu_median"] if base["cpu_median"] else float("nan")
                out.append(f"{'ok  ' if ratio <= limit else 'MISS'} {name} {tool} {ratio:.2f}x {base_name} "
                           f"(target <= {limit}x; CPU {cpu:.2f}x)")
        if "fgl-all" in tl and "fgl-cold" in tl:
            f = tl["fgl-all"]["min"] / tl["fgl-cold"]["min"]
            out.append(f"{'ok  ' if f <= SELECT_ALL_FACTOR else 'MISS'} {name} --select ALL {f:.2f}x the default "
                       f"(target <= {SELECT_ALL_FACTOR}x)")
        if "fgl-version" in tl:
            v = tl["fgl-version"]["min"]
            out.append(f"{'ok  ' if v < VERSION_TARGET_S else 'MISS'} --version {v * 1000:.0f} ms (target < {VERSION_TARGET_S * 1000:.0f} ms)")
        if "torchfix" in tl and "fgl-sample" in tl:
            f = tl["torchfix"]["min"] / tl["fgl-sample"]["min"]
            out.append(
                f"{'ok  ' if f >= TORCHFIX_FACTOR else 'MISS'} {name} torchfix / fakegrad-lint cold on the same "
                f"{res.get('sample_files', '?')} files = {f:.1f}x (target >= {TORCHFIX_FACTOR}x)"
            )
        for tool in ("fgl-cold", "fgl-warm"):
            if tool in tl:
                mb = tl[tool]["rss_mb"]
                out.append(f"{'ok  ' if mb < MEMORY_TARGET_MB else 'MISS'} {name} {tool} peak {mb:.0f} MB (target < {MEMORY_TARGET_MB} MB)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="[NAME=]PATH",
                    help="a tree to time, any folder (default: typical=transformers, dense=torch, found from "
                         "installed packages); repeatable")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--torchfix-runs", type=int, default=1, help="TorchFix is slow: runs per tree (default 1)")
    ap.add_argument("--flake8-runs", type=int, default=1, help="flake8 takes minutes per tree: runs per tree (default 1)")
    ap.add_argument("--torchfix-sample", type=int, default=120,
                    help="TorchFix and fakegrad-lint (fgl-sample) run on this many files of each tree (default 120)")
    ap.add_argument("--skip", default="", help="comma-separated tools to leave out (floor,fgl-cold,fgl-all,fgl-warm,"
                                               "fgl-fake,ruff-fake,fgl-version,ruff,flake8,torchfix)")
    ap.add_argument("--jobs", type=int, default=None, help="--jobs for fakegrad-lint (default: its own default)")
    ap.add_argument("--torchfix-path", default=os.environ.get("BENCH_TORCHFIX_PATH", DEFAULT_TORCHFIX_PATH),
                    help="a folder to put on PYTHONPATH for TorchFix (pip install --no-deps --target DIR torchfix)")
    ap.add_argument("--no-stats", action="store_true", help="do not count files and lines per stage")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args(argv)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    trees: dict[str, str] = {}
    for spec in args.tree:
        name, sep, path = spec.partition("=")
        if not sep:  # a bare folder: named after it
            path, name = spec, os.path.basename(os.path.normpath(spec))
        trees[name] = path
    if not args.tree:
        tr = package_dir("transformers") or (DEFAULT_TRANSFORMERS if os.path.isdir(DEFAULT_TRANSFORMERS) else None)
        if tr:
            trees["typical"] = tr
        else:
            print("transformers not found (pip install --no-deps --target /tmp/bench-trees/transformers "
                  "transformers==5.23.0); typical tree skipped")
        th = package_dir("torch")
        if th:
            trees["dense"] = th

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    results = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": load,
        "ruff": subprocess.run([ruff_path(), "--version"], capture_output=True, text=True).stdout.strip(),
        "trees": {},
    }
    print(f"load average before: {load}")
    for name, tree in trees.items():
        results["trees"][name] = bench_tree(name, os.path.abspath(tree), args)
    results["load_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    results["checks"] = checks(results)
    print(table(results))
    print(f"load average after: {results['load_after']}")
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=2)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
