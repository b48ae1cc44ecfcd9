"""Jupyter notebooks (``.ipynb``): lint the code cells as one program, fix cell by cell.

How a notebook is checked:

- The JSON is read with :mod:`json` (no ``nbformat`` needed). Anything that is not
  an nbformat-4 style notebook (invalid JSON, no ``"cells"`` list, a cell whose
  ``source`` is neither a string nor a list of strings) is a one-line
  :class:`~fakegrad_lint.sources.sourcefile.SourceError`. A notebook whose
  ``metadata.language_info.name`` (or kernelspec language) is not Python is
  skipped, as is a code cell whose ``metadata.vscode.languageId`` is not Python.
- The code cells, in order, are joined into one program, so a tensor created in
  cell 1 and used inside a fake region in cell 3 is tracked like in a script.
  Between two cells the program holds one comment line (the *boundary*), which
  is how positions map back and how a fixed program is split into cells again.
- IPython syntax is replaced line for line, so rows and columns stay right: a
  cell starting with a cell magic (``%%time``, ``%%bash``...) is left out; line
  magics (``%matplotlib inline``), shell lines (``!pip install x``), help lines
  (``obj?``, ``?obj``), autocall escapes (``/f x``) and magic assignments
  (``out = !ls``, ``t = %timeit -o f()``) at the start of a statement become a
  ``pass`` placeholder (with a unique comment) at a valid indentation. Cells that
  parse as Python are taken verbatim. The placeholders are put back, byte for
  byte, when a cell is written.
- Findings get ``cell`` (the 1-based position of the cell among *all* cells of
  the notebook, markdown included, as ruff counts) and rows relative to the
  cell; columns are unchanged.
- Fixes: the fix loop of :func:`fakegrad_lint.fix.apply.fix_text` runs on the joined
  program; a fix whose edits leave one cell (or touch a boundary or an IPython
  placeholder line) is turned into a display-only suggestion and never applied.
  Only the ``source`` values of the changed cells are rewritten in the file's
  text; every other byte (outputs, metadata, indentation, key order, escapes,
  the final newline) is kept. The new text is checked to decode to the same
  notebook except for those sources before it is written atomically.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location, hidden_unsafe
from fakegrad_lint.sources.sourcefile import SourceError

__all__ = [
    "Notebook",
    "NotebookProgram",
    "cell_source",
    "lint_notebook",
    "load",
    "process",
]

_BOUNDARY = "# fakegrad-lint: notebook cell boundary"
_PLACEHOLDER = "pass  # fakegrad-lint: IPython line"
_NL = re.compile(r"\r\n|\r|\n")
_WS = re.compile(r"[ \t\n\r]*")


# ---------------------------------------------------------------------------
# the notebook file


@dataclass
class CodeCell:
    index: int  # 0-based position among all cells
    text: str  # the cell's source, joined
    as_list: bool  # whether ``source`` is stored as a list of lines

    @property
    def number(self) -> int:
        """1-based cell number as reported (counts every cell, like ruff)."""
        return self.index + 1


@dataclass
class Notebook:
    path: str
    text: str  # the file decoded (BOM removed)
    bom: bool
    data: dict
    cells: list[CodeCell]  # the Python code cells
    python: bool  # False: a notebook of another language (nothing to check)

    def cell(self, number: int) -> CodeCell | None:
        for c in self.cells:
            if c.number == number:
                return c
        return None


def _is_python_language(name) -> bool:
    return not isinstance(name, str) or name.strip().lower() in ("", "python", "python3", "ipython", "ipython3")


def load(raw: bytes, path: str = "<notebook>") -> Notebook:
    """Decode and validate a notebook; raise :class:`SourceError` with a one-line reason."""
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SourceError(f"invalid notebook: not UTF-8 (byte 0x{raw[exc.start]:02x} at line {line})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"invalid notebook: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise SourceError("invalid notebook: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise SourceError(f"invalid notebook: the top level is a JSON {type(data).__name__}, not an object")
    cells = data.get("cells")
    if not isinstance(cells, list):
        if "worksheets" in data:
            raise SourceError("invalid notebook: nbformat 3 notebooks (\"worksheets\") are not supported; convert to nbformat 4")
        raise SourceError('invalid notebook: no "cells" list')
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    language = None
    info = metadata.get("language_info")
    if isinstance(info, dict):
        language = info.get("name")
    if language is None and isinstance(metadata.get("kernelspec"), dict):
        language = metadata["kernelspec"].get("language")
    python = _is_python_language(language)
    code_cells: list[CodeCell] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise SourceError(f"invalid notebook: cell {index + 1} is not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, str):
            joined, as_list = source, False
        elif isinstance(source, list) and all(isinstance(s, str) for s in source):
            joined, as_list = "".join(source), True
        else:
            raise SourceError(f'invalid notebook: cell {index + 1}: "source" is not a string or a list of strings')
        cell_meta = cell.get("metadata")
        if isinstance(cell_meta, dict) and isinstance(cell_meta.get("vscode"), dict):
            if not _is_python_language(cell_meta["vscode"].get("languageId")):
                continue
        code_cells.append(CodeCell(index, joined, as_list))
    return Notebook(path, text, bom, data, code_cells, python)


def cell_source(path: str, cell: int) -> str:
    """The source text of cell number ``cell`` (1-based, all cells counted) of the
    notebook at ``path``; ``""`` when it is not a code cell."""
    from fakegrad_lint.sources.sourcefile import read_source

    nb = load(read_source(path).raw, path)
    c = nb.cell(cell)
    return c.text if c is not None else ""


# ---------------------------------------------------------------------------
# IPython syntax


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


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


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


def _indent_of(body: str) -> str:
    return body[: len(body) - len(body.lstrip(" \t"))]


def python_text(source: str, tag: str) -> tuple[str | None, dict[str, str]]:
    """The Python program for one cell's ``source``.

    Returns ``(text, placeholders)``: ``text`` is None for a cell magic cell (left
    out); ``placeholders`` maps each placeholder line (without its terminator)
    to the original line it stands for. ``tag`` makes placeholders unique.
    """
    first = next((line for line in source.splitlines() if line.strip()), "")
    if first.startswith("%%"):
        return None, {}
    if _parses(source):
        return source, {}
    lines = _NL.split(source)
    ends = _NL.findall(source) + [""]
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
                own = _indent_of(body)
                # keep the line's own indentation unless it would be an unexpected indent
                magic_indent = own if (prev_colon or len(own) <= len(stmt_indent)) else stmt_indent
            placeholder = f"{magic_indent}{_PLACEHOLDER} {tag}.{i + 1}"
            placeholders[placeholder] = body
            out.append(placeholder + ends[i])
            magic_cont = body.endswith("\\")
            if not magic_cont:
                stmt_indent = magic_indent
                prev_colon = False
            continue
        if at_start and body.strip() and not body.lstrip().startswith("#"):
            stmt_indent = _indent_of(body)
        quote, depth, cont, code = _scan_code(body, quote, depth)
        if quote is None and depth == 0 and not cont and code.strip():
            prev_colon = code.rstrip().endswith(":")
        out.append(body + ends[i])
    return "".join(out), placeholders


# ---------------------------------------------------------------------------
# the joined program


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
        from fakegrad_lint.fix.apply import split_lines

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
        from fakegrad_lint.fix.apply import split_lines

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


def _may_matter(nb: Notebook) -> bool:
    """The prefilter for notebooks (after the JSON is checked): a notebook whose
    code cells name no fake mode and have no ``# noqa: ...FGL`` directive can
    report nothing, so its cells are never parsed (building the program parses
    every cell to find IPython syntax). The program's text is made of the
    cells' lines (or placeholders for IPython lines), so substring tests on the
    cells are a superset of the pipeline's prefilter on the program."""
    from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS
    from fakegrad_lint.engine.prefilter import may_have_fgl_noqa

    for c in nb.cells:
        t = c.text
        if any(w in t for w in ENTRY_WORDS) or may_have_fgl_noqa(t):
            return True
    return False


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


