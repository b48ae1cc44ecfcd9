"""ruff's JSON shape: a list of diagnostics.

``filename`` is the absolute path (as ruff prints it); ``location`` and
``end_location`` are ``{"row", "column"}`` with both 1-based; ``fix`` is null or
``{"applicability", "message", "edits": [{"content", "location", "end_location"}]}`` (an edit
of another file than the diagnostic's, a fix that lands in the module where the region is
opened, also has that file's absolute ``filename``);
``no_fix`` is null or why the finding has no fix (a planned fix that failed
its proof: ``"re-linted, the finding is still there"``); ``noqa_row`` is the row a ``# noqa`` for the diagnostic belongs on; ``cell`` is
the 1-based notebook cell or null; ``trace`` is the chain that proves the
finding, a list of ``{"kind", "message", "filename", "location",
"end_location", "cell"}`` (kinds: source, call, region, leak, sink; the
filename of a step in another module of the project is that module's). With ``--statistics`` the output is instead a
list of ``{"code", "name", "count", "fixable"}``.
"""

from __future__ import annotations

import json
import os
from collections import Counter

from fakegrad_lint.findings import Edit, Finding, Location
from fakegrad_lint.report import ReportContext, json_safe, noqa_row, rule_info


def _loc(loc: Location) -> dict:
    return {"row": loc.row, "column": loc.column + 1}


def _edit(e: Edit) -> dict:
    out = {"content": e.content, "location": _loc(e.start), "end_location": _loc(e.end)}
    if e.filename is not None:  # an edit of another file than the finding's
        out["filename"] = os.path.abspath(e.filename)
    return out


def diagnostic(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability.value,
            "message": f.fix.message,
            "edits": [_edit(e) for e in f.fix.edits],
        }
    return {
        "cell": f.cell,
        "code": f.code,
        "end_location": _loc(f.end_location),
        "filename": os.path.abspath(f.filename),
        "fix": fix,
        "location": _loc(f.location),
        "message": f.message,
        "no_fix": f.no_fix,
        "noqa_row": noqa_row(f),
        "trace": [
            {
                "kind": t.kind,
                "message": t.message,
                "filename": os.path.abspath(t.filename),
                "location": _loc(t.location),
                "end_location": _loc(t.end_location),
                "cell": t.cell,
            }
            for t in f.trace
        ],
        "url": rule_info(f.code).url,
    }


def records(ctx: ReportContext) -> list[dict]:
    """The objects of the json format (also one per line in json-lines)."""
    if ctx.statistics:
        counts = Counter(f.code for f in ctx.findings)
        fixable = {f.code for f in ctx.findings if ctx.is_fixable(f)}
        return [
            {"code": code, "name": rule_info(code).name, "count": count, "fixable": code in fixable}
            for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
    return [diagnostic(f) for f in ctx.findings]


def render(ctx: ReportContext) -> str:
    return json_safe(json.dumps(records(ctx), indent=2, ensure_ascii=False)) + "\n"
