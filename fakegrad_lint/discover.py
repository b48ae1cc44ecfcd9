"""Which files to check.

Explicitly named files are always checked (whatever their suffix, excluded or
not, unless ``force_exclude``). Folders are walked recursively for ``.py`` and
``.pyi`` files (and ``.ipynb`` once ``fakegrad_lint.notebook`` exists), skipping
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
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(os.path.join(here, "notebook.py")) or os.path.isdir(os.path.join(here, "notebook")):
        return PY_SUFFIXES + (NOTEBOOK_SUFFIX,)
    return PY_SUFFIXES


# ---------------------------------------------------------------------------
# .gitignore


def _translate(glob: str) -> str:
    """A gitignore glob (already stripped of anchoring) -> regex source."""
    i, n, out = 0, len(glob), []
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                before_ok = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2 : i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{body}]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass
class _Pattern:
    regex: re.Pattern
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
            src = _translate(line)
            if not anchored:
                src = "(?:.*/)?" + src
            self.patterns.append(_Pattern(re.compile(src + r"\Z", re.DOTALL), negated, dir_only))

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
    that could not be used (missing, not a file or folder)."""
    from fakegrad_lint.settings import Settings

    settings = settings or Settings()
    excluder = settings.excluder()
    suffixes = source_suffixes()
    files: list[str] = []
    errors: list[ToolError] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.realpath(path)
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
            _walk(given, settings, excluder, suffixes, respect_gitignore, add)
        elif stat.S_ISREG(st.st_mode):
            if settings.force_exclude and excluder.match_with_parents(os.path.abspath(given)):
                continue
            add(given)
        else:
            errors.append(ToolError(given, "not a regular file or directory"))
    return Discovery(sorted(files, key=lambda p: p.replace(os.sep, "/")), errors)


def _walk(root: str, settings, excluder, suffixes, respect_gitignore: bool, add) -> None:
    abs_root = os.path.abspath(root)
    if settings.force_exclude and excluder.match_with_parents(abs_root):
        return
    base_ignores = _parent_ignores(abs_root) if respect_gitignore else []
    # stack of (display path, absolute path, ignore files in force)
    stack: list[tuple[str, str, list[GitIgnore]]] = [(root, abs_root, base_ignores)]
    while stack:
        shown, absdir, ignores = stack.pop()
        if respect_gitignore:
            g = GitIgnore.load(absdir, os.path.join(absdir, ".gitignore"))
            if g is not None:
                ignores = ignores + [g]
        try:
            with os.scandir(absdir) as it:
                entries = list(it)
        except OSError:
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
                subdirs.append((os.path.join(shown, name), abs_path, ignores))
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
                add(os.path.join(shown, name))
        stack.extend(reversed(subdirs))
