"""What a rule is: a code, a name, docs, its own examples, and every fact about it.

Everything the tool knows about a rule is on its :class:`Rule`: the docs that
``fakegrad-lint rule`` prints, whether it is on by default, what ``--fix`` can do,
the runtime event that confirms it (``fakegrad-lint confirm``), its SARIF level
and tags. Settings, reporters, the flake8 plugin and ``confirm`` read them from
the catalogue (``fakegrad_lint.rules.RULES``); none keeps its own list.

Most rules are declarative over the facts computed once per file by
``fakegrad_lint.analysis`` (a list of :class:`~fakegrad_lint.analysis.leaks.Leak`):
``matches`` picks the leaks, ``message`` words them. A rule reported by other
machinery says so in ``reported_by`` (unused noqa: the engine's ``# noqa`` pass)
and has no predicate. A rule never looks at files, flags or terminals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from fakegrad_lint.analysis.leaks import Leak

#: Runtime events (``fakegrad_lint.runtime``) a finding can be confirmed by.
RUNTIME_KINDS = ("hazard", "crash", "entry")
#: What ``--fix`` can do for a rule's findings.
FIX_KINDS = ("none", "safe", "unsafe", "safe/unsafe")
#: Who reports a rule's findings: the analysis' leaks, or the engine's noqa pass.
REPORTERS = ("analysis", "noqa")
DOCS_URL = "https://github.com/fakegrad-lint/fakegrad-lint/blob/main/docs/rules.md"


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
    # Over the analysis' leaks (``reported_by == "analysis"``); None otherwise.
    matches: Callable[[Leak], bool] | None = None
    message: Callable[[Leak], str] | None = None
    # What ``--fix --unsafe-fixes`` writes for each ``invalid`` example, in order
    # (None: the example gets no fix); the tests check them exactly, like Fixit's
    # ``Invalid(..., expected_replacement=...)``.
    invalid_fixed: tuple[str | None, ...] = ()
    fix: str = "none"  # one of FIX_KINDS: what --fix can do
    default: bool = True  # opt-in rules are off unless selected
    # The runtime event that confirms a finding (one of RUNTIME_KINDS; None:
    # nothing at run time can confirm it).
    runtime_kind: str | None = "hazard"
    reported_by: str = "analysis"  # one of REPORTERS
    # SARIF: ``defaultConfiguration.level`` (default: "error" for a rule on by
    # default, a real bug; "warning" for an opt-in policy) and ``properties.tags``.
    level: str = ""
    tags: tuple[str, ...] = ("pytorch", "fake-tensor", "autograd")
    url: str = field(default="")

    def __post_init__(self):
        if not self.url:
            object.__setattr__(self, "url", f"{DOCS_URL}#{self.code.lower()}")
        if not self.level:
            object.__setattr__(self, "level", "error" if self.default else "warning")
        if self.fix not in FIX_KINDS:
            raise ValueError(f"{self.code}: fix {self.fix!r} is not one of {FIX_KINDS}")
        if self.runtime_kind is not None and self.runtime_kind not in RUNTIME_KINDS:
            raise ValueError(f"{self.code}: runtime_kind {self.runtime_kind!r} is not one of {RUNTIME_KINDS}")
        if self.reported_by not in REPORTERS:
            raise ValueError(f"{self.code}: reported_by {self.reported_by!r} is not one of {REPORTERS}")
        if (self.reported_by == "analysis") != (self.matches is not None and self.message is not None):
            raise ValueError(f"{self.code}: an analysis rule has `matches` and `message`, any other has neither")
