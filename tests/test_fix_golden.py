"""Golden files of the autofix: ``fixtures/<name>.fixed.py``.

Every fixture is copied to a temporary folder and fixed by the real CLI
(``python -m fakegrad_lint --fix --unsafe-fixes``); the result must be exactly the
golden file, byte for byte. Regenerate the goldens with
``python tests/regen_golden.py`` after a deliberate change to the fix builders,
and review the diff.

Also checked here: fixtures without a golden are left alone (bytes and mtime),
fixing a golden again changes nothing, a golden parses and no longer has the
findings that were fixed, ``--fix`` alone differs from ``--unsafe-fixes`` exactly
for the fixtures with unsafe fixes, ``--diff`` writes nothing and ``patch``
turns its output into the goldens.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from markers import fixture_paths as marker_fixture_paths
from markers import markers_in_source
from regen_golden import (
    BASE_ARGS,
    FIXTURES_DIR,
    GOLDEN_SUFFIX,
    cli,
    fix_copies,
    fixture_paths,
    golden_path,
)

from fakegrad_lint.engine.lint import check_source
from fakegrad_lint.findings import Applicability
from fakegrad_lint.rules import DEFAULT_CODES

FIXTURES = fixture_paths()
GOLDENS = {p.name: golden_path(p) for p in FIXTURES if golden_path(p).exists()}
WITH_GOLDEN = [p for p in FIXTURES if p.name in GOLDENS]
OLD_MTIME_NS = 1_000_000_000 * 10**9  # 2001: any rewrite shows up as a new mtime


def _copy_all(paths, dest: Path, rename=None) -> dict[str, Path]:
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for p in paths:
        target = dest / (rename(p) if rename else p.name)
        shutil.copyfile(p, target)
        os.utime(target, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
        out[p.name] = target
    return out


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {q.name: (q.read_bytes(), q.stat().st_mtime_ns) for q in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def fixed_unsafe(tmp_path_factory):
    """``{fixture name: (bytes, mtime_ns)}`` after ``--fix --unsafe-fixes`` on copies."""
    work = tmp_path_factory.mktemp("unsafe")
    _copy_all(FIXTURES, work)
    proc = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", *[p.name for p in FIXTURES], cwd=work)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    return _snapshot(work)


@pytest.fixture(scope="module")
def fixed_safe(tmp_path_factory):
    """``{fixture name: bytes}`` after ``--fix`` (safe fixes only) on copies."""
    fixed, proc = fix_copies(FIXTURES, tmp_path_factory.mktemp("safe"), "--fix")
    assert proc.stderr == ""
    return fixed


@pytest.fixture(scope="module")
def applicabilities(tmp_path_factory):
    """``{fixture name: {applicability of every finding's fix}}`` from the CLI's JSON."""
    work = tmp_path_factory.mktemp("json")
    _copy_all(FIXTURES, work)
    proc = cli(*BASE_ARGS, "--output-format", "json", *[p.name for p in FIXTURES], cwd=work)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    out: dict[str, set] = {p.name: set() for p in FIXTURES}
    for d in json.loads(proc.stdout):
        out[Path(d["filename"]).name].add(d["fix"]["applicability"] if d["fix"] else None)
    return out


def test_goldens_exist_and_none_is_stale():
    assert len(GOLDENS) >= 20, "expected golden files for the fixable fixtures: run python tests/regen_golden.py"
    names = {p.name for p in FIXTURES}
    for g in FIXTURES_DIR.glob("*" + GOLDEN_SUFFIX):
        assert g.name[: -len(GOLDEN_SUFFIX)] + ".py" in names, f"{g.name} has no fixture: run tests/regen_golden.py"


def test_marker_tests_do_not_lint_goldens():
    # The goldens keep the marker comments of the fixed lines; the marker test of
    # the corpus must therefore never treat them as fixtures.
    linted = marker_fixture_paths()
    assert not [p for p in linted if p.name.endswith(GOLDEN_SUFFIX)]
    assert {p.name for p in linted} == {p.name for p in FIXTURES}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fix_produces_golden(fixed_unsafe, path):
    got, mtime = fixed_unsafe[path.name]
    if path.name in GOLDENS:
        want = GOLDENS[path.name].read_bytes()
        assert want != path.read_bytes(), f"{GOLDENS[path.name].name} equals its fixture: run tests/regen_golden.py"
        assert got == want, f"{path.name}: --fix --unsafe-fixes differs from {GOLDENS[path.name].name}"
    else:
        assert got == path.read_bytes(), f"{path.name} was changed by --fix --unsafe-fixes but has no golden file"
        assert mtime == OLD_MTIME_NS, f"{path.name} has nothing to fix but was rewritten"


def test_fixing_a_golden_again_changes_nothing(tmp_path):
    goldens = list(GOLDENS.values())
    copies = _copy_all(goldens, tmp_path)
    before = _snapshot(tmp_path)
    proc = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", *[c.name for c in copies.values()], cwd=tmp_path)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    after = _snapshot(tmp_path)
    changed = sorted(n for n in before if before[n] != after[n])
    assert not changed, f"a second --fix --unsafe-fixes changed {changed}"
    assert set(after) == set(before)


def _fixable(finding) -> bool:
    return (
        finding.code in DEFAULT_CODES
        and finding.fix is not None
        and finding.fix.applicability in (Applicability.SAFE, Applicability.UNSAFE)
    )


@pytest.mark.parametrize("path", WITH_GOLDEN, ids=[p.name for p in WITH_GOLDEN])
def test_golden_no_longer_has_the_fixed_findings(path):
    source = path.read_text(encoding="utf-8")
    golden = GOLDENS[path.name].read_text(encoding="utf-8")
    ast.parse(golden)
    before = check_source(source, str(path))
    after = check_source(golden, str(GOLDENS[path.name]))
    assert any(_fixable(f) for f in before), f"{path.name} has a golden but no applicable fix"

    # The marker comments travel with their statements: map the rows of the
    # original's marked lines onto the golden's in order.
    rows_before = sorted({r for r, _ in markers_in_source(source)})
    rows_after = sorted({r for r, _ in markers_in_source(golden)})
    assert len(rows_before) == len(rows_after), f"{path.name}: the fix removed or duplicated a marked line"
    row_map = dict(zip(rows_before, rows_after))
    assert {(row_map[r], c) for r, c in markers_in_source(source)} == markers_in_source(golden)

    fixed = {(row_map.get(f.location.row), f.code) for f in before if _fixable(f)}
    left = {(row_map.get(f.location.row), f.code) for f in before if not _fixable(f)}
    got = {(f.location.row, f.code) for f in after}
    lines = golden.splitlines()

    def show(rows):
        return "\n".join(f"    line {r} {c}: {lines[r - 1].strip() if r else '?'}" for r, c in sorted(rows))

    assert not got & fixed, f"{path.name}: fixed findings still reported in the golden:\n{show(got & fixed)}"
    assert got <= left, f"{path.name}: the fix introduced findings:\n{show(got - left)}"


@pytest.mark.slow  # fixes every fixture twice: slow tier (CI runs it)
@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_safe_only_fix_differs_exactly_for_unsafe_fixes(fixed_safe, applicabilities, path):
    kinds = applicabilities[path.name]
    original = path.read_bytes()
    golden = GOLDENS[path.name].read_bytes() if path.name in GOLDENS else original
    safe_only = fixed_safe[path.name]
    assert (golden != original) == bool(kinds & {"safe", "unsafe"})
    if "unsafe" in kinds:
        assert safe_only != golden, f"{path.name}: --fix applied an unsafe fix"
    else:
        assert safe_only == golden, f"{path.name}: only safe fixes, yet --fix differs from --unsafe-fixes"
    assert (safe_only != original) == ("safe" in kinds)


def _snapshot_fixabilities() -> set:
    """The applicability of every fix of a default-rule finding in the fixtures'
    snapshots (``tests/test_snapshots.py`` keeps them equal to the CLI's output, in
    the default tier: read here instead of running the CLI over the corpus again)."""
    import re

    kinds, code = set(), None
    for p in FIXTURES:
        for line in p.with_suffix(".snap").read_text(encoding="utf-8").splitlines():
            m = re.match(r"(FGL\d{3}) \d+:\d+-\d+:\d+ ", line)
            if m:
                code = m.group(1)
                continue
            m = re.match(r"  fix \(([a-z-]+)\)", line)
            if m and code in DEFAULT_CODES:
                kinds.add(m.group(1))
    return kinds


def test_every_fixability_is_represented():
    kinds = _snapshot_fixabilities()
    assert {"safe", "unsafe"} <= kinds, kinds  # otherwise the test above checks one side only


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
def test_snapshot_fixabilities_are_the_clis(applicabilities):
    assert _snapshot_fixabilities() == set().union(*applicabilities.values()) - {None}


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
def test_diff_writes_nothing_and_patch_reproduces_the_goldens(tmp_path):
    if shutil.which("patch") is None:
        pytest.skip("no patch executable")
    look = tmp_path / "look"
    _copy_all(FIXTURES, look)
    before = _snapshot(look)
    proc = cli(*BASE_ARGS, "--diff", "--unsafe-fixes", *[p.name for p in FIXTURES], cwd=look)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert _snapshot(look) == before, "--diff wrote to the files (or created some)"
    assert {line[4:].strip() for line in proc.stdout.splitlines() if line.startswith("+++ ")} == set(GOLDENS)

    apply = tmp_path / "apply"
    _copy_all(FIXTURES, apply)
    diff_file = tmp_path / "fixes.diff"
    diff_file.write_text(proc.stdout, encoding="utf-8")
    patched = subprocess.run(
        ["patch", "-p0", "--forward", "--no-backup-if-mismatch", "-i", str(diff_file)],
        cwd=apply, capture_output=True, text=True, timeout=60, check=False,
    )
    assert patched.returncode == 0, patched.stdout + patched.stderr
    for p in FIXTURES:
        want = GOLDENS[p.name].read_bytes() if p.name in GOLDENS else p.read_bytes()
        assert (apply / p.name).read_bytes() == want, f"patching {p.name} with the --diff output differs from its golden"
    assert sorted(q.name for q in apply.iterdir()) == sorted(p.name for p in FIXTURES)
