"""The prefilter's project side reads every module of a project for a star import
(``analysis/project._mentions``: such a module may re-export any hot name). The
literal pre-check ``_STAR_PREFIX_RE`` (a regex that starts with a literal, so the
engine skips from ``import`` to ``import``) must never hide a star import that the
full multi-line pattern ``_STAR_IMPORT_RE`` finds."""

from __future__ import annotations

import glob
import os

import pytest

from fakegrad_lint.analysis import project as P

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
    paths = [p for p in paths if "vault6" not in p]  # the sealed corpus is its writer's alone
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
