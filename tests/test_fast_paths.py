"""The fast paths of issue 13 give the answers of the code they replace.

- ``valueops._interesting`` looks a value's type up once instead of running the chain
  of ``isinstance`` tests that defines it (``_interesting_by_isinstance``, kept);
- ``ModuleSummary.used_again`` reads only the rows that hold the name;
- discovery takes a file's real path from its folder's real path (no ``lstat`` per
  path component), and still folds files reached through a link into one;
- the string pattern of ``sources/lazyparse`` (unrolled) matches what the plain
  alternation matched.

Each is compared with the reference on values, texts and trees built to reach every
branch (depth limits, comments, quotes, links), so a fast path that answers
differently fails here, not as a lost finding somewhere else.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

from fakegrad_lint.analysis import valueops
from fakegrad_lint.analysis import values as V
from fakegrad_lint.analysis.code_text import _word_count
from fakegrad_lint.analysis.summaries import ModuleSummary
from fakegrad_lint.sources import lazyparse
from fakegrad_lint.sources.text import split_rows


def _values():
    """Values of every kind _interesting tells apart, nested past its depth limit."""
    t_plain = V.TVal()
    t_origin = V.TVal(origins=frozenset({1}))
    strs = [V.ConstVal("x"), V.ConstVal("FakeTensorMode"), V.ConstVal("my tracing_mode"), V.ConstVal(3), V.ConstVal(None)]
    leaves = [V.UNKNOWN, t_plain, t_origin, *strs]
    cls_plain = V.ClassVal(None, None, False)
    cls_module = V.ClassVal(None, None, True)
    cls_matters = V.ClassVal(None, None, False, matters=True)
    leaves += [cls_plain, cls_module, cls_matters, V.InstanceVal(cls_matters)]
    out = list(leaves)
    for x in leaves:
        seq = V.SeqVal((V.UNKNOWN, x))
        out += [seq, V.SeqVal((seq,)), V.SeqVal((V.SeqVal((seq,)),)), V.SeqVal((V.SeqVal((V.SeqVal((seq,)),)),))]
        out.append(V.MaybeVal((V.UNKNOWN, x)))
        inst = V.InstanceVal(cls_plain)
        inst.attrs["a"] = x
        out += [inst, V.SeqVal((inst,)), V.SeqVal((V.SeqVal((inst,)),))]
        out.append(V.MethodRef(x, "m"))
        out.append(V.MethodRef(V.SeqVal((V.SeqVal((x,)),)), "m"))
    out.append(V.PartialVal(V.ModRef("torch._subclasses.fake_tensor.FakeTensorMode"), (), {}))
    out.append(V.PartialVal(V.UNKNOWN, (V.UNKNOWN, t_origin), {}))
    out.append(V.PartialVal(V.UNKNOWN, (), {"k": V.ConstVal("detect_fake_mode")}))
    out.append(V.PartialVal(V.UNKNOWN, (V.ConstVal(1),), {}))
    out.append(V.SeqVal((V.SeqVal((V.PartialVal(V.ModRef("torch._subclasses.FakeTensorMode"), (), {}),)),)))
    return out


def test_interesting_by_type_is_the_isinstance_chain():
    vals = _values()
    answers = set()
    for v in vals:
        for depth in range(5):
            fast, chain = valueops._interesting(v, depth), valueops._interesting_by_isinstance(v, depth)
            assert bool(fast) == bool(chain), (v, depth)
            answers.add(bool(fast))
    assert answers == {True, False}  # both answers are reached


def test_a_type_under_two_tests_takes_the_chain():
    class Both(V.SeqVal, V.ConstVal):  # under two of the tests: the first decides, as in the chain
        pass

    assert valueops._kind_of(Both) == valueops._K_CHAIN
    assert valueops._kind_of(V.TVal) == valueops._K_TENSOR
    assert valueops._kind_of(V.FuncVal) == valueops._K_NONE


def _used_again_reference(source: str, name: str) -> bool:
    """``used_again`` as it was: every row of the module, in turn."""
    hit = _word_count(source, name, 2) >= 2
    if hit:
        code = 0
        for line in split_rows(source):
            h = line.find("#")
            if h >= 0 and not any(q in line[:h] for q in ("'", '"')):
                line = line[:h]
            code += _word_count(line, name, 2)
            if code >= 2:
                break
        hit = code >= 2
    return hit


TEXTS = [
    "from . import modes  # registers the modes\n",
    "import a\nx = a.b\n",
    "import a\n# a is used here only in a comment: a\n",
    "import a\ns = 'a'  # a\n",  # a quote before the '#': the row counts whole
    "import ab\nabc = ab_ + xab\n",  # not a whole word
    "import a\ny = [a,\n     a]\n",
    "import a\r\nx = a\r\n",  # \r\n rows
    "import a\rx = a\r",  # lone \r rows
    "x = 1 # a\ra = 2\ra",  # a comment ends at a lone \r: the next rows count
    "import a",  # no final newline
    "a",
    "",
    "x = 1 # a a\na = 2\n",
    'name = "#" + name\n',
    "é = 1\né2 = é\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_used_again_reads_the_rows_that_hold_the_name(text):
    summary_names = set(re.findall(r"\w+", text)) | {"a", "ab", "name", "missing", "é"}
    for name in sorted(summary_names):
        summary = ModuleSummary(text, split_rows(text))
        assert summary.used_again(name) == _used_again_reference(text, name), (text, name)


def test_used_again_on_this_package():
    """Every word of a few real modules, against the row-by-row reference."""
    import fakegrad_lint.analysis.summaries as mod

    for path in (mod.__file__, valueops.__file__, lazyparse.__file__):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        summary = ModuleSummary(text, split_rows(text))
        for name in sorted(set(re.findall(r"[A-Za-z_]\w*", text)))[:400]:
            assert summary.used_again(name) == _used_again_reference(text, name), (path, name)


# the string, comment and continuation pattern as it was (the plain alternation)
_STRING_RE_REFERENCE = re.compile(
    r"""\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''"""
    r"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\#[^\n]*|\\\n""",
    re.S,
)

