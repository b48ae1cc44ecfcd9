"""Bytes-level prefilter: can this text hold a fake region at all?

Every hazard needs a fake mode to be entered, and every way of entering one names
one of these words in the file's text. A file without any of them cannot produce
a finding, so it is never parsed. (A test checks that findings with and without
the prefilter are identical.)
"""

from __future__ import annotations

import re

# Entry points of a fake region, as they must appear in source text.
ENTRY_WORDS = (
    "FakeTensorMode",
    "fake_tensor",
    "detect_fake_mode",
    "tracing_mode",
    "FakeCopyMode",
)
_ENTRY_RE = re.compile("|".join(ENTRY_WORDS))
_ENTRY_RE_BYTES = re.compile("|".join(ENTRY_WORDS).encode())


def may_contain_fake_region(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        return _ENTRY_RE_BYTES.search(text) is not None
    return _ENTRY_RE.search(text) is not None
