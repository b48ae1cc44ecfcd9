#!/usr/bin/env python
"""Ecosystem check: lint real trees and diff the findings against a reviewed baseline.

Not a test (like ruff's ecosystem check). Every tree is linted by a fresh
``fakegrad-lint check --isolated --no-cache --select ALL`` subprocess; per tree
it records the commit (or package version), files, lines, files past the
prefilter, seconds (wall and CPU), peak memory, findings and tool errors.
The findings are compared with ``bench/ecosystem_baseline.json``, where each
one carries a verdict (``true-positive`` / ``false-positive``) and why.

Exit status: 0 when every finding is in the baseline with a verdict; 1 when a
finding is new or unreviewed, a reviewed true positive went missing, or a tool
error that is a bug of ours (internal error, timeout, worker failure, out of
memory) is not in the baseline; 2 on bad usage.

Trees:

- the pinned packages that are installed here or under ``--wheel-dir``
  (``torch``, ``transformers``; ``vllm`` and ``sglang`` from their wheels:
  ``--download`` fetches and unpacks them with ``pip download --no-deps``);
- folders given on the command line (``PATH`` or ``NAME=PATH``), or every
  folder under ``--all-in DIR``. A repository's commit is read from its git
  work tree or from a ``.eco_commit`` file (written when the tree was
  unpacked from a bare mirror) and checked against :data:`REPOS`.

    python bench/ecosystem.py --all-in /work/eco            # the usual run
    python bench/ecosystem.py /work/eco/torchtitan ao=/src/ao
    python bench/ecosystem.py --unpack-mirror /work/.mirror/pytorch+ao/repo /work/eco/ao
    python bench/ecosystem.py --all-in /work/eco --update-baseline
        # records new findings as "unreviewed" (keeps the verdicts of the
        # others, drops findings that are gone); review them, then rerun

Results (the table and everything else) go to ``bench/results-ecosystem.json``
(gitignored).
"""

from __future__ import annotations

import argparse
import glob
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASELINE = os.path.join(HERE, "ecosystem_baseline.json")

# Packages linted from the environment: (import name, pinned version).
PACKAGES = {"torch": "2.13.0", "transformers": "5.23.0"}
# Packages linted from their wheels (too heavy to install): unpacked .py files.
WHEELS = {"vllm": "0.33.0", "sglang": "0.5.23"}
# Public repositories that use FakeTensorMode, with the commit reviewed.
REPOS = {
    "torchtitan": ("pytorch/torchtitan", "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"),
    "torchtune": ("pytorch/torchtune", "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1"),
    "ao": ("pytorch/ao", "36027d82d1ad9949597ea16002ff4940374b1b94"),
    "executorch": ("pytorch/executorch", "cff6f4dd32e630945b7188512c1f2b4f102b05ad"),
    "TensorRT": ("pytorch/TensorRT", "d7f2062810df37e4bbcfc9065b5f44f09aca7156"),
    "autoparallel": ("meta-pytorch/autoparallel", "a54c2529b1cb10b6b27a585b4a6fc2f84bc1d232"),
    "DeepSpeed": ("microsoft/DeepSpeed", "38327e07f6cd39b63418f60cedd1651b0be3e7c3"),
    "accelerate": ("huggingface/accelerate", "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83"),
    "lightning-thunder": ("Lightning-AI/lightning-thunder", "1e22aacb1aef6e79718a5ca2f49ab91b993cb4ef"),
    "Megatron-LM": ("NVIDIA/Megatron-LM", "d98e8a64ddf34856e74b24714e3bedb2f5a39553"),
}
# Tool errors that are bugs of ours (anything else, e.g. a SyntaxError in a
# file of the tree, is the tree's problem and only reported).
OUR_ERRORS = ("internal error", "timed out", "worker failed", "out of memory", "too deeply nested")
VERDICTS = ("true-positive", "false-positive", "unreviewed")


# ---------------------------------------------------------------- the trees


