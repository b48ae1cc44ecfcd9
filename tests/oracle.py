"""Runtime oracle for the fixture corpus, independent of ``fakegrad_lint.runtime``.

It runs a script with real torch and classifies what happened:

- ``crash``:  the script raised torch's ``AssertionError`` "Please convert all
  Tensors to FakeTensors ..." (a real tensor met a strict FakeTensorMode);
- ``hazard``: a backward left a FakeTensor ``.grad`` on a real leaf of its graph (the
  backward functions are wrapped for the run), or after the run some real tensor holds a FakeTensor
  ``.grad`` (found by scanning ``gc.get_objects()``), or ``torch.autograd.grad``
  returned a FakeTensor for a real input (the function is wrapped for the run);
- ``clean``:  neither;
- ``error``:  any other exception (or a timeout): a bug in the script itself.

Importing torch and warming up FakeTensorMode costs seconds, so one runner
process (``python tests/oracle.py --serve``) does that once and then forks a
child per script. The runner is a separate process, so whatever the calling
test process imported (or patched) does not matter. Public helpers:

    run_fixture(path) -> (outcome, stdout)
    run_fixtures(paths, jobs=2) -> {path: Result}
    run_project(folder) -> Result
    run_projects(folders, jobs=2) -> {folder: Result}

A project is a folder with ``project.json`` (``{"entry": "train.py", ...}``): its entry
script runs as ``__main__`` with the project folder as the working directory and
first on ``sys.path``, so that it can import the project's other modules.

This module itself never imports torch in the calling process.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

CRASH_TEXT = "Please convert all Tensors to FakeTensors"
CHILD_TIMEOUT_S = 120


@dataclass(frozen=True)
class Result:
    path: str
    outcome: str  # "crash" | "hazard" | "clean" | "error"
    stdout: str
    detail: str  # reason for hazard / traceback for error / crash message


# --------------------------------------------------------------------------
# Calling side (no torch here)
# --------------------------------------------------------------------------

_lock = threading.Lock()
_server: subprocess.Popen | None = None


def _start_server() -> subprocess.Popen:
    global _server
    if _server is not None and _server.poll() is None:
        return _server
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    _server = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
        env=env,
    )
    ready = _server.stdout.readline()
    if ready.strip() != "ready":
        raise RuntimeError(f"oracle runner failed to start: {ready!r}")
    atexit.register(_stop_server)
    return _server


def _stop_server() -> None:
    global _server
    if _server is not None and _server.poll() is None:
        try:
            _server.stdin.close()
            _server.wait(timeout=10)
        except Exception:  # pragma: no cover - best effort
            _server.kill()
    _server = None


def run_fixtures(paths, jobs: int = 2) -> dict[str, Result]:
    """Run every script in ``paths`` (at most ``jobs`` at a time); return results by path."""
    paths = [os.path.abspath(str(p)) for p in paths]
    with _lock:
        server = _start_server()
        server.stdin.write(json.dumps({"paths": paths, "jobs": jobs}) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
    if not line:
        raise RuntimeError("oracle runner died")
    raw = json.loads(line)
    return {p: Result(**raw[p]) for p in paths}


def read_project(folder) -> dict:
    """The parsed ``project.json`` of a project folder."""
    with open(os.path.join(str(folder), "project.json"), encoding="utf-8") as fh:
        return json.load(fh)


def run_projects(folders, jobs: int = 2) -> dict[str, Result]:
    """Run the entry of every project folder in ``folders``; return results by folder."""
    items = []
    for folder in folders:
        root = os.path.abspath(str(folder))
        entry = os.path.join(root, read_project(root)["entry"])
        items.append({"path": entry, "root": root})
    with _lock:
        server = _start_server()
        server.stdin.write(json.dumps({"paths": items, "jobs": jobs}) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
    if not line:
        raise RuntimeError("oracle runner died")
    raw = json.loads(line)
    return {it["root"]: Result(**raw[it["root"]]) for it in items}


def run_project(folder) -> Result:
    """Run one project's entry with real torch (see the module docstring)."""
    return run_projects([folder], jobs=1)[os.path.abspath(str(folder))]