def _run_lint(lint: Callable[[str], list[Finding]], text: str, program: NotebookProgram) -> tuple[list[Finding], Layout]:
    layout = program.layout(text)
    try:
        found = lint(text)
    except SyntaxError as exc:
        raise _cell_syntax_error(exc, layout, program) from None
    return [_guard(f, layout) for f in found], layout


def lint_notebook(raw: bytes, path: str, lint: Callable[[str], list[Finding]]) -> list[Finding]:
    """Findings for the notebook ``raw`` (cell set, rows relative to the cell).

    ``lint`` maps a program text to findings (``# noqa`` applied); it is called once
    on the code cells joined. Raises :class:`SourceError` for a file that is not a
    notebook and ``SyntaxError`` (naming the cell) for a cell that does not parse.
    """
    nb = load(raw, path)
    program = build_program(nb)
    if not nb.python or not program.parts:
        return []
    found, layout = _run_lint(lint, program.text, program)
    return sorted((to_cells(f, program, layout) for f in found), key=lambda f: f.sort_key)


# ---------------------------------------------------------------------------
# writing back


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Offsets of each cell's ``"source"`` value in the notebook text, by cell index."""
    decoder = json.JSONDecoder()

    def ws(i: int) -> int:
        return _WS.match(text, i).end()

    def skip(i: int) -> int:
        return decoder.raw_decode(text, i)[1]

    def members(i: int):
        """Yield (key, value start) for the object starting at ``i``; returns its end."""
        assert text[i] == "{"
        i = ws(i + 1)
        if text[i] == "}":
            return
        while True:
            key, i = json.decoder.scanstring(text, i + 1)
            i = ws(i)
            assert text[i] == ":"
            i = ws(i + 1)
            end = yield key, i
            i = ws(end)
            if text[i] == ",":
                i = ws(i + 1)
                continue
            assert text[i] == "}"
            return

    spans: dict[int, tuple[int, int]] = {}
    top = members(ws(0))
    try:
        key, i = next(top)
        while True:
            if key == "cells" and text[i] == "[":
                j = ws(i + 1)
                index = 0
                while text[j] != "]":
                    if text[j] == "{":
                        cell = members(j)
                        try:
                            ckey, k = next(cell)
                            while True:
                                end = skip(k)
                                if ckey == "source":
                                    spans[index] = (k, end)
                                ckey, k = cell.send(end)
                        except StopIteration:
                            pass
                        j = skip(j)  # the cell object as a whole
                    else:
                        j = skip(j)
                    j = ws(j)
                    index += 1
                    if text[j] == ",":
                        j = ws(j + 1)
                end = j + 1
            else:
                end = skip(i)
            key, i = top.send(end)
    except StopIteration:
        pass
    return spans


