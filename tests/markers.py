"""Inline expectations of the fixture corpus.

A line that must be flagged ends with a comment holding only rule codes::

    y = (x * 2).sum()  # FGL001
    out = model(x)  # FGL001, FGL004

Comments are found with ``tokenize``, so ``# FGL001`` inside a string literal is
not a marker, and a comment with anything besides codes (``# FGL001 see above``)
is not one either.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

MARKER_RE = re.compile(r"#\s*(FGL\d{3}(?:\s*,\s*FGL\d{3})*)\s*,?\s*$")
CODE_RE = re.compile(r"FGL\d{3}")


def markers_in_source(source: str) -> set[tuple[int, str]]:
    """``{(row, code)}`` of every marker comment in ``source`` (rows 1-based)."""
    found: set[tuple[int, str]] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        m = MARKER_RE.fullmatch(tok.string.strip())
        if m:
            for code in CODE_RE.findall(m.group(1)):
                found.add((tok.start[0], code))
    return found


def expected_markers(path) -> set[tuple[int, str]]:
    """``{(row, code)}`` expected for the fixture at ``path``."""
    return markers_in_source(Path(path).read_text(encoding="utf-8"))


FIXTURES_DIR = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_paths() -> list[Path]:
    """Every runnable fixture (golden ``*.fixed.py`` files excluded), sorted."""
    return sorted(p for p in FIXTURES_DIR.glob("*.py") if not p.name.endswith(".fixed.py"))
