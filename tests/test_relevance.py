"""Which units are analysed on their own (``analysis/relevance.py``): a unit runs
standalone only when its code can reach a fake region. A name the file binds to a
def of its own (torch's fake_tensor.py defines ``class FakeTensorMode``; a
``@contextmanager`` helper) counts only once that def can reach a region; a type
test (``isinstance(m, FakeTensorMode)``) opens none. Each test has a look-alike
that must still be analysed (and report)."""

import ast
import sys

import pytest

from fakegrad_lint.analysis import analyze, interpreter, relevance
from fakegrad_lint.analysis.leaks import Verdict


def standalone_units(monkeypatch, src):
    ran = []
    orig = interpreter.Interpreter._run_standalone

    def spy(self, fv, self_val):
        ran.append(fv.node.name)
        return orig(self, fv, self_val)

    monkeypatch.setattr(interpreter.Interpreter, "_run_standalone", spy)
    monkeypatch.setattr(relevance, "SOURCE_GATE", False)  # (which units are relevant; the source gate: test_relevance_sources)
    interpreter.Interpreter(ast.parse(src), src).run()
    return ran


OWN_CLASS = (
    "import torch\n"
    "class FakeTensorMode:\n"
    "    def __enter__(self):\n"
    "        return self\n"
    "    def __exit__(self, *a):\n"
    "        pass\n"
    "def use(x):\n"
    "    with FakeTensorMode():\n"
    "        return x * 2\n"
)


def test_a_class_of_the_file_named_FakeTensorMode_is_not_a_way_in(monkeypatch):
    assert standalone_units(monkeypatch, OWN_CLASS) == []


def test_a_class_of_the_file_whose_enter_opens_torchs_mode_is(monkeypatch):
    src = OWN_CLASS.replace("        return self\n", "        return torch._subclasses.FakeTensorMode().__enter__()\n", 1)
    assert standalone_units(monkeypatch, src) == ["__enter__", "use"]


def test_a_local_import_of_torchs_FakeTensorMode_keeps_the_unit(monkeypatch):
    src = OWN_CLASS.replace("def use(x):\n", "def use(x):\n    from torch._subclasses import FakeTensorMode\n")
    assert standalone_units(monkeypatch, src) == ["use"]


HELPER = (
    "import contextlib\n"
    "import torch\n"
    "from torch._subclasses.fake_tensor import FakeTensorMode\n"
    "@contextlib.contextmanager\n"
    "def quiet():\n"
    "    yield\n"
    "def step(model, x):\n"
    "    w = torch.nn.Parameter(torch.randn(4))\n"
    "    with quiet():\n"
    "        (w * x).sum().backward()\n"
)


def test_a_contextmanager_helper_that_opens_no_region_is_not_a_way_in(monkeypatch):
    assert standalone_units(monkeypatch, HELPER) == []


def test_a_contextmanager_helper_that_opens_a_region_is(monkeypatch):
    src = HELPER.replace("def quiet():\n    yield\n",
                         "def quiet():\n    with FakeTensorMode(allow_non_fake_inputs=True):\n        yield\n")
    assert standalone_units(monkeypatch, src) == ["quiet", "step"]
    leaks = analyze(ast.parse(src), src)
    assert [(lk.verdict, lk.value) for lk in leaks] == [(Verdict.HAZARD, "w")]


def test_a_type_test_opens_no_region(monkeypatch):
    src = (
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "def check(m):\n"
        "    return isinstance(m, FakeTensorMode)\n"
        "def opens(x):\n"
        "    with FakeTensorMode():\n"
        "        return x * 2\n"
    )
    assert standalone_units(monkeypatch, src) == ["opens"]


TRICKY = [
    "f(x)\ng (y)\n( z )\nx_f(1)\n1(2)\nself.step(\n)\nnn.Linear nn_x.Linear tnn.Linear Module Modules _Module\n",
    "torch.nn requires_grad Parameter parameters( autograd backward\n",
    "ébène(1) naïve.Module( FakeTensorMode FakeTensorModeX xFakeTensorMode _FakeTensorMode FakeTensorMode_\n",
    "", "(", "f", "nn.", "Module", "\tg\t(\n",
]