def _indent_unit(text: str) -> str:
    m = re.match(r"\s*\{(?:\r\n|\r|\n)([ \t]+)", text)
    return m.group(1) if m else " "


def _render_source(text: str, span: tuple[int, int], new: str, as_list: bool, ensure_ascii: bool) -> str:
    old = text[span[0] : span[1]]
    if not as_list:
        return json.dumps(new, ensure_ascii=ensure_ascii)
    lines = new.splitlines(keepends=True)  # as nbformat splits
    if not lines:
        return "[]"
    inner = old[1:-1]
    if inner.strip():
        lead = inner[: len(inner) - len(inner.lstrip())]
        trail = inner[len(inner.rstrip()) :]
        # the separator between items, as written (", " or ",\n    " ...)
        first_end = json.JSONDecoder().raw_decode(old, 1 + len(lead))[1]
        rest = old[first_end:]
        if rest.lstrip().startswith(","):
            after = rest.lstrip()[1:]
            sep = rest[: len(rest) - len(rest.lstrip())] + "," + after[: len(after) - len(after.lstrip())]
        else:
            sep = "," + (lead if "\n" in lead or "\r" in lead else " ")
    else:
        # was "[]": indent one level deeper than the "source" key's line
        line_start = max(text.rfind("\n", 0, span[0]), text.rfind("\r", 0, span[0])) + 1
        key_indent = _indent_of(text[line_start : span[0]])
        newline = "\r\n" if "\r\n" in text else "\n"
        lead = newline + key_indent + _indent_unit(text)
        trail = newline + key_indent
        sep = "," + lead
    items = sep.join(json.dumps(line, ensure_ascii=ensure_ascii) for line in lines)
    return "[" + lead + items + trail + "]"


