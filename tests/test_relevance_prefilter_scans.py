"""Two scans of the prefilter, each a cheaper form of a regex search that must give
the same answer.

The prefilter's project side reads every module of a project for a star import
(``analysis/project._mentions``: such a module may re-export any hot name). The
literal pre-check ``_STAR_PREFIX_RE`` (a regex that starts with a literal, so the
engine skips from ``import`` to ``import``) must never hide a star import that the
full multi-line pattern ``_STAR_IMPORT_RE`` finds."""

from __future__ import annotations

import glob
import os

import pytest

from fakegrad_lint.analysis import project as P
from fakegrad_lint.engine import prefilter as pf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EDGES = [
    "from .regions import *\n", "  from a.b import\t*\n", "x = 1\nfrom a import  * \n", "import *\n",
    "from a import b\nc = a * b\n", "'''\nfrom a import *'''\n", "", "from a import (\n  *)\n",
    "from a import*\n", "\tfrom   pkg.mod   import *  # noqa\n", "from a import b\r\nfrom c import *\r\n",
]


def _star_check(text: str) -> bool:
    return P._STAR_PREFIX_RE.search(text) is not None and P._STAR_IMPORT_RE.search(text) is not None


@pytest.mark.parametrize("text", EDGES)
def test_star_precheck_same_answer(text):
    assert _star_check(text) == (P._STAR_IMPORT_RE.search(text) is not None)


def test_star_precheck_same_answer_on_corpus():
    paths = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))
    paths += sorted(glob.glob(os.path.join(ROOT, "fakegrad_lint", "**", "*.py"), recursive=True))
    stars = 0
    for p in paths:
        with open(p, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
        full = P._STAR_IMPORT_RE.search(text) is not None
        assert _star_check(text) == full, p
        stars += full
    assert len(paths) > 100


def test_star_module_mentions_every_word(tmp_path):
    # a module with a star import names every word for the prefilter (it may
    # re-export any hot name), one without names only its own words
    star = tmp_path / "reexport.py"
    star.write_text("from .regions import *\n")
    plain = tmp_path / "plain.py"
    plain.write_text("from .regions import helper\nx = a * b\n")
    words = frozenset({"open_fake_region"})
    assert P._mentions(str(star), words, {}) is True
    assert P._mentions(str(plain), words, {}) is False


# FGL100 (unused noqa, opt-in) passes a file that names no fake mode only when a
# `# noqa:` directive names an FGL code: the pattern is tried at each `noqa` of the
# text instead of searched case-blind over all of it
NOQA_EDGES = [
    "x = 1  # noqa: FGL001\n", "x = 1  # NOQA:FGL002\n", "x = 1  # NoQa: E501, FGL003\n",
    "x = 1  # noqa: E501 W291 fgl004\n", "x = 1  # noqa\n", "x = 1  # noqa: E501\n", "noqa: FGL1",
    "s = 'noqa: FGL001'\n", "x  # noqa:  FGL001\n", "x # noqa:E501,,FGL9\n", "q", "", "noq", "qqnoqaq: FGL1",
    "x = 1  # noqa: E501\ny = 2  # noqa: FGL001\n", "# nOqA:fGl7", "# noqa :FGL1", "a\r\n# noqa: FGL001\r\n",
]


def _slow(text: str) -> bool:
    return pf._has_noqa(text) and pf._FGL_NOQA_RE.search(text) is not None


@pytest.mark.parametrize("text", NOQA_EDGES)
def test_fgl_noqa_scan_same_answer(text):
    assert pf.may_have_fgl_noqa(text) == _slow(text)
    assert pf.may_have_fgl_noqa(text.encode("utf-8")) == _slow(text)


def test_fgl_noqa_scan_finds_directives():
    # the cases that must pass do (the scan is not trivially False)
    assert pf.may_have_fgl_noqa("x = 1  # noqa: E501\ny = 2  # NOQA: FGL001\n")
    assert not pf.may_have_fgl_noqa("x = 1  # noqa: E501\nq = 'FGL001'\n")


def test_fgl_noqa_scan_same_answer_on_corpus():
    paths = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))
    paths += sorted(glob.glob(os.path.join(ROOT, "tests", "*.py")))
    hits = 0
    for p in paths:
        with open(p, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
        assert pf.may_have_fgl_noqa(text) == _slow(text), p
        hits += _slow(text)
    assert hits > 0  # the corpus holds such directives


def test_lazy_text_summary_same_hot_names(tmp_path, monkeypatch):
    # a module's hot names from the lazy text summary (only the statements that hold
    # a name that can matter) equal those of the eager one, registrations and chains included
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "regs.py").write_text("MODES = {}\ndef register(name):\n    def deco(f):\n        MODES[name] = f\n        return f\n    return deco\n")
    body = ["from torch._subclasses import FakeTensorMode\n", "from .regs import register, MODES\n",
            "def opens():\n    with FakeTensorMode():\n        pass\n",
            "@register('fake')\ndef uses():\n    return opens()\n", "REGISTRY = {}\n", "REGISTRY['x'] = uses\n",
            "def later():\n    return helper()\n", "def helper():\n    return uses()\n",
            "if True:\n    alias = later\n", "def cold():\n    return 1\n"]
    body += [f"def filler_{i}(x):\n    y_{i} = x + {i}\n    return y_{i}\n" for i in range(200)]
    mod = pkg / "big.py"
    mod.write_text("".join(body))
    monkeypatch.setattr(P, "CALL_GRAPH", False)
    out = []
    for lazy in (False, True):
        monkeypatch.setattr(P, "LAZY_TEXT", lazy)
        monkeypatch.setattr(P, "LAZY_TEXT_BYTES", 0)
        P._summaries.pop(str(mod), None)
        out.append(P.hot_names(str(mod), None, 0))
        if lazy:
            assert isinstance(P._summaries[str(mod)][1], P._LazyText)
    assert out[0] == out[1]
    assert {"opens", "uses", "helper", "later", "alias"} <= out[0] and "cold" not in out[0]
