"""AST positions -> the tool's convention (row 1-based, column 0-based characters).

CPython's ``col_offset`` counts UTF-8 bytes; editors, ruff and flake8 users count
characters. The conversion happens once, here.
"""

from __future__ import annotations

from fakegrad_lint.sources.text import split_rows


class PositionMap:
    def __init__(self, source: str):
        self.lines = split_rows(source)

    def char_pos(self, lineno: int, byte_col: int) -> tuple[int, int]:
        if 1 <= lineno <= len(self.lines):
            line = self.lines[lineno - 1]
            if not line.isascii():
                return lineno, len(line.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))
        return lineno, byte_col

    def segment(self, node) -> str:
        sl, sc = self.char_pos(node.lineno, node.col_offset)
        el, ec = self.char_pos(node.end_lineno, node.end_col_offset)
        if sl == el:
            return self.lines[sl - 1][sc:ec]
        parts = [self.lines[sl - 1][sc:]] + self.lines[sl : el - 1] + [self.lines[el - 1][:ec]]
        return "\n".join(parts)