def render(nb: Notebook, new_sources: dict[int, str]) -> bytes:
    """The notebook file with the sources of the cells in ``new_sources`` (by
    0-based cell index) replaced; every other byte as it was."""
    if not new_sources:
        return (b"\xef\xbb\xbf" if nb.bom else b"") + nb.text.encode("utf-8")
    text = nb.text
    spans = _source_spans(text)
    ensure_ascii = text.isascii() and "\\u" in text
    as_list = {c.index: c.as_list for c in nb.cells}
    pieces = []
    position = 0
    for index in sorted(new_sources):
        if index not in spans:
            raise SourceError(f"cannot write the notebook back: cell {index + 1} has no \"source\"")
        begin, end = spans[index]
        pieces.append(text[position:begin])
        pieces.append(_render_source(text, spans[index], new_sources[index], as_list[index], ensure_ascii))
        position = end
    pieces.append(text[position:])
    new_text = "".join(pieces)
    # Never write something that does not decode to the intended notebook.
    check = json.loads(new_text)
    expected = json.loads(text)
    for index, source in new_sources.items():
        cell = expected["cells"][index]
        cell["source"] = source.splitlines(keepends=True) if as_list[index] else source
    if check != expected:
        raise SourceError("cannot write the notebook back losslessly; left unchanged")
    return (b"\xef\xbb\xbf" if nb.bom else b"") + new_text.encode("utf-8")


# ---------------------------------------------------------------------------
# the pipeline's entry point


def _terminated(text: str) -> str:
    """A cell's text as it is shown in a diff: cells rarely end with a newline,
    and a diff need not say so for every cell."""
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


def process(result, path: str, sf, lint: Callable[[str], list[Finding]], options, *, prefilter: bool = False) -> None:
    """Check (and in a fix mode, fix) the notebook ``sf`` for the pipeline:
    fills ``result`` (a :class:`fakegrad_lint.engine.process.FileResult`) like the
    pipeline does for a ``.py`` file. Writes only through ``write_atomic``.
    With ``prefilter`` (``lint`` is the pipeline's, which reports nothing for a
    program that names no fake mode and has no FGL noqa), a notebook that
    cannot matter (:func:`_may_matter`) is checked for validity only."""
    from fakegrad_lint.fix import apply as fixes
    from fakegrad_lint.sources.sourcefile import write_atomic

    nb = load(sf.raw, path)
    if not nb.python or (prefilter and not _may_matter(nb)):
        return
    program = build_program(nb)
    if not program.parts:
        return
    mode = options.mode
    text = program.text
    layout_of: dict[str, Layout] = {}

    def guarded_lint(t: str) -> list[Finding]:
        found, layout = _run_lint(lint, t, program)
        layout_of[t] = layout
        return found

    new_text = text
    if mode == "check":
        findings = guarded_lint(text)
    elif mode == "add-noqa":
        from fakegrad_lint.engine.noqa import add_noqa
        from fakegrad_lint.rules import UNUSED_NOQA_CODE

        findings = [f for f in guarded_lint(text) if f.code != UNUSED_NOQA_CODE]
        new_text, result.added_noqa = add_noqa(text, findings)
        findings = []
    else:
        outcome = fixes.fix_text(text, guarded_lint, unsafe=options.unsafe_fixes, max_iterations=options.max_fix_iterations)
        findings = list(outcome.remaining)
        result.fixed = len(outcome.applied)
        new_text = outcome.text
        if mode == "fix-only":
            findings = []
    if new_text != text:
        old_cells = program.split(text)
        new_cells = program.split(new_text)
        changed = {
            part.cell.index: new
            for part, old, new in zip(program.parts, old_cells, new_cells)
            if new != old
        }
        if changed:
            if mode == "diff":
                result.diff = "".join(
                    fixes.unified_diff(f"{path}:cell {part.cell.number}", _terminated(old), _terminated(new))
                    for part, old, new in zip(program.parts, old_cells, new_cells)
                    if new != old
                )
            else:
                from fakegrad_lint.engine.process import disarm_alarm

                data = render(nb, changed)
                disarm_alarm()
                write_atomic(path, data, expected=sf.raw)
    layout = layout_of.get(new_text) or program.layout(new_text)
    findings = sorted((to_cells(f, program, layout) for f in findings), key=lambda f: f.sort_key)
    result.findings = findings
    if not options.unsafe_fixes:
        result.hidden_unsafe = sum(
            1 for f in findings if hidden_unsafe(f.fix)
        )
