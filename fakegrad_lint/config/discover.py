"""Which files to check.

Explicitly named files are always checked (whatever their suffix, excluded or
not, unless ``force_exclude``). Folders are walked recursively for ``.py`` and
``.pyi`` files (and ``.ipynb`` once ``fakegrad_lint.sources.notebook`` exists), skipping
the ``exclude`` globs (by default ``.git``, ``__pycache__``, ``build``, ``dist``,
``node_modules``, ``.tox``, ``.venv``, ``.fakegrad_cache`` ...), every virtual
environment (a folder holding ``pyvenv.cfg``), and whatever ``.gitignore`` files
ignore.

``.gitignore`` support is implemented here (no ``git`` process): the
``.gitignore`` files inside the walked folders, and those of the parent folders
up to the root of the enclosing git repository (with its ``.git/info/exclude``).
Supported: comments, ``!`` negation, ``/``-anchored and in-path patterns,
trailing ``/`` (folders only), ``*``, ``?``, ``[...]``, ``**``, backslash escapes.
Not supported: the global ``core.excludesFile``. Symlinked folders are not
followed.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from fakegrad_lint.findings import ToolError

PY_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"


def source_suffixes() -> tuple[str, ...]:
    """Suffixes picked up by the walk. ``.ipynb`` joins when the notebook
    support module is installed (checked without importing it)."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sources")
    if os.path.exists(os.path.join(here, "notebook.py")) or os.path.isdir(os.path.join(here, "notebook")):
        return PY_SUFFIXES + (NOTEBOOK_SUFFIX,)
    return PY_SUFFIXES


# ---------------------------------------------------------------------------
# .gitignore


# A gitignore glob is compiled to a list of steps and matched by simulating
# the automaton over the set of live steps, so matching costs at most
# len(path) * len(pattern) steps whatever the stars (a regex or fnmatch-style
# backtracking matcher can take exponential time on ``*a*a*a...``).
_LIT, _ONE, _CLASS, _STAR, _ANY, _OPT = range(6)


def _parse_class(glob: str, i: int):
    """``[...]`` starting at ``glob[i]``: (negated, chars, ranges, next index), or None."""
    n = len(glob)
    j = i + 1
    negated = False
    if j < n and glob[j] in "!^":
        negated = True
        j += 1
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    first = True
    while j < n and (glob[j] != "]" or first):
        first = False
        c = glob[j]
        if c == "\\" and j + 1 < n:
            j += 1
            c = glob[j]
        if j + 2 < n and glob[j + 1] == "-" and glob[j + 2] != "]":
            hi = glob[j + 2]
            if hi == "\\" and j + 3 < n:
                hi = glob[j + 3]
                j += 1
            ranges.append((c, hi))
            j += 3
            continue
        chars.add(c)
        j += 1
    if j >= n:
        return None
    return negated, frozenset(chars), tuple(ranges), j + 1


def _compile_glob(glob: str, anchored: bool) -> list[tuple]:
    """Steps: (_LIT, c), (_ONE,) any char but ``/``, (_CLASS, negated, chars,
    ranges), (_STAR,) any run without ``/``, (_ANY,) any run, (_OPT, k) the
    next k steps are optional (``**/`` = an optional ``<anything>/``)."""
    steps: list[tuple] = []
    if not anchored:
        steps += [(_OPT, 2), (_ANY,), (_LIT, "/")]
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                before_ok = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2 : i + 3]
                if before_ok and after == "/":
                    steps += [(_OPT, 2), (_ANY,), (_LIT, "/")]
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    steps.append((_ANY,))
                    i += 2
                    continue
                i += 2
            else:
                i += 1
            if not steps or steps[-1] != (_STAR,):  # ** elsewhere and runs of * are one *
                steps.append((_STAR,))
            continue
        if c == "?":
            steps.append((_ONE,))
        elif c == "[":
            parsed = _parse_class(glob, i)
            if parsed is None:
                steps.append((_LIT, c))
            else:
                negated, chars, ranges, i = parsed
                steps.append((_CLASS, negated, chars, ranges))
                continue
        elif c == "\\" and i + 1 < n:
            i += 1
            steps.append((_LIT, glob[i]))
        else:
            steps.append((_LIT, c))
        i += 1
    return steps


# Patterns with at most this many unbounded wildcards are matched by a regex
# (C speed; a backtracking matcher costs at most len(path) ** this); more go
# to the automaton, whose cost does not grow with the stars.
REGEX_MAX_WILDCARDS = 3