def run_fixture(path) -> tuple[str, str]:
    """Run one script with real torch; return ``(outcome, stdout)``."""
    res = run_fixtures([path], jobs=1)[os.path.abspath(str(path))]
    return res.outcome, res.stdout


# --------------------------------------------------------------------------
# Runner side (imports torch once, forks per script)
# --------------------------------------------------------------------------


def _forget_project_modules(root: str) -> None:
    """Make the project's own top-level modules importable from ``root`` even where the
    runner happened to import a module of the same name."""
    names = set()
    for entry in os.listdir(root):
        full = os.path.join(root, entry)
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif os.path.isdir(full):
            names.add(entry)
    for mod in list(sys.modules):
        if mod.split(".", 1)[0] in names:
            del sys.modules[mod]


def _child(path: str, result_path: str, out_path: str, root: str | None = None) -> None:
    """In the forked child: run ``path`` as __main__, classify, write JSON.

    With ``root`` (a project folder) the folder is first on ``sys.path``."""
    import gc
    import runpy
    import traceback
    import warnings

    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    sys.stdout.flush()
    os.dup2(out_fd, 1)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    errors: list[str] = []
    grad_leaks: list[str] = []

    real_grad = torch.autograd.grad

    def wrapped_grad(outputs, inputs, *args, **kwargs):
        result = real_grad(outputs, inputs, *args, **kwargs)
        ins = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        for i, (inp, g) in enumerate(zip(ins, result)):
            if not isinstance(inp, FakeTensor) and isinstance(g, FakeTensor):
                grad_leaks.append(f"torch.autograd.grad returned a FakeTensor for real input #{i}")
        return result

    real_backward = torch.autograd.backward

    def real_leaves(tensors):
        """The real leaves an autograd graph would accumulate into."""
        tensors = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        leaves, seen, stack = [], set(), []
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                continue
            if t.grad_fn is not None:
                stack.append(t.grad_fn)
            elif t.requires_grad:
                leaves.append(t)
        while stack:
            fn = stack.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            var = getattr(fn, "variable", None)
            if isinstance(var, torch.Tensor):
                leaves.append(var)
            stack.extend(nf for nf, _ in fn.next_functions if nf is not None)
        return [t for t in leaves if not isinstance(t, FakeTensor)]

    def wrapped_backward(tensors, *args, **kwargs):
        try:
            leaves = real_leaves(tensors)
            inputs = kwargs.get("inputs")
            if inputs is not None:
                leaves += real_leaves(inputs)
        except Exception:  # noqa: BLE001 - never let the oracle change behaviour
            leaves = []
        result = real_backward(tensors, *args, **kwargs)
        for leaf in leaves:
            if isinstance(leaf.grad, FakeTensor):
                grad_leaks.append(f"backward left a FakeTensor .grad on a real tensor of shape {tuple(leaf.shape)}")
        return result

    torch.autograd.grad = wrapped_grad
    torch.autograd.backward = wrapped_backward
    outcome = "clean"
    detail = ""
    namespace = None
    old_argv = sys.argv
    sys.argv = [path]
    if root is not None:
        _forget_project_modules(root)
        sys.path.insert(0, root)
    try:
        namespace = runpy.run_path(path, run_name="__main__")
    except BaseException as exc:  # noqa: BLE001
        chain, e = [], exc
        while e is not None and e not in chain:
            chain.append(e)
            e = e.__cause__ or e.__context__
        if any(isinstance(e, AssertionError) and CRASH_TEXT in str(e) for e in chain):
            outcome = "crash"
            detail = next(str(e) for e in chain if CRASH_TEXT in str(e)).splitlines()[0]
        else:
            outcome = "error"
            detail = "".join(traceback.format_exception(exc))
    finally:
        sys.argv = old_argv
        torch.autograd.grad = real_grad
        torch.autograd.backward = real_backward
    if outcome == "clean":  # also catch fake grads set without a backward call we saw
        gc.collect()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for obj in gc.get_objects():
                try:
                    if not isinstance(obj, torch.Tensor) or isinstance(obj, FakeTensor):
                        continue
                    if not (obj.is_leaf or obj.retains_grad):
                        continue
                    g = obj.grad
                except Exception:  # noqa: BLE001 - exotic objects
                    continue
                if isinstance(g, FakeTensor):
                    grad_leaks.append(f"real tensor of shape {tuple(obj.shape)} has a FakeTensor .grad")
        if grad_leaks:
            outcome = "hazard"
            detail = "; ".join(sorted(set(grad_leaks)))
    del namespace
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    with open(result_path, "w") as fh:
        json.dump({"outcome": outcome, "detail": detail}, fh)


