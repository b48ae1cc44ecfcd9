"""What a rule is: a code, a name, docs, its own examples, and a predicate over leaks.

Rules are declarative over the facts computed once per file by
``fakegrad_lint.analysis`` (a list of :class:`~fakegrad_lint.analysis.leaks.Leak`).
A rule never looks at files, flags or terminals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from fakegrad_lint.analysis.leaks import Leak


def where(line, path: str | None) -> str:
    """``line 7``, or ``utils/memory.py line 7`` when the line is in another module
    (``path``: relative to the linted file's folder)."""
    if path is None:
        return f"line {line}"
    return f"{path} line {line}"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str  # one line, used in tables, SARIF shortDescription
    what: str  # what it finds
    why: str  # why it is a problem
    fix_safety: str
    # Examples: complete programs. Lines that must be flagged end with ``# CODE``.
    invalid: tuple[str, ...]
    valid: tuple[str, ...]
    # The fixed form of ``invalid[0]`` (what ``--fix`` writes), for the docs.
    fixed_example: str | None
    matches: Callable[[Leak], bool]
    message: Callable[[Leak], str]
    # What ``--fix --unsafe-fixes`` writes for each ``invalid`` example, in order
    # (None: the example gets no fix); the tests check them exactly, like Fixit's
    # ``Invalid(..., expected_replacement=...)``.
    invalid_fixed: tuple[str | None, ...] = ()
    fix: str = "none"  # "none", "safe", "unsafe" or "safe/unsafe": what --fix can do
    default: bool = True  # opt-in rules are off unless selected
    url: str = field(default="")

    def __post_init__(self):
        if not self.url:
            object.__setattr__(
                self, "url", f"https://github.com/fakegrad-lint/fakegrad-lint/blob/main/docs/rules.md#{self.code.lower()}"
            )
