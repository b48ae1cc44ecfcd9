"""Text-level prefilter: can this file enter a fake region at all?

Every finding needs a fake mode that the file itself creates: a
``FakeTensorMode(...)`` (under any import spelling the class name is written out,
or the module path ``fake_tensor`` is), a ``detect_fake_mode(...)`` or a
``make_fx(..., tracing_mode=...)``. A file whose code (comments excluded)
names none of them cannot produce a finding, so it is never parsed. A test
checks that findings with and without the prefilter are identical.

The opt-in rules keep the prefilter too: FGL100 (unused ``# noqa``) can only
report a ``# noqa: ...`` directive whose code list names an ``FGL`` code, so a
file with neither an entry word nor such a directive costs two substring scans
(:func:`may_have_fgl_noqa`).

:func:`prefilter` is what the engine runs once per file (:func:`needs_work` its
yes/no); :func:`may_reach_region` adds the project: a file that names no fake
mode but imports a module of its project that can reach one passes.

Hook for whole-project analysis: :func:`may_contain_fake_region` takes
``extra_words``, names that other modules of the project export as ways into a
region (a helper that opens a ``FakeTensorMode``, say); a file that names one of
them in code passes as if it named ``FakeTensorMode``.
"""

from __future__ import annotations

import re

from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS  # the words that can open a region
from fakegrad_lint.rules import UNUSED_NOQA_CODE

_AUTO = object()  # "find the project from the file's path"
_ENTRY_RE = re.compile("|".join(ENTRY_WORDS))
_ENTRY_RE_BYTES = re.compile("|".join(ENTRY_WORDS).encode())
_ENTRY_WORDS_BYTES = tuple(w.encode() for w in ENTRY_WORDS)


# A ``# noqa:`` directive (as fakegrad_lint.engine.noqa reads one: optional blank after
# the colon, codes separated by commas and/or blanks, any case) with an FGL code.
_FGL_NOQA_RE = re.compile(r"noqa:\s?(?:[A-Z]+[0-9]+[,\s]+)*FGL[0-9]", re.IGNORECASE)


def may_contain_fake_region(text: str | bytes, extra_words: tuple[str, ...] = ()) -> bool:
    # substring search is several times faster than scanning with the alternation,
    # and most files contain none of the words
    if extra_words:
        words = ENTRY_WORDS + tuple(extra_words)
        if isinstance(text, bytes):
            words = tuple(w.encode() if isinstance(w, str) else w for w in words)
        found = [w for w in words if w in text]
        if not found:
            return False
        sep = b"|" if isinstance(text, bytes) else "|"
        rx = re.compile(sep.join(re.escape(w) for w in found))
        return _in_code(text, rx)
    words = ENTRY_WORDS if isinstance(text, str) else _ENTRY_WORDS_BYTES
    return any(w in text for w in words) and _in_code(text)


def may_have_fgl_noqa(text: str | bytes) -> bool:
    """Can FGL100 (unused noqa) report anything in ``text``? Only when a
    ``# noqa:`` directive names an FGL code (a superset: strings count too)."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    return _noqa_at(text, _FGL_NOQA_RE)


def _noqa_at(text: str, rx) -> bool:
    """Does ``rx`` (a pattern whose every match starts with ``noqa`` in some case)
    match at a ``noqa`` of the text? Each ``q`` is looked at, as :func:`_has_noqa`
    does, and the pattern tried there only: the same answer as ``rx.search(text)``,
    without running a case-blind regex over the whole text (torch's 2,328 files:
    0.34 -> 0.04 s; 429 of them say ``noqa``)."""
    find, match = text.find, rx.match
    for q in ("q", "Q"):
        i = find(q, 2)
        while i >= 0:
            if text[i - 2 : i + 2].lower() == "noqa" and match(text, i - 2) is not None:
                return True
            i = find(q, i + 1)
    return False


def _has_noqa(text: str) -> bool:
    """Does ``noqa`` appear in any case? Every ``q`` (few in code) is looked at:
    several times cheaper than a lower-case copy or a case-blind regex
    (transformers, 2,860 files: 0.08 s against 0.29 s)."""
    find = text.find
    for q in ("q", "Q"):
        i = find(q, 2)
        while i >= 0:
            if text[i - 2 : i + 2].lower() == "noqa":
                return True
            i = find(q, i + 1)
    return False


def _in_code(text: str | bytes, rx=None) -> bool:
    """Does an entry word appear outside a comment?"""
    if isinstance(text, bytes):
        rx, nl, cr, hash_, quotes = rx or _ENTRY_RE_BYTES, b"\n", b"\r", b"#", (b"'", b'"')
    else:
        rx, nl, cr, hash_, quotes = rx or _ENTRY_RE, "\n", "\r", "#", ("'", '"')
    for m in rx.finditer(text):
        line_start = max(text.rfind(nl, 0, m.start()), text.rfind(cr, 0, m.start())) + 1
        prefix = text[line_start : m.start()]
        h = prefix.find(hash_)
        # a comment only when the `#` comes before any quote (else it may sit in a string)
        if h < 0 or any(q in prefix[:h] for q in quotes):
            return True
    return False


# ---------------------------------------------------------------------------
# the engine's prefilter (text, then the project's imports)


def project_for(filename: str):
    """The project context of a file on disk (its import roots), or None."""
    from fakegrad_lint.analysis.project import Project

    return Project.for_file(filename)


def may_reach_region(source: str, filename: str | None, project=_AUTO) -> bool:
    """The prefilter with the project: the file names a fake mode, or imports a
    module of its project that can reach one (``project=None``: this file alone)."""
    if may_contain_fake_region(source):
        return True
    return _reaches_through_project(source, filename, project)


def _reaches_through_project(source: str, filename: str | None, project=_AUTO) -> bool:
    """The project side of :func:`may_reach_region`, for a text that names no fake mode."""
    if project is None or not filename or "import" not in source or filename.startswith("<"):
        return False
    from fakegrad_lint.analysis.project import reaches_region

    try:
        return reaches_region(filename, source)
    except (OSError, ValueError, RecursionError):
        return False


def prefilter(text: str, codes: frozenset[str], path: str | None = None) -> tuple[bool, bool | None]:
    """The engine's prefilter, run once per file: ``(can this text produce
    anything to report, can it reach a fake region)``; the second is None when
    only FGL100 can report and the (costlier) project test was not run. FGL100
    keeps the prefilter: it can only report a ``# noqa: FGL...``."""
    if may_contain_fake_region(text):
        return True, True
    if UNUSED_NOQA_CODE in codes and may_have_fgl_noqa(text):
        return True, None
    reach = _reaches_through_project(text, path)  # (the text names no fake mode: not scanned again)
    return reach, reach


def needs_work(text: str, codes: frozenset[str], path: str | None = None) -> bool:
    """Can this text produce anything to report? (:func:`prefilter`)"""
    return prefilter(text, codes, path)[0]
