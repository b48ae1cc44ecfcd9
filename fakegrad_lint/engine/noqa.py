"""``# noqa`` directives: parsing, filtering, ``--add-noqa`` and unused directives.

- ``# noqa`` alone silences every finding on its line; ``# noqa: FGL001, FGL002``
  (commas and/or spaces, optional space after the colon) only those codes. The
  word is case-insensitive and may follow other text in the comment
  (``# type: ignore  # noqa: FGL001``). Codes match exactly.
- A directive applies to the line a finding *starts* on (like flake8). When that
  line ends inside a multi-line string or with a ``\\`` continuation, the
  directive belongs at the end of the string / continued line instead (like
  ruff); that row is the finding's ``noqa_row``.
- Comments are found with :mod:`tokenize`, so ``#`` inside a string never counts.
- A comment that is only ``# fakegrad-lint: noqa`` (or ``# flake8: noqa``)
  silences the whole file; ``# fakegrad-lint: noqa: FGL001`` only those codes.
- ``FGL100`` (opt-in) reports ``# noqa: FGL...`` codes that silenced nothing.
  Bare ``# noqa`` and other tools' codes are never reported.
"""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass, replace

from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location
from fakegrad_lint.sources.text import split_lines, split_rows
from fakegrad_lint.rules import UNUSED_NOQA_CODE