STRING_TEXTS = [
    '"""a\\"""b"""', "'''x''''", '"a\\\nb"', "'''unterminated", '"""x""""y', "'a\\'b'", '"\\\\"',
    "''''''", '"""\\\\"""', "x = 'a' # c\n'''\n''' \\\n", '"""\n"""\'\'\'\n\'\'\'', '"unterminated\n"',
    "'\\", '"""', "#", "\\\n",
]


def test_string_pattern_matches_as_before():
    texts = list(STRING_TEXTS)
    root = os.path.dirname(lazyparse.__file__)
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name), encoding="utf-8") as fh:
                texts.append(fh.read())
    for text in texts:
        assert [m.span() for m in lazyparse._STRING_RE.finditer(text)] == [
            m.span() for m in _STRING_RE_REFERENCE.finditer(text)
        ], text[:80]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_discovery_folds_links_and_keeps_real_paths(tmp_path):
    from fakegrad_lint.config.discover import discover

    real = tmp_path / "pkg"
    (real / "sub").mkdir(parents=True)
    (real / "a.py").write_text("x = 1\n")
    (real / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "linked_dir").symlink_to(real, target_is_directory=True)  # a second way to the same files
    (real / "c.py").symlink_to(real / "a.py")  # a file link to a.py: the same file
    (real / "d.py").symlink_to(tmp_path / "outside.py")
    (tmp_path / "outside.py").write_text("z = 3\n")
    found = discover([str(real), str(tmp_path / "linked_dir")]).files
    reals = [os.path.realpath(f) for f in found]
    assert len(reals) == len(set(reals))  # each real file once
    assert set(reals) == {os.path.realpath(p) for p in (real / "a.py", real / "sub" / "b.py", tmp_path / "outside.py")}
    assert found[0] == os.path.normpath(str(real / "a.py"))  # the first way in is the one shown
