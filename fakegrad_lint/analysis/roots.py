"""The layout of the linted project: import roots, module names, and the files of
project modules.

A :class:`Project` knows the import roots of the linted code and turns an
import (absolute, relative, ``from pkg import mod``) into the file of a project
module, never into a third-party or standard-library one. Parsed modules are
kept once per process, keyed by path and content hash (:func:`load`), and only
when an import that the analysis executes names them (lazy).

Import roots of a file (see :func:`roots_for`): its own folder; the folder
above its top package (walk up while ``__init__.py`` exists); the nearest
folder up the tree with ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or
``.git`` (the project root); ``src/`` under those; and the folders given to a
run (:func:`set_run_roots`).

Never resolved to a project file: the packages whose behaviour the analysis
models from tables (``torch``, ``functorch``, the third-party model factories)
and the standard library, so a checkout of torch is still read as torch.

Filesystem and ``ast`` only: the interpreter (:mod:`.project_link`) runs what
this module finds; the prefilter's text-level side is :mod:`.project`.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass, field

# Packages read from the analysis' own tables, never from project files.
MODELED_PACKAGES = frozenset({"torch", "functorch", "torchvision", "timm", "transformers", "lightning", "pytorch_lightning"})
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins"}
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_MODULES = 32  # project modules one analysis may load
MAX_PROJECT_BYTES = 384 * 1024  # and their source, in all
MAX_UP = 8  # folders walked up looking for the project root

_run_roots: tuple[str, ...] = ()


def set_run_roots(paths) -> None:
    """The folders given to a run are import roots too (the CLI sets them)."""
    global _run_roots
    roots = []
    for p in paths:
        p = os.path.abspath(p)
        if not os.path.isdir(p):
            p = os.path.dirname(p)
        roots.append(p)
        if os.path.isdir(os.path.join(p, "src")):
            roots.append(os.path.join(p, "src"))
    _run_roots = tuple(dict.fromkeys(roots))


_summary_store: list = [None]


def set_summary_store(cache_dir: str | None) -> None:
    """Keep the project modules' summaries on disk, by content, under the run's
    cache folder (:func:`fakegrad_lint.analysis.summaries.by_content`); None: in
    memory only (``--no-cache``). The engine sets it with the cache."""
    _summary_store[0] = os.path.join(cache_dir, "summaries") if cache_dir else None


def summary_store() -> str | None:
    return _summary_store[0]


def run_roots() -> tuple[str, ...]:
    """The folders given to the run (see :func:`set_run_roots`)."""
    return _run_roots


def _is_pkg(d: str) -> bool:
    return os.path.isfile(os.path.join(d, "__init__.py"))


_pkg_memo: dict = {}


def package_root(path: str) -> tuple[str, list[str]]:
    """(the folder the file's top package sits in, the package parts down to the file's folder)."""
    d = os.path.dirname(os.path.abspath(path))
    hit = _pkg_memo.get(d)
    if hit is None:
        hit = _pkg_memo[d] = _package_root(d)
    return hit[0], list(hit[1])


def _package_root(d: str) -> tuple[str, tuple[str, ...]]:
    parts: list[str] = []
    while _is_pkg(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        parts.append(os.path.basename(d))
        d = parent
    return d, tuple(reversed(parts))


_INSTALLED = ("site-packages", "dist-packages")


def _installed(d: str) -> bool:
    return os.path.basename(d) in _INSTALLED


_roots_memo: dict = {}


def roots_for(path: str) -> tuple[str, ...]:
    """The import roots of a file (one tuple per folder, memoised per process)."""
    here = os.path.dirname(os.path.abspath(path))
    key = (here, _run_roots)
    hit = _roots_memo.get(key)
    if hit is None:
        hit = _roots_memo[key] = _roots_for(os.path.join(here, "x.py"))
    return hit


def _roots_for(path: str) -> tuple[str, ...]:
    path = os.path.abspath(path)
    here = os.path.dirname(path)
    top, parts = package_root(path)
    if _installed(top):
        # an installed package: only its own modules are "the project"
        return (os.path.join(top, parts[0]) + os.sep,) if parts else (here,)
    roots = [here, top]
    d = top
    for _ in range(MAX_UP):
        if any(os.path.exists(os.path.join(d, m)) for m in PROJECT_MARKERS):
            roots.append(d)
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    roots.extend(_run_roots)
    out = []
    for r in roots:
        out.append(r)
        if os.path.basename(r) != "src" and os.path.isdir(os.path.join(r, "src")):
            out.append(os.path.join(r, "src"))
    return tuple(dict.fromkeys(out))


def module_name_of(path: str) -> tuple[str, bool]:
    """(dotted module name from the file's package root, whether it is a package ``__init__``)."""
    _, parts = package_root(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    is_pkg = stem == "__init__"
    if not is_pkg:
        parts = parts + [stem]
    return ".".join(parts) or stem, is_pkg


def absolute_name(importer: str, is_pkg: bool, module: str | None, level: int) -> str | None:
    """The absolute module name of ``from <level dots><module> import ...`` in ``importer``."""
    if level == 0:
        return module
    base = importer.split(".") if importer else []
    if not is_pkg:
        base = base[:-1]
    up = level - 1
    if up > len(base) or (up == len(base) and not module):
        return None
    base = base[: len(base) - up] if up else base
    parts = base + ([module] if module else [])
    return ".".join(parts) or None


def _modeled(name: str) -> bool:
    top = name.split(".", 1)[0]
    return top in MODELED_PACKAGES or top in _STDLIB


@dataclass(eq=False)
class ModuleFile:
    """One parsed project module (shared by every analysis of the process)."""

    path: str
    name: str
    is_pkg: bool
    source: str
    tree: ast.Module
    sha: str
    pos: "PositionMap" = field(init=False)  # noqa: F821 - imported lazily (startup stays light)
    summary: object = field(default=None, init=False, repr=False)  # analysis.summaries.summarize

    def __post_init__(self):
        from fakegrad_lint.analysis.positions import PositionMap

        self.pos = PositionMap(self.source)


_parsed: dict[tuple, ModuleFile | None] = {}


def _stat_key(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size)


# path (absolute) -> text that stands for the file's while a fix across modules is proved
# (``fakegrad_lint.fix.projects``): the analysis reads the fixed text, the disk is untouched
OVERLAY: dict[str, str] = {}


def load(path: str) -> ModuleFile | None:
    """Parse a project module once per process (None: unreadable or not Python),
    keyed by path, modification time and size."""
    if OVERLAY and os.path.abspath(path) in OVERLAY:
        return _overlaid(path, OVERLAY[os.path.abspath(path)])
    key = _stat_key(path)
    if key is None:
        return None
    if key in _parsed:
        return _parsed[key]
    mf = None
    try:
        from fakegrad_lint.sources.sourcefile import read_source

        from fakegrad_lint.sources.lazyparse import parse

        sf = read_source(path)
        # function bodies are parsed when the analysis first reads them (most of an
        # imported module is never run); a syntax error in a body never read is not
        # seen, one in a body read makes that function do nothing (an unknown value)
        tree = parse(sf.text, path)
        name, is_pkg = module_name_of(path)
        import hashlib

        mf = ModuleFile(path, name, is_pkg, sf.text, tree, hashlib.sha256(sf.raw).hexdigest())
    except (Exception, RecursionError):
        mf = None
    if len(_parsed) > 4096:
        _parsed.clear()
    _parsed[key] = mf
    return mf


def _overlaid(path: str, text: str) -> ModuleFile | None:
    """The module parsed from the overlay's text (see ``OVERLAY``), once per text."""
    import hashlib

    key = ("overlay", path, hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest())
    if key not in _parsed:
        try:
            from fakegrad_lint.sources.lazyparse import parse

            name, is_pkg = module_name_of(path)
            _parsed[key] = ModuleFile(path, name, is_pkg, text, parse(text, path), key[2])
        except (Exception, RecursionError):
            _parsed[key] = None
    return _parsed[key]


def file_sha(path: str) -> str:
    """Content hash of a dependency (``"missing"`` when it cannot be read)."""
    import hashlib

    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return "missing"


_found_memo: dict = {}  # roots -> {module name: file or None}, per process


class Project:
    """The import roots of one linted file and the resolution of its imports."""

    def __init__(self, roots):
        self.roots = tuple(roots)
        self._found: dict[str, str | None] = _found_memo.setdefault(self.roots, {})

    @classmethod
    def for_file(cls, path: str) -> "Project | None":
        if not path or path.startswith("<") or not os.path.isfile(path):
            return None
        return cls(roots_for(path))

    def find(self, name: str | None) -> str | None:
        """The file of project module ``name`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
        if not name or _modeled(name):
            return None
        if name in self._found:
            return self._found[name]
        parts = name.split(".")
        hit = None
        for root in self.roots:
            if root.endswith(os.sep):
                # an installed package's folder: only names under that package
                pkg = os.path.basename(root[:-1])
                if parts[0] != pkg:
                    continue
                root = os.path.dirname(root[:-1])
            hit = _module_file(root, parts)
            if hit:
                break
        self._found[name] = hit
        return hit


    def is_namespace(self, name: str | None) -> bool:
        """Is ``name`` a namespace package of the project (a folder under a root,
        with no ``__init__.py``, that holds a module or a folder)?"""
        if not name or _modeled(name) or self.find(name) is not None:
            return False
        parts = name.split(".")
        for root in self.roots:
            if root.endswith(os.sep):
                continue  # an installed package's own folder: its packages have an __init__
            folder = root
            for part in parts:
                if part not in _entries(folder):
                    break
                folder = os.path.join(folder, part)
            else:
                if os.path.isdir(folder) and "__init__.py" not in _entries(folder) and _entries(folder):
                    return True
        return False


_listing: dict[str, frozenset] = {}


def _entries(folder: str) -> frozenset:
    """The names in a folder, listed once per process (a folder created later is
    not seen: its modules are unknown values, never a finding)."""
    hit = _listing.get(folder)
    if hit is None:
        try:
            hit = frozenset(os.listdir(folder))
        except OSError:
            hit = frozenset()
        _listing[folder] = hit
    return hit


def _module_file(root: str, parts: list) -> str | None:
    """``root/a/b.py`` or ``root/a/b/__init__.py`` for ``a.b``, by folder listings."""
    folder = root
    for part in parts[:-1]:
        if part not in _entries(folder):
            return None
        folder = os.path.join(folder, part)
    last = parts[-1]
    names = _entries(folder)
    if last + ".py" in names:
        cand = os.path.join(folder, last + ".py")
        if os.path.isfile(cand):
            return cand
    if last in names and "__init__.py" in _entries(os.path.join(folder, last)):
        return os.path.join(folder, last, "__init__.py")
    return None
