"""Reporters: one module per output format, all over one :class:`ReportContext`.

A format module ``fakegrad_lint/report/<name>.py`` (``-`` in the format name
becomes ``_``: ``json-lines`` -> ``json_lines.py``) exposes ``render(ctx) -> str``
and is loaded by name on demand; adding a format adds that file and its name to
``OUTPUT_FORMATS`` (``fakegrad_lint/config/pyproject.py``, the one list the
flag and the ``output-format`` key are checked against; a test keeps the list
and the modules equal).

Positions inside the tool are row 1-based, column 0-based characters; a reporter
converts at the edge (text/json/sarif print ``column + 1``).
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from typing import Callable

from fakegrad_lint.config.pyproject import OUTPUT_FORMATS
from fakegrad_lint.findings import Finding, ToolError, applies

#: The output formats (the one list lives with the configuration that validates
#: it; each name is a module of this package).
FORMATS: tuple[str, ...] = OUTPUT_FORMATS


class UnknownFormat(ValueError):
    pass


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    url: str


def rule_info(code: str) -> RuleInfo:
    """Name, summary and URL of ``code``, from the rule catalogue (an unknown code,
    the flake8 plugin's FGL999 say, gets its lower-cased code and no URL)."""
    from fakegrad_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code)
    if rule is not None:
        return RuleInfo(rule.code, rule.name, rule.summary, rule.url)
    return RuleInfo(code, code.lower(), "", "")


def _read_lines(filename: str) -> list[str]:
    """The lines of a file the run did not check (a trace step in another module)."""
    from fakegrad_lint.sources.sourcefile import SourceError, read_source
    from fakegrad_lint.sources.text import lines_of

    try:
        return lines_of(read_source(filename).text)
    except (SourceError, OSError):
        return []


def source_provider_for(results) -> Callable[[str, int | None], list[str]]:
    """A :attr:`ReportContext.source_provider` over the engine's per-file results
    (``FileResult.source`` / ``.cells``, the text the engine holds): a checked file
    is never read again; only other files (a trace step in another module) are."""
    from fakegrad_lint.sources.text import lines_of

    by_path = {r.path: r for r in results if r.source is not None or r.cells is not None}

    def provide(filename: str, cell: int | None) -> list[str]:
        r = by_path.get(filename)
        if cell is not None:
            return lines_of(r.cells.get(cell, "")) if r is not None and r.cells else []
        if r is not None and r.source is not None:
            return lines_of(r.source)
        return _read_lines(filename)

    return provide


@dataclass
class ReportContext:
    """Everything a reporter may print. Reporters never touch files themselves
    except through :meth:`source_lines`."""

    findings: list[Finding] = field(default_factory=list)  # sorted by file/cell/row/col/code
    errors: list[ToolError] = field(default_factory=list)
    # Fix mode: "check" (report), "fix" (--fix), "diff" (--diff), "fix-only", "add-noqa".
    mode: str = "check"
    unsafe_fixes: bool = False  # whether unsafe fixes count as applicable ([*])
    fixed: int = 0  # fixes applied (or, for --diff, that would be applied)
    fixed_by_file: dict[str, int] = field(default_factory=dict)
    hidden_unsafe_fixes: int = 0  # unsafe fixes not applicable without --unsafe-fixes
    diffs: list[str] = field(default_factory=list)  # unified diffs (--diff)
    added_noqa: int = 0  # --add-noqa
    show_source: bool = False
    color: bool = False
    statistics: bool = False
    quiet: bool = False
    show_fixes: bool = False  # --show-fixes: list the fixes applied per file
    show_trace: bool = False  # --show-trace: a "source L5, region L7, backward L9" line per finding (text)
    files_checked: int = 0
    # filename (as in Finding.filename) [, cell] -> source lines without terminators;
    # for a notebook, the lines of the cell. The CLI sets it from the engine's
    # results (:func:`source_provider_for`); the default reads the file.
    source_provider: Callable[[str, int | None], list[str]] | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_run(cls, result, options, **display) -> ReportContext:
        """The context of one engine run (``engine.process.run``'s result and the
        ``Options`` it ran with): the mode and the fix safety are the run's own, so a
        front end states them once, to the engine; ``display`` holds the rest
        (errors, color, quiet, ...)."""
        rs = result.results
        return cls(
            findings=result.findings,
            mode=options.mode,
            unsafe_fixes=options.unsafe_fixes,
            fixed=sum(r.fixed for r in rs),
            fixed_by_file={r.path: r.fixed for r in rs if r.fixed},
            hidden_unsafe_fixes=sum(r.hidden_unsafe for r in rs),
            diffs=[r.diff for r in rs if r.diff],
            added_noqa=sum(r.added_noqa for r in rs),
            files_checked=result.files_checked,
            source_provider=source_provider_for(rs),
            **display,
        )

    def source_lines(self, filename: str, cell: int | None = None) -> list[str]:
        key = (filename, cell)
        if key not in self._cache:
            if self.source_provider is not None:
                self._cache[key] = self.source_provider(filename, cell)
            elif cell is None:
                self._cache[key] = _read_lines(filename)
            else:
                self._cache[key] = []
        return self._cache[key]

    def is_fixable(self, finding: Finding) -> bool:
        """Whether ``finding`` has a fix applicable at the current safety level."""
        return applies(finding.fix, unsafe=self.unsafe_fixes)

    @property
    def fixable_count(self) -> int:
        return sum(1 for f in self.findings if self.is_fixable(f))

    @property
    def exit_findings(self) -> bool:
        return bool(self.findings)


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def json_safe(text: str) -> str:
    """JSON text from ``json.dumps(..., ensure_ascii=False)`` made encodable:
    a lone surrogate (a file name's byte that is not valid UTF-8, as Python
    decodes it) becomes its ``\\udcXX`` escape, which JSON allows and
    ``json.loads`` turns back into the same string (``os.fsencode`` gives the
    bytes). Surrogates only ever occur inside JSON strings."""
    return _SURROGATE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def noqa_row(finding: Finding) -> int:
    """The row a ``# noqa`` for ``finding`` belongs on (set by the pipeline)."""
    return int(finding.extra.get("noqa_row", finding.location.row))


def module_name(format_name: str) -> str:
    return "fakegrad_lint.report." + format_name.replace("-", "_")


def load(format_name: str):
    """The module of a format (the settings validated the name)."""
    try:
        return importlib.import_module(module_name(format_name))
    except ModuleNotFoundError as exc:
        if exc.name == module_name(format_name):
            raise UnknownFormat(f"output format {format_name!r} is not available in this build") from None
        raise


def render(format_name: str, ctx: ReportContext) -> str:
    """Render ``ctx`` in ``format_name``; the result is written to stdout as is."""
    return load(format_name).render(ctx)


def use_color(choice: str, stream) -> bool:
    """``--color auto|always|never``: auto means a non-empty ``FORCE_COLOR``
    (force-color.org, as ruff), else a terminal and no ``NO_COLOR``."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
