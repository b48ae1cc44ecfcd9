"""The one data model every front end consumes: Finding, Fix, Edit, Applicability.

Positions follow one convention everywhere inside the tool: ``row`` is 1-based,
``column`` is a 0-based offset in characters (not bytes) into the line. Reporters
convert at the edge (text/json/sarif add 1 to the column; flake8 takes it as is).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Location:
    row: int  # 1-based line
    column: int  # 0-based character offset


class Applicability(str, enum.Enum):
    """ruff's ordered applicability: ``DISPLAY_ONLY < UNSAFE < SAFE``.

    A fix applies at a safety level when its applicability is at least that
    level: ``SAFE`` by default, ``UNSAFE`` with ``--unsafe-fixes``; display-only
    fixes never apply. :func:`applies` is the one place that decides it (the CLI,
    the fix loop, every reporter and every count use it)."""

    SAFE = "safe"  # shape results identical, no real tensor touched any more
    UNSAFE = "unsafe"  # changes what the code computes; applied only on request
    DISPLAY_ONLY = "display-only"  # a suggestion, never applied

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value

    @property
    def rank(self) -> int:
        return _RANK[self]

    def __lt__(self, other):
        if not isinstance(other, Applicability):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other):
        if not isinstance(other, Applicability):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other):
        if not isinstance(other, Applicability):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other):
        if not isinstance(other, Applicability):
            return NotImplemented
        return self.rank >= other.rank

    __hash__ = str.__hash__


_RANK = {Applicability.DISPLAY_ONLY: 0, Applicability.UNSAFE: 1, Applicability.SAFE: 2}


def required_applicability(*, unsafe: bool) -> Applicability:
    """The least applicability a fix needs at this safety level."""
    return Applicability.UNSAFE if unsafe else Applicability.SAFE


def applies(fix: "Fix | None", *, unsafe: bool) -> bool:
    """Whether ``fix`` is applied (and marked ``[*]``) at this safety level."""
    return fix is not None and bool(fix.edits) and fix.applicability >= required_applicability(unsafe=unsafe)


def hidden_unsafe(fix: "Fix | None") -> bool:
    """A fix that applies with ``--unsafe-fixes`` and not without it."""
    return applies(fix, unsafe=True) and not applies(fix, unsafe=False)


@dataclass(frozen=True)
class Edit:
    start: Location
    end: Location
    content: str
    # The file the edit is in, when it is not the finding's own: a fix whose edit lands
    # in another module of the project, where the region is (``fix/projects.py``).
    # None: the finding's file (every single-file fix).
    filename: str | None = None


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: tuple[Edit, ...]

    def files(self, own: str) -> list[str]:
        """The files the fix edits (``own``: the finding's file, for edits of their own file)."""
        return list(dict.fromkeys(e.filename or own for e in self.edits))

    def elsewhere(self, own: str) -> list[str]:
        """The files other than ``own`` (the finding's) that the fix edits."""
        import os

        me = os.path.abspath(own)
        return [f for f in self.files(own) if os.path.abspath(f) != me]


@dataclass(frozen=True)
class TraceStep:
    """One link of a finding's chain (see ``Finding.trace``).

    ``kind``: "source" (where the real requires-grad value was made), "call"
    (where it enters a helper of another module), "region" (where the fake
    region was entered), "leak" (the op), "sink" (the backward / grad).
    ``filename`` is the file of the step (the finding's own file or another
    module of the project); positions follow the convention above."""

    kind: str
    message: str
    filename: str
    location: Location
    end_location: Location
    cell: int | None = None  # notebooks: the cell the location refers to


# ``Finding.extra`` key of a finding made at a leak line inside a helper of another
# module by the analysis of the file that calls it (its value: "caller line N")
HELPER_OF = "helper_of"


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    # For notebooks: the 1-based cell number the location refers to (rows are
    # then relative to the cell). None for plain files.
    cell: int | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)
    # The chain that proves the finding: source, region, leak, sink (in order).
    trace: tuple[TraceStep, ...] = field(default=(), compare=False, hash=False)
    # Why the finding has no fix although the analysis planned one (the fix failed
    # its proof, or could not be built): "the fixed text does not parse", ...
    no_fix: str | None = field(default=None, compare=False, hash=False)

    @property
    def sort_key(self):
        return (self.filename, self.cell or 0, self.location, self.code)

    @property
    def fixable(self) -> bool:
        return applies(self.fix, unsafe=True)


def display_path(name: str) -> str:
    """``name`` as one printable line: names with a newline, another control
    character or bytes that are not valid in the file system's encoding
    (surrogate escapes) are shown quoted, as Python writes a string
    (``'a\\nb.py'``), so a name can never split or garble a one-line message."""
    return name if name.isprintable() else repr(name)


@dataclass(frozen=True)
class ToolError:
    """A file (or path) the tool could not check. Printed as ``path: error: reason``."""

    filename: str
    reason: str

    def __str__(self) -> str:
        return f"{display_path(self.filename)}: error: {self.reason}"
