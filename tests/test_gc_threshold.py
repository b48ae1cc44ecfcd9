"""A run checks with the engine's cyclic-GC thresholds and restores the caller's.

The analysis leaves cycles behind; with Python's default thresholds the full
collections cost 15-20 % of the CPU on files that name a fake mode (see
bench/README.md), so ``engine.process.run`` raises them while it checks.
"""

from __future__ import annotations

import gc
from pathlib import Path

from fakegrad_lint.engine import lint, process
from fakegrad_lint.rules import DEFAULT_CODES

HAZARD = Path(__file__).resolve().parent.parent / "fixtures" / "hazard_autograd_backward.py"


def test_run_checks_with_the_gc_thresholds_and_restores_them(monkeypatch):
    seen = []
    real = lint.analyze

    def spy(*a, **kw):
        seen.append(gc.get_threshold())
        return real(*a, **kw)

    monkeypatch.setattr(lint, "analyze", spy)
    before = gc.get_threshold()
    assert before != process.GC_THRESHOLD
    out = process.run([str(HAZARD)], lambda _p: DEFAULT_CODES, process.Options(), jobs=1)
    assert seen and set(seen) == {process.GC_THRESHOLD}
    assert any(r.findings for r in out.results)  # the file was really checked
    assert gc.get_threshold() == before
