"""Robustness over real code: the real CLI over the whole installed ``torch``
package (about 2,300 files, process pool; ~15-30 s).

No crash, no traceback, no "internal error"; every stderr line is
``path: error: reason``; no file is modified; and the findings equal the
reviewed list in ``tests/data/torch_tree_findings.json`` (compared only for the
torch version recorded there; a new torch version means a new review).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXPECTED_FILE = Path(__file__).resolve().parent / "data" / "torch_tree_findings.json"
ERROR_LINE = re.compile(r"^\S.*: error: \S.*$")

pytestmark = pytest.mark.slow  # the whole torch tree: about 10-20 s; `pytest -m slow` (.ci/run runs it)


def _torch_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # no import of torch itself: cheap
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _torch_version(root: Path) -> str:
    text = (root / "version.py").read_text(encoding="utf-8")
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return m.group(1).split("+")[0] if m else ""


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith((".py", ".pyi", ".ipynb")):
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                out[p] = (st.st_mtime_ns, st.st_size)
    return out


@pytest.fixture(scope="module")
def run():
    root = _torch_dir()
    if root is None:
        pytest.skip("torch is not installed")
    before = _stamps(root)
    env = dict(os.environ)
    env.pop("FAKEGRAD_LINT_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "--output-format", "json", "--exit-zero", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=root.parent,
        check=False,
    )
    after = _stamps(root)
    return root, proc, before, after


def test_no_crash_and_one_line_errors(run):
    _root, proc, _, _ = run
    assert proc.returncode in (0, 2), proc.stderr[-3000:]  # --exit-zero: 2 only for tool errors
    assert "Traceback" not in proc.stderr
    assert "internal error" not in proc.stderr
    assert "worker failed" not in proc.stderr
    bad = [line for line in proc.stderr.splitlines() if not ERROR_LINE.match(line)]
    assert bad == []
    assert (proc.returncode == 2) == bool(proc.stderr.strip())


def test_nothing_is_modified(run):
    _root, _, before, after = run
    assert len(before) > 1000  # really the torch tree
    assert before == after
    leftovers = [p for p in after if os.path.basename(p).startswith(".fakegrad-")]
    assert leftovers == []


def test_findings_equal_the_reviewed_list(run):
    root, proc, _, _ = run
    expected = json.loads(EXPECTED_FILE.read_text(encoding="utf-8"))
    if _torch_version(root) != expected["torch_version"]:
        pytest.skip(f"findings were reviewed for torch {expected['torch_version']}, not {_torch_version(root)}")
    got = sorted(
        (
            Path(d["filename"]).resolve().relative_to(root.resolve()).as_posix(),
            d["code"],
            d["location"]["row"],
            d["location"]["column"],
        )
        for d in json.loads(proc.stdout)
    )
    want = sorted((f["path"], f["code"], f["row"], f["column"]) for f in expected["findings"])
    assert got == want
