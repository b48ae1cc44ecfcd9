"""The prefilter loses nothing: findings with and without it are identical.

"Without" means every file is parsed and analyzed: the prefilter and the
pipeline's substring shortcut are replaced by ``lambda text: True`` (in this
process, and in the forked pool workers that inherit it). Trees: the fixture
corpus, the installed torch package (~2,300 files, ~1.2 M lines; the slow part
of this file, run through the pipeline's process pool), and transformers when
it is installed (or ``FAKEGRAD_TRANSFORMERS_TREE`` names its package folder).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakegrad_lint import checker, discover, pipeline, prefilter
from fakegrad_lint import settings as settings_mod
from fakegrad_lint.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
ALL_CODES = frozenset(r.code for r in RULES)
# A transformers tree that is not installed as a package (the bench's copy:
# pip install --no-deps --target /tmp/bench-trees/transformers transformers)
TRANSFORMERS_ENV = "FAKEGRAD_TRANSFORMERS_TREE"


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def lint_tree(tree: str, *, with_prefilter: bool, monkeypatch) -> tuple[list, dict]:
    st_ = settings_mod.resolve({}, root=tree)
    files = discover.discover([tree], st_).files
    assert files
    if not with_prefilter:
        monkeypatch.setattr(pipeline, "may_contain_fake_region", lambda text: True)
        monkeypatch.setattr(checker, "may_contain_fake_region", lambda text: True)
    try:
        res = pipeline.run(
            files, lambda p: ALL_CODES, pipeline.Options(timeout=None), jobs=os.cpu_count() or 2, stats=True
        )
    finally:
        monkeypatch.undo()
    findings = [(f.filename, f.location, f.end_location, f.code, f.message, f.fix) for f in res.findings]
    # errors only matter for files both runs analyze (syntax errors of files the
    # prefilter rejects are never seen with it)
    errors = {e.filename: e.reason for e in res.all_errors}
    return findings, {"stats": res.stats, "errors": errors}


def check_tree(tree: str, monkeypatch, expect_findings: bool):
    with_pf, a = lint_tree(tree, with_prefilter=True, monkeypatch=monkeypatch)
    without_pf, b = lint_tree(tree, with_prefilter=False, monkeypatch=monkeypatch)
    # the bypass really analyzed every file that could be read
    assert b["stats"]["prefilter_files"] == b["stats"]["files"] > a["stats"]["prefilter_files"]
    assert not [r for r in b["errors"].values() if "timed out" in r or "internal error" in r], b["errors"]
    assert with_pf == without_pf
    if expect_findings:
        assert with_pf
    for path, reason in a["errors"].items():
        assert b["errors"].get(path) == reason
    return a["stats"]


def test_fixture_corpus(monkeypatch, tmp_path):
    # the fixtures all pass the prefilter; add look-alikes that must not
    tree = tmp_path / "corpus"
    tree.mkdir()
    for p in sorted((ROOT / "fixtures").glob("*.py")):
        (tree / p.name).write_bytes(p.read_bytes())
    (tree / "commented.py").write_text("import torch\n# with FakeTensorMode(): x.backward()\nx = torch.ones(2, requires_grad=True)\n")
    (tree / "plain.py").write_text("import torch\nx = torch.ones(2, requires_grad=True)\nx.sum().backward()\n")
    check_tree(str(tree), monkeypatch, expect_findings=True)


@pytest.mark.slow
def test_torch_tree(monkeypatch):
    tree = package_dir("torch")
    if tree is None:
        pytest.skip("torch is not installed")
    check_tree(tree, monkeypatch, expect_findings=False)


def test_transformers_tree(monkeypatch):
    tree = os.environ.get(TRANSFORMERS_ENV) or package_dir("transformers")
    if tree is None:
        pytest.skip(f"transformers is not installed (or set {TRANSFORMERS_ENV} to its package folder)")
    check_tree(tree, monkeypatch, expect_findings=False)


# the prefilter's substring shortcut is exact: never rejects what the scan accepts

_pieces = st.sampled_from(
    list(prefilter.ENTRY_WORDS) + ["#", "\n", "\r\n", "\r", " ", "x", "'", "Fake", "Tensor", "Mode", "fake_mode", "tracing_"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_pieces, max_size=12))
def test_substring_shortcut_is_exact(parts):
    text = "".join(parts)
    for t in (text, text.encode()):
        assert prefilter.may_contain_fake_region(t) == prefilter._in_code(t)
    assert pipeline.needs_work(text, ALL_CODES) == prefilter.may_contain_fake_region(text)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
