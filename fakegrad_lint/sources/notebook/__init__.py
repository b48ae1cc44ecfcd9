"""Jupyter notebooks (``.ipynb``) as a source kind: the code cells linted as one program.

- :mod:`.format`: the nbformat-4 JSON, read with :mod:`json` and written back
  byte for byte except the changed cells' ``source`` values;
- :mod:`.ipython`: IPython syntax (magics, shell and help lines) masked line for
  line, so rows and columns stay right;
- :mod:`.program`: the code cells joined into one program, and positions,
  messages and fixes mapped back to cells.

:class:`NotebookSource` is what the engine uses (see
:mod:`fakegrad_lint.sources.kind`): the same mode dispatch as a ``.py`` file,
with the notebook read and parsed once. A notebook of another language, or one
whose cells are all cell magics, has no program and reports nothing; an invalid
one is a one-line :class:`~fakegrad_lint.sources.sourcefile.SourceError`.
"""

from __future__ import annotations

from fakegrad_lint.findings import Finding
from fakegrad_lint.sources.kind import Lint, SourceKind
from fakegrad_lint.sources.notebook.format import CodeCell, Notebook, load, render
from fakegrad_lint.sources.notebook.ipython import python_text
from fakegrad_lint.sources.notebook.program import Layout, NotebookProgram, build_program, guarded_lint, to_cells
from fakegrad_lint.sources.sourcefile import SourceFile

__all__ = [
    "CodeCell",
    "Layout",
    "Notebook",
    "NotebookProgram",
    "NotebookSource",
    "build_program",
    "lint_notebook",
    "load",
    "python_text",
    "render",
]


def _terminated(text: str) -> str:
    """A cell's text as it is shown in a diff: cells rarely end with a newline,
    and a diff need not say so for every cell."""
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


class NotebookSource(SourceKind):
    def __init__(self, file: SourceFile) -> None:
        super().__init__(file)
        self.notebook = load(file.raw, file.path)
        self._program: NotebookProgram | None = None
        self._layouts: dict[str, Layout] = {}

    def prefilter_text(self) -> str:
        # The program is made of the cells' lines (or placeholders for IPython
        # lines), so the prefilter on the cells is a superset of the program's,
        # and it never builds the program (which parses every cell).
        return "\n".join(c.text for c in self.notebook.cells) if self.notebook.python else ""

    def program(self) -> str | None:
        if not self.notebook.python:
            return None
        if self._program is None:
            self._program = build_program(self.notebook)
        return self._program.text if self._program.parts else None

    def lint(self, lint: Lint, text: str) -> list[Finding]:
        found, self._layouts[text] = guarded_lint(lint, text, self._program)
        return found

    def to_report(self, findings: list[Finding], text: str) -> list[Finding]:
        layout = self._layouts.get(text) or self._program.layout(text)
        return sorted((to_cells(f, self._program, layout) for f in findings), key=lambda f: f.sort_key)

    def _changed(self, old: str, new: str) -> list[tuple[CodeCell, str, str]]:
        """``(cell, old source, new source)`` for each cell the edit changed."""
        program = self._program
        return [
            (part.cell, before, after)
            for part, before, after in zip(program.parts, program.split(old), program.split(new))
            if before != after
        ]

    def write(self, old: str, new: str) -> bytes:
        return render(self.notebook, {cell.index: after for cell, _before, after in self._changed(old, new)})

    def diffs(self, old: str, new: str) -> list[tuple[str, str, str]]:
        return [
            (f"{self.path}:cell {cell.number}", _terminated(before), _terminated(after))
            for cell, before, after in self._changed(old, new)
        ]

    def shown(self, text: str | None) -> tuple[str | None, dict[int, str] | None]:
        cells = {c.number: c.text for c in self.notebook.cells}
        if text is not None and self._program is not None and text != self._program.text:
            cells.update((part.cell.number, new) for part, new in zip(self._program.parts, self._program.split(text)))
        return None, cells


def lint_notebook(raw: bytes, path: str, lint: Lint) -> list[Finding]:
    """Findings for the notebook ``raw`` (cell set, rows relative to the cell).

    ``lint`` maps a program text to findings (``# noqa`` applied); it is called once
    on the code cells joined. Raises :class:`SourceError` for a file that is not a
    notebook and ``SyntaxError`` (naming the cell) for a cell that does not parse.
    """
    src = NotebookSource(SourceFile(path, raw.decode("utf-8", "replace"), "utf-8", False, raw))
    text = src.program()
    if text is None:
        return []
    return src.to_report(src.lint(lint, text), text)