def _regex_source(steps: list[tuple], start: int = 0, stop: int | None = None) -> str:
    out = []
    k = start
    stop = len(steps) if stop is None else stop
    while k < stop:
        step = steps[k]
        kind = step[0]
        if kind == _LIT:
            out.append(re.escape(step[1]))
        elif kind == _ONE:
            out.append("[^/]")
        elif kind == _STAR:
            out.append("[^/]*")
        elif kind == _ANY:
            out.append(".*")
        elif kind == _CLASS:
            _, negated, chars, ranges = step
            body = "".join(re.escape(c) for c in sorted(chars))
            body += "".join(f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in ranges)
            out.append(f"[^/{body}]" if negated else f"(?!/)[{body}]" if body else "(?!)")
        elif kind == _OPT:
            out.append(f"(?:{_regex_source(steps, k + 1, k + 1 + step[1])})?")
            k += step[1]
        k += 1
    return "".join(out)


class GlobMatcher:
    """A compiled gitignore glob; :meth:`match` is linear in the path length
    (a regex for patterns with few wildcards, an automaton for the rest)."""

    def __init__(self, glob: str, anchored: bool):
        self.steps = _compile_glob(glob, anchored)
        wildcards = sum(1 for step in self.steps if step[0] in (_STAR, _ANY))
        self._regex = None
        if wildcards <= REGEX_MAX_WILDCARDS:
            try:
                self._regex = re.compile(_regex_source(self.steps), re.DOTALL)
            except re.error:  # pragma: no cover - a class the regex cannot say
                self._regex = None
        self.match = self._regex_match if self._regex is not None else self._automaton_match

    def _regex_match(self, path: str) -> bool:
        return self._regex.fullmatch(path) is not None

    def _close(self, states: set[int]) -> set[int]:
        steps = self.steps
        todo = list(states)
        while todo:
            k = todo.pop()
            if k >= len(steps):
                continue
            kind = steps[k][0]
            if kind == _OPT:
                extra = (k + 1, k + 1 + steps[k][1])
            elif kind in (_STAR, _ANY):
                extra = (k + 1,)
            else:
                continue
            for e in extra:
                if e not in states:
                    states.add(e)
                    todo.append(e)
        return states

    def _automaton_match(self, path: str) -> bool:
        steps = self.steps
        end = len(steps)
        states = self._close({0})
        for ch in path:
            nxt: set[int] = set()
            for k in states:
                if k >= end:
                    continue
                step = steps[k]
                kind = step[0]
                if kind == _LIT:
                    if ch == step[1]:
                        nxt.add(k + 1)
                elif kind == _ANY:
                    nxt.add(k)
                elif ch == "/":
                    continue
                elif kind == _STAR:
                    nxt.add(k)
                elif kind == _ONE:
                    nxt.add(k + 1)
                elif kind == _CLASS:
                    _, negated, chars, ranges = step
                    hit = ch in chars or any(lo <= ch <= hi for lo, hi in ranges)
                    if hit != negated:
                        nxt.add(k + 1)
            if not nxt:
                return False
            states = self._close(nxt)
        return end in states


@dataclass
class _Pattern:
    regex: GlobMatcher
    negated: bool
    dir_only: bool


class GitIgnore:
    """The patterns of one ignore file, relative to its folder."""

    def __init__(self, base: str, lines: list[str]):
        self.base = base
        self.patterns: list[_Pattern] = []
        for raw in lines:
            line = raw.rstrip("\n").rstrip("\r")
            if not line or line.startswith("#"):
                continue
            # trailing spaces are ignored unless escaped
            while line.endswith(" ") and not line.endswith("\\ "):
                line = line[:-1]
            if not line:
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            elif line.startswith("\\!") or line.startswith("\\#"):
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            self.patterns.append(_Pattern(GlobMatcher(line, anchored), negated, dir_only))

    @classmethod
    def load(cls, base: str, path: str) -> "GitIgnore | None":
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        ignore = cls(base, lines)
        return ignore if ignore.patterns else None

    def verdict(self, abs_path: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by ``!``) or None (no pattern matches)."""
        rel = os.path.relpath(abs_path, self.base).replace(os.sep, "/")
        if rel.startswith("../") or rel == "..":
            return None
        result = None
        for p in self.patterns:
            if p.dir_only and not is_dir:
                continue
            if p.regex.match(rel):
                result = not p.negated
        return result


def _is_ignored(ignores: list[GitIgnore], abs_path: str, is_dir: bool) -> bool:
    # Innermost file decides; within a file the last matching pattern decides.
    for ignore in reversed(ignores):
        v = ignore.verdict(abs_path, is_dir)
        if v is not None:
            return v
    return False


def _repo_root(start: str) -> str | None:
    cur = start
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _parent_ignores(root: str) -> list[GitIgnore]:
    """Ignore files that apply to ``root`` from above it (up to the repo root)."""
    repo = _repo_root(root)
    if repo is None:
        return []
    chain = []
    cur = root
    while True:
        chain.append(cur)
        if cur == repo:
            break
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    chain.reverse()  # repo root first
    out = []
    info = GitIgnore.load(repo, os.path.join(repo, ".git", "info", "exclude"))
    if info:
        out.append(info)
    for folder in chain[:-1]:  # root's own .gitignore is read by the walk
        g = GitIgnore.load(folder, os.path.join(folder, ".gitignore"))
        if g:
            out.append(g)
    return out


# ---------------------------------------------------------------------------
# the walk


@dataclass
class Discovery:
    files: list[str]
    errors: list[ToolError]


def _display(path: str) -> str:
    return os.path.normpath(path)


def discover(paths: list[str], settings=None, *, respect_gitignore: bool = True) -> Discovery:
    """The files to check under ``paths`` (sorted, deduplicated) and the paths
    that could not be used (missing, not a file or folder). ``settings``: the
    run's (:meth:`~fakegrad_lint.config.settings.Settings.load`): the walk uses
    the first path's excludes, then each file's own configuration's."""
    from fakegrad_lint.config.settings import Settings

    settings = settings or Settings()
    excluder = settings.excluder()
    suffixes = source_suffixes()
    files: list[str] = []
    errors: list[ToolError] = []
    seen: set[str] = set()

    def add(path: str, real: str | None = None) -> None:
        # ``real``: the walk's ``os.path.realpath(path)``, known without a system call
        # per path component (the folder's real path and an entry that is no link)
        key = real if real is not None else os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            files.append(_display(path))

    for given in paths:
        try:
            st = os.stat(given)
        except FileNotFoundError:
            errors.append(ToolError(given, "No such file or directory"))
            continue
        except OSError as exc:
            errors.append(ToolError(given, exc.strerror or str(exc)))
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk(given, settings, excluder, suffixes, respect_gitignore, add, errors)
        elif stat.S_ISREG(st.st_mode):
            if settings.force_exclude and excluder.match_with_parents(os.path.abspath(given)):
                continue
            add(given)
        else:
            errors.append(ToolError(given, "not a regular file or directory"))
    files = _own_excludes(settings, paths, sorted(files, key=lambda p: p.replace(os.sep, "/")))
    return Discovery(files, errors)


