"""Measure how many hazards run clean after ``fakegrad-lint --fix --unsafe-fixes``.

    python tests/measure_fix_rate.py [--verbose] [--reasons] [SET ...]

Sets: ``corpus`` (``fixtures/*.py``), ``cases`` (``tests/data/fix_cases``),
``unseen`` (``fixtures/unseen/*.py``), ``heldout`` (``fixtures/heldout/*.py``), ``fresh``
(``fixtures/fresh/*.py``), ``vault`` (``fixtures/vault/*.py``, the fresh set's sealed half: the
coordinator's to measure), ``vault2`` (``fixtures/vault2/*.py``, sealed: the coordinator's to
measure), ``vault3`` (``fixtures/vault3/*.py``), ``vault4`` (``fixtures/vault4/*.py``), ``vault5`` (``fixtures/vault5/*.py``), ``vault6`` (``fixtures/vault6/*.py``, sealed: the coordinator's to measure), ``vault7`` (``fixtures/vault7/*.py``, sealed: the coordinator's to measure); default all. For each set: the
hazards (programs that end ``hazard`` or ``crash`` under the runtime oracle), how
many of them run clean after the fix with their printed output unchanged
(``test_fix_runtime.judge``), how many fixed files fail (``error``, or a crash
the original did not have), and how many safe programs the fix touched. Apart from the
strict rate it counts the hazards whose fixed run is clean and whose output changed only in
the lines that printed the symptom itself (``grad type: FakeTensor``): a correct fix has to
change those, so the strict rate undercounts programs that print their own hazard.

Project sets (``<corpus>_projects``: every folder ``fixtures/<corpus>_projects/*/`` and
``fixtures/projects/*/`` with a ``project.json``; ``projects`` for the latter): each project
folder is copied to a temporary folder, ``fakegrad-lint check --fix --unsafe-fixes .`` runs on
the whole copy (as a user would), and the original and the fixed copy run with
``oracle.run_projects``; they are judged like the single files (``judge``: a hazard must
end clean with its output unchanged, a crash clean with its output continued; the same
apart count of runs that changed only the lines printing ``FakeTensor``); ``broken`` counts
fixed projects that end ``error`` or newly crash, ``safe touched`` the safe projects of
which a file changed; ``second fix`` the projects where a second ``--fix`` still changes a
file. With ``--reasons`` each unfixed hazard project also lists the ``no fix:`` reasons of
the findings left (the JSON report of that second ``--fix``). ``vault3*`` is
sealed: the coordinator measures it, nobody else reads it.

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

from regen_golden import BASE_ARGS, cli  # noqa: E402

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
    "vault4": lambda: sorted((FIXTURES_DIR / "vault4").glob("*.py")),
    "vault5": lambda: sorted((FIXTURES_DIR / "vault5").glob("*.py")),
    "vault6": lambda: sorted((FIXTURES_DIR / "vault6").glob("*.py")),
    "vault7": lambda: sorted((FIXTURES_DIR / "vault7").glob("*.py")),
}

def project_folders(corpus: str) -> list[Path]:
    """The project folders (with ``project.json``) of ``fixtures/<corpus>/``."""
    return sorted(p.parent for p in (FIXTURES_DIR / corpus).glob("*/project.json"))


PROJECT_SETS = {
    d.name: (lambda d=d: project_folders(d.name))
    for d in sorted(FIXTURES_DIR.iterdir())
    if d.is_dir() and (d.name == "projects" or d.name.endswith("_projects"))
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


def fix_project_copy(folder: Path, dest: Path) -> tuple[Path, bool]:
    """Copy the project ``folder`` to ``dest`` and run ``check --fix --unsafe-fixes .`` on the
    whole copy; ``(copy, whether a second --fix still changed a file)``."""
    import shutil

    copy = dest / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    proc = cli(*BASE_ARGS, "check", "--fix", "--unsafe-fixes", ".", cwd=copy)
    if proc.returncode not in (0, 1) or proc.stderr:
        print(f"  {folder.name}: fakegrad-lint --fix: exit {proc.returncode}: {proc.stderr.strip()[:300]}")
    once = _texts(copy)
    second = cli(*BASE_ARGS, "check", "--fix", "--unsafe-fixes", "--output-format", "json", ".", cwd=copy)
    twice = _texts(copy)
    if twice != once:  # keep what the first fix wrote: that is what is judged
        for rel, data in once.items():
            (copy / rel).write_bytes(data)
    return copy, twice != once, no_fix_reasons(second)


def _texts(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.py"))}


def no_fix_reasons(proc) -> list[str]:
    """``path:line CODE no fix: reason`` for every finding left after the fix (the JSON
    report of the second ``--fix``), its own findings (not those at a helper's line)."""
    import json

    try:
        found = json.loads(proc.stdout or "[]")
    except ValueError:
        return [f"(unreadable json output: {proc.stderr.strip()[:200]})"]
    out = []
    for f in found:
        where = f"{Path(f['filename']).name}:{f['location']['row']} {f['code']}"
        if f.get("fix") is None and f.get("no_fix"):
            out.append(f"{where} no fix: {f.get('no_fix')}")
    return out


def measure_projects(name: str, folders, verbose: bool, reasons: bool = False) -> dict:
    """The project measure (see the module docstring); returns the counts."""
    import oracle

    if not folders:
        print(f"{name}: no projects")
        return {}
    counts = dict(hazards=0, ok=0, symptom_only=0, broken=0, touched_safe=0, second_fix=0, projects=len(folders))
    with tempfile.TemporaryDirectory() as tmp:
        copies, unstable, why = {}, {}, {}
        for folder in folders:
            copies[folder], unstable[folder], why[folder] = fix_project_copy(folder, Path(tmp))
        changed = {f: c for f, c in copies.items() if _texts(c) != _texts(f)}
        results = oracle.run_projects([*folders, *changed.values()], jobs=2)
        for folder in folders:
            before = results[str(folder.resolve())]
            after = results[str(changed[folder].resolve())] if folder in changed else None
            verdict = "not changed by the fix" if after is None else judge(before, after)
            hazard = before.outcome in ("hazard", "crash")
            symptom = verdict != "ok" and only_symptom_lines_changed(before, after)
            if hazard:
                counts["hazards"] += 1
                counts["ok"] += verdict == "ok"
                counts["symptom_only"] += symptom
            elif after is not None:
                counts["touched_safe"] += 1
            if after is not None and (after.outcome == "error" or (after.outcome == "crash" and before.outcome != "crash")):
                counts["broken"] += 1
            counts["second_fix"] += unstable[folder]
            if verbose and (hazard or after is not None):
                print(f"  {folder.name:52} {before.outcome:7} -> {after.outcome if after else '-':7} "
                      f"{'symptom-only ' if symptom else ''}{verdict[:90]}")
            if reasons and hazard and verdict != "ok" and not symptom:
                for line in why[folder]:
                    print(f"      {line[:220]}")
    h = counts["hazards"]
    print(f"{name}: {counts['ok']}/{h} hazard projects fixed ({counts['ok'] / h if h else 0:.0%}); "
          f"{counts['symptom_only']} more clean with only the FakeTensor lines changed; "
          f"{counts['broken']} fixed projects fail; {counts['touched_safe']} safe projects touched; "
          f"{counts['second_fix']} changed by a second --fix ({counts['projects']} projects)")
    return counts


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
    for name in args or [*SETS, *PROJECT_SETS]:
        if name in PROJECT_SETS:
            measure_projects(name, PROJECT_SETS[name](), verbose, reasons="--reasons" in sys.argv)
        else:
            measure(name, SETS[name](), verbose)
