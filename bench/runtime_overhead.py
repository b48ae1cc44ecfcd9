"""Cost of the runtime watcher.

    python bench/runtime_overhead.py [--steps 200] [--repeat 5]

1. MLP training loops (no fake mode anywhere), a tiny one (op overhead
   dominates) and a mid-sized one: the watcher's cost on ordinary code, which
   is what ``confirm`` and ``pytest --fakegrad`` add to every run. An empty
   ``TorchFunctionMode`` is measured too: most of the cost is torch's own
   Python-level dispatch to any such mode, not the watcher's checks;
2. shape inference of the same MLP under FakeTensorMode(allow_non_fake_inputs=True)
   (real parameters enter fake ops, forward only): the slow path.

Prints the best-of-``repeat`` time per step with and without the watcher and
the ratio. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from fakegrad_lint.runtime import Watcher


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    )


def train(model, opt, batches):
    for x, y in batches:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def infer_shapes(model, steps):
    with FakeTensorMode(allow_non_fake_inputs=True):
        for _ in range(steps):
            out = model(torch.randn(16, 32))
    return out.shape


def pair(plain, other, repeat):
    """Best-of-``repeat`` times of both, measured alternately so load changes hit both alike."""
    a, b = [], []
    for _ in range(repeat):
        for fn, out in ((plain, a), (other, b)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return min(a), min(b)


class _Passthrough(torch.overrides.TorchFunctionMode):
    """An empty TorchFunctionMode: the cost torch itself charges for any such mode."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _training_rows(width, batch, steps, repeat):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 1)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(batch, width), torch.randn(batch, 1)) for _ in range(steps)]
    train(model, opt, batches[:10])  # warm up

    def plain():
        train(model, opt, batches)

    def passthrough():
        with _Passthrough():
            train(model, opt, batches)

    def watched():
        with Watcher() as w:
            train(model, opt, batches)
        assert w.records == []

    label = f"MLP {width}x{width}, batch {batch}: train step"
    return [
        (f"{label} (empty TorchFunctionMode)", steps, *pair(plain, passthrough, repeat)),
        (f"{label} (watcher)", steps, *pair(plain, watched, repeat)),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = _training_rows(32, 16, ns.steps, ns.repeat)
    rows += _training_rows(512, 256, max(ns.steps // 10, 5), ns.repeat)

    model = mlp()
    fake_steps = max(ns.steps // 10, 5)
    infer_shapes(model, 2)

    def plain_fake():
        infer_shapes(model, fake_steps)

    def watched_fake():
        with Watcher() as w:
            infer_shapes(model, fake_steps)
        assert w.records and w.events() == []

    rows.append(("fake-mode forward, real params (slow path)", fake_steps, *pair(plain_fake, watched_fake, ns.repeat)))
    print(f"torch {torch.__version__}, 1 thread, best of {ns.repeat}, time per step")
    print(f"{'case':62} {'plain':>10} {'with':>10} {'ratio':>6}")
    for name, steps, plain, watched in rows:
        print(f"{name:62} {plain / steps * 1e6:8.0f}us {watched / steps * 1e6:8.0f}us {watched / plain:5.2f}x")


if __name__ == "__main__":
    main()
