"""The flake8 adapter: the same findings, through flake8.

Registered in ``pyproject.toml`` as ``FGL = fakegrad_lint.integrations.flake8_plugin:FakegradChecker``
under ``flake8.extension``, so ``flake8`` runs it on every file once the package
is installed. It reuses the AST flake8 has already parsed (no second parse) and
reports ``(row, col, "FGLxxx message", type)`` with ``col`` the tool's 0-based
*character* column; flake8 adds 1 when it prints.

Everything else is flake8's: ``# noqa`` / ``# noqa: FGL001``, ``--select``,
``--extend-select``, ``--ignore``, ``--per-file-ignores``, ``-j``. The catalogue's
opt-in rules (``Rule.default`` false: FGL004, and unused noqa, which this plugin never
reports) are in flake8's default ignore list; ``--extend-select FGL004`` turns
them on.

Importing this module imports nothing heavy (no torch, no analyzer): flake8
loads every plugin at start-up, so the analyzer is imported on the first file.
The findings come from :func:`fakegrad_lint.engine.lint.lint_source`, the path
``fakegrad-lint check`` takes; the project of a file (whole-project analysis) is
found from its path.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterator
from typing import Any

from fakegrad_lint import __version__

#: Reported (at 1:1) for a file the plugin could not check, so flake8 fails.
ERROR_CODE = "FGL999"


class FakegradChecker:
    name = "fakegrad-lint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str = "(none)", lines: list[str] | None = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser: Any) -> None:
        from fakegrad_lint.rules import OPT_IN_CODES  # the catalogue's default-off rules

        parser.extend_default_ignore(list(OPT_IN_CODES))

    def _findings(self) -> list:
        source = self._source()
        # The engine's one path (lint_source), with flake8's AST and without
        # ``# noqa`` (flake8 applies its own) or fixes (flake8 shows none). The
        # prefilter comes first: most files stop there without importing the
        # analyzer at all; a file flake8 did not read from disk has no project.
        from fakegrad_lint.engine.prefilter import may_contain_fake_region, may_reach_region

        on_disk = self.filename not in ("-", "stdin", "(none)") and os.path.isfile(self.filename)
        region = may_reach_region(source, self.filename) if on_disk else may_contain_fake_region(source)
        if not region:
            return []
        from fakegrad_lint.engine.lint import lint_source
        from fakegrad_lint.rules import ALL_CODES

        return lint_source(source, self.filename, ALL_CODES, tree=self.tree, noqa=False, fixes=False, region=True)

    def _source(self) -> str:
        if self.lines is not None:
            return "".join(self.lines)
        if self.filename in ("-", "stdin", "(none)"):
            return ""
        from fakegrad_lint.sources.sourcefile import read_source

        return read_source(self.filename).text

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        try:
            findings = self._findings()
        except Exception as exc:  # an analyzer bug must not abort the whole flake8 run ...
            if os.environ.get("FAKEGRAD_LINT_DEBUG"):
                raise
            # ... nor pass unnoticed: it is a finding (flake8 then exits 1),
            # as flake8 itself reports a file it cannot parse as E999.
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
            sys.stderr.write(f"{self.filename}: error: internal error: {reason}\n")
            yield 1, 0, f"{ERROR_CODE} fakegrad-lint could not check this file: internal error: {reason}", type(self)
            return
        for f in findings:
            yield f.location.row, f.location.column, f"{f.code} {f.message}", type(self)
