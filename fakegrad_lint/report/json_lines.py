"""One JSON object per line, each the same object as one element of the
``json`` format (ruff's shape: ``code``, ``message``, ``filename``,
``location``/``end_location`` ``{row, column}`` 1-based, ``fix``, ``url``,
``noqa_row``, ``cell``). Keys are sorted and the objects are compact, so a line
is a complete record for streaming consumers (``jq -c``, log shippers). With
``--statistics`` each line is one ``{"code", "name", "count", "fixable"}`` row.
"""

from __future__ import annotations

import json

from fakegrad_lint.report import ReportContext, json_safe
from fakegrad_lint.report.json import records

# Characters that str.splitlines() (and some JSON-lines readers) treat as line
# breaks but json.dumps(ensure_ascii=False) leaves raw inside strings.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _dumps(obj) -> str:
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)  # only ever inside a JSON string
    return json_safe(text)


def render(ctx: ReportContext) -> str:
    return "".join(_dumps(row) + "\n" for row in records(ctx))
