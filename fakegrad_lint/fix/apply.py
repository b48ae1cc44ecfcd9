"""Applying fixes: edits on text, the fix loop, diffs.

The loop works like ruff's: lint, keep the fixes applicable at the requested
safety level, sort them by position, apply every fix whose edits do not overlap
a fix already accepted in this pass (all edits of one fix together or none),
check that the result still parses, lint again, and repeat until nothing
applicable is left, nothing changes, or ``max_iterations`` passes were made.

Positions are :class:`~fakegrad_lint.findings.Location` values: ``row`` is
1-based and counts physical lines the way Python does (a line ends at ``\\r\\n``,
``\\r`` or ``\\n`` and nowhere else; ``\\x0c``, ``\\x1c``, ``\\u2028`` ... are
ordinary characters), ``column`` is a 0-based offset in characters.

Fix builders always write ``\\n`` in inserted text; :func:`fix_text` converts
it to the file's own newline style, so a CRLF file stays CRLF.

Nothing here touches the file system: see :mod:`fakegrad_lint.sources.sourcefile` for
reading and the atomic write.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from fakegrad_lint.findings import Edit, Finding, Fix, Location, applies
from fakegrad_lint.sources.text import NEWLINE_RE as _NEWLINE_RE
from fakegrad_lint.sources.text import parse_quietly
from fakegrad_lint.sources.text import dominant_newline, line_starts, split_lines  # noqa: F401  (re-exported)

__all__ = [
    "EditError",
    "FixOutcome",
    "apply_edits",
    "dominant_newline",
    "fix_text",
    "is_applicable",
    "line_starts",
    "split_lines",
    "to_offset",
    "unified_diff",
]


class EditError(ValueError):
    """An edit whose positions do not exist in the text, or edits that overlap."""


# ---------------------------------------------------------------------------
# lines and offsets


def to_offset(text: str, location: Location, starts: Sequence[int] | None = None) -> int:
    """The character offset of ``location`` in ``text``.

    The column may point anywhere in the row up to and including the end of
    its terminator (the start of the next row). Anything else raises
    :class:`EditError`.
    """
    if starts is None:
        starts = line_starts(text)
    row, column = location.row, location.column
    if row < 1 or row > len(starts) or column < 0:
        raise EditError(f"position {row}:{column} is outside the text ({len(starts)} rows)")
    start = starts[row - 1]
    end = starts[row] if row < len(starts) else len(text)
    if start + column > end:
        raise EditError(f"column {column} is past the end of row {row} ({end - start} characters)")
    offset = start + column
    # Never split a \r\n pair: that would create a new line break.
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        raise EditError(f"position {row}:{column} splits a \\r\\n line ending")
    return offset


def _convert_newlines(content: str, newline: str) -> str:
    if newline == "\n" and "\r" not in content:
        return content
    return _NEWLINE_RE.sub(lambda _m: newline, content)


# ---------------------------------------------------------------------------
# edits


def _spans(text: str, edits: Iterable[Edit], starts: Sequence[int]) -> list[tuple[int, int, str]]:
    spans = []
    for edit in edits:
        begin = to_offset(text, edit.start, starts)
        end = to_offset(text, edit.end, starts)
        if end < begin:
            raise EditError(f"edit ends ({edit.end.row}:{edit.end.column}) before it starts ({edit.start.row}:{edit.start.column})")
        spans.append((begin, end, edit.content))
    return spans


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    """Whether two edits conflict.

    Replacements conflict when they share a character. An insertion conflicts
    with another insertion at the same point (their order would be arbitrary)
    and with a replacement that strictly surrounds it. Edits that merely touch
    (one ends where the other starts) do not conflict: their order is given
    by their positions.
    """
    (a0, a1, _), (b0, b1, _) = a, b
    if a0 == a1 and b0 == b1:
        return a0 == b0
    if a0 == a1:
        return b0 < a0 < b1
    if b0 == b1:
        return a0 < b0 < a1
    return a0 < b1 and b0 < a1


def _conflicts(span: tuple[int, int, str], accepted: list[tuple[int, int, str]]) -> bool:
    """Whether ``span`` overlaps any span of ``accepted`` (sorted, pairwise disjoint).

    Of the spans starting before ``span``, only the last one can reach into it
    (any other would overlap that one); after it, only spans starting at or
    before ``span``'s end can.
    """
    begin, end = span[0], span[1]
    index = bisect.bisect_left(accepted, (begin,))
    if index > 0 and _overlaps(accepted[index - 1], span):
        return True
    while index < len(accepted) and accepted[index][0] <= end:
        if _overlaps(accepted[index], span):
            return True
        index += 1
    return False


def _check_disjoint(spans: list[tuple[int, int, str]]) -> None:
    ordered = sorted(spans, key=lambda s: (s[0], s[1]))
    for first, second in zip(ordered, ordered[1:]):
        if _overlaps(first, second):
            raise EditError("edits overlap")


def _apply_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    out = []
    position = 0
    for begin, end, content in sorted(spans, key=lambda s: (s[0], s[1])):
        out.append(text[position:begin])
        out.append(content)
        position = end
    out.append(text[position:])
    return "".join(out)


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping ``edits`` to ``text`` and return the new text.

    Content is inserted verbatim (no newline conversion: see :func:`fix_text`).
    Raises :class:`EditError` for positions outside the text or overlapping edits.
    """
    starts = line_starts(text)
    spans = _spans(text, edits, starts)
    _check_disjoint(spans)
    return _apply_spans(text, spans)


# ---------------------------------------------------------------------------
# the fix loop


def is_applicable(fix: Fix | None, *, unsafe: bool) -> bool:
    """Whether ``fix`` may be applied at this safety level (never display-only):
    :func:`fakegrad_lint.findings.applies`."""
    return applies(fix, unsafe=unsafe)


