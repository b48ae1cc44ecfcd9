"""The notebook file: nbformat-4 JSON in, the same bytes out except the edited sources.

- :func:`load` reads the JSON with :mod:`json` (no ``nbformat`` needed). Anything
  that is not an nbformat-4 style notebook (not UTF-8, invalid JSON, no
  ``"cells"`` list, a cell whose ``source`` is neither a string nor a list of
  strings) is a one-line :class:`~fakegrad_lint.sources.sourcefile.SourceError`.
  A notebook whose ``metadata.language_info.name`` (or kernelspec language) is
  not Python says so (``Notebook.python``), and a code cell whose
  ``metadata.vscode.languageId`` is not Python is left out.
- :func:`render` rewrites only the ``source`` values of the changed cells in the
  file's text; every other byte (outputs, metadata, indentation, key order,
  escapes, the final newline, the BOM) is kept. The new text is checked to
  decode to the same notebook except for those sources.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from fakegrad_lint.sources.sourcefile import SourceError
from fakegrad_lint.sources.text import indent_of

__all__ = ["CodeCell", "Notebook", "load", "render"]

_WS = re.compile(r"[ \t\n\r]*")
_BOM = b"\xef\xbb\xbf"


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


def _ws(text: str, i: int) -> int:
    """The index of the first non-blank character at or after ``i``."""
    return _WS.match(text, i).end()


def _value_end(text: str, i: int) -> int:
    """The end of the JSON value that starts at ``text[i]``."""
    return json.JSONDecoder().raw_decode(text, i)[1]


def _members(text: str, i: int) -> list[tuple[str, int, int]]:
    """``(key, value start, value end)`` for each member of the JSON object that
    starts at ``text[i]``, in the order written."""
    out: list[tuple[str, int, int]] = []
    i = _ws(text, i + 1)
    if text[i] == "}":
        return out
    while True:
        key, i = json.decoder.scanstring(text, i + 1)
        i = _ws(text, i)  # at the ':'
        start = _ws(text, i + 1)
        end = _value_end(text, start)
        out.append((key, start, end))
        i = _ws(text, end)
        if text[i] != ",":
            return out  # at the '}'
        i = _ws(text, i + 1)


def _items(text: str, i: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each item of the JSON array that starts at ``text[i]``."""
    out: list[tuple[int, int]] = []
    i = _ws(text, i + 1)
    while text[i] != "]":
        end = _value_end(text, i)
        out.append((i, end))
        i = _ws(text, end)
        if text[i] == ",":
            i = _ws(text, i + 1)
    return out


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Offsets of each cell's ``"source"`` value in the notebook text, by cell
    index (the text is valid JSON: :func:`load` read it)."""
    spans: dict[int, tuple[int, int]] = {}
    for key, start, _end in _members(text, _ws(text, 0)):
        if key != "cells" or text[start] != "[":
            continue
        for index, (cell_start, _cell_end) in enumerate(_items(text, start)):
            if text[cell_start] != "{":
                continue
            for cell_key, value_start, value_end in _members(text, cell_start):
                if cell_key == "source":
                    spans[index] = (value_start, value_end)
    return spans


def _indent_unit(text: str) -> str:
    """The indentation unit the file uses (what its first member is indented by)."""
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
        key_indent = indent_of(text[line_start : span[0]])
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
        return (_BOM if nb.bom else b"") + nb.text.encode("utf-8")
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
    return (_BOM if nb.bom else b"") + new_text.encode("utf-8")
