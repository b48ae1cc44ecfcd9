"""Parse a module with function bodies parsed on first use.

Most of a file that names a fake mode is code that cannot reach a region, and
the analyzer never runs it: it only reads a function's body when it calls or
analyses that function. :func:`parse` therefore parses a *skeleton* of the file
in which the body of every outermost ``def`` (top-level functions, methods of
top-level classes ...) is replaced by a single ``...`` that ends exactly where
the body's last statement ends; every other line is unchanged. The skeleton's
nodes then carry the same positions as the full parse (classes, modules and
``if`` blocks end where they did), and each stubbed ``FunctionDef`` gets its
real ``body`` from a parse of its own lines the first time ``.body`` is read
(``ast.walk``, ``ast.dump`` and the interpreter all read it through the
attribute). Materialising every body gives an AST equal to ``ast.parse``'s
(``tests/test_lazyparse.py`` checks this, positions included, on the fixtures
and on every torch file that names a fake mode).

The scan that finds the bodies is line based: a regex finds ``def`` lines and
the lines with less indentation after them; string literals and backslash
continuations are located by one regex pass so that lines inside them never
count. Brackets are not tracked: a wrongly placed body end always leaves an
unmatched bracket in the skeleton, which then fails to parse. Whenever the
skeleton does not parse, or does not hold the stubs where the scan put them,
or the file has tabs, form feeds or lone carriage returns in it, the file is
parsed whole with ``ast.parse`` (which also raises the genuine
``SyntaxError``).

A syntax error inside a body that is never read is not reported (as for a file
the prefilter rejects); one inside a body that is read is raised, with
``ast.parse``'s message for the whole file, by :func:`raise_deferred`.
"""

from __future__ import annotations

import ast
import bisect
import re
from itertools import accumulate
from operator import add

from fakegrad_lint.sources.text import parse_quietly

# Files smaller than this are parsed whole (the scan would not pay).
MIN_CHARS = 4000

# string literals (their prefix letters do not change where they end), comments
# and backslash continuations, starting with the only characters they can start with
# (each string pattern in the unrolled form ``a*(?:b a*)*``: the same matches as
# ``(?:a|b)*``, twice as fast in ``re`` on torch's files)
_STRING_RE = re.compile(
    r'''"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""|\'\'\'[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*\'\'\''''
    r'''|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'|\#[^\n]*|\\\n''',
    re.S,
)
_DEF_RE = re.compile(r"def[ \t]")  # then checked to start a line (a plain search is fastest)
_ONE_LINER = re.compile(r"\)\s*(?:->[^:]*)?:\s*[^\s#]")


class _Ctx:
    __slots__ = ("text", "lines", "path", "full", "error")

    def __init__(self, text: str, lines: list[str], path: str):
        self.text = text
        self.lines = lines
        self.path = path
        self.full: ast.Module | None = None
        self.error: SyntaxError | MemoryError | None = None

    def full_tree(self) -> ast.Module | None:
        if self.full is None and self.error is None:
            try:
                self.full = _parse(self.text, self.path)
            except (SyntaxError, MemoryError) as exc:  # MemoryError: CPython's parser limit
                self.error = exc
        return self.full


def _lazy_body(self):
    d = self.__dict__
    body = d.get("_lazy_body")
    if body is None:
        body = _materialize(self)
        d["_lazy_body"] = body
    return body


def _set_body(self, value):
    self.__dict__["_lazy_body"] = value


class FunctionDef(ast.FunctionDef):
    """A ``FunctionDef`` whose body is parsed when first read."""

    body = property(_lazy_body, _set_body)


class AsyncFunctionDef(ast.AsyncFunctionDef):
    """An ``AsyncFunctionDef`` whose body is parsed when first read."""

    body = property(_lazy_body, _set_body)


LAZY_DEF_TYPES = (FunctionDef, AsyncFunctionDef)


def _parse(text: str, path: str) -> ast.Module:
    return parse_quietly(text, path)


