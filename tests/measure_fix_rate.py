"""Measure how many hazards run clean after ``fakegrad-lint --fix --unsafe-fixes``.

    python tests/measure_fix_rate.py [--verbose] [SET ...]

Sets: ``corpus`` (``fixtures/*.py``), ``cases`` (``tests/data/fix_cases``),
``unseen`` (``fixtures/unseen/*.py``), ``heldout`` (``fixtures/heldout/*.py``), ``fresh``
(``fixtures/fresh/*.py``), ``vault`` (``fixtures/vault/*.py``, the fresh set's sealed half: the
coordinator's to measure), ``vault2`` (``fixtures/vault2/*.py``, sealed: the coordinator's to
measure), ``vault3`` (``fixtures/vault3/*.py``, sealed: the coordinator's to measure); default all. For each set: the
hazards (programs that end ``hazard`` or ``crash`` under the runtime oracle), how
many of them run clean after the fix with their printed output unchanged
(``test_fix_runtime.judge``), how many fixed files fail (``error``, or a crash
the original did not have), and how many safe programs the fix touched. Apart from the
strict rate it counts the hazards whose fixed run is clean and whose output changed only in
the lines that printed the symptom itself (``grad type: FakeTensor``): a correct fix has to
change those, so the strict rate undercounts programs that print their own hazard.

The fixer is whatever ``python -m fakegrad_lint`` imports: put another checkout
first on ``PYTHONPATH`` to measure it (the before/after numbers of a change).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS_DIR))

from test_fix_runtime import CASES, judge, run_pairs  # noqa: E402

from markers import FIXTURES_DIR, fixture_paths  # noqa: E402

SETS = {
    "corpus": fixture_paths,
    "cases": lambda: CASES,
    "unseen": lambda: sorted((FIXTURES_DIR / "unseen").glob("*.py")),
    "heldout": lambda: sorted((FIXTURES_DIR / "heldout").glob("*.py")),
    "blind": lambda: sorted((FIXTURES_DIR / "blind").glob("*.py")),
    "sealed": lambda: sorted((FIXTURES_DIR / "sealed").glob("*.py")),
    "fresh": lambda: sorted((FIXTURES_DIR / "fresh").glob("*.py")),
    "vault": lambda: sorted((FIXTURES_DIR / "vault").glob("*.py")),
    "vault2": lambda: sorted((FIXTURES_DIR / "vault2").glob("*.py")),
    "vault3": lambda: sorted((FIXTURES_DIR / "vault3").glob("*.py")),
}


def measure(name: str, paths, verbose: bool) -> None:
    if not paths:
        print(f"{name}: no programs")
        return
    with tempfile.TemporaryDirectory() as tmp:
        res = run_pairs(paths, Path(tmp))
    hazards = ok = symptom_only = broken = touched_safe = 0
    for prog, (before, after, _) in sorted(res.items()):
        verdict = "not changed by the fix" if after is None else judge(before, after)
        if before.outcome in ("hazard", "crash"):
            hazards += 1
            ok += verdict == "ok"
            symptom_only += verdict != "ok" and only_symptom_lines_changed(before, after)
        elif after is not None:
            touched_safe += 1
        if after is not None and (after.outcome == "error" or (after.outcome == "crash" and before.outcome != "crash")):
            broken += 1
        if verbose and (before.outcome in ("hazard", "crash") or after is not None):
            print(f"  {prog:48} {before.outcome:7} -> {after.outcome if after else '-':7} {verdict[:90]}")
    rate = ok / hazards if hazards else 0
    print(f"{name}: {ok}/{hazards} hazards fixed ({rate:.0%}); {broken} fixed files fail; "
          f"{touched_safe} safe programs touched; {symptom_only} more run clean with only the lines "
          f"that printed the symptom (a FakeTensor) changed")


def only_symptom_lines_changed(before, after) -> bool:
    """The fixed program ran clean and its output differs from the original's only in
    lines that printed the hazard itself (the original line names ``FakeTensor``, e.g.
    ``grad type: FakeTensor``): a correct fix must change those. Counted apart from the
    strict rate, never added to it."""
    if after is None or after.outcome != "clean" or before.outcome != "hazard":
        return False
    old, new = before.stdout.splitlines(), after.stdout.splitlines()
    if len(old) != len(new):
        return False
    changed = [o for o, n in zip(old, new) if o != n]
    return bool(changed) and all("FakeTensor" in o for o in changed)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "--verbose" in sys.argv
    for name in args or list(SETS):
        measure(name, SETS[name](), verbose)