def _serve() -> None:
    import gc
    import tempfile
    import time

    proto = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing but the protocol may reach the pipe

    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    torch.set_num_threads(1)
    # Warm up lazy imports of the fake-tensor machinery once, before forking.
    x = torch.randn(2, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = (x * 2).sum()
        y.backward()
    with FakeTensorMode() as m:
        (m.from_tensor(torch.nn.Linear(3, 2).weight) @ torch.randn(3, 2)).sum().backward()
    del x, y
    import torch.fx.experimental.proxy_tensor  # noqa: F401
    import torch.func  # noqa: F401
    import torch._functorch.aot_autograd  # noqa: F401

    # Everything alive now belongs to the runner: freeze it so that in the children
    # gc.collect() stays cheap (no copy-on-write of the whole heap) and
    # gc.get_objects() returns only what the script created.
    gc.collect()
    gc.freeze()
    proto.write("ready\n")
    proto.flush()
    tmp = tempfile.mkdtemp(prefix="fgl-oracle-")
    counter = 0
    for line in sys.stdin:
        req = json.loads(line)
        pending = list(req["paths"])
        jobs = max(1, int(req.get("jobs", 2)))
        running: dict[int, tuple[str, str, str, float]] = {}
        results: dict[str, dict] = {}
        while pending or running:
            while pending and len(running) < jobs:
                item = pending.pop(0)
                if isinstance(item, dict):  # a project: {"path": entry, "root": folder}
                    path, root = item["path"], item["root"]
                else:
                    path, root = item, None
                counter += 1
                res_p = os.path.join(tmp, f"{counter}.json")
                out_p = os.path.join(tmp, f"{counter}.out")
                err_p = os.path.join(tmp, f"{counter}.err")
                pid = os.fork()
                if pid == 0:  # child
                    code = 0
                    try:
                        err_fd = os.open(err_p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                        os.dup2(err_fd, 2)
                        os.chdir(root or os.path.dirname(path))
                        _child(path, res_p, out_p, root)
                    except BaseException:  # noqa: BLE001
                        import traceback

                        traceback.print_exc()
                        code = 1
                    finally:
                        os._exit(code)
                running[pid] = (root or path, res_p, out_p, time.monotonic())
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                for p, (path, _r, _o, started) in list(running.items()):
                    if time.monotonic() - started > CHILD_TIMEOUT_S:
                        os.kill(p, 9)
                time.sleep(0.005)
                continue
            if pid not in running:
                continue
            path, res_p, out_p, _ = running.pop(pid)
            stdout = _read(out_p)
            try:
                with open(res_p) as fh:
                    data = json.load(fh)
            except OSError:
                err = _read(res_p[: -len(".json")] + ".err")
                data = {"outcome": "error", "detail": f"runner child died (status {status}): {err[-2000:]}"}
            results[path] = {"path": path, "stdout": stdout, **data}
            for f in (res_p, out_p, res_p[: -len(".json")] + ".err"):
                try:
                    os.unlink(f)
                except OSError:
                    pass
        proto.write(json.dumps(results) + "\n")
        proto.flush()


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:  # manual use: python tests/oracle.py fixtures/*.py fixtures/projects/*/
        args = sys.argv[1:]
        projects = [a for a in args if os.path.isfile(os.path.join(a, "project.json"))]
        scripts = [a for a in args if a not in projects]
        found = {**run_fixtures(scripts), **run_projects(projects)}
        for p, r in sorted(found.items()):
            print(f"{r.outcome:7} {os.path.relpath(p)}  {r.detail.splitlines()[0] if r.detail else ''}")
