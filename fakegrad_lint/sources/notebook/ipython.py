"""IPython syntax in a code cell, masked line for line so rows and columns stay right.

A cell starting with a cell magic (``%%time``, ``%%bash``...) is left out; line
magics (``%matplotlib inline``), shell lines (``!pip install x``), help lines
(``obj?``, ``?obj``), autocall escapes (``/f x``) and magic assignments
(``out = !ls``, ``t = %timeit -o f()``) at the start of a statement become a
``pass`` placeholder (with a unique comment) at a valid indentation. Cells that
parse as Python are taken verbatim. :func:`python_text` returns the placeholders
with the lines they stand for, so a cell is written back byte for byte.
"""

from __future__ import annotations

import re

from fakegrad_lint.sources.text import NEWLINE_RE, indent_of, parses

__all__ = ["PLACEHOLDER", "python_text"]

PLACEHOLDER = "pass  # fakegrad-lint: IPython line"
_HELP_LINE = re.compile(r"\s*(?:\?{1,2}\s*\S.*|%{0,2}[\w*.\[\]]+\s*\?{1,2}\s*)")
_MAGIC_ASSIGN = re.compile(r"\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")
_ESCAPES = ("%", "!", "?", "/", ";", ",")


def _is_ipython_line(body: str) -> bool:
    s = body.lstrip()
    if not s or s.startswith("#"):
        return False
    if s.startswith(_ESCAPES):
        return True
    if s.rstrip().endswith("?") and _HELP_LINE.fullmatch(body):
        return True
    return bool(_MAGIC_ASSIGN.match(body))


def _scan_code(body: str, quote: str | None, depth: int) -> tuple[str | None, int, bool, str]:
    """Scan one physical line of Python: returns (open quote, bracket depth,
    ends with a backslash continuation, the code before any comment)."""
    j = 0
    n = len(body)
    code_end = n
    cont = False
    while j < n:
        if quote:
            if body.startswith(quote, j):
                j += len(quote)
                quote = None
                continue
            if body[j] == "\\":
                j += 2
                continue
            j += 1
            continue
        c = body[j]
        if c == "#":
            code_end = j
            break
        if c in "\"'":
            if body.startswith(c * 3, j):
                quote = c * 3
                j += 3
            else:
                quote = c
                j += 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "\\" and j == n - 1:
            cont = True
        j += 1
    if quote in ('"', "'") and not body.endswith("\\"):
        quote = None  # an unterminated one-line string ends with its line
    return quote, depth, cont, body[:code_end]


def python_text(source: str, tag: str) -> tuple[str | None, dict[str, str]]:
    """The Python program for one cell's ``source``.

    Returns ``(text, placeholders)``: ``text`` is None for a cell magic cell (left
    out); ``placeholders`` maps each placeholder line (without its terminator)
    to the original line it stands for. ``tag`` makes placeholders unique.
    """
    first = next((line for line in source.splitlines() if line.strip()), "")
    if first.startswith("%%"):
        return None, {}
    if parses(source):
        return source, {}
    lines = NEWLINE_RE.split(source)
    ends = NEWLINE_RE.findall(source) + [""]
    out: list[str] = []
    placeholders: dict[str, str] = {}
    quote: str | None = None
    depth = 0
    cont = False
    magic_cont = False
    stmt_indent = ""
    prev_colon = False
    magic_indent = ""
    for i, body in enumerate(lines):
        at_start = quote is None and depth == 0 and not cont
        if magic_cont or (at_start and _is_ipython_line(body)):
            if not magic_cont:
                own = indent_of(body)
                # keep the line's own indentation unless it would be an unexpected indent
                magic_indent = own if (prev_colon or len(own) <= len(stmt_indent)) else stmt_indent
            placeholder = f"{magic_indent}{PLACEHOLDER} {tag}.{i + 1}"
            placeholders[placeholder] = body
            out.append(placeholder + ends[i])
            magic_cont = body.endswith("\\")
            if not magic_cont:
                stmt_indent = magic_indent
                prev_colon = False
            continue
        if at_start and body.strip() and not body.lstrip().startswith("#"):
            stmt_indent = indent_of(body)
        quote, depth, cont, code = _scan_code(body, quote, depth)
        if quote is None and depth == 0 and not cont and code.strip():
            prev_colon = code.rstrip().endswith(":")
        out.append(body + ends[i])
    return "".join(out), placeholders
