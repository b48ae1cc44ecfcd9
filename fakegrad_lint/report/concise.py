"""One line per finding, nothing else: ``path:row:col: CODE message``.

The column is 1-based (the tool's 0-based character column plus one); ``[*]``
marks a fix applicable at the current safety level, as in ruff. No source
snippet and no summary, so every line of stdout is a finding and
the output is easy to grep or feed to an editor's error parser. A notebook
finding reads ``path:cell N:row:col: ...`` (rows relative to the cell), as in the
text format. With ``--statistics`` the output is the same table as the text
format's, without the summary.
"""

from __future__ import annotations

from fakegrad_lint.findings import Finding, display_path
from fakegrad_lint.report import ReportContext


def line(f: Finding, ctx: ReportContext | None = None) -> str:
    name = display_path(f.filename)
    where = name if f.cell is None else f"{name}:cell {f.cell}"
    mark = "[*] " if ctx is not None and ctx.is_fixable(f) else ""
    return f"{where}:{f.location.row}:{f.location.column + 1}: {f.code} {mark}{f.message}"


def render(ctx: ReportContext) -> str:
    if ctx.mode == "diff":
        return "".join(ctx.diffs)
    if ctx.statistics:
        from fakegrad_lint.report.text import statistics

        return statistics(ctx)
    if ctx.mode in ("fix-only", "add-noqa"):
        return ""
    return "".join(line(f, ctx) + "\n" for f in ctx.findings)