def _materialize(node) -> list:
    d = node.__dict__
    ctx: _Ctx = d["_lazy_ctx"]
    start, end = node.lineno, node.end_lineno
    region = "\n".join(ctx.lines[start - 1 : end])
    if node.col_offset:
        src = "\n" * (start - 2) + "if 1:\n" + region
    else:
        src = "\n" * (start - 1) + region
    try:
        mod = _parse(src, ctx.path)
        fn = mod.body[0].body[0] if node.col_offset else mod.body[0]
        if (
            type(fn) is not type(node).__mro__[1]
            or (fn.lineno, fn.col_offset, fn.end_lineno, fn.end_col_offset)
            != (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        ):
            raise ValueError("the body's parse does not match the skeleton")
        return fn.body
    except (SyntaxError, ValueError, IndexError, AttributeError, MemoryError):
        pass
    # something the scan did not foresee: take the body from the whole file's parse
    full = ctx.full_tree()
    if full is not None:
        for n in ast.walk(full):
            if type(n) is type(node).__mro__[1] and n.lineno == node.lineno and n.col_offset == node.col_offset:
                return n.body
    if ctx.error is None:
        ctx.error = SyntaxError("the body of a function could not be found")
    return [ast.Pass(lineno=node.lineno, col_offset=node.col_offset, end_lineno=node.lineno, end_col_offset=node.col_offset)]


def raise_deferred(tree: ast.AST) -> None:
    """Raise the ``SyntaxError`` of a lazily parsed body that failed (if any)."""
    ctx = getattr(tree, "_lazy_ctx", None)
    if ctx is not None and ctx.error is not None:
        raise ctx.error


def parse(text: str, path: str = "<unknown>") -> ast.Module:
    """``ast.parse(text)`` with outermost function bodies parsed on first use."""
    if len(text) < MIN_CHARS or "\t" in text or "\f" in text or text.count("\r") != text.count("\r\n"):
        return _parse(text, path)
    plan = _plan(text)
    if not plan:
        return _parse(text, path)
    lines = text.split("\n")
    skel = list(lines)
    for _def_line, _indent, last, stub_col, header_end in plan:
        for i in range(header_end, last - 1):  # 0-based: the body's lines but its last
            skel[i] = ""
        skel[last - 1] = " " * stub_col + "..."
    try:
        tree = _parse("\n".join(skel), path)
    except SyntaxError:
        return _parse(text, path)
    ctx = _Ctx(text, lines, path)
    expected = {p[0]: p for p in plan}
    found = 0
    for n in _statements(tree):
        t = type(n)
        if (t is ast.FunctionDef or t is ast.AsyncFunctionDef) and n.lineno in expected:
            _def_line, indent, last, stub_col, _header_end = expected[n.lineno]
            b = n.body
            if (
                n.col_offset != indent
                or len(b) != 1
                or type(b[0]) is not ast.Expr
                or b[0].lineno != last
                or b[0].col_offset != stub_col
            ):
                return _parse(text, path)
            del n.body
            n.__class__ = FunctionDef if t is ast.FunctionDef else AsyncFunctionDef
            n.__dict__["_lazy_ctx"] = ctx
            found += 1
    if found != len(plan):
        return _parse(text, path)
    tree._lazy_ctx = ctx  # type: ignore[attr-defined]
    return tree


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree):
    """Every statement of ``tree`` (not descending into expressions)."""
    todo = list(tree.body)
    while todo:
        n = todo.pop()
        yield n
        d = n.__dict__
        for f in _BLOCK_FIELDS:
            sub = d.get(f)
            if sub and type(sub) is list:
                todo.extend(sub)


