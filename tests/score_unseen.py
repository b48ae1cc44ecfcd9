"""Score a linter on the unseen corpus (``fixtures/unseen/*.py``, ``fixtures/projects/*/``).

    python tests/score_unseen.py                       # runs: fakegrad-lint --output-format json PATHS
    python tests/score_unseen.py --corpus heldout      # fixtures/heldout/*.py, fixtures/heldout_projects/*/
    python tests/score_unseen.py --corpus blind        # fixtures/blind/*.py, fixtures/blind_projects/*/
    python tests/score_unseen.py --corpus sealed       # fixtures/sealed/*.py, fixtures/sealed_projects/*/ (the blind set's held-out half)
    python tests/score_unseen.py --corpus fresh        # fixtures/fresh/*.py, fixtures/fresh_projects/*/
    python tests/score_unseen.py --corpus vault        # fixtures/vault/*.py, fixtures/vault_projects/*/ (the fresh set's sealed half)
    python tests/score_unseen.py --corpus vault2       # fixtures/vault2/*.py, fixtures/vault2_projects/*/ (sealed; the coordinator scores it)
    python tests/score_unseen.py --corpus vault3       # fixtures/vault3/*.py, fixtures/vault3_projects/*/ (released as a guide set)
    python tests/score_unseen.py --corpus vault4       # fixtures/vault4/*.py, fixtures/vault4_projects/*/ (sealed; the coordinator scores it)
    python tests/score_unseen.py --corpus vault5       # fixtures/vault5/*.py, fixtures/vault5_projects/*/ (sealed; the coordinator scores it)
    python tests/score_unseen.py --corpus vault6       # fixtures/vault6/*.py, fixtures/vault6_projects/*/ (sealed; the coordinator scores it)
    python tests/score_unseen.py --corpus vault7       # fixtures/vault7/*.py, fixtures/vault7_projects/*/ (sealed; the coordinator scores it)
    python tests/score_unseen.py --corpus probes2      # fixtures/probes2/*.py (adversarial hazards and safe look-alikes, sem5)
    python tests/score_unseen.py --corpus probes3      # fixtures/probes3/*.py (Python features around a region, an6)
    python tests/score_unseen.py --corpus probes4      # fixtures/probes4/*.py (an8), fixtures/probes4_projects/*/ (project layouts, an9)
    python tests/score_unseen.py --corpus probes5      # fixtures/probes5/*.py (an10), fixtures/probes5_projects/*/ (project layouts, an11)
    python tests/score_unseen.py --corpus probes6      # fixtures/probes6/*.py (descriptors, threads, casts under strict modes, per-parameter flags; an12)
    python tests/score_unseen.py --cmd "python -m fakegrad_lint --output-format json"
    python tests/score_unseen.py --format json         # the score as JSON

The command must print a ruff-style JSON list of findings (``code``, ``filename``,
``location.row``). The single files are checked in one run of the command (all paths
appended); each project in its own run, with the project folder as the working
directory and ``.`` as the path (how people lint a project). ``{paths}`` in ``--cmd``
marks where the paths go instead of the end.

Expectations come from the marker comments (``tests/markers.py``) and the names:

- a hazard (``hazard_*`` file or project) counts as **flagged** when at least one
  default-rule finding (FGL001-FGL003) is on a marker line of that unit with the
  marker's code; anything else is a **miss** (listed with what was reported instead);
- a safe program or project (``safe_*``) is a **false positive** when any FGL001-FGL003
  finding is reported anywhere in it.

Exit status: 0 when every hazard is flagged and no safe unit is, 1 otherwise, 2 when the
command failed (no JSON on stdout). Never imports torch or the linter.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from markers import expected_markers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CMD = "fakegrad-lint --output-format json"
DEFAULT_CODES = ("FGL001", "FGL002", "FGL003")
# --corpus NAME -> (single-file folder, projects folder), relative to fixtures/
CORPORA = {
    "unseen": ("unseen", "projects"),
    "heldout": ("heldout", "heldout_projects"),
    "blind": ("blind", "blind_projects"),
    "sealed": ("sealed", "sealed_projects"),
    "fresh": ("fresh", "fresh_projects"),
    "vault": ("vault", "vault_projects"),
    "vault2": ("vault2", "vault2_projects"),
    "vault3": ("vault3", "vault3_projects"),
    "vault4": ("vault4", "vault4_projects"),
    "vault5": ("vault5", "vault5_projects"),
    "vault6": ("vault6", "vault6_projects"),
    "vault7": ("vault7", "vault7_projects"),
    "probes": ("probes", "probes_projects"),
    "probes2": ("probes2", "probes2_projects"),
    "probes_eco": ("probes_eco", "probes_eco_projects"),
    "probes3": ("probes3", "probes3_projects"),
    "probes4": ("probes4", "probes4_projects"),
    "probes5": ("probes5", "probes5_projects"),
    "probes6": ("probes6", "probes6_projects"),
    "probes7": ("probes7", "probes7_projects"),
}


@dataclass
class Unit:
    """One scored program: a single file or a project folder."""

    name: str
    kind: str  # "file" | "project"
    files: list[Path]
    hazard: bool
    folder: Path | None = None  # the project folder (projects only)
    markers: set[tuple[str, int, str]] = field(default_factory=set)  # (realpath, row, code)
    findings: list[tuple[str, int, str, str]] = field(default_factory=list)  # (realpath, row, code, message)

    def hits(self) -> list[tuple[str, int, str, str]]:
        return [f for f in self.findings if f[:3] in self.markers]


class CommandFailed(RuntimeError):
    pass


def _real(path) -> str:
    return os.path.realpath(str(path))


def collect(unseen_dir: Path, projects_dir: Path) -> list[Unit]:
    units = []
    for p in sorted(unseen_dir.glob("*.py")) if unseen_dir.is_dir() else []:
        if p.name.startswith(("hazard_", "safe_")):
            units.append(Unit(p.name, "file", [p], p.name.startswith("hazard_")))
    for d in sorted(projects_dir.iterdir()) if projects_dir.is_dir() else []:
        if (d / "project.json").is_file() and d.name.startswith(("hazard_", "safe_")):
            units.append(Unit(d.name, "project", sorted(d.rglob("*.py")), d.name.startswith("hazard_"), d))
    for u in units:
        u.markers = {(_real(f), row, code) for f in u.files for row, code in expected_markers(f) if code in DEFAULT_CODES}
    return units


def run_command(cmd: str, paths: list[str], cwd: Path) -> list[dict]:
    argv = shlex.split(cmd)
    if "{paths}" in argv:
        i = argv.index("{paths}")
        argv = argv[:i] + paths + argv[i + 1 :]
    else:
        argv = argv + paths
    proc = subprocess.run(argv, cwd=str(cwd), capture_output=True, text=True)
    if not proc.stdout.strip():
        raise CommandFailed(
            f"{' '.join(argv)} (cwd {cwd}): exit {proc.returncode}, no JSON on stdout; stderr: {proc.stderr[-500:]}"
        )
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise CommandFailed(f"{' '.join(argv)} (cwd {cwd}): no JSON on stdout ({exc}); stderr: {proc.stderr[-500:]}")
    if not isinstance(data, list):
        raise CommandFailed(
            f"{' '.join(argv)} (cwd {cwd}): exit {proc.returncode}, expected a JSON list; stderr: {proc.stderr[-500:]}"
        )
    return data


def attach(units: list[Unit], findings: list[dict], base: Path) -> None:
    """Give each unit the default-rule findings that fall in its files."""
    owner = {_real(f): u for u in units for f in u.files}
    for item in findings:
        code = item.get("code")
        if code not in DEFAULT_CODES:
            continue
        filename = item.get("filename", "")
        real = _real(filename if os.path.isabs(filename) else base / filename)
        unit = owner.get(real)
        if unit is not None:
            unit.findings.append((real, int(item["location"]["row"]), code, item.get("message", "")))


def score(units: list[Unit], cmd: str) -> None:
    files = [u for u in units if u.kind == "file"]
    if files:
        attach(files, run_command(cmd, [str(u.files[0]) for u in files], ROOT), ROOT)
    for u in units:
        if u.kind == "project":
            attach([u], run_command(cmd, ["."], u.folder), u.folder)


def summarize(units: list[Unit]) -> dict:
    out: dict = {"groups": {}, "misses": [], "false_positives": []}

    for kind in ("file", "project"):
        group = [u for u in units if u.kind == kind]
        hazards = [u for u in group if u.hazard]
        safes = [u for u in group if not u.hazard]
        out["groups"][kind] = {
            "hazards": len(hazards),
            "hazards_flagged": sum(bool(u.hits()) for u in hazards),
            "safe": len(safes),
            "safe_flagged": sum(bool(u.findings) for u in safes),
        }
    def rel(p):
        return os.path.relpath(p, ROOT)

    for u in units:
        if u.hazard and not u.hits():
            out["misses"].append(
                {
                    "unit": u.name,
                    "kind": u.kind,
                    "expected": sorted(f"{rel(f)}:{row} {code}" for f, row, code in u.markers),
                    "reported": sorted(f"{rel(f)}:{row} {code}" for f, row, code, _ in u.findings),
                }
            )
        if not u.hazard and u.findings:
            out["false_positives"].append(
                {
                    "unit": u.name,
                    "kind": u.kind,
                    "reported": sorted(f"{rel(f)}:{row} {code} {msg}" for f, row, code, msg in u.findings),
                }
            )
    return out


def render_text(summary: dict) -> str:
    lines = []
    for kind, label in (("file", "single files"), ("project", "projects")):
        g = summary["groups"][kind]
        lines.append(
            f"{label}: hazards flagged at a marker {g['hazards_flagged']}/{g['hazards']}, "
            f"safe flagged {g['safe_flagged']}/{g['safe']}"
        )
    for m in summary["misses"]:
        got = "; ".join(m["reported"]) or "nothing"
        lines.append(f"MISS {m['kind']} {m['unit']}: expected {', '.join(m['expected'])}; reported {got}")
    for fp in summary["false_positives"]:
        lines.append(f"FALSE POSITIVE {fp['kind']} {fp['unit']}: {'; '.join(fp['reported'])}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cmd", default=DEFAULT_CMD, help=f"linter command printing JSON findings (default: {DEFAULT_CMD!r})")
    ap.add_argument(
        "--corpus",
        choices=sorted(CORPORA),
        default="unseen",
        help="which corpus: unseen (fixtures/unseen, fixtures/projects), heldout "
        "(fixtures/heldout, fixtures/heldout_projects), blind (fixtures/blind, "
        "fixtures/blind_projects), sealed (fixtures/sealed, fixtures/sealed_projects: the held-out half of the blind set, not to be read while changing the analyzer), "
        "fresh (fixtures/fresh, fixtures/fresh_projects) or vault (fixtures/vault, fixtures/vault_projects: the sealed half "
        "of the fresh set, read by nobody but its writers and the coordinator) or vault2 (fixtures/vault2, "
        "fixtures/vault2_projects: sealed, written by an independent writer, scored by the coordinator); default: unseen",
    )
    ap.add_argument("--unseen-dir", type=Path, default=None, help="single-file folder (overrides --corpus)")
    ap.add_argument("--projects-dir", type=Path, default=None, help="projects folder (overrides --corpus)")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    files_name, projects_name = CORPORA[args.corpus]
    unseen_dir = args.unseen_dir or ROOT / "fixtures" / files_name
    projects_dir = args.projects_dir or ROOT / "fixtures" / projects_name
    units = collect(unseen_dir.resolve(), projects_dir.resolve())
    try:
        score(units, args.cmd)
    except (CommandFailed, OSError) as exc:
        print(f"score_unseen: error: {exc}", file=sys.stderr)
        return 2
    summary = summarize(units)
    print(json.dumps(summary, indent=2) if args.format == "json" else render_text(summary))
    perfect = not summary["misses"] and not summary["false_positives"]
    return 0 if perfect else 1


if __name__ == "__main__":
    sys.exit(main())
