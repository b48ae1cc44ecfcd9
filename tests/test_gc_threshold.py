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


def test_a_final_run_freezes_its_garbage_instead_of_collecting_it():
    """The command line exits after its run: the cycles the analysis left are frozen
    (never traversed again, not even by the collection at interpreter exit)."""
    gc.collect()
    assert gc.get_freeze_count() == 0
    try:
        process.run([str(HAZARD)], lambda _p: DEFAULT_CODES, process.Options(), jobs=1, final=True)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    process.run([str(HAZARD)], lambda _p: DEFAULT_CODES, process.Options(), jobs=1)
    assert gc.get_freeze_count() == 0


def test_only_the_process_entry_point_runs_final(monkeypatch, capsys):
    from fakegrad_lint.cli import main as cli

    seen = []
    real = process.run

    def spy(*a, **kw):
        seen.append(kw.get("final"))
        return real(*a, **{**kw, "final": False})

    monkeypatch.setattr(process, "run", spy)
    cli.main(["check", "--no-cache", str(HAZARD)])  # called as a library: argv given
    monkeypatch.setattr("sys.argv", ["fakegrad-lint", "check", "--no-cache", str(HAZARD)])
    cli.main()  # the console script and `python -m fakegrad_lint` pass no argv
    assert seen == [False, True]
