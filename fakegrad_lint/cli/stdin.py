"""``fakegrad-lint check - --stdin-filename path.py``: the file's text comes from
standard input (editors, pipe-based integrations), as in ruff.

The text is checked as if it were ``path.py`` (findings name that path; its
configuration and ``per-file-ignores`` apply) and nothing on disk is read or
written. With ``--fix``/``--fix-only`` the fixed text (the input unchanged when
nothing was fixed) goes to stdout and the report to stderr; ``--diff`` prints
the diff. Bytes are decoded as the file would be (PEP 263, BOM) and the fixed
text is written back in the same encoding.
"""

from __future__ import annotations

import dataclasses
import sys

from fakegrad_lint.findings import ToolError


def run(name: str, codes: frozenset[str], options, raw: bytes | None = None):
    """``(FileResult, errors, fixed bytes or None)``, or a one-line error string."""
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.sources.sourcefile import SourceError, decode_source

    if raw is None:
        raw = sys.stdin.buffer.read()
    mode = options.mode
    if mode == "add-noqa":
        return "--add-noqa cannot be used with standard input (`-`)", [], None
    from fakegrad_lint.sources.kind import kind_of

    if kind_of(name) is not None and mode != "check":  # fixes are written back as Python text here
        return "fixing a notebook read from standard input is not supported", [], None
    try:
        sf = decode_source(raw, name)
    except SourceError as exc:
        result = pipeline.FileResult(name)
        return result, [ToolError(name, str(exc))], (raw if mode in ("fix", "fix-only") else None)
    if mode in ("fix", "fix-only"):
        # compute the fixes as --diff does (nothing is written), then print the text
        result = pipeline.process_file(name, codes, dataclasses.replace(options, mode="diff"), sf)
        result.diff = ""
        if mode == "fix-only":
            result.findings = []
        new_text = result.fixed_text if result.fixed_text is not None else sf.text
        if result.fixed_text is not None:
            result.source = new_text
        try:
            fixed = sf.encode(new_text) if result.fixed_text is not None else raw
        except SourceError as exc:
            result.errors.append(ToolError(name, str(exc)))
            fixed = raw
        return result, [], fixed
    return pipeline.process_file(name, codes, options, sf), [], None
