"""Inline expectations (``# FGLnnn`` markers): the one parser every test uses.

A line that must be flagged ends with a comment holding only rule codes::

    y = (x * 2).sum()  # FGL001
    out = model(x)  # FGL001, FGL004
    out = model(x)  # FGL001 FGL004

The rules, for fixtures, ``tests/data`` programs and the catalogue's
``invalid``/``valid`` examples alike:

1. A marker is a *comment*: comments are found with ``tokenize``, so
   ``"# FGL001"`` inside a string literal (or a docstring) is not a marker.
2. The whole comment is codes: ``#``, optional spaces, then one or more codes
   ``FGL`` + three digits (upper case), separated by commas and/or spaces, an
   optional trailing comma. ``# FGL001 see above`` and ``# noqa: FGL001`` are
   not markers; ``#FGL003`` is one. After a ``# noqa`` directive, the comment's
   next ``#`` part may be the marker (``# noqa: FGL001  # FGL100``): a line has
   one comment, and an unused-noqa finding is on the directive's row.
3. The marker's row (1-based) is the row the comment is on; a finding matches
   it when it starts on that row with that code.

:func:`strip_markers` removes exactly the comments these rules accept (and the
blanks before them), keeping every line, so a marked example can be turned
into plain code.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

CODE = r"FGL\d{3}"
MARKER_RE = re.compile(rf"#[ \t]*({CODE}(?:[ \t]*,[ \t]*{CODE}|[ \t]+{CODE})*)[ \t]*,?[ \t]*")
CODE_RE = re.compile(CODE)
NOQA_BEFORE_MARKER_RE = re.compile(r"#[ \t]*noqa\b[^#]*(?=#)", re.IGNORECASE)


def _marker_comments(source: str):
    """``(row, column, codes)`` for every marker comment of ``source``."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.rstrip()
            col = tok.start[1]
            m = MARKER_RE.fullmatch(text)
            if m is None and (noqa := NOQA_BEFORE_MARKER_RE.match(text)):
                m = MARKER_RE.fullmatch(text, noqa.end())
                col += noqa.end()
            if m:
                yield tok.start[0], col, CODE_RE.findall(m.group(1))


def markers_in_source(source: str) -> set[tuple[int, str]]:
    """``{(row, code)}`` of every marker comment in ``source`` (rows 1-based)."""
    return {(row, code) for row, _col, codes in _marker_comments(source) for code in codes}


def expected_markers(path) -> set[tuple[int, str]]:
    """``{(row, code)}`` expected for the file at ``path``."""
    return markers_in_source(Path(path).read_text(encoding="utf-8"))


def marked_rows(source: str, code: str | None = None) -> list[int]:
    """The sorted rows that carry a marker (for ``code`` only, if given)."""
    return sorted({row for row, c in markers_in_source(source) if code is None or c == code})


def strip_markers(source: str) -> str:
    """``source`` without its marker comments (and the blanks before each);
    every other byte, and the number of lines, unchanged."""
    cuts = {row: col for row, col, _codes in _marker_comments(source)}
    if not cuts:
        return source
    lines = source.splitlines(keepends=True)
    for row, col in cuts.items():
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        lines[row - 1] = body[:col].rstrip(" \t") + line[len(body):]
    return "".join(lines)


FIXTURES_DIR = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_paths() -> list[Path]:
    """Every runnable fixture (golden ``*.fixed.py`` files excluded), sorted."""
    return sorted(p for p in FIXTURES_DIR.glob("*.py") if not p.name.endswith(".fixed.py"))
