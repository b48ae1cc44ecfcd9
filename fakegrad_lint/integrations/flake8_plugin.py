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
The project of a file (whole-project analysis) is found from its path, as for
``check_source``.
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
        # The cheap byte-level prefilter first: most files stop here without
        # importing the analyzer at all.
        from fakegrad_lint.engine.prefilter import may_contain_fake_region

        if not may_contain_fake_region(source) and not self._reaches_project_region(source):
            return []
        from fakegrad_lint.engine.lint import check_source

        return check_source(source, self.filename, tree=self.tree, fixes=False)  # flake8 shows no fixes

    def _source(self) -> str:
        if self.lines is not None:
            return "".join(self.lines)
        if self.filename in ("-", "stdin", "(none)"):
            return ""
        from fakegrad_lint.sources.sourcefile import read_source

        return read_source(self.filename).text

    def _reaches_project_region(self, source: str) -> bool:
        """Whole-project analysis: a file that names no fake mode but imports a
        module of its project that can reach one (text only, no analyzer)."""
        if "import" not in source or self.filename in ("-", "stdin", "(none)") or not os.path.isfile(self.filename):
            return False
        from fakegrad_lint.analysis.project import reaches_region

        try:
            return reaches_region(self.filename, source)
        except (OSError, ValueError, RecursionError):
            return False

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
