"""Snapshots of what the CLI says about every fixture, in a file beside it.

    python tests/snapshots.py            # rewrite every snapshot (and drop orphans)
    python tests/snapshots.py --check    # exit 1, listing them, if any is stale
    FGL_UPDATE_SNAPSHOTS=1 python -m pytest -q tests/test_snapshots.py   # the same from pytest

Naming: the snapshot of ``<dir>/<stem>.<ext>`` is ``<dir>/<stem>.snap``
(``fixtures/hazard_cat_list.py`` -> ``fixtures/hazard_cat_list.snap``,
``fixtures/notebooks/hazard.ipynb`` -> ``fixtures/notebooks/hazard.snap``), so
``ls`` shows a fixture, its golden ``.fixed.py`` and its snapshot side by side.
Two fixtures of one folder never share a stem (a test checks it).

A snapshot is plain text, like ruff's insta snapshots or TorchFix's ``.txt``
files, made only from the CLI's public output (``python -m fakegrad_lint``,
isolated from any configuration, no cache, every rule: ``--select ALL``):

- one block per finding (JSON output, sorted by cell, position and code): the
  code and range ``row:col-endrow:endcol`` (1-based, as the text output shows;
  ``cell N`` first in a notebook), the message, the proof chain (one ``trace``
  line per step: kind, range, message; a step in another file names it), then
  the fix: ``fix (safe|unsafe|display-only): message`` and one line per edit
  (range and the new text as a JSON string), or ``no fix: reason`` / ``no fix``;
- then the fix diff, exactly as ``--diff --unsafe-fixes`` prints it for this file.

The CLI runs once per folder and mode (one JSON run, one diff run) with the
folder as its working directory and bare file names, so the snapshots do not
depend on where the checkout lives. Corpora: ``fixtures/*.py`` (the rule corpus,
goldens excluded), ``fixtures/notebooks/*.ipynb``, ``tests/data/fix_cases/*.py``,
``fixtures/unseen/*.py`` and ``fixtures/heldout/*.py``.

``tests/test_snapshots.py`` regenerates every snapshot in memory and compares.
After a deliberate change of messages, ranges, traces or fixes, regenerate and
review ``git diff -- '*.snap'``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from regen_golden import BASE_ARGS, cli  # noqa: E402  (the one way the tests run the CLI)

SUFFIX = ".snap"
UPDATE_ENV = "FGL_UPDATE_SNAPSHOTS"
UPDATE_HINT = f"{UPDATE_ENV}=1 python -m pytest -q tests/test_snapshots.py  (or: python tests/snapshots.py)"

# (folder relative to the repository, glob of its fixtures)
CORPORA = (
    ("fixtures", "*.py"),
    ("fixtures/notebooks", "*.ipynb"),
    ("tests/data/fix_cases", "*.py"),
    ("fixtures/unseen", "*.py"),
    ("fixtures/heldout", "*.py"),
)
SELECT = ("--select", "ALL")


def is_fixture(path: Path) -> bool:
    return not path.name.endswith(".fixed.py")


def fixtures_in(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.glob(pattern) if is_fixture(p))


def snapshot_path(fixture: Path) -> Path:
    return fixture.with_suffix(SUFFIX)


def corpus_folders(root: Path = REPO_ROOT) -> list[tuple[Path, list[Path]]]:
    return [(root / rel, fixtures_in(root / rel, pattern)) for rel, pattern in CORPORA]


# ---------------------------------------------------------------------------
# rendering


def _range(start: dict, end: dict) -> str:
    return f"{start['row']}:{start['column']}-{end['row']}:{end['column']}"


def _where(item: dict) -> str:
    cell = f"cell {item['cell']} " if item.get("cell") is not None else ""
    return cell + _range(item["location"], item["end_location"])


def _finding_block(d: dict, folder: Path, own: str) -> list[str]:
    lines = [f"{d['code']} {_where(d)} {d['message']}"]
    for step in d["trace"]:
        other = os.path.relpath(step["filename"], folder)
        in_file = "" if other == own else f"{other} "
        lines.append(f"  trace {step['kind']} {in_file}{_where(step)} {step['message']}")
    fix = d["fix"]
    if fix is not None:
        lines.append(f"  fix ({fix['applicability']}): {fix['message']}")
        for e in fix["edits"]:
            lines.append(f"    edit {_range(e['location'], e['end_location'])} {json.dumps(e['content'], ensure_ascii=False)}")
    elif d["no_fix"]:
        lines.append(f"  no fix: {d['no_fix']}")
    else:
        lines.append("  no fix")
    if d["noqa_row"] != d["location"]["row"]:
        lines.append(f"  noqa row {d['noqa_row']}")
    return lines


def _run(folder: Path, names: list[str], *flags: str) -> str:
    proc = cli(*BASE_ARGS, *SELECT, *flags, *names, cwd=folder)
    if proc.returncode not in (0, 1) or proc.stderr:
        raise RuntimeError(f"fakegrad-lint {' '.join(flags)} in {folder} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def _split_diff(text: str, names: list[str]) -> dict[str, str]:
    """``--diff`` output of many files -> ``{name: its sections}`` (a notebook
    has one section per changed cell, headed ``--- name:cell N``)."""
    wanted = set(names)
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        header = re.fullmatch(r"--- (.+?)(?::cell \d+)?\r?\n?", line)
        if header and header.group(1) in wanted and i + 1 < len(lines) and lines[i + 1] == "+++" + line[3:]:
            current = out.setdefault(header.group(1), [])
        if current is None:
            raise RuntimeError(f"unexpected --diff output before any file header: {line!r}")
        current.append(line)
    return {name: "".join(parts) for name, parts in out.items()}


def render_folder(folder: Path, fixtures: list[Path]) -> dict[Path, str]:
    """``{fixture: its snapshot text}`` for fixtures of one folder (two CLI runs)."""
    if not fixtures:
        return {}
    names = [p.name for p in fixtures]
    findings: dict[str, list[dict]] = {name: [] for name in names}
    for d in json.loads(_run(folder, names, "--output-format", "json")):
        findings[os.path.relpath(d["filename"], folder)].append(d)
    diffs = _split_diff(_run(folder, names, "--diff", "--unsafe-fixes", "--quiet"), names)
    out = {}
    for path in fixtures:
        name = path.name
        lines = [
            f"# snapshot of {name}: `fakegrad-lint --select ALL` (JSON, then --diff --unsafe-fixes)",
            f"# update: {UPDATE_HINT}",
            "",
        ]
        ordered = sorted(
            findings[name],
            key=lambda d: (d["cell"] or 0, d["location"]["row"], d["location"]["column"], d["code"], d["message"]),
        )
        for d in ordered:
            lines.extend(_finding_block(d, folder, name))
            lines.append("")
        if not ordered:
            lines.extend(["(no findings)", ""])
        diff = diffs.get(name)
        lines.append("fix diff:" if diff else "fix diff: (none)")
        out[path] = "\n".join(lines) + "\n" + (diff or "")
    return out


def render_all(root: Path = REPO_ROOT) -> dict[Path, str]:
    out: dict[Path, str] = {}
    for folder, fixtures in corpus_folders(root):
        out.update(render_folder(folder, fixtures))
    return out


# ---------------------------------------------------------------------------
# comparing and updating


def read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def mismatch(fixture: Path, stored: str | None, rendered: str) -> str:
    """Why a snapshot fails: a unified diff from the stored file to the output."""
    snap = snapshot_path(fixture)
    if stored is None:
        return f"{snap.name}: no snapshot for {fixture.name}; create it with\n    {UPDATE_HINT}"
    diff = difflib.unified_diff(
        stored.splitlines(keepends=True), rendered.splitlines(keepends=True), f"{snap.name} (stored)", f"{snap.name} (now)"
    )
    return f"{snap.name} differs from what the CLI says now; if the change is intended:\n    {UPDATE_HINT}\n" + "".join(diff)


def orphans(root: Path = REPO_ROOT) -> list[Path]:
    """Snapshot files without a fixture beside them."""
    out = []
    for folder, fixtures in corpus_folders(root):
        have = {snapshot_path(p) for p in fixtures}
        out.extend(p for p in sorted(folder.glob("*" + SUFFIX)) if p not in have)
    return out


def stale(rendered: dict[Path, str]) -> list[Path]:
    return [p for p, text in rendered.items() if read(snapshot_path(p)) != text]


def update(rendered: dict[Path, str], root: Path = REPO_ROOT) -> list[Path]:
    """Write every stale snapshot and delete orphans; the paths changed."""
    changed = []
    for fixture in stale(rendered):
        write(snapshot_path(fixture), rendered[fixture])
        changed.append(snapshot_path(fixture))
    for orphan in orphans(root):
        orphan.unlink()
        changed.append(orphan)
    return changed


def main(argv: list[str]) -> int:
    rendered = render_all()
    if "--check" in argv:
        bad = [snapshot_path(p) for p in stale(rendered)] + orphans()
        for p in bad:
            print(f"stale: {p.relative_to(REPO_ROOT)}")
        return 1 if bad else 0
    changed = update(rendered)
    for p in changed:
        print(f"wrote: {p.relative_to(REPO_ROOT)}" if p.exists() else f"deleted: {p.relative_to(REPO_ROOT)}")
    print(f"{len(rendered)} snapshots, {len(changed)} changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
