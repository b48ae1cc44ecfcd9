"""Regenerate the golden fixed files of the fixture corpus.

    python tests/regen_golden.py          # rewrite fixtures/*.fixed.py
    python tests/regen_golden.py --check  # exit 1 (and list them) if any golden is stale

Every fixture is copied to a temporary folder and fixed there by the real CLI
(``python -m fakegrad_lint --fix --unsafe-fixes``, isolated from any
configuration, no cache). A fixture whose fixed text differs from the original
gets ``fixtures/<name>.fixed.py`` (the fixed bytes, as the CLI wrote them); the
golden of a fixture that the CLI leaves alone is deleted, and so is any golden
whose fixture no longer exists.

``tests/test_fix_golden.py`` imports :func:`fix_copies` from here, so the tests
and this script fix files in exactly the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
FIXTURES_DIR = REPO_ROOT / "fixtures"
GOLDEN_SUFFIX = ".fixed.py"

# The CLI exactly as a user would run it, minus anything from the environment.
BASE_ARGS = ("--isolated", "--no-cache")


def cli(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m fakegrad_lint`` (the real CLI) and capture its output."""
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def fixture_paths() -> list[Path]:
    return sorted(p for p in FIXTURES_DIR.glob("*.py") if not p.name.endswith(GOLDEN_SUFFIX))


def golden_path(fixture: Path) -> Path:
    return fixture.with_name(fixture.name[: -len(".py")] + GOLDEN_SUFFIX)


def fix_copies(paths, workdir: Path, *flags: str) -> tuple[dict[str, bytes], subprocess.CompletedProcess]:
    """Copy ``paths`` into ``workdir`` and run the CLI with ``flags`` on the copies
    (one run over all of them). Returns ``{name: bytes after the run}`` and the
    completed process."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    names = []
    for p in paths:
        p = Path(p)
        shutil.copy2(p, workdir / p.name)
        names.append(p.name)
    proc = cli(*BASE_ARGS, *flags, *names, cwd=workdir)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"fakegrad-lint {' '.join(flags)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return {name: (workdir / name).read_bytes() for name in names}, proc


def compute_goldens() -> dict[Path, bytes | None]:
    """``{golden path: bytes or None (no golden)}`` for every fixture."""
    fixtures = fixture_paths()
    with tempfile.TemporaryDirectory(prefix="fgl-golden-") as tmp:
        fixed, _ = fix_copies(fixtures, Path(tmp), "--fix", "--unsafe-fixes")
    out: dict[Path, bytes | None] = {}
    for p in fixtures:
        new = fixed[p.name]
        out[golden_path(p)] = None if new == p.read_bytes() else new
    return out


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    wanted = compute_goldens()
    stale = sorted(p for p in FIXTURES_DIR.glob("*" + GOLDEN_SUFFIX) if p not in wanted)
    changes: list[str] = []
    for p in stale:
        changes.append(f"delete {p.name} (no such fixture)")
        if not check:
            p.unlink()
    for p, data in sorted(wanted.items()):
        old = p.read_bytes() if p.exists() else None
        if data == old:
            continue
        if data is None:
            changes.append(f"delete {p.name} (the fixture has nothing to fix)")
            if not check:
                p.unlink()
        else:
            changes.append(("write " if old is None else "update ") + p.name)
            if not check:
                p.write_bytes(data)
    for line in changes:
        print(line)
    n = sum(1 for d in wanted.values() if d is not None)
    print(f"{n} golden files for {len(wanted)} fixtures; {len(changes)} {'stale' if check else 'changed'}")
    return 1 if check and changes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
