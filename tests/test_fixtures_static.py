"""Static side of the fixture corpus: the findings of ``check_source`` on every
fixture equal its inline markers exactly (all codes, opt-in FGL004 included)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from fakegrad_lint.engine.lint import check_source
from markers import FIXTURES_DIR, expected_markers, fixture_paths

FIXTURES = fixture_paths()


def test_corpus_shape():
    names = [p.name for p in FIXTURES]
    assert len(names) >= 48
    safe = [n for n in names if n.startswith("safe_")]
    hazard = [n for n in names if n.startswith("hazard_")]
    assert len(safe) + len(hazard) == len(names), "fixtures are named hazard_*.py or safe_*.py"
    assert len(safe) >= len(hazard)
    for p in FIXTURES:
        marks = {code for _, code in expected_markers(p)}
        if p.name.startswith("hazard_"):
            assert marks & {"FGL001", "FGL002", "FGL003"}, f"{p.name}: a hazard fixture needs a marker"
        else:
            assert not marks - {"FGL004"}, f"{p.name}: a safe fixture may only carry FGL004"


def _describe(rows, source_lines):
    return "\n".join(
        f"    line {row} {code}: {source_lines[row - 1].strip() if 0 < row <= len(source_lines) else '?'}"
        for row, code in sorted(rows)
    )


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_findings_match_markers(path):
    source = path.read_text(encoding="utf-8")
    findings = check_source(source, str(path))
    got = {(f.location.row, f.code) for f in findings}
    want = expected_markers(path)
    if got != want:
        lines = source.splitlines()
        msg = [f"{path.name}: findings differ from the inline markers"]
        if want - got:
            msg.append("  missing (marked, not reported):\n" + _describe(want - got, lines))
        if got - want:
            msg.append("  unexpected (reported, not marked):\n" + _describe(got - want, lines))
        pytest.fail("\n".join(msg), pytrace=False)


def _lints_without_torch(paths) -> None:
    script = textwrap.dedent(
        """\
        import json, sys
        from fakegrad_lint.engine.lint import check_source
        for p in json.loads(sys.argv[1]):
            check_source(open(p, encoding="utf-8").read(), p)
        bad = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        assert not bad, bad[:5]
        print("ok")
        """
    )
    arg = json.dumps([str(p) for p in paths])
    proc = subprocess.run([sys.executable, "-c", script, arg], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def _sample() -> list:
    """A few fixtures that reach every rule and the fix builders and proofs: the first
    fixture marked with each code, the first three with a golden (fixed) file, and
    two safe ones."""
    picked = []
    for code in ("FGL001", "FGL002", "FGL003", "FGL004"):
        picked += [p for p in FIXTURES if code in {c for _, c in expected_markers(p)}][:1]
    picked += [p for p in FIXTURES if p.with_name(p.stem + ".fixed.py").exists()][:3]
    picked += [p for p in FIXTURES if p.name.startswith("safe_")][:2]
    return sorted(set(picked))


def test_linting_fixtures_never_imports_torch():
    sample = _sample()
    assert len(sample) >= 6
    _lints_without_torch(sample)


@pytest.mark.slow  # every fixture file, goldens included, in one process: slow tier (CI runs it)
def test_linting_every_fixture_never_imports_torch():
    _lints_without_torch(sorted(FIXTURES_DIR.glob("*.py")))
