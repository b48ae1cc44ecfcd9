"""bench/stages.py attributes time to the stages it names, on real fixtures.

Not a timing test: it checks that the stage hooks still find the functions they
wrap (a rename would silently move a stage's time into "rest"), that every file
past the prefilter is counted in the stages it reached with its lines, that a
project module the analysis parses counts as parse time (``ast.parse`` is
hooked) and that the hooks are removed afterwards.
"""

from __future__ import annotations

import ast
import gc
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import stages  # noqa: E402

from fakegrad_lint.engine import lint  # noqa: E402
from fakegrad_lint.rules import DEFAULT_CODES  # noqa: E402
from fakegrad_lint.sources import lazyparse  # noqa: E402


def test_every_required_hook_exists():
    for modname, fname in stages.REQUIRED_HOOKS:
        assert any((m, f) == (modname, fname) for _s, m, f in stages.HOOKS)
    undo = stages.install_hooks(stages.Clock())
    try:
        wrapped = {(mod.__name__, fname) for mod, fname, _fn in undo}
        assert stages.REQUIRED_HOOKS <= wrapped
    finally:
        for mod, fname, fn in undo:
            setattr(mod, fname, fn)


def test_profile_counts_stages_and_restores_hooks():
    real = (ast.parse, lint.analyze, lazyparse._materialize)
    thresholds, on_gc = gc.get_threshold(), list(gc.callbacks)
    hazard = ROOT / "fixtures" / "hazard_autograd_backward.py"
    files = [str(hazard), str(ROOT / "fakegrad_lint" / "findings.py")]
    res = stages.profile(files, DEFAULT_CODES, fake_only=True)
    st = res["stages"]
    lines = hazard.read_bytes().count(b"\n")
    assert [r["path"] for r in res["files"]] == [str(hazard)]  # findings.py names no fake mode
    for s in ("read", "prefilter", "parse", "analysis", "rest"):
        assert (st[s]["files"], st[s]["lines"]) == (1, lines), s
    # the hooks ran (seconds are rounded to 1 ms: a small file's parse can read 0.0)
    assert st["parse"]["entries"] >= 1 and st["analysis"]["entries"] >= 1
    assert st["parse"]["seconds"] >= 0 and st["analysis"]["seconds"] >= 0
    assert res["files"][0]["findings"] >= 1
    assert (ast.parse, lint.analyze, lazyparse._materialize) == real
    assert gc.get_threshold() == thresholds and on_gc == gc.callbacks


def test_project_modules_count_as_parse():
    clock = stages.Clock()
    undo = stages.install_hooks(clock)
    try:
        # what analysis/project.py does for an imported module: a plain ast.parse
        ast.parse("x = 1\n" * 20000)
        ast.parse("y = 2\n")
    finally:
        for mod, fname, fn in undo:
            setattr(mod, fname, fn)
    t = clock.take()
    assert t["parse"] > 0 and t["analysis"] == 0 and t["rest"] == 0


def test_markdown_has_a_row_per_tree():
    res = {"stages": {s: {"files": 1, "lines": 10, "seconds": 0.5} for s in stages.STAGES},
           "total_seconds": 3.5, "ruff": {"cpu": 0.5, "wall": 1.0}}
    md = stages.markdown({"/a/torch": res, "/b/ao": dict(res, ruff=None)}).splitlines()
    assert len(md) == 4
    assert md[2].startswith("| torch | 1 | 10 |") and md[2].endswith("| 3.50 | - | 0.50 | 7.0 |")
    assert md[3].startswith("| ao |") and md[3].endswith("| - | - | - |")


def test_analyzer_import_is_timed_apart(tmp_path):
    """The analyzer's modules are imported before the clock starts (a first file would
    otherwise carry them as its analysis), and the import is reported on its own."""
    import subprocess

    hazard = ROOT / "fixtures" / "hazard_autograd_backward.py"
    out = tmp_path / "r.json"
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import stages; "
            "from fakegrad_lint.rules import DEFAULT_CODES; "
            "assert 'fakegrad_lint.analysis.interpreter' not in sys.modules; "
            "r = stages.profile([sys.argv[2]], DEFAULT_CODES, fake_only=True); "
            "json.dump(r, open(sys.argv[3], 'w'))")
    subprocess.run([sys.executable, "-c", code, str(ROOT / "bench"), str(hazard), str(out)], check=True, cwd=ROOT)
    import json

    res = json.loads(out.read_text())
    assert res["imports_seconds"] > 0
    assert abs(res["total_seconds"] - sum(s["seconds"] for s in res["stages"].values())) < 0.01
    row = stages.markdown({"/a/x": res}).splitlines()[2].split(" | ")
    assert f"{res['imports_seconds']:.2f}" in row
