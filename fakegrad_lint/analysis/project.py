"""Whole-project analysis: the modules of the project being linted.

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

The module also has the text-level side used by the prefilter
(:func:`reaches_region`): can a file that names no fake mode reach a module of
its project that can open a region?
"""

from __future__ import annotations

import ast
import os
import re
import sys
import warnings
from dataclasses import dataclass, field


# Packages read from the analysis' own tables, never from project files.
MODELED_PACKAGES = frozenset({"torch", "functorch", "torchvision", "timm", "transformers", "lightning", "pytorch_lightning"})
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins"}
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_MODULES = 64  # project modules one analysis may load
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
    pos: PositionMap = field(init=False)

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


def load(path: str) -> ModuleFile | None:
    """Parse a project module once per process (None: unreadable or not Python)."""
    key = _stat_key(path)
    if key is None:
        return None
    if key in _parsed:
        return _parsed[key]
    mf = None
    try:
        from fakegrad_lint.sourcefile import read_source

        sf = read_source(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(sf.text, filename=path)
        name, is_pkg = module_name_of(path)
        import hashlib

        mf = ModuleFile(path, name, is_pkg, sf.text, tree, hashlib.sha256(sf.raw).hexdigest())
    except (Exception, RecursionError):
        mf = None
    if len(_parsed) > 4096:
        _parsed.clear()
    _parsed[key] = mf
    return mf


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
        rel = name.replace(".", os.sep)
        hit = None
        for root in self.roots:
            if root.endswith(os.sep):
                # an installed package's folder: only names under that package
                pkg = os.path.basename(root[:-1])
                if name.split(".", 1)[0] != pkg:
                    continue
                root = os.path.dirname(root[:-1])
            for cand in (os.path.join(root, rel + ".py"), os.path.join(root, rel, "__init__.py")):
                if os.path.isfile(cand):
                    hit = cand
                    break
            if hit:
                break
        self._found[name] = hit
        return hit


# ---------------------------------------------------------------------------
# the prefilter's side: text only

_IMPORT_RE = re.compile(
    r"[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]+))"
)
_reach: dict[tuple, bool] = {}


def _import_statements(text: str):
    """Matches of ``_IMPORT_RE`` on each line that holds ``import`` (a superset of
    the import statements: lines in strings too). ``str.find`` is several times
    faster than a multi-line regex over the whole text."""
    find, n = text.find, len(text)
    i = find("import")
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = find("\n", i)
        end = n if end < 0 else end
        line = text[start:end]
        if "(" in line and ")" not in line:
            close = find(")", end)
            end = n if close < 0 else close + 1
            line = text[start:end]
        m = _IMPORT_RE.match(line)
        if m is not None:
            yield m
        i = find("import", end)


def imported_modules(text: str, path: str, project: "Project | None" = None) -> list[str]:
    """Absolute names of the modules (and ``from pkg import name`` candidates) a file's text imports."""
    me, is_pkg = module_name_of(path)
    out = []
    for m in _import_statements(text):
        if m.group(4) is not None:
            for part in m.group(4).split(","):
                name = part.strip().split(" ")[0]
                if name:
                    out.append(name)
            continue
        base = absolute_name(me, is_pkg, m.group(2) or None, len(m.group(1)))
        if base is None:
            continue
        out.append(base)
        if project is not None:
            found = project.find(base)
            if found is not None and not found.endswith("__init__.py"):
                continue  # a plain module: its names are not submodules
        for part in m.group(3).strip("()").split(","):
            name = part.strip().split(" ")[0]
            if name and name != "*" and name.isidentifier():
                out.append(f"{base}.{name}")  # `from pkg import mod`
    return out


MAX_SCAN_FILES = 20_000  # a larger root is not scanned: it counts as "may hold a region"
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", "site-packages", "dist-packages",
                        ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".ruff_cache", ".fakegrad_cache"})
_hot_roots: dict[str, bool] = {}


def _scan_root(root: str) -> bool:
    """Does any ``.py`` file under ``root`` name a way into a fake region (bytes only)?"""
    from fakegrad_lint.prefilter import ENTRY_WORDS

    words = tuple(w.encode() for w in ENTRY_WORDS)
    count = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in _SKIP_DIRS and not os.path.exists(os.path.join(d, x, "pyvenv.cfg"))]
        for f in files:
            if not f.endswith(".py"):
                continue
            count += 1
            if count > MAX_SCAN_FILES:
                return True
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    raw = fh.read()
            except OSError:
                continue
            if any(w in raw for w in words):
                return True
    return False


def project_may_open_region(roots) -> bool:
    """Can any module under these import roots open a fake region? One scan of
    each root per process (a root inside a scanned region-free root is free too)."""
    for root in sorted(r.rstrip(os.sep) for r in roots):
        if root in _hot_roots:
            if _hot_roots[root]:
                return True
            continue
        if any(not hot and (root + os.sep).startswith(r + os.sep) for r, hot in _hot_roots.items()):
            continue
        if os.path.basename(root) in MODELED_PACKAGES:
            _hot_roots[root] = False  # an installed torch: read from the tables, never as a project
            continue
        _hot_roots[root] = _scan_root(root)
        if _hot_roots[root]:
            return True
    return False


def reaches_region(path: str, text: str, depth: int = 0) -> bool:
    """Can this file (which names no fake mode) reach a project module that can open
    a fake region, through its imports? Modules are read once per process; a
    project with no such module costs one scan of its roots."""
    from fakegrad_lint.prefilter import may_contain_fake_region

    if depth > 6 or "import" not in text:
        return False
    roots = roots_for(path)
    if depth == 0:
        if not project_may_open_region(roots):
            return False
        key = _stat_key(os.path.abspath(path))
        if key in _reach:
            return _reach[key]
    project = Project(roots)
    for name in imported_modules(text, path, project):
        target = project.find(name)
        if target is None or os.path.abspath(target) == os.path.abspath(path):
            continue
        key = _stat_key(target)
        if key in _reach:
            if _reach[key]:
                return True
            continue
        _reach[key] = False  # cycles stop here
        try:
            with open(target, "rb") as fh:
                raw = fh.read()
            t = raw.decode("utf-8", "replace")
        except OSError:
            continue
        hit = may_contain_fake_region(t) or reaches_region(target, t, depth + 1)
        _reach[key] = hit
        if hit:
            return True
    return False

