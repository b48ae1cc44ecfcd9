"""The code cells of a notebook as one Python program, and positions back to cells.

The code cells, in order, are joined into one program (:func:`build_program`),
so a tensor created in cell 1 and used inside a fake region in cell 3 is
tracked like in a script. Between two cells the program holds one comment line
(the *boundary*), which is how positions map back (:class:`Layout`) and how a
fixed program is split into cells again (:meth:`NotebookProgram.split`).

Findings get ``cell`` (the 1-based position of the cell among *all* cells of the
notebook, markdown included, as ruff counts) and rows relative to the cell;
columns are unchanged (:func:`to_cells`). A fix whose edits leave one cell (or
touch a boundary or an IPython placeholder line) becomes a display-only
suggestion and is never applied (:func:`guarded_lint`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location
from fakegrad_lint.sources.notebook.format import CodeCell, Notebook
from fakegrad_lint.sources.notebook.ipython import python_text
from fakegrad_lint.sources.text import split_lines

__all__ = ["Layout", "NotebookProgram", "build_program", "guarded_lint", "to_cells"]

_BOUNDARY = "# fakegrad-lint: notebook cell boundary"


@dataclass
class _Part:
    cell: CodeCell
    text: str  # the Python text of the cell, newline-terminated unless empty
    placeholders: dict[str, str]
    added_newline: bool  # a "\n" was appended to the cell's text


@dataclass
class Layout:
    """Where each cell's rows are in one version of the program text."""

    starts: list[int]  # first program row of each part
    counts: list[int]  # rows of each part (the boundary row follows)
    placeholder_rows: set[int]

    def locate(self, loc: Location) -> tuple[int, Location] | None:
        """(part index, cell-relative location), or None for a boundary position
        that is not the end of a cell."""
        k = bisect.bisect_right(self.starts, loc.row) - 1
        if k < 0:
            return None
        rel = loc.row - self.starts[k] + 1
        if rel <= self.counts[k]:
            return k, Location(rel, loc.column)
        if rel == self.counts[k] + 1 and loc.column == 0:
            return k, Location(rel, 0)  # just past the cell's last line
        return None

    def locate_loose(self, loc: Location) -> tuple[int, Location]:
        """Like :meth:`locate`, but never fails (for report positions)."""
        k = max(0, bisect.bisect_right(self.starts, loc.row) - 1)
        rel = max(1, loc.row - self.starts[k] + 1)
        rel = min(rel, self.counts[k] + 1)
        return k, Location(rel, loc.column)


@dataclass
class NotebookProgram:
    notebook: Notebook
    parts: list[_Part] = field(default_factory=list)
    boundary: str = _BOUNDARY

    @property
    def text(self) -> str:
        return "".join(p.text + self.boundary + "\n" for p in self.parts)

    def layout(self, text: str) -> Layout:
        starts: list[int] = []
        counts: list[int] = []
        placeholder_rows: set[int] = set()
        marks = set()
        for p in self.parts:
            marks.update(p.placeholders)
        start = 1
        for row, line in enumerate(split_lines(text), start=1):
            body = line.rstrip("\r\n")
            if body == self.boundary:
                starts.append(start)
                counts.append(row - start)
                start = row + 1
            elif body in marks:
                placeholder_rows.add(row)
        if len(starts) != len(self.parts):
            raise RuntimeError("notebook program lost a cell boundary")
        return Layout(starts, counts, placeholder_rows)

    def split(self, text: str) -> list[str]:
        """The cell sources (original spelling, placeholders restored) of a
        version of the program text."""
        cells: list[list[str]] = [[]]
        for line in split_lines(text):
            if line.rstrip("\r\n") == self.boundary:
                cells.append([])
            else:
                cells[-1].append(line)
        cells.pop()  # after the last boundary: nothing
        if len(cells) != len(self.parts):
            raise RuntimeError("notebook program lost a cell boundary")
        out = []
        for part, lines in zip(self.parts, cells):
            restored = []
            for line in lines:
                body = line.rstrip("\r\n")
                original = part.placeholders.get(body)
                restored.append(line if original is None else original + line[len(body) :])
            new = "".join(restored)
            if part.added_newline and new.endswith("\n") and not new.endswith("\r\n"):
                new = new[:-1]
            out.append(new)
        return out


def build_program(nb: Notebook) -> NotebookProgram:
    boundary = _BOUNDARY
    n = 0
    while any(boundary in c.text for c in nb.cells):
        n += 1
        boundary = f"{_BOUNDARY} {n}"
    program = NotebookProgram(nb, boundary=boundary)
    for c in nb.cells:
        text, placeholders = python_text(c.text, f"{n}.{c.number}")
        if text is None or not text.strip():
            continue  # a cell magic cell, or nothing to check
        added = not text.endswith(("\n", "\r"))
        if added:
            text += "\n"
        program.parts.append(_Part(c, text, placeholders, added))
    return program


# ---------------------------------------------------------------------------
# findings