@dataclass
class FixOutcome:
    text: str  # the text after every accepted pass
    applied: list[Finding] = field(default_factory=list)  # findings whose fixes were applied, in order
    remaining: list[Finding] = field(default_factory=list)  # findings of the lint of ``text``
    changed: bool = False
    iterations: int = 0  # passes that changed the text
    # Why the loop stopped: "converged" (nothing applicable left), "no-progress"
    # (the applicable fixes did not change the text), "max-iterations",
    # "unparsable" (a pass produced text that does not parse; it was discarded).
    stop_reason: str = "converged"
    # Fixes left out because they were malformed (positions outside the text,
    # overlapping edits inside one fix), or, with stop_reason "unparsable", the
    # fixes of the discarded pass.
    rejected: list[Finding] = field(default_factory=list)
    # For "unparsable": the parser's message about the discarded text.
    error: str | None = None

    @property
    def fixed(self) -> int:
        return len(self.applied)


def _sort_key(finding: Finding):
    edits = finding.fix.edits if finding.fix else ()
    first = min((e.start for e in edits), default=finding.location)
    return (first, finding.location, finding.code)


def _one_pass(
    text: str, candidates: list[Finding], newline: str
) -> tuple[str, list[Finding], list[Finding]]:
    """Apply every candidate fix that does not overlap an accepted one.

    Returns (new text, accepted findings, malformed findings).
    """
    starts = line_starts(text)
    accepted_spans: list[tuple[int, int, str]] = []
    accepted: list[Finding] = []
    malformed: list[Finding] = []
    for finding in sorted(candidates, key=_sort_key):
        assert finding.fix is not None
        try:
            spans = [
                (b, e, _convert_newlines(c, newline))
                for b, e, c in _spans(text, finding.fix.edits, starts)
            ]
            _check_disjoint(spans)
        except EditError:
            malformed.append(finding)
            continue
        if any(_conflicts(span, accepted_spans) for span in spans):
            continue  # next pass, after a re-lint
        for span in spans:
            bisect.insort(accepted_spans, span)
        accepted.append(finding)
    return _apply_spans(text, accepted_spans), accepted, malformed


def _parses(text: str) -> str | None:
    """None when ``text`` parses, else the parser's one-line message."""
    try:
        parse_quietly(text)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return f"{exc.msg}{where}"
    except (ValueError, MemoryError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return _lossless(text)


def _lossless(text: str) -> str | None:
    """A second, independent parse of text about to be written: libcst's concrete
    syntax tree (what codemod tools downstream will read) must accept it. This is
    the one place the tool uses libcst. CR-only newlines, which libcst does not
    read, are checked as LF."""
    import libcst

    probe = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    try:
        libcst.parse_module(probe)
    except Exception as exc:  # libcst.ParserSyntaxError and its internal errors
        return f"libcst: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return None


def fix_text(
    text: str,
    lint: Callable[[str], list[Finding]],
    *,
    unsafe: bool,
    max_iterations: int = 10,
) -> FixOutcome:
    """Apply the fixes ``lint`` offers until the text stops changing.

    ``lint`` is called on the current text each pass; whatever it raises
    (``SyntaxError`` for the original text, say) propagates. The text returned
    always parses if the input did: a pass whose result does not parse is
    discarded whole and the loop stops with ``stop_reason == "unparsable"``.
    """
    if max_iterations < 0:
        raise ValueError("max_iterations must be >= 0")
    newline = dominant_newline(text)
    outcome = FixOutcome(text=text)
    findings = lint(text)
    while True:
        candidates = [f for f in findings if is_applicable(f.fix, unsafe=unsafe)]
        if not candidates:
            outcome.stop_reason = "converged"
            break
        if outcome.iterations >= max_iterations:
            outcome.stop_reason = "max-iterations"
            break
        new_text, accepted, malformed = _one_pass(outcome.text, candidates, newline)
        outcome.rejected.extend(f for f in malformed if f not in outcome.rejected)
        if not accepted:
            # Only malformed fixes were left.
            outcome.stop_reason = "converged" if malformed else "no-progress"
            break
        if new_text == outcome.text:
            outcome.stop_reason = "no-progress"
            break
        error = _parses(new_text)
        if error is not None:
            outcome.stop_reason = "unparsable"
            outcome.error = error
            outcome.rejected.extend(accepted)
            break
        outcome.text = new_text
        outcome.applied.extend(accepted)
        outcome.iterations += 1
        findings = lint(new_text)
    outcome.remaining = list(findings)
    outcome.changed = outcome.text != text
    return outcome


# ---------------------------------------------------------------------------
# diffs


def unified_diff(path: str, old_text: str, new_text: str, *, context: int = 3) -> str:
    """A unified diff of the two texts, headed ``--- path`` / ``+++ path``.

    Lines keep their own terminators (so a CRLF file gives a CRLF diff body that
    ``patch`` applies); a last line without a newline is followed by
    ``\\ No newline at end of file``. Returns ``""`` when the texts are equal.
    """
    if old_text == new_text:
        return ""
    # Lines as ``patch`` sees them: only ``\n`` ends one (a lone ``\r`` stays
    # inside its line, so a CR-only file is one line to patch), and every diff
    # line ends in ``\n``, so the next header starts a line.
    old_lines = _lf_split(old_text)
    new_lines = _lf_split(new_text)
    out = []
    for line in difflib.unified_diff(
        old_lines, new_lines, fromfile=path, tofile=path, n=context, lineterm="\n"
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _lf_split(text: str) -> list[str]:
    return [piece for piece in re.split(r"(?<=\n)", text) if piece]
