"""The default human format, like ruff's ``full`` output.

``path:row:col: CODE [*] message`` with a 1-based column; ``[*]`` marks a fix
applicable at the current safety level. A finding whose planned fix was not
proved gets ``  no fix: reason`` on the next line; a fix that edits another file than the
finding's (it lands in the module where the region is opened) gets ``  fix edits utils.py``. Under it, only when asked
(``ctx.show_source``: stdout is a terminal, or ``--color always``), the source
line with a caret; with ``--show-trace`` (``ctx.show_trace``) a line with the
finding's chain, ``trace: source L5, region L7, op L8, backward L9`` (a step in
another file is named ``utils/memory.py:L7``, relative to the finding's
folder). Then the summary lines.
"""

from __future__ import annotations

import os
from collections import Counter

from fakegrad_lint.findings import display_path
from fakegrad_lint.report import ReportContext, rule_info

_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_CYAN = "\x1b[36m"
_BLUE = "\x1b[34m"
_RESET = "\x1b[0m"


def _paint(ctx: ReportContext, text: str, *styles: str) -> str:
    if not ctx.color or not styles:
        return text
    return "".join(styles) + text + _RESET


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _header(ctx: ReportContext, f) -> str:
    name = display_path(f.filename)
    where = name if f.cell is None else f"{name}:cell {f.cell}"
    mark = "[*] " if ctx.is_fixable(f) else ""
    return (
        f"{_paint(ctx, where, _BOLD)}:{f.location.row}:{f.location.column + 1}: "
        f"{_paint(ctx, f.code, _BOLD, _RED)} {_paint(ctx, mark, _CYAN) if mark else ''}{f.message}"
    )


def _snippet(ctx: ReportContext, f) -> list[str]:
    lines = ctx.source_lines(f.filename, f.cell)
    row = f.location.row
    if not (1 <= row <= len(lines)):
        return []
    line = lines[row - 1].expandtabs(1)  # keep columns == characters
    width = len(str(row))
    gutter = " " * width + " |"
    start = min(f.location.column, len(line))
    if f.end_location.row == row:
        end = max(start + 1, min(f.end_location.column, len(line)))
    else:
        end = max(start + 1, len(line.rstrip()))
    caret = " " * start + "^" * (end - start)
    return [
        _paint(ctx, gutter, _BLUE),
        _paint(ctx, f"{row} |", _BLUE) + " " + line,
        _paint(ctx, gutter, _BLUE) + " " + _paint(ctx, caret, _RED) + " " + _paint(ctx, f.code, _RED),
        "",
    ]


def _step_label(step) -> str:
    if step.kind == "leak":
        return "op"
    if step.kind == "sink":
        return "grad" if "autograd.grad" in step.message else "backward"
    return step.kind


def trace_line(f) -> str:
    """``source L5, region L7, op L8, backward L9`` (other files named, cells too)."""
    parts = []
    here = os.path.dirname(os.path.abspath(f.filename))
    for t in f.trace:
        where = f"L{t.location.row}"
        if t.cell is not None and t.cell != f.cell:
            where = f"cell {t.cell}:{where}"
        if os.path.abspath(t.filename) != os.path.abspath(f.filename):
            rel = os.path.relpath(os.path.abspath(t.filename), here).replace(os.sep, "/")
            where = f"{rel}:{where}"
        parts.append(f"{_step_label(t)} {where}")
    return ", ".join(parts)


def _elsewhere(f) -> list[str]:
    """The other files a fix of ``f`` edits, relative to ``f``'s folder."""
    here = os.path.dirname(os.path.abspath(f.filename))
    return [display_path(os.path.relpath(os.path.abspath(p), here).replace(os.sep, "/")) for p in f.fix.elsewhere(f.filename)]


def statistics(ctx: ReportContext) -> str:
    counts = Counter(f.code for f in ctx.findings)
    fixable = {f.code for f in ctx.findings if ctx.is_fixable(f)}
    if not counts:
        return ""
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    cw = max(len(str(c)) for _, c in rows)
    kw = max(len(k) for k, _ in rows)
    out = []
    for code, count in rows:
        mark = "[*] " if code in fixable else "    " if fixable else ""
        out.append(f"{count:>{cw}}\t{code:<{kw}}\t{mark}{rule_info(code).name}")
    return "\n".join(out) + "\n"


_FIX_SUMMARY = {
    "fix-only": ("Fixed {}.", "No errors fixed."),
    "diff": ("Would fix {}.", "No errors would be fixed."),
}


def summary(ctx: ReportContext) -> list[str]:
    """The closing lines (nothing under ``--quiet``)."""
    if ctx.quiet:
        return []
    out = []
    n = len(ctx.findings)
    if ctx.mode == "add-noqa":
        out.append(f"Added {_plural(ctx.added_noqa, 'noqa directive')}.")
        return out
    if ctx.mode in _FIX_SUMMARY:  # --fix-only / --diff: what was (or would be) fixed
        some, none = _FIX_SUMMARY[ctx.mode]
        out.append(some.format(_plural(ctx.fixed, "error")) if ctx.fixed else none)
        return out
    if n == 0:
        if ctx.mode == "fix" and ctx.fixed:
            out.append(f"Found {_plural(ctx.fixed, 'error')} ({ctx.fixed} fixed, 0 remaining).")
        elif not ctx.errors:
            out.append("All checks passed!")
    else:
        if ctx.mode == "fix" and ctx.fixed:
            out.append(f"Found {_plural(n + ctx.fixed, 'error')} ({ctx.fixed} fixed, {n} remaining).")
        else:
            out.append(f"Found {_plural(n, 'error')}.")
        fixable = ctx.fixable_count
        if fixable and ctx.mode != "fix":
            out.append(f"[*] {fixable} fixable with the --fix option.")
    if ctx.hidden_unsafe_fixes and ctx.mode != "fix-only":
        n_hidden = ctx.hidden_unsafe_fixes
        fixes = "hidden fix" if n_hidden == 1 else "hidden fixes"
        out.append(f"{n_hidden} {fixes} can be enabled with the --unsafe-fixes option.")
    return out


def render(ctx: ReportContext) -> str:
    out: list[str] = []
    if ctx.mode == "diff":
        return "".join(ctx.diffs) + "".join(line + "\n" for line in summary(ctx))
    if ctx.statistics:
        return statistics(ctx) + "".join(line + "\n" for line in summary(ctx))
    if ctx.mode not in ("fix-only", "add-noqa"):
        for f in ctx.findings:
            out.append(_header(ctx, f))
            if ctx.show_trace and f.trace:
                out.append("  " + _paint(ctx, "trace:", _BLUE) + " " + trace_line(f))
            if f.no_fix:
                out.append(f"  no fix: {f.no_fix}")
            elif f.fix is not None and f.fix.elsewhere(f.filename):
                out.append(f"  fix edits {', '.join(_elsewhere(f))}")
            if ctx.show_source:
                out.extend(_snippet(ctx, f))
        if out and out[-1] != "" and not ctx.quiet:
            out.append("")  # a blank line before the summary, like ruff
    out.extend(summary(ctx))
    return "".join(line + "\n" for line in out)