_NOQA_RE = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_CODE_RE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_FGL_CODE_RE = re.compile(r"FGL[0-9]+")  # a code of this tool (codes are upper-cased)
# A comment that is only ``# fakegrad-lint: noqa`` (or flake8's ``# flake8: noqa``),
# optionally with codes: the whole file, like ruff's ``# ruff: noqa``.
_FILE_NOQA_RE = re.compile(
    r"#\s*(?:fakegrad-lint|flake8)\s*:\s*noqa(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Directive:
    row: int
    start: int  # column (chars) where ``# noqa`` starts in the line
    end: int  # column where the directive (with its codes) ends
    codes: tuple[str, ...] | None  # None: bare ``# noqa``
    comment_start: int  # column of the comment's ``#``
    comment_end: int


@dataclass
class NoqaMap:
    directives: dict[int, Directive]
    # row -> row its noqa belongs on (only rows that differ)
    redirect: dict[int, int]
    # ``# fakegrad-lint: noqa``: ALL (every code) or the codes it names; None: none
    file_codes: frozenset[str] | str | None = None

    def file_silences(self, code: str) -> bool:
        return self.file_codes == "ALL" or (isinstance(self.file_codes, frozenset) and code in self.file_codes)

    def noqa_row(self, row: int) -> int:
        return self.redirect.get(row, row)


def _lf_lines(text: str):
    """The physical lines of ``text`` (``\r\n``, ``\r`` or ``\n`` end one, as in
    CPython's tokenizer) each ending in ``\n``, for :mod:`tokenize`, which splits
    only on ``\n``. Rows and columns stay those of ``text``."""
    for line in split_lines(text):
        body = line.rstrip("\r\n")
        yield body + "\n" if len(body) != len(line) else body
    while True:
        yield ""


def _take(tok, directives: dict, redirect: dict, comment_rows: set, file_level: list | None = None) -> None:
    srow, scol = tok.start
    erow, ecol = tok.end
    if tok.type == tokenize.COMMENT:
        comment_rows.add(srow)
        fm = _FILE_NOQA_RE.fullmatch(tok.string)
        if fm and file_level is not None:
            if not fm.group("codes"):
                file_level[0] = "ALL"
            elif file_level[0] != "ALL":
                named = frozenset(c.upper() for c in _CODE_RE.findall(fm.group("codes")))
                file_level[0] = named | (file_level[0] or frozenset())
            return
        m = _NOQA_RE.search(tok.string)
        if m:
            codes = None
            if m.group("codes"):
                codes = tuple(dict.fromkeys(c.upper() for c in _CODE_RE.findall(m.group("codes"))))
            directives[srow] = Directive(
                row=srow,
                start=scol + m.start(),
                end=scol + m.end(),
                codes=codes,
                comment_start=scol,
                comment_end=ecol,
            )
    elif erow > srow and tok.type not in (tokenize.NEWLINE, tokenize.NL):
        # a multi-line string (or f-string part): its rows map to the last
        for r in range(srow, erow):
            redirect[r] = erow


def scan(text: str) -> NoqaMap:
    """Every ``# noqa`` directive of ``text`` and the row mapping."""
    directives: dict[int, Directive] = {}
    redirect: dict[int, int] = {}
    comment_rows: set[int] = set()
    file_level: list = [None]  # ``# fakegrad-lint: noqa``: "ALL" or a frozenset of codes
    try:
        # streamed, never listed: a big file's tokens would cost tens of MB
        for tok in tokenize.generate_tokens(_lf_lines(text).__next__):
            _take(tok, directives, redirect, comment_rows, file_level)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return NoqaMap({}, {})
    # backslash continuations: the directive goes on the last continued line
    for r, line in enumerate(split_rows(text), start=1):
        if r in redirect or r in comment_rows:
            continue
        if line.endswith("\\"):
            redirect[r] = r + 1
    # resolve chains (continuation into a multi-line string ...)
    for r in list(redirect):
        seen = {r}
        target = redirect[r]
        while target in redirect and target not in seen:
            seen.add(target)
            target = redirect[target]
        redirect[r] = target
    return NoqaMap(directives, redirect, file_level[0])


def annotate(findings: list[Finding], nmap: NoqaMap) -> list[Finding]:
    """Set ``extra["noqa_row"]`` on every finding (cell-relative for notebooks)."""
    out = []
    for f in findings:
        row = nmap.noqa_row(f.location.row)
        if f.extra.get("noqa_row") == row:
            out.append(f)
        else:
            out.append(replace(f, extra={**f.extra, "noqa_row": row}))
    return out


def apply(text: str, findings: list[Finding], *, report_unused: bool = False, filename: str | None = None):
    """Drop the findings a directive silences.

    Returns ``(kept, unused)``: the findings left (with ``noqa_row`` set) and,
    when ``report_unused``, FGL100 findings for directive codes that silenced
    nothing. Only call this for files that have findings or when
    ``report_unused`` is on; it tokenizes the text.
    """
    if not findings and not report_unused:
        return [], []
    nmap = scan(text)
    findings = annotate(findings, nmap)
    kept: list[Finding] = []
    used: dict[int, set[str]] = {}
    for f in findings:
        if nmap.file_silences(f.code):
            continue
        d = nmap.directives.get(f.extra["noqa_row"])
        if d is not None and (d.codes is None or f.code in d.codes):
            used.setdefault(d.row, set()).add(f.code)
            continue
        kept.append(f)
    unused: list[Finding] = []
    if report_unused:
        lines = split_rows(text)
        for row, d in sorted(nmap.directives.items()):
            if d.codes is None:
                continue
            fgl = [c for c in d.codes if _FGL_CODE_RE.fullmatch(c)]
            dead = [c for c in fgl if c not in used.get(row, set())]
            if not dead:
                continue
            line = lines[row - 1] if row - 1 < len(lines) else ""
            unused.append(_unused_finding(filename or "<string>", line, d, dead))
    return kept, unused


def _unused_finding(filename: str, line: str, d: Directive, dead: list[str]) -> Finding:
    keep = [c for c in d.codes or () if c not in dead]
    if keep:
        # rewrite the code list only
        prefix = line[d.start : d.end]
        head = re.match(r"#\s*noqa", prefix, re.IGNORECASE).group(0)
        edit = Edit(Location(d.row, d.start), Location(d.row, d.end), f"{head}: {', '.join(keep)}")
    else:
        comment = line[d.comment_start : d.comment_end]
        rest = (comment[: d.start - d.comment_start] + comment[d.end - d.comment_start :]).strip()
        if rest in ("", "#"):
            # remove the whole comment and the blanks before it
            start = d.comment_start
            while start > 0 and line[start - 1] in " \t":
                start -= 1
            edit = Edit(Location(d.row, start), Location(d.row, d.comment_end), "")
        else:
            start = d.start
            while start > d.comment_start and line[start - 1] in " \t":
                start -= 1
            edit = Edit(Location(d.row, start), Location(d.row, d.end), "")
    message = f"Unused `noqa` directive (unused: {', '.join(dead)})"
    return Finding(
        code=UNUSED_NOQA_CODE,
        message=message,
        filename=filename,
        location=Location(d.row, d.start),
        end_location=Location(d.row, d.end),
        fix=Fix("Remove unused `noqa` directive", Applicability.SAFE, (edit,)),
        extra={"noqa_row": d.row},
    )


# ---------------------------------------------------------------------------
# --add-noqa


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int]:
    """Append ``# noqa: CODE`` for every finding not yet silenced, merging into an
    existing ``# noqa: ...`` comment. Returns ``(new text, directives added or
    extended)``. Line endings are kept as they are."""
    if not findings:
        return text, 0
    nmap = scan(text)
    wanted: dict[int, list[str]] = {}
    for f in findings:
        row = nmap.noqa_row(f.location.row)
        codes = wanted.setdefault(row, [])
        if f.code not in codes:
            codes.append(f.code)

    lines = split_lines(text)
    added = 0
    for row, codes in sorted(wanted.items()):
        if row - 1 >= len(lines):
            continue
        raw = lines[row - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        d = nmap.directives.get(row)
        if d is not None:
            if d.codes is None:
                continue  # a bare noqa already silences everything
            new_codes = [c for c in codes if c not in d.codes]
            if not new_codes:
                continue
            head = re.match(r"#\s*noqa", body[d.start : d.end], re.IGNORECASE).group(0)
            merged = ", ".join(list(d.codes) + sorted(new_codes))
            body = body[: d.start] + f"{head}: {merged}" + body[d.end :]
        else:
            stripped = body.rstrip()
            body = stripped + f"  # noqa: {', '.join(sorted(codes))}"
        lines[row - 1] = body + ending
        added += 1
    return "".join(lines), added
