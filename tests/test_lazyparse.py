"""Function bodies parsed on first use give the same AST as ``ast.parse``.

Materialising every body of a lazily parsed module must give an AST equal to
``ast.parse``'s, positions included, on tricky hand-made sources, on the
fixtures and on every torch file past the prefilter; the bodies are really
left unparsed until read; a syntax error in a body that is read is raised with
``ast.parse``'s message.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from fakegrad_lint.config import discover
from fakegrad_lint.sources import lazyparse
from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.engine.lint import lint_source
from fakegrad_lint.engine import prefilter
from fakegrad_lint.config import settings
from fakegrad_lint.rules import ALL_CODES

ROOT = Path(__file__).resolve().parent.parent
PAD = "x = 1\n" * (lazyparse.MIN_CHARS // 6 + 1)  # long enough to be parsed lazily


def dump(tree) -> str:
    return ast.dump(tree, include_attributes=True)  # reads every body


def same_as_ast_parse(text: str) -> ast.Module:
    lazy = lazyparse.parse(text, "t.py")
    assert dump(lazy) == dump(ast.parse(text))
    return lazy


def is_lazy(tree) -> bool:
    return hasattr(tree, "_lazy_ctx")


TRICKY = {
    "docstring_with_code": 'def f():\n    """\ndef g():\n    return 1\n"""\n    return 2\n\n\ndef h(x):\n    y = x\n    return y\n',
    "low_string": 'class A:\n    def f(self):\n        s = """\nclass B:\n  pass\n"""\n        return s\n    def g(self):\n        a = 1\n        return a\n',
    "continuation": "def f():\n    x = 1 + \\\n2\n    return x\n\n\ndef g():\n    a = 1\n    b = 2\n    return a\n",
    "low_bracket": "def f():\n    x = [\n1,\n2]\n    return x\n\n\ndef g():\n    a = 1\n    b = 2\n    return a\n",
    "one_liners": "def f(): return 1\ndef g(\n    x,\n) -> int: return x\ndef h(x):\n    y = x\n    z = y\n    return z\n",
    "multi_line_header": "def f(\n    a: dict = {1:\n        2},\n    b=(lambda: 0),\n) -> int:\n    c = a\n    d = b\n    return c\n",
    "nested_and_async": "async def f():\n    def g():\n        return 1\n    async with x:\n        await y\n    return g\n\n\nclass C:\n    @dec\n    async def m(self):\n        a = 1\n        return a  # trailing comment\n    # comment at the end\n\n\nz = 2\n",
    "non_ascii": "def f():\n    a = 'é'\n    return 'ünïcödé'\n\n\ndef g():\n    b = 1\n    return b\n",
    "semicolon": "def f():\n    a = 1\n    b = 2;\n\n\ndef g():\n    a = 1\n    return a; \n",
    "comment_quotes": "def f():\n    a = 1  # don't \"\n    b = '#' + \"'''\"\n    return a\n\n\ndef g():\n    c = 1\n    return c\n",
    "crlf": "def f():\r\n    a = 1\r\n    return a\r\n\r\n\r\nclass A:\r\n    def m(self):\r\n        b = 2\r\n        return b\r\n",
    "if_block": "if cond:\n    def f():\n        a = 1\n        return a\nelse:\n    def f():\n        b = 2\n        return b\ntry:\n    def g():\n        c = 3\n        return c\nexcept E:\n    pass\n",
    "body_ends_in_string": 'def f():\n    a = 1\n    return """\ntext\n"""\n\n\ndef g():\n    b = 1\n    c = 2\n    return b\n',
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_sources(name):
    same_as_ast_parse(PAD + TRICKY[name])


def test_bodies_are_parsed_on_first_use(monkeypatch):
    text = PAD + "def f():\n    a = 1\n    return a\n\n\nclass A:\n    def m(self):\n        b = 2\n        return b\n"
    tree = lazyparse.parse(text, "t.py")
    assert is_lazy(tree)
    calls = []
    real = lazyparse._materialize
    monkeypatch.setattr(lazyparse, "_materialize", lambda node: calls.append(node.name) or real(node))
    f = tree.body[-2]
    m = tree.body[-1].body[0]
    assert isinstance(f, ast.FunctionDef) and isinstance(m, ast.FunctionDef)
    full = ast.parse(text)
    assert (f.end_lineno, f.end_col_offset) == (full.body[-2].end_lineno, full.body[-2].end_col_offset)  # known without the body
    assert calls == []
    assert isinstance(m.body[-1], ast.Return) and calls == ["m"]
    assert dump(tree) == dump(ast.parse(text))


def test_syntax_error_in_a_body_that_is_read():
    text = PAD + "from torch._subclasses import FakeTensorMode\n\n\ndef f():\n    a = 1\n    with FakeTensorMode():\n        b = = 2\n    return a\n"
    with pytest.raises(SyntaxError) as full:
        ast.parse(text)
    with pytest.raises(SyntaxError) as lazy:
        lint_source(text, "t.py", ALL_CODES)
    assert (lazy.value.msg, lazy.value.lineno) == (full.value.msg, full.value.lineno)


def test_syntax_error_outside_bodies_is_the_same():
    text = PAD + "def f():\n    a = 1\n    return a\nx = (\n"
    with pytest.raises(SyntaxError) as full:
        ast.parse(text)
    with pytest.raises(SyntaxError) as lazy:
        lazyparse.parse(text, "t.py")
    assert (lazy.value.msg, lazy.value.lineno) == (full.value.msg, full.value.lineno)


def _files_past_prefilter(tree: str):
    files = discover.discover([tree], settings.resolve({}, root=tree)).files
    for p in files:
        if p.endswith(".py") or p.endswith(".pyi"):
            text = Path(p).read_text(encoding="utf-8")
            if prefilter.may_contain_fake_region(text):
                yield p, text


@pytest.mark.slow  # every torch file past the prefilter: about 25 s
def test_fixtures_and_torch_files_past_the_prefilter():
    trees = [str(ROOT / "fixtures")]
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        trees.append(list(spec.submodule_search_locations)[0])
    n = lazy = big = 0
    for tree in trees:
        for path, text in _files_past_prefilter(tree):
            try:
                full = ast.parse(text)
            except SyntaxError:
                continue
            got = lazyparse.parse(text, path)
            big += len(text) >= 20 * lazyparse.MIN_CHARS
            lazy += is_lazy(got) and len(text) >= 20 * lazyparse.MIN_CHARS
            assert dump(got) == dump(full), path
            n += 1
    assert n >= 100 if len(trees) > 1 else n > 0
    assert lazy >= 0.8 * big  # most big files are parsed lazily (not whole, after a failed scan)