def corpus_texts():
    import glob
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = sorted(glob.glob(os.path.join(root, "fixtures", "*.py")))[:80]
    paths += sorted(glob.glob(os.path.join(root, "fakegrad_lint", "analysis", "*.py")))
    return TRICKY + [open(p, encoding="utf-8").read() for p in paths]


def test_the_text_scans_find_what_their_regexes_find():
    """The str.find scans of code_text answer as the regexes they replace."""
    import re

    from fakegrad_lint.analysis import code_text as C

    texts = corpus_texts()
    assert len(texts) > 40
    for t in texts:
        assert [n for _a, _p, n in C._call_sites(t)] == C._CALL_RE.findall(t), t[:80]
        assert C._makes_real_values(t) == bool(C._SOURCE_RE.search(t)), t[:80]
        for w in ("FakeTensorMode", "f", "nn", "Module", "step"):
            assert list(C._word_starts(t, w)) == [m.start() for m in re.finditer(r"\b%s\b" % w, t)], (w, t[:80])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


REBIND_TEXTS = [
    "import x\nFakeTensorMode = 1\n",
    "def f():\n    from m import (a,\n        FakeTensorMode)\n    return FakeTensorMode()\n",
    "def f():\n    m = fake_tensor.FakeTensorMode\n    with m():\n        pass\n",
    "def f(FakeTensorMode: int = 0):\n    pass\n",
    "def f():\n    import torch as FakeTensorMode\n    x == FakeTensorMode\n",
    "def f():\n    if FakeTensorMode == 1:\n        y = 2\n    FakeTensorModeX = 3\n",
    "def f():\n    s = 'import FakeTensorMode'\n    FakeTensorMode .x = 1\n    FakeTensorMode\t= 4\n",
    "x = (\n  FakeTensorMode)\nimport (\nFakeTensorMode\n)\n. FakeTensorMode\n",
]


@pytest.mark.parametrize("text", REBIND_TEXTS)
def test_rebind_lines_decide_as_the_unit_text_would(text):
    """``_standalone`` finds where an own word may be bound again by one scan of the
    file (``_rebind_lines``, plus the import-in-parentheses pattern on the unit's
    text); for every run of whole lines that is what ``_may_rebind`` says of them."""
    from itertools import accumulate
    from operator import add

    from fakegrad_lint.analysis.relevance import _may_rebind, _rebind_lines, _unit_rebinds

    lines = text.split("\n")
    starts = list(map(add, accumulate(map(len, lines), initial=0), range(len(lines) + 1)))
    for word in ("FakeTensorMode", "x", "m"):
        at = _rebind_lines(text, starts, word) if word in text else None
        for first in range(1, len(lines) + 1):
            for last in range(first, len(lines) + 1):
                unit = "\n".join(lines[first - 1 : last])
                assert _unit_rebinds(unit, first, last, at, word) == _may_rebind(unit, word), (word, first, last, unit)


@pytest.mark.parametrize("text", REBIND_TEXTS + ["aaaa\naa a\n", ""])
def test_a_word_in_a_unit_is_found_from_its_places_in_the_file(text):
    """``_standalone`` asks whether an own word is in a unit's text from the word's
    places in the whole file (``_occurrences``, overlapping ones too) without making
    the unit's text: the answer is ``word in text[a:b]`` for every slice."""
    from fakegrad_lint.analysis.relevance import _occurrences, _occurs_in

    for word in ("FakeTensorMode", "x", "m", "aa", "import"):
        at = _occurrences(text, word)
        for a in range(len(text) + 1):
            for b in range(a, len(text) + 1):
                assert _occurs_in(at, a, b, len(word)) == (word in text[a:b]), (word, a, b)