_SPANS_CELLS = "not applied: the fix spans notebook cells or touches IPython syntax"


def _fix_cell(layout: Layout, fix: Fix) -> int | None:
    """The part all edits of ``fix`` lie in, or None."""
    part = None
    for edit in fix.edits:
        a = layout.locate(edit.start)
        b = layout.locate(edit.end)
        if a is None or b is None or a[0] != b[0] or (part is not None and a[0] != part):
            return None
        part = a[0]
        # rows whose text the edit changes: an insertion at column 0 goes between rows
        if edit.start == edit.end:
            touched = range(edit.start.row, edit.start.row + 1) if edit.start.column > 0 else range(0)
        else:
            last = edit.end.row if edit.end.column > 0 else edit.end.row - 1
            touched = range(edit.start.row, last + 1)
        if any(r in layout.placeholder_rows for r in touched):
            return None
    return part


def _guard(f: Finding, layout: Layout) -> Finding:
    """Make a fix that may not be applied to a notebook display-only."""
    if f.fix is None or not f.fix.edits or f.fix.applicability is Applicability.DISPLAY_ONLY:
        return f
    if _fix_cell(layout, f.fix) == layout.locate_loose(f.location)[0]:
        return f
    return replace(f, fix=Fix(f"{f.fix.message} ({_SPANS_CELLS})", Applicability.DISPLAY_ONLY, ()))


_LINE_REF = re.compile(r"\bline (\d+)\b")


def _relabel(message: str, cell: int, program: NotebookProgram, layout: Layout) -> str:
    """Rewrite the program rows a message names (``line 12``) as cell rows
    (``line 3``, or ``cell 2, line 3`` for another cell); text in backticks is
    left alone."""

    def one(m: re.Match) -> str:
        located = layout.locate(Location(int(m.group(1)), 0))
        if located is None:
            return m.group(0)
        k, loc = located
        if loc.row > layout.counts[k]:
            return m.group(0)
        number = program.parts[k].cell.number
        return f"line {loc.row}" if number == cell else f"cell {number}, line {loc.row}"

    pieces = message.split("`")
    for i in range(0, len(pieces), 2):
        pieces[i] = _LINE_REF.sub(one, pieces[i])
    return "`".join(pieces)


def to_cells(f: Finding, program: NotebookProgram, layout: Layout) -> Finding:
    """``f`` (program positions) with ``cell`` set and cell-relative rows."""
    k, start = layout.locate_loose(f.location)
    k_end, end = layout.locate_loose(f.end_location)
    if k_end != k:
        end = Location(layout.counts[k] + 1, 0)
    fix = f.fix
    if fix is not None and fix.edits:
        if _fix_cell(layout, fix) == k:
            edits = tuple(
                Edit(layout.locate(e.start)[1], layout.locate(e.end)[1], e.content) for e in fix.edits  # type: ignore[index]
            )
            fix = replace(fix, edits=edits)
        else:
            fix = Fix(fix.message if _SPANS_CELLS in fix.message else f"{fix.message} ({_SPANS_CELLS})", Applicability.DISPLAY_ONLY, ())
    number = program.parts[k].cell.number
    if fix is not None:
        fix = replace(fix, message=_relabel(fix.message, number, program, layout))
    extra = dict(f.extra)
    if "noqa_row" in extra:
        extra["noqa_row"] = layout.locate_loose(Location(int(extra["noqa_row"]), 0))[1].row
    return replace(
        f,
        location=start,
        end_location=end,
        message=_relabel(f.message, number, program, layout),
        fix=fix,
        cell=number,
        extra=extra,
        trace=tuple(_step_to_cells(t, f.filename, program, layout) for t in f.trace),
    )


def _step_to_cells(t, filename: str, program: NotebookProgram, layout: Layout):
    """A trace step in the notebook itself gets its cell and cell-relative rows."""
    if t.filename != filename:
        return t
    k, start = layout.locate_loose(t.location)
    k_end, end = layout.locate_loose(t.end_location)
    if k_end != k:
        end = Location(layout.counts[k] + 1, 0)
    return replace(t, location=start, end_location=end, cell=program.parts[k].cell.number)


def _cell_syntax_error(exc: SyntaxError, layout: Layout, program: NotebookProgram) -> SyntaxError:
    if not exc.lineno:
        return exc
    k, loc = layout.locate_loose(Location(exc.lineno, max(0, (exc.offset or 1) - 1)))
    where = f"cell {program.parts[k].cell.number}, line {loc.row}"
    if exc.offset:
        where += f", column {exc.offset}"
    new = SyntaxError(f"{exc.msg} ({where})")
    new.__cause__ = None
    return new


def guarded_lint(lint: Callable[[str], list[Finding]], text: str, program: NotebookProgram) -> tuple[list[Finding], Layout]:
    layout = program.layout(text)
    try:
        found = lint(text)
    except SyntaxError as exc:
        raise _cell_syntax_error(exc, layout, program) from None
    return [_guard(f, layout) for f in found], layout
