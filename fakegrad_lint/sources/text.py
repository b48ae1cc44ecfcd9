"""Text utilities shared by every source kind, the engine, fixes and reporters.

One convention everywhere: a physical line ends at ``\\r\\n``, ``\\r`` or ``\\n``
and nowhere else (as in CPython's tokenizer; ``\\x0c``, ``\\u2028`` ... are
ordinary characters), rows are 1-based and columns 0-based characters.

- :data:`NEWLINE_RE` the one newline pattern;
- :func:`split_lines` physical lines with their terminators, :func:`lines_of`
  without them (what reporters print), :func:`line_starts` the line index;
- :func:`dominant_newline` the newline style a file mostly uses, :func:`indent_of`
  a line's leading blanks;
- :func:`parse_quietly` ``ast.parse`` without ``SyntaxWarning`` noise, and
  :func:`parses`, whether a text is Python at all.
"""

from __future__ import annotations

import ast
import re
import warnings

__all__ = ["NEWLINE_RE", "ParserLimit", "dominant_newline", "indent_of", "line_starts", "lines_of", "parse_quietly", "parses", "split_lines", "split_rows"]

NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into physical lines, keeping their terminators.

    Unlike ``str.splitlines`` only ``\\r\\n``, ``\\r`` and ``\\n`` end a line,
    as in Python's tokenizer. ``"".join(split_lines(t)) == t`` always holds.
    """
    return _LINE_RE.findall(text)


def split_rows(text: str) -> list[str]:
    """``NEWLINE_RE.split(text)``: the rows of ``text`` without their terminators
    (one more, empty, after a final newline); ``str.split`` when there is no ``\r``."""
    return text.split("\n") if "\r" not in text else NEWLINE_RE.split(text)


def lines_of(text: str) -> list[str]:
    """The physical lines of ``text`` without their terminators (as printed)."""
    return [line.rstrip("\r\n") for line in split_lines(text)]


def line_starts(text: str) -> list[int]:
    """Offsets at which each physical line starts (row ``r`` starts at ``[r - 1]``).

    A text that ends with a newline has one more, empty, row after it, so a
    position just past the end (``Location(len(lines) + 1, 0)``) is valid.
    """
    starts = [0]
    for match in NEWLINE_RE.finditer(text):
        starts.append(match.end())
    return starts


def dominant_newline(text: str) -> str:
    """The newline style most used in ``text`` (``\\n`` when it has none).

    Ties go to the style that appears first.
    """
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, match in enumerate(NEWLINE_RE.finditer(text)):
        nl = match.group()
        counts[nl] = counts.get(nl, 0) + 1
        first.setdefault(nl, index)
    if not counts:
        return "\n"
    return max(counts, key=lambda nl: (counts[nl], -first[nl]))


def indent_of(line: str) -> str:
    """The blanks (spaces and tabs) a line starts with."""
    return line[: len(line) - len(line.lstrip(" \t"))]


class ParserLimit(Exception):
    """CPython's parser gave up on the text (it stops with a bare
    ``MemoryError`` when expressions nest too deeply, e.g. 100,000 unary
    minus signs); ``str()`` says so as CPython would."""


def parse_quietly(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` with warnings (``SyntaxWarning`` for odd escapes ...) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=filename)


def parses(text: str) -> bool:
    """Whether ``text`` is Python that CPython's parser accepts."""
    try:
        parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