def package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def download_wheels(wheel_dir: str) -> None:
    """``pip download --no-deps`` each pinned wheel and unpack its .py files
    into ``wheel_dir/NAME-VERSION`` (outside the repository)."""
    os.makedirs(os.path.join(wheel_dir, "_wheels"), exist_ok=True)
    for name, version in WHEELS.items():
        dest = os.path.join(wheel_dir, f"{name}-{version}")
        if os.path.isdir(dest):
            continue
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             f"{name}=={version}", "-d", os.path.join(wheel_dir, "_wheels")],
            check=True,
        )
        whl = glob.glob(os.path.join(wheel_dir, "_wheels", f"{name}-{version}-*.whl"))[0]
        with zipfile.ZipFile(whl) as z:
            for info in z.infolist():
                if info.filename.endswith((".py", ".pyi")):
                    z.extract(info, dest)
        with open(os.path.join(dest, ".eco_commit"), "w") as fh:
            fh.write(f"wheel {os.path.basename(whl)}\n")


def unpack_mirror(git_dir: str, dest: str) -> str:
    """Write the Python files (and configuration) of a bare mirror's HEAD that
    exist into ``dest`` (a mirror can lack its big blobs, which stops ``git
    archive``), and the commit into ``dest/.eco_commit``. Returns the commit."""
    import threading

    git = ["git", "--git-dir", git_dir]
    commit = subprocess.run(git + ["rev-parse", "--verify", "HEAD^{commit}"], capture_output=True, text=True).stdout.strip()
    if not commit:  # a branch named HEAD makes HEAD ambiguous
        commit = subprocess.run(git + ["log", "-1", "--format=%H"], capture_output=True, text=True).stdout.strip()
    listing = subprocess.run(git + ["ls-tree", "-r", "-z", commit], capture_output=True, check=True).stdout
    entries = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha = meta.split()
        name = path.decode("utf-8", "surrogateescape")
        if kind != b"blob" or mode == b"120000":
            continue
        if name.endswith((".py", ".pyi", ".ipynb")) or os.path.basename(name) in ("pyproject.toml", "setup.cfg", ".gitignore"):
            entries.append((sha, name))
    proc = subprocess.Popen(git + ["cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def feed():
        for sha, _ in entries:
            proc.stdin.write(sha + b"\n")
        proc.stdin.close()

    threading.Thread(target=feed, daemon=True).start()
    for _sha, name in entries:
        head = proc.stdout.readline().split()
        if len(head) < 3 or head[1] == b"missing":
            continue
        data = proc.stdout.read(int(head[2]))
        proc.stdout.read(1)
        out = os.path.join(dest, name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as fh:
            fh.write(data)
    proc.wait()
    with open(os.path.join(dest, ".eco_commit"), "w") as fh:
        fh.write(commit + "\n")
    return commit


def tree_commit(path: str) -> str:
    """The commit (or package version) a folder holds."""
    marker = os.path.join(path, ".eco_commit")
    if os.path.isfile(marker):
        with open(marker) as fh:
            return fh.read().strip()
    try:
        out = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
        if out.returncode == 0:
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "unknown"


def collect_trees(args) -> dict[str, dict]:
    trees: dict[str, dict] = {}
    if not args.no_packages:
        for name, pin in PACKAGES.items():
            path = package_dir(name)
            if path is None and name == "transformers" and os.path.isdir("/tmp/bench-trees/transformers/transformers"):
                path = "/tmp/bench-trees/transformers/transformers"
            version = installed_version(name)
            if path is None:
                print(f"{name}: not installed (pip install --no-deps {name}=={pin}); skipped")
                continue
            if version and version.split("+")[0] != pin:
                print(f"{name}: installed {version}, pinned {pin}: its findings will not match the baseline")
            trees[name] = {"path": path, "commit": f"{name}=={version or '?'}", "pinned": f"{name}=={pin}"}
        if args.download:
            download_wheels(args.wheel_dir)
        for name, pin in WHEELS.items():
            path = os.path.join(args.wheel_dir, f"{name}-{pin}")
            if os.path.isdir(path):
                trees[f"{name}-{pin}"] = {"path": path, "commit": f"{name}=={pin}", "pinned": f"{name}=={pin}"}
            else:
                print(f"{name}=={pin}: not unpacked under {args.wheel_dir} (--download); skipped")
    folders = list(args.trees)
    if args.all_in:
        for entry in sorted(os.listdir(args.all_in)):
            full = os.path.join(args.all_in, entry)
            if os.path.isdir(full) and not entry.startswith(("_", ".")) and f"{entry}" not in trees:
                folders.append(full)
    for spec in folders:
        name, sep, path = spec.partition("=")
        if not sep:
            path, name = spec, os.path.basename(os.path.normpath(spec))
        if not os.path.isdir(path):
            print(f"{path}: not a folder", file=sys.stderr)
            raise SystemExit(2)
        commit = tree_commit(path)
        pinned = REPOS[name][1] if name in REPOS else None
        if pinned and commit != pinned:
            print(f"{name}: at {commit}, the baseline was reviewed at {pinned}")
        trees[name] = {"path": os.path.abspath(path), "commit": commit, "pinned": pinned}
    return trees


# ----------------------------------------------------------------- linting


def count_tree(path: str) -> dict:
    """Files and lines fakegrad-lint discovers, and those past the prefilter."""
    sys.path.insert(0, ROOT)
    from fakegrad_lint.config import discover
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.config import settings
    from fakegrad_lint.rules import ALL_CODES
    from fakegrad_lint.sources.sourcefile import SourceError, read_source

    codes = ALL_CODES | {pipeline.UNUSED_NOQA_CODE}
    files = discover.discover([path], settings.resolve({}, root=path)).files
    n_lines = fake_files = fake_lines = 0
    for p in files:
        try:
            sf = read_source(p)
        except SourceError:
            continue
        n = sf.raw.count(b"\n")
        n_lines += n
        if pipeline.needs_work(sf.text, codes, p):
            fake_files += 1
            fake_lines += n
    return {"files": len(files), "lines": n_lines, "prefilter_files": fake_files, "prefilter_lines": fake_lines}


def lint_tree(name: str, info: dict, args) -> dict:
    path = info["path"]
    cmd = [sys.executable, "-m", "fakegrad_lint", "check", "--isolated", "--no-cache", "--exit-zero",
           "--select", "ALL", "--output-format", "json", "--timeout-per-file", str(args.timeout), path]
    if args.jobs:
        cmd[4:4] = ["--jobs", str(args.jobs)]
    # from an empty folder: the tree's own modules (torch/random.py ...) must not
    # shadow the standard library on sys.path
    with tempfile.TemporaryDirectory() as cwd:
        out, err, res = run_measured(cmd, cwd=cwd)
    res = {"name": name, **info, **res}
    if res["rc"] not in (0, 2):  # --exit-zero: 0, or 2 with tool errors
        res["output_error"] = f"exit status {res['rc']}: " + err.decode(errors="replace")[-800:]
    res.update(count_tree(path))
    try:
        raw = json.loads(out.decode() or "[]")
    except json.JSONDecodeError:
        raw = []
        res["output_error"] = out.decode(errors="replace")[-500:]
    res["findings"] = [
        {
            "path": os.path.relpath(f["filename"], path).replace(os.sep, "/"),
            "code": f["code"],
            "row": f["location"]["row"],
            "col": f["location"]["column"],
            "message": f["message"],
        }
        for f in raw
    ]
    errors = []
    for line in err.decode(errors="replace").splitlines():
        head, sep, reason = line.partition(": error: ")
        if sep:
            errors.append({"path": os.path.relpath(head, path).replace(os.sep, "/") if os.path.isabs(head) else head,
                           "reason": reason})
    res["errors"] = errors
    return res


def run_measured(cmd: list[str], cwd: str | None = None) -> tuple[bytes, bytes, dict]:
    """Run ``cmd``: its stdout, stderr, and wall seconds, CPU seconds (user +
    system, children included) and peak RSS of its largest process."""
    import threading

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    chunks: dict[str, bytes] = {}

    def drain(name, stream):
        chunks[name] = stream.read()
        stream.close()

    readers = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    return chunks["out"], chunks["err"], {
        "seconds": round(wall, 2),
        "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_mb": round(ru.ru_maxrss / 1024),
        "rc": proc.returncode,
    }


# ---------------------------------------------------------------- baseline


def key(tree: str, f: dict) -> tuple:
    return (tree, f["path"], f["code"], f["row"], f["col"])


def load_baseline(path: str) -> dict:
    if not os.path.exists(path):
        return {"trees": {}, "findings": [], "errors": []}
    with open(path) as fh:
        return json.load(fh)


def diff(results: list[dict], baseline: dict) -> dict:
    ran = {r["name"]: r for r in results}
    base = {key(b["tree"], b): b for b in baseline.get("findings", [])}
    now = {key(r["name"], f): f for r in results for f in r["findings"]}
    new = [k for k in now if k not in base]
    unreviewed = [k for k in now if k in base and base[k].get("verdict") not in ("true-positive", "false-positive")]
    gone = [k for k, b in base.items() if k[0] in ran and k not in now]
    lost_true = [k for k in gone if base[k].get("verdict") == "true-positive"]
    known_errors = {(e["tree"], e["path"], e["reason"]) for e in baseline.get("errors", [])}
    our_errors = [
        (r["name"], e["path"], e["reason"])
        for r in results
        for e in r["errors"]
        if e["reason"].startswith(OUR_ERRORS) and (r["name"], e["path"], e["reason"]) not in known_errors
    ]
    return {"new": new, "unreviewed": unreviewed, "gone": gone, "lost_true": lost_true,
            "our_errors": our_errors, "base": base, "now": now}


def update_baseline(path: str, results: list[dict], baseline: dict) -> dict:
    """New findings go in as ``unreviewed``; findings of the trees that ran and
    are gone are dropped; verdicts of the others are kept."""
    ran = {r["name"] for r in results}
    old = {key(b["tree"], b): b for b in baseline.get("findings", [])}
    out = [b for k, b in old.items() if k[0] not in ran]
    for r in results:
        for f in r["findings"]:
            k = key(r["name"], f)
            prev = old.get(k)
            entry = {"tree": r["name"], **f, "verdict": "unreviewed", "why": ""}
            if prev is not None:
                entry["verdict"] = prev.get("verdict", "unreviewed")
                entry["why"] = prev.get("why", "")
            out.append(entry)
    out.sort(key=lambda b: (b["tree"], b["path"], b["row"], b["col"], b["code"]))
    trees = dict(baseline.get("trees", {}))
    for r in results:
        trees[r["name"]] = {"commit": r["commit"], "files": r["files"], "lines": r["lines"]}
    errors = [e for e in baseline.get("errors", []) if e["tree"] not in ran]
    for r in results:
        errors.extend({"tree": r["name"], **e} for e in r["errors"])
    new = {"comment": baseline.get("comment", "Reviewed findings of bench/ecosystem.py; see bench/README.md."),
           "trees": dict(sorted(trees.items())), "findings": out, "errors": errors}
    with open(path, "w") as fh:
        json.dump(new, fh, indent=1, sort_keys=False)
        fh.write("\n")
    return new


# ------------------------------------------------------------------ output


def table(results: list[dict]) -> str:
    head = "| tree | commit | files | lines | past prefilter (files / lines) | seconds | CPU s | peak MB | findings | tool errors |"
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        commit = r["commit"]
        short = commit[:12] if len(commit) == 40 else commit
        lines.append(
            f"| {r['name']} | {short} | {r['files']:,} | {r['lines']:,} | {r['prefilter_files']:,} / {r['prefilter_lines']:,} "
            f"| {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['peak_mb']} | {len(r['findings'])} | {len(r['errors'])} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", metavar="[NAME=]PATH", help="folders to lint (name: the folder's name)")
    ap.add_argument("--all-in", metavar="DIR", help="lint every folder under DIR (except _* and .*)")
    ap.add_argument("--wheel-dir", default="/work/eco", help="where the pinned wheels are unpacked (default /work/eco)")
    ap.add_argument("--download", action="store_true", help="pip download and unpack the pinned wheels first")
    ap.add_argument("--no-packages", action="store_true", help="only the folders given, no pinned packages")
    ap.add_argument("--only", default="", help="comma-separated tree names to run (of those found)")
    ap.add_argument("--skip", default="", help="comma-separated tree names to leave out")
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--update-baseline", action="store_true",
                    help="record the findings in the baseline (new ones as unreviewed)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=60.0, help="--timeout-per-file (default 60)")
    ap.add_argument("--out", default=os.path.join(HERE, "results-ecosystem.json"))
    ap.add_argument("--unpack-mirror", nargs=2, metavar=("GIT_DIR", "DEST"),
                    help="unpack a bare mirror's HEAD (its Python files) into DEST, record the commit, and stop")
    args = ap.parse_args(argv)

    if args.unpack_mirror:
        print(unpack_mirror(*args.unpack_mirror))
        return 0
    trees = collect_trees(args)
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        trees = {k: v for k, v in trees.items() if k in wanted}
    if args.skip:
        unwanted = {s.strip() for s in args.skip.split(",")}
        trees = {k: v for k, v in trees.items() if k not in unwanted}
    if not trees:
        print("no trees to lint", file=sys.stderr)
        return 2
    results = []
    for name, info in trees.items():
        print(f"== {name}: {info['path']} ({info['commit']})", flush=True)
        r = lint_tree(name, info, args)
        print(f"   {r['files']} files, {r['lines']} lines, {r['seconds']:.1f} s, "
              f"{len(r['findings'])} findings, {len(r['errors'])} tool errors", flush=True)
        results.append(r)

    baseline = load_baseline(args.baseline)
    if args.update_baseline:
        baseline = update_baseline(args.baseline, results, baseline)
        print(f"baseline written: {args.baseline}")
    d = diff(results, baseline)
    print()
    print(table(results))
    print()
    status = 0
    for label, keys in (("NEW (not in the baseline)", d["new"]), ("UNREVIEWED", d["unreviewed"])):
        for k in keys:
            f = d["now"][k]
            print(f"{label}: {k[0]}: {f['path']}:{f['row']}:{f['col']}: {f['code']} {f['message']}")
            status = 1
    for k in d["gone"]:
        b = d["base"][k]
        lost = b.get("verdict") == "true-positive"
        print(f"{'LOST TRUE POSITIVE' if lost else 'gone'}: {k[0]}: {b['path']}:{b['row']}:{b['col']}: {b['code']} "
              f"({b.get('verdict')})")
        if lost:
            status = 1
    for r in results:
        if r.get("output_error"):
            print(f"TOOL FAILED: {r['name']}: {r['output_error']}")
            status = 1
    for tree, path, reason in d["our_errors"]:
        print(f"TOOL ERROR (ours): {tree}: {path}: {reason}")
        status = 1
    n = sum(len(r["findings"]) for r in results)
    print(f"{n} findings; {len(d['new'])} new, {len(d['unreviewed'])} unreviewed, {len(d['gone'])} gone "
          f"({len(d['lost_true'])} true positives lost); {len(d['our_errors'])} tool errors of ours")
    with open(args.out, "w") as fh:
        json.dump({"python": sys.version.split()[0], "results": results, "status": status,
                   "table": table(results)}, fh, indent=1)
    print(f"written: {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
