"""Source kinds: what the engine needs from a kind of file (like ruff's ``SourceKind``).

The engine (:mod:`fakegrad_lint.engine.process`) has one mode dispatch (check,
fix, diff, add-noqa) for every kind. A kind turns the file it was read from into
the Python *program* the engine lints, maps findings back to the positions
reported, and turns a changed program into the bytes to write:

========================  ===============================  =====================================
method                    Python file                      notebook
========================  ===============================  =====================================
``prefilter_text()``      the text                         the code cells' texts
``program()``             the text                         the code cells joined (IPython masked)
``lint(lint, text)``      ``lint(text)``                   fixes across cells made display-only,
                                                           syntax errors named by cell
``to_report(fs, text)``   as they are                      ``cell`` set, rows relative to it
``write(old, new)``       the text encoded as read         only the changed cells' ``source``
``diffs(old, new)``       one diff of the file's bytes     one diff per changed cell
``shown(text)``           ``(text, None)``                 ``(None, {cell number: cell text})``
========================  ===============================  =====================================

:func:`open_source` picks the kind by file name; adding a kind is one class
here (or in its own module) and one entry in :data:`KINDS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fakegrad_lint.findings import Finding
from fakegrad_lint.sources.sourcefile import SourceError, SourceFile

__all__ = ["KINDS", "PythonSource", "SourceKind", "open_source"]

Lint = Callable[[str], list[Finding]]


class SourceKind:
    """One file as the engine sees it; subclasses override what differs."""

    def __init__(self, file: SourceFile) -> None:
        self.file = file

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def raw(self) -> bytes:
        return self.file.raw

    def prefilter_text(self) -> str:
        """What the engine's prefilter reads: the program, or text that holds
        every word of it (the prefilter only lets through files that may matter;
        the analysis of one that cannot finds nothing)."""
        return self.file.text

    def program(self) -> str | None:
        """The Python text to lint, or None when there is nothing to check."""
        return self.file.text

    def lint(self, lint: Lint, text: str) -> list[Finding]:
        """Findings of one version of the program, in program positions."""
        return lint(text)

    def to_report(self, findings: list[Finding], text: str) -> list[Finding]:
        """Findings of program version ``text`` in the positions reported."""
        return findings

    def write(self, old: str, new: str) -> bytes:
        """The file's bytes once the program ``old`` became ``new``."""
        return self.file.encode(new)

    def diffs(self, old: str, new: str) -> list[tuple[str, str, str]]:
        """``(name, before, after)`` for each part of the file that changed."""
        return [(self.path, self._as_written(old), self._as_written(new))]

    def shown(self, text: str | None) -> tuple[str | None, dict[int, str] | None]:
        """What reporters print from: ``(text, cells)`` of the file holding
        program ``text`` (None: as read)."""
        return (self.file.text if text is None else text), None

    def _as_written(self, text: str) -> str:
        """``text`` as the bytes the file holds (its encoding, its BOM), seen as
        UTF-8 with surrogate escapes: a diff of a latin-1 file then carries the
        file's own bytes (the CLI writes them back with ``surrogateescape``), so
        ``patch`` gives exactly what ``--fix`` writes."""
        sf = self.file
        if sf.encoding == "utf-8" and not sf.bom:
            return text
        return sf.encode(text).decode("utf-8", "surrogateescape")


class PythonSource(SourceKind):
    """A ``.py`` file (or text given as one): the program is the text."""


#: File name suffix -> (what the files are called, ``module:class`` of their
#: kind, imported when first used). Any other file is a :class:`PythonSource`.
KINDS = {".ipynb": ("notebooks", "fakegrad_lint.sources.notebook:NotebookSource")}


def kind_of(path: str) -> tuple[str, str, str] | None:
    """``(suffix, label, module:class)`` of the kind of ``path`` (None: Python)."""
    for suffix, (label, name) in KINDS.items():
        if path.endswith(suffix):
            return suffix, label, name
    return None


def open_source(file: SourceFile) -> SourceKind:
    """The kind of ``file`` by its name. Raises :class:`SourceError` for a file
    that is not what its name says (a notebook that is not valid nbformat JSON)."""
    found = kind_of(file.path)
    if found is None:
        return PythonSource(file)
    suffix, label, name = found
    module, _, cls = name.partition(":")
    try:
        kind = getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise SourceError(f"{label} ({suffix}) are not supported by this build") from None
        raise
    return kind(file)