def _plan(text: str) -> list[tuple[int, int, int, int, int]]:
    """The bodies to stub: (def line, indent, body's last line, stub column,
    header's last line), lines 1-based. Lines inside string literals or after a backslash continuation never
    count as def lines or as lines that end a body."""
    # spans (start, end) of multi-line strings and of backslash continuations
    spans_a: list[int] = []
    spans_b: list[int] = []
    comments: dict[int, int] = {}  # position of a newline after a comment -> comment start
    nl = text.find
    for m in _STRING_RE.finditer(text):
        s, e = m.span()
        if text[s] == "#":
            comments[e] = s
        elif nl("\n", s, e) >= 0:
            spans_a.append(s)
            spans_b.append(e)

    def hidden(pos: int) -> bool:
        """Is the line that starts at ``pos`` inside a string or a continuation?"""
        i = bisect.bisect_right(spans_a, pos - 1) - 1
        return i >= 0 and spans_b[i] > pos - 1

    acc = list(accumulate(map(len, text.split("\n")), initial=0))
    line_starts = list(map(add, acc, range(len(acc))))[:-1]  # line i starts at sum(len) + i
    n_lines = len(line_starts)

    def line_of(pos: int) -> int:  # 0-based
        return bisect.bisect_right(line_starts, pos) - 1

    plan = []
    covered = -1  # position up to which defs are inside a stubbed body
    rfind = text.rfind
    for m in _DEF_RE.finditer(text):
        d = m.start()
        if d < covered:
            continue
        s = rfind("\n", 0, d) + 1
        head = text[s:d]
        indent = len(head) - len(head.lstrip(" "))
        rest = head[indent:]
        if rest and (not rest.startswith("async") or rest[5:].strip(" \t")  or len(rest) == 5):
            continue  # not ``def`` (nor ``async def``) at the start of a line
        if hidden(s):
            continue
        # the header: up to the first line whose code ends with ':' (brackets are
        # not tracked: a wrong guess leaves a bracket open and the skeleton fails)
        li = line_of(s)
        if _ONE_LINER.search(_code_of(text, line_starts, li, comments)):
            continue  # ``def f(): return 1``: nothing to stub
        header_end = None
        j = li
        while j < n_lines and j < li + 200:
            code = _code_of(text, line_starts, j, comments).rstrip()
            if code.endswith(":"):
                header_end = j
                break
            if j > li and _ONE_LINER.search(code):
                break  # a header over several lines with its body on the last one
            j += 1
        if header_end is None:
            continue
        # the body ends before the next line (not hidden) with indent <= indent
        body_end_rx = _dedent_re(indent)
        pos = line_starts[header_end + 1] if header_end + 1 < n_lines else len(text)
        dedent = len(text)
        pos -= 1  # the pattern starts with the newline before the line
        while True:
            mm = body_end_rx.search(text, pos)
            if mm is None:
                break
            if not hidden(mm.start() + 1):
                dedent = mm.start() + 1
                break
            pos = mm.end() - 1
        dl = line_of(dedent) if dedent < len(text) else n_lines  # 0-based line of the dedent
        last = dl - 1
        while last > header_end:
            code = _code_of(text, line_starts, last, comments).strip()
            if code:
                break
            last -= 1
        if last <= header_end:
            continue  # the body is on the header line, or empty
        code = _code_of(text, line_starts, last, comments).rstrip()
        if code.endswith((";", "\\")):
            continue
        end_col = len(code.encode("utf-8")) if not code.isascii() else len(code)
        stub_col = end_col - 3
        if stub_col <= indent:
            continue
        if last - header_end < 2:
            continue  # short bodies: nothing to gain
        plan.append((li + 1, indent, last + 1, stub_col, header_end + 1))
        covered = line_starts[last + 1] if last + 1 < n_lines else len(text)
    return plan


_DEDENT: dict[int, re.Pattern] = {}


def _dedent_re(indent: int) -> re.Pattern:
    rx = _DEDENT.get(indent)
    if rx is None:
        rx = _DEDENT[indent] = re.compile(r"\n {0,%d}[^ \r\n#]" % indent)
    return rx


def _code_of(text: str, line_starts: list[int], i: int, comments: dict[int, int]) -> str:
    """Line ``i`` (0-based) without its comment (when the scan saw one end there)."""
    s = line_starts[i]
    e = line_starts[i + 1] - 1 if i + 1 < len(line_starts) else len(text)
    c = comments.get(e)
    if c is not None and c >= s:
        e = c
    line = text[s:e]
    return line[:-1] if line.endswith("\r") else line
