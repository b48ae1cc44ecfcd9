"""Text-level prefilter: can this file enter a fake region at all?

Every finding needs a fake mode that the file itself creates: a
``FakeTensorMode(...)`` (under any import spelling the class name is written out,
or the module path ``fake_tensor`` is), a ``detect_fake_mode(...)`` or a
``make_fx(..., tracing_mode=...)``. A file whose code (comments excluded)
names none of them cannot produce a finding, so it is never parsed. A test
checks that findings with and without the prefilter are identical.
"""

from __future__ import annotations

import re

# Words that must appear in code (not only in a comment) for a fake region to exist.
ENTRY_WORDS = ("FakeTensorMode", "detect_fake_mode", "tracing_mode")
_ENTRY_RE = re.compile("|".join(ENTRY_WORDS))
_ENTRY_RE_BYTES = re.compile("|".join(ENTRY_WORDS).encode())
_ENTRY_WORDS_BYTES = tuple(w.encode() for w in ENTRY_WORDS)


def may_contain_fake_region(text: str | bytes) -> bool:
    # substring search is several times faster than scanning with the alternation,
    # and most files contain none of the words
    words = ENTRY_WORDS if isinstance(text, str) else _ENTRY_WORDS_BYTES
    return any(w in text for w in words) and _in_code(text)


def _in_code(text: str | bytes) -> bool:
    """Does an entry word appear outside a comment?"""
    if isinstance(text, bytes):
        rx, nl, cr, hash_, quotes = _ENTRY_RE_BYTES, b"\n", b"\r", b"#", (b"'", b'"')
    else:
        rx, nl, cr, hash_, quotes = _ENTRY_RE, "\n", "\r", "#", ("'", '"')
    for m in rx.finditer(text):
        line_start = max(text.rfind(nl, 0, m.start()), text.rfind(cr, 0, m.start())) + 1
        prefix = text[line_start : m.start()]
        h = prefix.find(hash_)
        # a comment only when the `#` comes before any quote (else it may sit in a string)
        if h < 0 or any(q in prefix[:h] for q in quotes):
            return True
    return False
