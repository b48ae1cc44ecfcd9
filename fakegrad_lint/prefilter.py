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


def may_contain_fake_region(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        rx, nl, hash_ = _ENTRY_RE_BYTES, b"\n", b"#"
    else:
        rx, nl, hash_ = _ENTRY_RE, "\n", "#"
    for m in rx.finditer(text):
        line_start = text.rfind(nl, 0, m.start()) + 1
        if hash_ not in text[line_start : m.start()]:
            return True
    return False
