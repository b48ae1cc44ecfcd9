"""Snapshot tests: every fixture's findings (code, range, message, proof chain,
fix or no-fix reason) and its ``--diff --unsafe-fixes`` equal the ``.snap``
file beside it. Format, naming and corpora: ``tests/snapshots.py``.

Update after a deliberate change (then review ``git diff -- '*.snap'``)::

    FGL_UPDATE_SNAPSHOTS=1 python -m pytest -q tests/test_snapshots.py
    python tests/snapshots.py            # the same without pytest
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter

import pytest

import snapshots as snap

UPDATING = os.environ.get(snap.UPDATE_ENV, "") not in ("", "0")
FOLDERS = snap.corpus_folders()
FIXTURES = [p for _, fixtures in FOLDERS for p in fixtures]


@pytest.fixture(scope="module")
def rendered():
    """``{fixture: snapshot text}``, rendered one folder at a time on first use
    (two CLI runs per folder), so ``-k`` on one fixture renders one folder."""
    folder_of = {p: (folder, fixtures) for folder, fixtures in FOLDERS for p in fixtures}
    done: dict = {}

    def get(fixture):
        folder, fixtures = folder_of[fixture]
        if folder not in done:
            done[folder] = snap.render_folder(folder, fixtures)
        return done[folder][fixture]

    return get


def test_corpora_are_there():
    counts = {folder.relative_to(snap.REPO_ROOT).as_posix(): len(fixtures) for folder, fixtures in FOLDERS}
    assert all(counts.values()), counts
    assert counts["fixtures"] >= 48 and counts["tests/data/fix_cases"] >= 30


# the older unseen/held-out corpora's snapshots run in the slow tier (CI runs it);
# the rule corpus, the fix cases and the notebooks stay in the default run
_SLOW_FOLDERS = ("fixtures/unseen/", "fixtures/heldout/")
_PARAMS = [
    pytest.param(p, id=p.relative_to(snap.REPO_ROOT).as_posix(),
                 marks=[pytest.mark.slow] if p.relative_to(snap.REPO_ROOT).as_posix().startswith(_SLOW_FOLDERS) else [])
    for p in FIXTURES
]


@pytest.mark.parametrize("fixture", _PARAMS)
def test_snapshot(rendered, fixture):
    now = rendered(fixture)
    stored = snap.read(snap.snapshot_path(fixture))
    if stored == now:
        return
    if UPDATING:
        snap.write(snap.snapshot_path(fixture), now)
        return
    pytest.fail(snap.mismatch(fixture, stored, now), pytrace=False)


def test_every_snapshot_has_its_fixture():
    lost = snap.orphans()
    if lost and UPDATING:
        for p in lost:
            p.unlink()
        return
    assert not lost, f"snapshots without a fixture (delete them, or run {snap.UPDATE_HINT}): {[p.name for p in lost]}"


def test_fixture_stems_are_unique_per_folder():
    for folder, fixtures in FOLDERS:
        twice = [s for s, n in Counter(p.stem for p in fixtures).items() if n > 1]
        assert not twice, f"{folder}: fixtures sharing a snapshot name: {twice}"


# ---------------------------------------------------------------------------
# the machinery itself, on a copy: it does not depend on where files live, and
# it catches a changed message, a moved range, a missing and an orphan snapshot

FIXTURE = snap.REPO_ROOT / "fixtures" / "hazard_cat_list.py"


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "fixtures"
    folder.mkdir()
    for p in (FIXTURE, snap.snapshot_path(FIXTURE)):
        shutil.copy(p, folder / p.name)
    return tmp_path, folder / FIXTURE.name


def test_a_copy_elsewhere_renders_the_same_snapshot(copy):
    root, fixture = copy
    rendered = snap.render_all(root)
    assert rendered == {fixture: snap.read(snap.snapshot_path(fixture))}
    assert snap.stale(rendered) == [] and snap.orphans(root) == []


def _first_finding(snapshot_text: str) -> str:
    return next(line for line in snapshot_text.splitlines() if re.match(r"FGL\d{3} \d+:\d+-\d+:\d+ ", line))


def test_a_changed_message_is_caught(copy):
    root, fixture = copy
    snapshot = snap.snapshot_path(fixture)
    stored = snap.read(snapshot)
    line = _first_finding(stored)
    snap.write(snapshot, stored.replace(line, line + " (mutated)"))
    rendered = snap.render_all(root)
    assert snap.stale(rendered) == [fixture]
    message = snap.mismatch(fixture, snap.read(snapshot), rendered[fixture])
    assert f"\n-{line} (mutated)\n" in message and f"\n+{line}\n" in message
    assert snap.UPDATE_HINT in message
    assert snap.update(rendered, root) == [snapshot]
    assert snap.read(snapshot) == stored and snap.stale(rendered) == []


def test_a_moved_range_and_a_changed_fix_are_caught(copy):
    root, fixture = copy
    stored = snap.read(snap.snapshot_path(fixture))
    fixture.write_text("\n" + fixture.read_text(encoding="utf-8"), encoding="utf-8")  # every row one down
    rendered = snap.render_all(root)
    assert snap.stale(rendered) == [fixture]
    message = snap.mismatch(fixture, stored, rendered[fixture])
    line = _first_finding(stored)
    code, (row, col, end_row, end_col) = line.split()[0], map(int, re.split(r"[:-]", line.split()[1]))
    assert f"\n-{code} {row}:{col}-{end_row}:{end_col} " in message
    assert f"\n+{code} {row + 1}:{col}-{end_row + 1}:{end_col} " in message
    hunk = re.search(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$", stored, re.M)
    start, length, new_start, new_length = map(int, hunk.groups())
    assert f"\n+@@ -{start + 1},{length} +{new_start + 1},{new_length} @@\n" in message


def test_a_missing_and_an_orphan_snapshot_are_caught(copy):
    root, fixture = copy
    snapshot = snap.snapshot_path(fixture)
    ghost = snapshot.with_name("ghost.snap")
    shutil.move(snapshot, ghost)
    assert snap.orphans(root) == [ghost]
    rendered = snap.render_all(root)
    assert snap.stale(rendered) == [fixture]
    assert "no snapshot for hazard_cat_list.py" in snap.mismatch(fixture, None, rendered[fixture])
    assert sorted(snap.update(rendered, root)) == sorted([snapshot, ghost])
    assert snapshot.is_file() and not ghost.exists() and snap.orphans(root) == []
