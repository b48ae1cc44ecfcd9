"""The autofix, judged by torch: run programs before and after
``fakegrad-lint --fix --unsafe-fixes`` with the runtime oracle (``tests/oracle.py``).

Fixture corpus (every fixture the fix changes): after the fix the program runs
``clean`` (no real tensor ends with a FakeTensor ``.grad``, no AssertionError, no
other exception) and prints exactly what the original printed when the original
ran to the end; when the original crashed (strict mode, FGL002), the fixed one
prints what the original printed before the crash and then the shapes it goes
on to infer.

Extra programs (``tests/data/fix_cases/*.py``, not part of the corpus): each is
hazardous before the fix (checked); after the fix none fails to parse, none
newly crashes or errors, and at least ``FIX_CASES_MIN_FIXED`` of them run clean
with unchanged output. The cases not fixed today are listed in
``KNOWN_UNFIXED`` so that a regression (or an improvement) shows up by name.

Run ``python tests/test_fix_runtime.py`` to print the per-case table.
"""

from __future__ import annotations

import ast
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from markers import fixture_paths
from regen_golden import BASE_ARGS, cli

pytestmark = pytest.mark.slow  # runs every fixed fixture and case with real torch: about 30 s; `pytest -m slow` (.ci/run runs it)

CASES_DIR = TESTS_DIR / "data" / "fix_cases"
CASES = sorted(CASES_DIR.glob("*.py"))

# Measured with the fix builders of this commit: 29 of 30 cases fixed (97%; 28 before the
# fixes inside helpers, 26 at 3fd231c). Raise it as the builders improve; never lower it to make a run pass.
FIX_CASES_MIN_FIXED = 0.96
# Cases the fix does not make runtime-clean with unchanged output today, and why.
KNOWN_UNFIXED = {
    "flag_loop_both_branches.py": "the mode is conditional on a loop variable",
}


def fix_copies_to(paths, dest: Path) -> dict[str, Path]:
    """Copy ``paths`` to ``dest`` and run the real CLI ``--fix --unsafe-fixes`` there."""
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for p in paths:
        shutil.copyfile(p, dest / p.name)
        out[p.name] = dest / p.name
    proc = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", *out, cwd=dest)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    return out


def judge(before, after) -> str:
    """``ok`` when ``after`` (the fixed run) is what a correct fix gives, else why not."""
    if after.outcome != "clean":
        return f"{after.outcome} after the fix: {after.detail.strip().splitlines()[-1] if after.detail else ''}"
    if before.outcome == "crash":
        if not after.stdout.startswith(before.stdout):
            return f"output before the crash changed: {before.stdout!r} -> {after.stdout!r}"
        if after.stdout == before.stdout:
            return "printed nothing past the point where the original crashed"
        return "ok"
    if after.stdout != before.stdout:
        return f"output changed: {before.stdout!r} -> {after.stdout!r}"
    return "ok"


def run_pairs(originals, workdir: Path, *, changed_only: bool = False):
    """``{name: (original Result, fixed Result or None when unchanged, fixed text)}``;
    with ``changed_only`` the programs the fix leaves alone are not run (no entry)."""
    import oracle

    fixed = fix_copies_to(originals, workdir)
    changed = {p.name: fixed[p.name] for p in originals if fixed[p.name].read_bytes() != p.read_bytes()}
    before = [p for p in originals if p.name in changed or not changed_only]
    results = oracle.run_fixtures([*before, *changed.values()], jobs=2)
    out = {}
    for p in before:
        after = results[str(changed[p.name])] if p.name in changed else None
        out[p.name] = (results[str(p)], after, fixed[p.name].read_text(encoding="utf-8"))
    return out


# --------------------------------------------------------------------------
# fixture corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    pytest.importorskip("torch")
    return run_pairs(fixture_paths(), tmp_path_factory.mktemp("fixed-corpus"), changed_only=True)


def test_corpus_has_fixable_fixtures(corpus):
    assert len(corpus) >= 20, sorted(corpus)
    assert any(before.outcome == "crash" for before, _, _ in corpus.values())
    assert any(before.outcome == "hazard" for before, _, _ in corpus.values())


@pytest.mark.parametrize("name", [p.name for p in fixture_paths()])
def test_fixed_fixture_runs_clean_with_same_output(corpus, name):
    if name not in corpus:
        pytest.skip("the fix leaves this fixture alone (see test_fix_golden.py)")
    before, after, text = corpus[name]
    assert before.outcome in ("hazard", "crash"), f"{name}: a fix changed a {before.outcome} program"
    ast.parse(text)
    verdict = judge(before, after)
    if verdict != "ok" and symptom_lines_only(before, after):
        # the fixture prints its own hazard (`type(net.weight.grad).__name__` in a function the
        # fix cannot redirect): those lines, and only those, must change (FakeTensor -> NoneType)
        verdict = "ok"
    assert verdict == "ok", f"{name}: {verdict}\n--- fixed program ---\n{text}"


def symptom_lines_only(before, after) -> bool:
    from measure_fix_rate import only_symptom_lines_changed

    return only_symptom_lines_changed(before, after)


# --------------------------------------------------------------------------
# extra programs


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    pytest.importorskip("torch")
    return run_pairs(CASES, tmp_path_factory.mktemp("fixed-cases"))


def test_cases_exist():
    assert len(CASES) >= 15
    assert set(KNOWN_UNFIXED) <= {p.name for p in CASES}


@pytest.mark.parametrize("name", [p.name for p in CASES])
def test_case_is_hazardous_and_prints_shapes(cases, name):
    before, _, _ = cases[name]
    assert before.outcome in ("hazard", "crash"), f"{name} is not hazardous: {before.outcome} {before.detail}"
    if before.outcome == "hazard":
        assert before.stdout.strip(), f"{name} prints nothing"


@pytest.mark.parametrize("name", [p.name for p in CASES])
def test_fix_never_breaks_a_case(cases, name):
    before, after, text = cases[name]
    ast.parse(text)
    if after is None:
        return
    assert after.outcome != "error", f"{name}: the fixed program fails:\n{after.detail}\n{text}"
    assert not (after.outcome == "crash" and before.outcome != "crash"), f"{name}: the fix made it crash\n{text}"


@pytest.mark.parametrize("name", [p.name for p in CASES])
def test_case_fixed_unless_known(cases, name):
    before, after, text = cases[name]
    verdict = "not changed by the fix" if after is None else judge(before, after)
    if name in KNOWN_UNFIXED:
        assert verdict != "ok", f"{name} is fixed now: remove it from KNOWN_UNFIXED"
    else:
        assert verdict == "ok", f"{name}: {verdict}\n--- fixed program ---\n{text}"


def test_fraction_of_cases_fixed(cases):
    ok = [n for n, (b, a, _) in cases.items() if a is not None and judge(b, a) == "ok"]
    assert len(ok) / len(cases) >= FIX_CASES_MIN_FIXED, f"{len(ok)}/{len(cases)} fixed: {sorted(ok)}"


if __name__ == "__main__":  # the measurement, as a table
    with tempfile.TemporaryDirectory() as tmp:
        res = run_pairs(CASES, Path(tmp))
        n_ok = 0
        for name, (b, a, _) in sorted(res.items()):
            verdict = "not changed by the fix" if a is None else judge(b, a)
            n_ok += verdict == "ok"
            print(f"{name:36} {b.outcome:7} -> {a.outcome if a else '-':7} {verdict}")
        print(f"{n_ok}/{len(res)} fixed ({n_ok / len(res):.0%})")