def _own_excludes(settings, paths: list[str], files: list[str]) -> list[str]:
    """Drop the walked files that their own configuration (a ``pyproject.toml``
    below the first path's) excludes; explicitly named files only with
    ``force_exclude``. Loads every file's configuration (a bad one raises
    :class:`~fakegrad_lint.config.settings.ConfigError` here, before any work)."""
    if settings.resolver is None:
        return files
    named = {os.path.normpath(p) for p in paths}
    kept = []
    for f in files:
        own = settings.for_file(f)
        if own is not settings and (f not in named or settings.force_exclude):
            if own.excluder().match_with_parents(os.path.abspath(f)):
                continue
        kept.append(f)
    return kept


def _real_of(entry, realdir: str, abs_path: str) -> str:
    """``os.path.realpath`` of a folder's entry: inside the folder's real path
    unless the entry is a link (``is_symlink`` comes with the folder's listing)."""
    try:
        if not entry.is_symlink():
            return os.path.join(realdir, entry.name)
    except OSError:
        pass
    return os.path.realpath(abs_path)


def _walk(root: str, settings, excluder, suffixes, respect_gitignore: bool, add, errors: list[ToolError]) -> None:
    abs_root = os.path.abspath(root)
    if settings.force_exclude and excluder.match_with_parents(abs_root):
        return
    base_ignores = _parent_ignores(abs_root) if respect_gitignore else []
    # stack of (display path, absolute path, ignore files in force, real path)
    stack: list[tuple[str, str, list[GitIgnore], str]] = [(root, abs_root, base_ignores, os.path.realpath(abs_root))]
    while stack:
        shown, absdir, ignores, realdir = stack.pop()
        if respect_gitignore:
            g = GitIgnore.load(absdir, os.path.join(absdir, ".gitignore"))
            if g is not None:
                ignores = ignores + [g]
        try:
            with os.scandir(absdir) as it:
                entries = list(it)
        except OSError as exc:
            # a folder that cannot be read is an error, never a silent skip
            errors.append(ToolError(_display(shown), f"cannot read directory: {exc.strerror or exc}"))
            continue
        subdirs = []
        for entry in entries:
            name = entry.name
            abs_path = os.path.join(absdir, name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if excluder.match(abs_path):
                    continue
                if os.path.exists(os.path.join(abs_path, "pyvenv.cfg")):
                    continue
                if ignores and _is_ignored(ignores, abs_path, True):
                    continue
                subdirs.append((os.path.join(shown, name), abs_path, ignores, _real_of(entry, realdir, abs_path)))
            else:
                if not name.endswith(suffixes):
                    continue
                try:
                    if not entry.is_file():  # follows symlinks: a link to a file counts
                        continue
                except OSError:
                    continue
                if excluder.match(abs_path):
                    continue
                if ignores and _is_ignored(ignores, abs_path, False):
                    continue
                add(os.path.join(shown, name), _real_of(entry, realdir, abs_path))
        stack.extend(reversed(subdirs))
