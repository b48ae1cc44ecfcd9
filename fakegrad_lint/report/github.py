"""GitHub Actions workflow commands: one ``::error`` annotation per finding.

    ::error title=fakegrad-lint (FGL001),file=train.py,line=6,col=10,endLine=6,endColumn=15::message

Lines and columns are 1-based (``column + 1``). Escaping follows the Actions
toolkit (``@actions/core`` ``escapeData``/``escapeProperty``): in the message
``%`` -> ``%25``, ``\\r`` -> ``%0D``, ``\\n`` -> ``%0A``; in property values also
``:`` -> ``%3A`` and ``,`` -> ``%2C``. The annotation's kind is the rule's
level (``Rule.level``: opt-in rules, FGL004 and unused noqa, are ``::warning``). A
file that could not be checked is an ``::error`` annotation on that file
titled ``fakegrad-lint (error)``.
"""

from __future__ import annotations

import os

from fakegrad_lint.findings import Finding
from fakegrad_lint.report import ReportContext

TITLE = "fakegrad-lint"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, props: list[tuple[str, object]], message: str) -> str:
    body = ",".join(f"{key}={escape_property(str(value))}" for key, value in props)
    return f"::{kind} {body}::{escape_data(message)}"


def _kind(code: str) -> str:
    """The rule's level (``warning`` for opt-in rules); ``error`` for any other code."""
    from fakegrad_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code)
    return rule.level if rule is not None else "error"


def _path(filename: str) -> str:
    """GitHub attaches annotations to repository-relative paths: files under the
    current folder (the workspace, in Actions) are given relative to it."""
    if os.path.isabs(filename):
        rel = os.path.relpath(filename)
        if not rel.startswith(".."):
            filename = rel.replace(os.sep, "/")
    # a byte that is not UTF-8 (kept as a surrogate escape) is shown as \xNN:
    # the workflow log reads UTF-8
    return os.fsencode(filename).decode("utf-8", "backslashreplace")


def annotation(f: Finding) -> str:
    title = f"{TITLE} ({f.code})"
    message = f.message if f.cell is None else f"cell {f.cell}: {f.message}"
    props = [
        ("title", title),
        ("file", _path(f.filename)),
        ("line", f.location.row),
        ("col", f.location.column + 1),
        ("endLine", f.end_location.row),
        ("endColumn", f.end_location.column + 1),
    ]
    return _command(_kind(f.code), props, message)


def render(ctx: ReportContext) -> str:
    out = [_command("error", [("title", f"{TITLE} (error)"), ("file", _path(e.filename))], e.reason) for e in ctx.errors]
    out.extend(annotation(f) for f in ctx.findings)
    return "".join(line + "\n" for line in out)
