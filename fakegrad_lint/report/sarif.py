"""SARIF 2.1.0 (the format GitHub code scanning and most viewers read).

One run. ``tool.driver.rules`` lists every rule of the catalogue (unused
``# noqa`` included), generated from the :class:`~fakegrad_lint.rules.base.Rule`
objects by :func:`rule_descriptor`: its docs (``help`` is the same text
``fakegrad-lint rule`` prints), ``defaultConfiguration`` (``enabled`` and the
rule's ``level``: opt-in rules ``warning``, others ``error``) and its tags. Each
finding is a result with ``ruleId``/``ruleIndex``, a level, the message, one
location with a 1-based region, and, when it has edits, a ``fixes`` entry with
the replacements.

Columns: the tool counts characters (Unicode code points), so the run declares
``columnKind: unicodeCodePoints`` and regions use ``column + 1``.

Paths: a file under the current directory gets a relative URI with
``uriBaseId: %SRCROOT%`` (declared in ``originalUriBaseIds``), anything else an
absolute ``file://`` URI.

Notebooks: rows are relative to the cell, like every other format; the message
starts with ``cell N:`` and the region (and the result) carry
``properties.cell``.

Tool errors (files that could not be checked) become
``invocations[0].toolExecutionNotifications`` and make ``executionSuccessful``
false.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from fakegrad_lint import __version__
from fakegrad_lint.findings import Edit, Finding, Location
from fakegrad_lint.report import ReportContext, json_safe

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "fakegrad-lint"
INFORMATION_URI = "https://github.com/fakegrad-lint/fakegrad-lint"
SRCROOT = "%SRCROOT%"

# The level of a finding whose code is not in the catalogue (each rule has its
# own ``Rule.level``: "error" for a rule on by default, "warning" for opt-in).
LEVEL_UNKNOWN_CODE = "error"


def rule_descriptor(rule) -> dict:
    """The ``reportingDescriptor`` of a catalogue rule: its docs (``help`` is what
    ``fakegrad-lint rule`` prints), default configuration and tags."""
    from fakegrad_lint.rules.docs import rule_markdown_body, rule_text

    descriptor = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.what},
        "help": {"text": rule_text(rule), "markdown": rule_markdown_body(rule)},
        "helpUri": rule.url,
        "defaultConfiguration": {"enabled": rule.default, "level": rule.level},
    }
    if rule.tags:
        descriptor["properties"] = {"tags": list(rule.tags)}
    return descriptor


def _rule_descriptors() -> tuple[list[dict], dict[str, int], dict[str, str]]:
    """Every rule's descriptor, and by code its index and level."""
    from fakegrad_lint.rules import RULES

    descriptors = [rule_descriptor(rule) for rule in RULES]
    index = {rule.code: i for i, rule in enumerate(RULES)}
    levels = {rule.code: rule.level for rule in RULES}
    return descriptors, index, levels


def _cwd() -> Path:
    return Path(os.getcwd()).resolve()


def artifact_location(filename: str, root: Path | None = None) -> dict:
    """``{"uri", "uriBaseId"}`` relative to ``root`` (the current directory) when
    the file is under it, else an absolute ``file://`` URI."""
    root = root or _cwd()
    path = Path(filename)
    absolute = (path if path.is_absolute() else root / path).resolve()
    try:
        rel = absolute.relative_to(root)
    except ValueError:
        return {"uri": "file://" + _quote(absolute.as_posix())}
    return {"uri": _quote(PurePosixPath(*rel.parts).as_posix()), "uriBaseId": SRCROOT}


def _quote(path: str) -> str:
    # Percent-encode the file system's bytes (a name need not be valid UTF-8).
    return quote(os.fsencode(path), safe="/")


def _dir_uri(path: Path) -> str:
    uri = "file://" + _quote(path.as_posix())
    return uri if uri.endswith("/") else uri + "/"


def _region(start: Location, end: Location) -> dict:
    return {
        "startLine": start.row,
        "startColumn": start.column + 1,
        "endLine": end.row,
        "endColumn": end.column + 1,
    }


def _replacement(edit: Edit, cell: int | None = None) -> dict:
    region = _region(edit.start, edit.end)
    if cell is not None:
        region["properties"] = {"cell": cell}
    return {"deletedRegion": region, "insertedContent": {"text": edit.content}}


def _result(f: Finding, index: dict[str, int], levels: dict[str, str], root: Path) -> dict:
    region = _region(f.location, f.end_location)
    if f.cell is not None:
        # Notebook rows are relative to the cell: the region says which cell.
        region["properties"] = {"cell": f.cell}
    location = {
        "physicalLocation": {
            "artifactLocation": artifact_location(f.filename, root),
            "region": region,
        }
    }
    result: dict = {"ruleId": f.code}
    if f.code in index:
        result["ruleIndex"] = index[f.code]
    result["level"] = levels.get(f.code, LEVEL_UNKNOWN_CODE)
    result["message"] = {"text": f.message if f.cell is None else f"cell {f.cell}: {f.message}"}
    result["locations"] = [location]
    if f.fix is not None and f.fix.edits:
        result["fixes"] = [
            {
                "description": {"text": f.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": artifact_location(name, root),
                        "replacements": [_replacement(e, f.cell) for e in f.fix.edits
                                         if (e.filename or f.filename) == name],
                    }
                    for name in f.fix.files(f.filename)
                ],
                "properties": {"applicability": f.fix.applicability.value},
            }
        ]
    if f.trace:
        result["codeFlows"] = [_code_flow(f, root)]
    if f.cell is not None:
        # Rows are relative to the notebook cell; say so rather than mislead.
        result["properties"] = {"cell": f.cell}
    return result


# SARIF's well-known threadFlowLocation kinds for each step of a trace
_STEP_KINDS = {"source": ["acquire", "taint"], "call": ["call"], "region": ["enter", "scope"],
               "leak": ["taint"], "sink": ["call", "release"]}


def _code_flow(f: Finding, root: Path) -> dict:
    """The trace as one thread flow (GitHub code scanning shows it as a path)."""
    locations = []
    for i, t in enumerate(f.trace):
        loc: dict = {
            "location": {
                "physicalLocation": {
                    "artifactLocation": artifact_location(t.filename, root),
                    "region": _region(t.location, t.end_location),
                },
                "message": {"text": f"{t.kind}: {t.message}"},
            },
            "kinds": _STEP_KINDS.get(t.kind, []),
            "executionOrder": i + 1,
            "properties": {"step": t.kind},
        }
        if t.cell is not None:
            loc["properties"]["cell"] = t.cell
        locations.append(loc)
    return {"message": {"text": f.message}, "threadFlows": [{"locations": locations}]}


def build(ctx: ReportContext) -> dict:
    """The SARIF log as a dict (``render`` serialises it)."""
    root = _cwd()
    descriptors, index, levels = _rule_descriptors()
    notifications = [
        {
            "level": "error",
            "message": {"text": err.reason},
            "locations": [{"physicalLocation": {"artifactLocation": artifact_location(err.filename, root)}}],
        }
        for err in ctx.errors
    ]
    invocation: dict = {"executionSuccessful": not ctx.errors}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": descriptors,
            }
        },
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": _dir_uri(root)}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index, levels, root) for f in ctx.findings],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(ctx: ReportContext) -> str:
    return json_safe(json.dumps(build(ctx), indent=2, ensure_ascii=False)) + "\n"
