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
from hypothesis import given, settings, example
from hypothesis import strategies as st

from fakegrad_lint.engine import lint as checker
from fakegrad_lint.config import discover
from fakegrad_lint.rules import UNUSED_NOQA_CODE
from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.engine.lint import lint_source
from fakegrad_lint.engine import prefilter
from fakegrad_lint.config import settings as settings_mod
from fakegrad_lint.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
# every rule but the unused-noqa one (which joins only when selected: WITH_FGL100)
ALL_CODES = frozenset(r.code for r in RULES if r.code != UNUSED_NOQA_CODE)
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
        monkeypatch.setattr(prefilter, "may_contain_fake_region", lambda text: True)  # the engine's prefilter
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


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
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


# FGL100 (unused noqa) keeps the prefilter: a file without a ``# noqa: ...FGL``
# directive and without an entry word is never tokenized or parsed

WITH_FGL100 = ALL_CODES | {UNUSED_NOQA_CODE}


def test_fgl100_keeps_the_prefilter():
    flake8_only = "import os  # noqa: F401\nx = 1  # noqa\ny = 2  # NOQA:E501,W291\n"
    assert not pipeline.needs_work(flake8_only, WITH_FGL100)
    for text in ("import os  # noqa: FGL001\n", "x = 1  # NoQa:E501, fgl004\n", "x = 1  # noqa: E501 FGL003\n"):
        assert pipeline.needs_work(text, WITH_FGL100)
        assert not pipeline.needs_work(text, ALL_CODES)


_noqa_pieces = st.sampled_from(
    ["#", " ", "  ", ",", ":", "noqa", "NOQA", "NoQa", "FGL", "fgl", "Fgl", "001", "100", "E501", "F", "\n", "x = 1", "'", '"']
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_noqa_pieces, max_size=14))
@example(parts=["#", "noqa", ":", "FGL", "noqa", "001"])  # not an FGL code: never reported
def test_fgl_noqa_prefilter_is_a_superset(parts):
    from fakegrad_lint.engine import noqa

    text = "".join(parts)
    _, unused = noqa.apply(text, [], report_unused=True, filename="t.py")
    if unused:
        assert prefilter.may_have_fgl_noqa(text)
        assert prefilter.may_have_fgl_noqa(text.encode())
    assert lint_source(text, "t.py", WITH_FGL100) == (unused if prefilter.may_have_fgl_noqa(text) else [])


def test_extra_words_hook():
    text = "from helpers import open_fake\nwith open_fake():\n    pass\n"
    assert not prefilter.may_contain_fake_region(text)
    assert prefilter.may_contain_fake_region(text, extra_words=("open_fake",))
    assert prefilter.may_contain_fake_region(text.encode(), extra_words=("open_fake",))
    assert not prefilter.may_contain_fake_region("# open_fake()\n", extra_words=("open_fake",))


def test_annotation_only_units_are_not_analysed_alone(monkeypatch):
    """A function that names FakeTensorMode only in annotations, a docstring or a
    comment cannot open a region: it is not analysed on its own (nor its callers),
    while one that calls FakeTensorMode is, and so are its callers."""
    import ast

    from fakegrad_lint.analysis import interpreter, relevance

    src = (
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def annotated(x, mode: FakeTensorMode | None = None) -> 'FakeTensorMode':\n"
        "    \"\"\"Runs under a FakeTensorMode.\"\"\"\n"
        "    y: FakeTensorMode = mode  # FakeTensorMode\n"
        "    return x\n"
        "def caller_of_annotated(x):\n"
        "    return annotated(x)\n"
        "def opens(x):\n"
        "    with FakeTensorMode():\n"
        "        return x * 2\n"
        "def caller_of_opens(x):\n"
        "    return opens(x)\n"
    )
    ran = []
    orig = interpreter.Interpreter._run_standalone

    def spy(self, fv, self_val):
        ran.append(fv.node.name)
        return orig(self, fv, self_val)

    monkeypatch.setattr(interpreter.Interpreter, "_run_standalone", spy)
    monkeypatch.setattr(relevance, "SOURCE_GATE", False)  # (which units are relevant; the source gate: test_relevance_sources)
    interpreter.Interpreter(ast.parse(src), src).run()
    assert ran == ["opens", "caller_of_opens"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
