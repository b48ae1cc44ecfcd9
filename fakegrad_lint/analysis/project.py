"""Whole-project analysis, the prefilter's side (text only): can a file that names
no fake mode reach a module of its project that can open a region
(:func:`reaches_region`)?

Per module, a text summary computed once per process (:func:`_summary`): what its
imports bind and, per top-level statement, the names it binds and the words it
uses. :func:`hot_names` follows them to a fixed point: the names a module exports
that can reach a fake region (a helper that opens one, a class whose code does, a
module-level mode, or a module that holds one). A project with no module that
names a fake mode costs one byte scan of its roots.

The layout (import roots, :class:`Project`, :func:`load`, :func:`file_sha`,
:func:`set_run_roots`) is :mod:`fakegrad_lint.analysis.roots`; its public names
are re-exported here, where the engine and the CLI import them.
"""

from __future__ import annotations

import os
import re
import sys

from fakegrad_lint.analysis.roots import (MAX_MODULES, MAX_PROJECT_BYTES, MODELED_PACKAGES, Project, absolute_name,
    file_sha, load, module_name_of, package_root, roots_for, run_roots, set_run_roots)

# the layout's names that the engine, the CLI and the interpreter import from here
__all__ = ["MAX_MODULES", "MAX_PROJECT_BYTES", "Project", "absolute_name", "file_sha", "load", "module_name_of",
           "roots_for", "set_run_roots", "reaches_region", "hot_names", "hot_names_of", "imported_modules",
           "project_may_open_region"]

MAX_HOT_FILES = 200  # more files that may bind a hot name: the prefilter does not follow imports

_IMPORT_RE = re.compile(
    r"[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]+))"
)


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
_root_scans: dict[str, tuple] = {}  # root -> (files or None when too many, seeds)


def _scan_root(root: str) -> tuple:
    """The ``.py`` files under ``root`` and the seeds among them: those that name a
    way into a fake region (bytes only). Once per root per process; None for the
    files of a root with more than MAX_SCAN_FILES (it counts as "may hold a region")."""
    hit = _root_scans.get(root)
    if hit is not None:
        return hit
    prefix = root.rstrip(os.sep) + os.sep
    for other, (files, seeds) in list(_root_scans.items()):
        if files is not None and prefix.startswith(other.rstrip(os.sep) + os.sep):
            # inside a folder already scanned: its part of that scan
            hit = _root_scans[root] = ([f for f in files if f.startswith(prefix)],
                                       [f for f in seeds if f.startswith(prefix)])
            return hit
    from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

    words = tuple(w.encode() for w in ENTRY_WORDS)
    files: list | None = []
    seeds = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in _SKIP_DIRS and not os.path.exists(os.path.join(d, x, "pyvenv.cfg"))]
        for f in names:
            if not f.endswith(".py"):
                continue
            full = os.path.join(d, f)
            files.append(full)
            if len(files) > MAX_SCAN_FILES:
                files = None
                break
            try:
                with open(full, "rb") as fh:
                    raw = fh.read()
            except OSError:
                continue
            if any(w in raw for w in words):
                seeds.append(full)
        if files is None:
            break
    hit = _root_scans[root] = (files, seeds)
    return hit


def _outer_roots(roots) -> list:
    rs = sorted({r.rstrip(os.sep) for r in roots if os.path.basename(r.rstrip(os.sep)) not in MODELED_PACKAGES})
    return [r for r in rs if not any(r != o and (r + os.sep).startswith(o + os.sep) for o in rs)]


def project_may_open_region(roots) -> bool:
    """Can any module under these import roots open a fake region? One scan of
    each root per process (an installed torch counts as none: read from tables)."""
    for root in _outer_roots(roots):
        files, seeds = _scan_root(root)
        if files is None or seeds:
            return True
    return False


_hot_words: dict[tuple, object] = {}
_scanned: set = set()  # files of the projects whose hot names are known
_possible: set = set()  # among them, the files that may bind a hot name


def _hot_word_re(roots):
    """The hot names of the project (:func:`hot_names` of its modules, to a fixed
    point; False when there is none): a file whose text names none of them cannot import one.
    Only files that name a fake mode (the seeds) or a hot name are ever read
    for their imports. None when the project is too large to scan (no gate)."""
    key = tuple(_outer_roots(roots))
    if key in _hot_words:
        return _hot_words[key]
    files, seeds = [], []
    for root in key:
        f, sd = _scan_root(root)
        if f is None:
            _hot_words[key] = None
            return None
        files += f
        seeds += sd
    files = list(dict.fromkeys(files))
    file_set = set(files)
    _scanned.update(files)
    possible = set(seeds)
    tokens: dict = {}  # path -> the words of its text, for large word sets (this scan only)
    mod_words: set = set()  # the names of the modules that hold hot names (gate only, not followed)
    while True:
        _possible.update(possible)
        for path in possible:
            _hot.pop(path, None)  # computed with fewer possible modules: again
        words = set()
        fed = set()
        for path in sorted(possible):
            names = hot_names_of(path, 0)
            words |= names
            if names:
                fed |= _feeds(path, names)
                if _runs_region_code(path, names):
                    mod_words.add(_module_word(path))  # `import boot` may enter its mode
        # a registry filled by hot code (`@register("fake")` on a class that opens a
        # region, in another module): the module that holds it is possible too
        again = False
        for target, name in sorted(_through_reexports(fed)):
            if name not in _fed.setdefault(target, set()):
                _fed[target].add(name)
                old = _summaries.get(target)
                if old is not None and not old[1]:
                    _summaries.pop(target)  # made without its statements: again
                _hot.pop(target, None)
                again = True
            if target not in possible:
                possible.add(target)
                _possible.add(target)
                _hot.pop(target, None)
                again = True
        if again:
            # the modules of this round that import the new ones were computed
            # without them: the whole round again (the order the possible files are
            # visited in then does not matter)
            continue

        if not words:
            break
        words = frozenset(words)
        new = set()
        # the package `__init__` of a module that holds hot names may bind it by the
        # module's name alone (`from . import impl`, `import_module(".impl", __name__)`)
        for path in list(possible):
            if os.path.basename(path) != "__init__.py" and hot_names_of(path, 0):
                init = os.path.join(os.path.dirname(path), "__init__.py")
                if init not in possible and init in file_set:
                    new.add(init)
        for path in files:
            if path not in possible and _mentions(path, words, tokens):
                new.add(path)
                if len(possible) + len(new) > MAX_HOT_FILES:
                    break
        if not new:
            break
        possible |= new
        if len(possible) > MAX_HOT_FILES:
            # a framework whose every part reaches its own fake-mode code: following
            # imports would analyse most of it for nothing (see the README's limits).
            # The possible files were not all found: their hot names are not known
            # to be empty (the analysis asks for them), so none is cut short, and
            # what was computed with the partial set is computed again
            _hot_words[key] = False
            if GATE_RECOMPUTE:
                # the possible files were not all found: their hot names are not known
                # to be empty (the analysis asks for them), so none is cut short, and
                # what was computed with the partial set is computed again
                _scanned.difference_update(files)
                for f in files:
                    _hot.pop(f, None)
            return False
    out = frozenset(words | mod_words) if words else False
    _hot_words[key] = out
    return out


def _runs_region_code(path: str, hot) -> bool:
    """Does a top-level statement of the module that binds nothing name a way into a
    region (``_MODE.__enter__()`` at import time)? Importing it runs that code."""
    from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

    regs = _summary(path, None)[3]
    if isinstance(regs, _LazyText):
        regs = regs.regs_with(set(hot) | set(ENTRY_WORDS))
    return any(not bound and (not words.isdisjoint(hot) or not words.isdisjoint(ENTRY_WORDS))
               for _name, bound, words in regs)


def _module_word(path: str) -> str:
    """The name an import binds for a module file: its stem, or its package's name."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem


def _mentions(path: str, words, tokens: dict) -> bool:
    """Does the module's text name one of ``words``? A star import names every
    word (``from .regions import *`` re-exports what it finds there)."""
    if path in _star_files:
        return True
    if path in tokens:
        return not words.isdisjoint(tokens[path])
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    if _STAR_PREFIX_RE.search(text) is not None and _STAR_IMPORT_RE.search(text):
        _star_files.add(path)
        return True
    if len(words) > 32:
        tokens[path] = frozenset(_WORD.findall(text))
        return not words.isdisjoint(tokens[path])
    return _names_any(text, words)


_star_files: set = set()  # modules with a star import (they may re-export any name)
_STAR_IMPORT_RE = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*\*", re.MULTILINE)
# what every match of _STAR_IMPORT_RE holds; a literal start lets the regex engine skip
# to each `import` (a multi-line `^` is tried at every character: 8x slower)
_STAR_PREFIX_RE = re.compile(r"import[ \t]*\*")


def _names_any(text: str, words) -> bool:
    """Does ``text`` hold one of ``words`` as a whole word? (substring search for a
    few words: a regex with word boundaries is slow on large texts; the text's
    words as a set for many)"""
    if len(words) > 32:
        return not words.isdisjoint(_WORD.findall(text))
    for w in words:
        i = text.find(w)
        while i >= 0:
            before = text[i - 1] if i else " "
            after = text[i + len(w)] if i + len(w) < len(text) else " "
            if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
                return True
            i = text.find(w, i + 1)
    return False


def reaches_region(path: str, text: str) -> bool:
    """Can this file (which names no fake mode) reach a fake region through a
    project module? Only when it imports a name that such a module exports
    (:func:`hot_names`): a helper that opens a region, a class whose code does, a
    module-level mode, or a module that holds one. A project with no module that
    names a fake mode costs one scan of its roots."""
    if "import" not in text:
        return False
    if module_name_of(path)[0].split(".", 1)[0] in MODELED_PACKAGES:
        return False  # a module of torch (or of a package read from tables): never a project
    roots = roots_for(path)
    if not project_may_open_region(roots):
        return False
    me = os.path.abspath(path)
    scan = _gate_roots(me, roots)
    given = any((me + os.sep).startswith(r.rstrip(os.sep) + os.sep) for r in run_roots())
    gate = _hot_word_re(scan)
    if given and gate is False:
        return False  # the folders given export no hot name (or too many to follow)
    if gate and "import_module" in text and _DYNAMIC_IMPORT_RE.search(text):
        return True  # `import_module(NAMES[key])`: a name computed at run time may be any hot module
    bindings = _import_bindings(text, path, Project(roots), me)
    if not bindings:
        return False
    if gate and any(t and _uses_loader(text, local, n, _dynamic_loaders(t)) for local, t, n, _sub in bindings):
        return True  # `locate("pkg.mod:attr")` over importlib in a module it imports: may return any hot value
    if all(_under(t or sub, scan) for _l, t, _n, sub in bindings):
        if gate is False or (gate is not None and not _names_any(text, gate)):
            return False  # names no hot name of the project: cannot import one
    return bool(_hot_imports(text, path, None, me, 0, bindings))


_dynamic_memo: dict = {}  # path -> the names of its top-level defs that import_module a computed name


def _dynamic_loaders(path: str) -> frozenset:
    """The top-level defs of the module at ``path`` that call ``import_module`` with a
    computed name (a loader such as ``locate("pkg.mod:attr")`` or ``plugins.load(names)``,
    which may return any hot value). Only an imported loader counts: a module that
    merely has one does not make every name imported from it possibly hot (sglang's and
    vllm's utilities: 2 -> 164 files past the prefilter, 4.5 -> 87 s)."""
    out = _dynamic_memo.get(path)
    if out is None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = ""
        names = set()
        if "import_module" in text and _DYNAMIC_IMPORT_RE.search(text):
            for m in _TOP_DEF_RE.finditer(text):
                end = _TOP_LINE_RE.search(text, text.find("\n", m.end()) + 1 or len(text))
                if _DYNAMIC_IMPORT_RE.search(text, m.end(), end.start() if end else len(text)):
                    names.add(m.group(1))
        out = _dynamic_memo[path] = frozenset(names)
    return out


def _uses_loader(text: str, local: str, name: str | None, loaders: frozenset) -> bool:
    """Does an import binding reach one of ``loaders``: ``from m import load``, or
    ``import m`` / ``from pkg import m`` used as ``m.load``?"""
    if not loaders:
        return False
    if name is not None:
        return name in loaders
    return any(re.search(rf"\b{re.escape(local)}\.{re.escape(d)}\b", text) for d in loaders)


_TOP_DEF_RE = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_TOP_LINE_RE = re.compile(r"^[^\s#)]", re.MULTILINE)  # the next top-level statement (a signature's `)` is not one)


def _gate_roots(me: str, roots) -> tuple:
    """The folders whose hot names gate a file: the folders given to the run that
    hold it (the project being linted), else its own folder and its package's
    (a file importing from elsewhere is not gated, only checked exactly)."""
    given = [r for r in run_roots() if (me + os.sep).startswith(r.rstrip(os.sep) + os.sep)]
    if given:
        return tuple(given)
    here = os.path.dirname(me)
    top, _parts = package_root(me)
    return tuple(r for r in roots if r.rstrip(os.sep) in (here, top)) or tuple(roots)


def _under(path, roots) -> bool:
    return path is not None and any((path + os.sep).startswith(r.rstrip(os.sep) + os.sep) for r in _outer_roots(roots))


def _import_specs(text: str) -> tuple:
    """The import statements of a module's text, layout-free (so they keep by
    content): ("import", dotted name, local name) or ("from", level, module,
    ((name, local name), ...))."""
    out: list = []
    for m in _import_statements(text):
        if m.group(4) is not None:  # import a.b [as m]
            for part in m.group(4).split(","):
                bits = part.split()
                if bits:
                    out.append(("import", bits[0],
                                bits[2] if len(bits) >= 3 and bits[1] == "as" else bits[0].split(".")[0]))
            continue
        names = []
        for part in m.group(3).strip("()").split(","):
            bits = part.split()
            if bits:
                names.append((bits[0], bits[2] if len(bits) >= 3 and bits[1] == "as" else bits[0]))
        out.append(("from", len(m.group(1)), m.group(2) or "", tuple(names)))
    if "import_module" in text:
        # `m = importlib.import_module("pkg.mod")` (or `(".mod", __package__)`); one
        # not assigned (`getattr(import_module(".impl", __name__), name)` in a module
        # `__getattr__`) binds, for the text, the module's last name (its word there)
        found = [(m.group(1), m.group(2)) for m in _IMPORT_MODULE_RE.finditer(text)]
        found += [(m.group(1).lstrip(".").rpartition(".")[2], m.group(1)) for m in _IMPORT_MODULE_ANY_RE.finditer(text)]
        for local, name in found:
            if not local:
                continue
            level = len(name) - len(name.lstrip("."))
            if not level:
                out.append(("import", name, local))
            elif name[level:]:
                head, _, last = name[level:].rpartition(".")
                out.append(("from", level, head, ((last, local),)))
    return tuple(out)


_IMPORT_MODULE_ANY_RE = re.compile(r"\bimport_module\([ \t]*[\"']([\w.]+)[\"']")
_DYNAMIC_IMPORT_RE = re.compile(r"\bimport_module\([ \t]*(?![\"' \t])")
_IMPORT_MODULE_RE = re.compile(
    r"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:[\w.]+\.)?import_module\([ \t]*[\"']([\w.]+)[\"']", re.MULTILINE)


def _import_bindings(text: str, path: str, project: "Project", me: str) -> list:
    """What each import statement of a module binds: (local name, module file,
    imported name or None for a module, submodule file or None); "*" for a star."""
    return _bind_imports(_import_specs(text), path, project, me)


def _bind_imports(specs, path: str, project: "Project", me: str) -> list:
    """:func:`_import_bindings` of a module's :func:`_import_specs`, in its layout."""
    own, is_pkg = module_name_of(path)
    out: list = []
    for spec in specs:
        if spec[0] == "import":
            target = project.find(spec[1])
            if target is not None and os.path.abspath(target) != me:
                out.append((spec[2], target, None, None))
            continue
        base = absolute_name(own, is_pkg, spec[2] or None, spec[1])
        if base is None:
            continue
        target = project.find(base)
        if target is not None and os.path.abspath(target) == me:
            target = None
        for name, local in spec[3]:
            sub = None
            if name != "*" and (target is None or target.endswith("__init__.py")):
                sub = project.find(f"{base}.{name}")  # `from pkg import mod`
                if sub is not None and os.path.abspath(sub) == me:
                    sub = None
            if target is not None or sub is not None:
                out.append((local, target, name, sub))
    return out


def _hot_imports(text: str, path: str, project: "Project", me: str, depth: int = 0, bindings=None) -> set:
    """The local names a module's import statements bind to hot project values."""
    out: set = set()
    for local, target, name, sub in (bindings if bindings is not None else _import_bindings(text, path, project, me)):
        if name is None:
            if hot_names_of(target, depth + 1):
                out.add(local)
        elif name == "*":
            out |= hot_names_of(target, depth + 1)
        elif (target is not None and name in hot_names_of(target, depth + 1)) or (sub is not None and hot_names_of(sub, depth + 1)):
            out.add(local)
    return out


_hot: dict = {}
# module -> its names that hot code of another module calls or reads (`register`
# of a registry, used by `@register("fake")` on a class that opens a region): what
# they touch at the module's top level (the registry dict) is hot there
_fed: dict = {}
_summaries: dict = {}  # path -> (import bindings, statements, names a fake mode)
# a top-level statement starts at column 0 (decorators join the def that follows)
_TOP_RE = re.compile(r"^(?=[@A-Za-z_])", re.MULTILINE)
_BIND_RE = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)"
    r"|^[ \t]*([A-Za-z_][\w, \t]*?)(?:[ \t]*:[^=\n]*)?[ \t]*=(?!=)",
    re.MULTILINE,
)
_WORD = re.compile(r"[A-Za-z_]\w*")


_in_progress: list = []  # modules whose hot names are being computed (outermost first)
_cycle = [False]  # one of them was read before it was done (an import cycle)
_this_round: list = []  # the modules computed since the outermost call began


def hot_names_of(target: str, depth: int) -> frozenset:
    """:func:`hot_names` of a project module, once per process. An import cycle
    (``pkg/__init__`` re-exports ``a``, which imports ``pkg.b``, which imports from
    ``a``) first sees a module that is not done as naming nothing; the modules of
    that computation are then computed again until nothing changes (hot names only
    grow), so no module keeps a value computed from a partial one."""
    key = target
    if key in _hot:
        if key in _in_progress:
            _cycle[0] = True
        return _hot[key]
    if target in _scanned and target not in _possible:
        return frozenset()  # names neither a fake mode nor a hot name of its project
    if depth > 8:
        if _in_progress:
            _cycle[0] = True  # cut short: computed again from the outermost call
        return frozenset()
    outer = not _in_progress
    _hot[key] = frozenset()  # cycles stop here (for now)
    _in_progress.append(key)
    _this_round.append(key)
    try:
        names = hot_names(target, None, depth)
    finally:
        _in_progress.pop()
    _hot[key] = names
    if outer:
        if _cycle[0]:
            _cycle[0] = False
            _in_progress.append(None)  # what is computed now is not an outermost call
            try:
                # every module computed since the outermost call, those first reached
                # while computing again too (`_this_round` grows), until nothing
                # changes: the result does not depend on the order they were reached
                keys = _this_round
                for _ in range(64):
                    changed = False
                    known = len(keys)
                    i = 0
                    while i < len(keys):
                        k = keys[i]
                        i += 1
                        again = hot_names(k, None, 0)
                        if again != _hot.get(k):
                            _hot[k] = again
                            changed = True
                    if len(keys) > known:
                        changed = True  # first reached in this pass, from partial values
                    if not changed:
                        break
            finally:
                _in_progress.pop()
                _cycle[0] = False
        _this_round.clear()
        names = _hot[key]
    return names


def _summary(path: str, text: str | None, statements: bool = True):
    """A module's import bindings, top-level statements (names bound, words used)
    and registrations (a decorator or a top-level call, subscript store or method
    call on a name: that name, the names the statement binds, its words), and its
    import statements.

    Once per process per module; the text part (everything but the bindings,
    which depend on the layout) once per module *content*, kept in memory and in
    the on-disk store of :func:`fakegrad_lint.analysis.summaries.by_content`. The
    statements (a parse of the module, :mod:`callgraph`) are made only when asked
    for (``statements``): a module that imports no hot name never needs them."""
    hit = _summaries.get(path) if text is None else None
    if hit is not None and (hit[1] is not None or not statements):
        return hit
    from fakegrad_lint.analysis import summaries

    if text is None:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError:
            raw = b""
    else:
        raw = text.encode("utf-8", "surrogatepass")

    def decoded():
        return text if text is not None else raw.decode("utf-8", "replace")

    content = summaries.content_key(raw)
    if hit is not None:
        bindings, _info, entry, _regs, specs = hit
    else:
        specs, entry = summaries.by_content(content, "imports", lambda: _text_imports(decoded()))
        bindings = _bind_imports(specs, path, Project(roots_for(path)), os.path.abspath(path))
    info = regs = None
    if statements:
        info, regs = (), ()
        if entry or bindings or path in _fed:
            if LAZY_TEXT and not CALL_GRAPH and len(raw) > LAZY_TEXT_BYTES:
                info = regs = _LazyText(decoded())  # read where the names that matter are
            else:
                info, regs = summaries.by_content(content, "chunks", lambda: _text_statements(decoded(), True))
                info = _Chunks(info, content, decoded if text is not None else (lambda: _read_text(path)), specs)
    hit = (bindings, info, entry, regs, specs)
    if len(_summaries) < 50_000:
        _summaries[path] = hit
    return hit


_form: list = []


def _graph_form() -> str:
    """The store's name for :func:`callgraph.statements` (with the code that makes
    them: the content key only covers this file)."""
    if not _form:
        import hashlib

        from fakegrad_lint.analysis import callgraph

        try:
            with open(callgraph.__file__, "rb") as fh:
                _form.append("callgraph-" + hashlib.sha256(fh.read()).hexdigest()[:16])
        except OSError:
            _form.append("callgraph")
    return _form[0]


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


class _Chunks(tuple):
    """A module's top-level statements as the text sees them, ``(names bound, words)``
    each (every ``name =`` inside counts, every word: a superset), and, for the
    statements whose words can matter, what their code binds and reads
    (:meth:`code`: :func:`callgraph.statements` of that statement alone, parsed on
    first use and kept by content; a statement that does not parse alone, such as
    an ``else:`` at column 0, keeps its text-level summary)."""

    def __new__(cls, info, content, text, specs):
        self = super().__new__(cls, ((b, w) for b, w, _a, _z in info))
        self.spans = [(a, z) for _b, _w, a, z in info]
        self.content, self.text, self.specs = content, text, specs
        self.refined = {}
        self.whole = None
        # a module up to WHOLE_PARSE_CHARS is parsed whole on first use, and then every
        # statement's code is read (a statement of its AST can span several of the
        # text's, which cut at every line that starts at column 0, in strings too)
        self.whole_mode = max((z for _a, z in self.spans), default=0) <= WHOLE_PARSE_CHARS
        return self

    def code(self, i) -> tuple:
        hit = self.refined.get(i)
        if hit is None:
            a, z = self.spans[i]
            if a < 0:
                hit = (self[i],)
            elif len(self._text()) <= WHOLE_PARSE_CHARS:
                # one parse of the module for all its statements (each goes to the
                # statement of the text that holds its first line)
                if self.whole is None:
                    self.whole = _whole_module(self)
                hit = self.whole.get(i) if self.whole is not False else None
                hit = (self[i],) if hit is None and self.whole is False else (hit or ())
            else:
                # a large module (a generated FX dump): the statements whose words can
                # matter, one by one
                from fakegrad_lint.analysis import summaries

                key = f"{self.content}-{i}"
                got = summaries.by_content(key, _graph_form(), lambda: _code_statements(self._text()[a:z], self.specs))
                hit = tuple((b, w) for b, w, _line in got) if got else (self[i],)
            self.refined[i] = hit
        return hit

    def _text(self):
        if callable(self.text):
            self.text = self.text()
        return self.text


# Refine the text-level statements of a module by its code (:mod:`callgraph`). Off: its
# parse of every module that imports a hot name costs more than the units it saves on
# the trees measured (vllm 3.7 -> 26 s, sglang 3.3 -> 15 s, lightning-thunder's
# fake-mode files 7.0 -> 9.9 s CPU; torchtitan's 6.2 -> 4.2 s), see bench/README.md.
CALL_GRAPH = False
# After the prefilter's gate gives up on a large tree, compute again the hot names of
# the modules it had not reached (off: a file of such a tree then sees fewer hot names
# than linted alone, torchtitan's test_passes.py 6 of 30; on, vllm's tree costs
# 3.4 -> 11 s), see bench/README.md.
GATE_RECOMPUTE = False
WHOLE_PARSE_CHARS = 400_000  # a larger module is parsed statement by statement, those that can matter


def _whole_module(chunks):
    """chunk index -> its statements' ``(names bound, words)``, from one parse of the
    module (:func:`callgraph.statements`), or False when it does not parse."""
    import bisect

    from fakegrad_lint.analysis import summaries

    text = chunks._text()
    got = summaries.by_content(chunks.content, _graph_form(), lambda: _code_statements(text, chunks.specs))
    if not got and text.strip():
        return False
    line_starts = [0]
    i = text.find("\n")
    while i >= 0:
        line_starts.append(i + 1)
        i = text.find("\n", i + 1)
    starts = [a if a >= 0 else -1 for a, _z in chunks.spans]
    order = sorted(k for k, a in enumerate(starts) if a >= 0)
    keys = [starts[k] for k in order]
    out: dict = {}
    for b, w, line in got:
        at = line_starts[line - 1] if 0 < line <= len(line_starts) else 0
        j = bisect.bisect_right(keys, at) - 1
        if j >= 0:
            out.setdefault(order[j], []).append((b, w))
    return {k: tuple(v) for k, v in out.items()}


def _code_statements(chunk: str, specs) -> tuple:
    """``(names bound, words)`` of the statements of one top-level chunk, from its AST
    (:mod:`callgraph`), or () when it does not parse alone."""
    from fakegrad_lint.analysis import callgraph

    imported = {spec[2] for spec in specs if spec[0] == "import"}
    imported.update(local for spec in specs if spec[0] == "from" for _n, local in spec[3])
    got = callgraph.statements(chunk, frozenset(imported))
    return got[0] if got is not None and got[0] else ()


def _text_imports(text: str) -> tuple:
    from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

    return _import_specs(text), any(w in text for w in ENTRY_WORDS)


def _text_statements(text: str, spans: bool = False) -> tuple:
    """(statements: (names bound, words used), registrations: (name, names bound,
    words)) of a module's top level, from its text; with ``spans``, each statement
    also has its start and end in the text ((-1, -1) for an import)."""
    from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

    info = []
    regs = []
    for a, b in _top_chunks(text):
        item, reg = _statement_summary(text, a, b, spans, ENTRY_WORDS)
        if item is not None:
            info.append(item)
        if reg is not None:
            regs.append(reg)
    return tuple(info), tuple(regs)


def _top_chunks(text: str) -> list:
    """[start, end] of each top-level statement of the text (a line that starts at
    column 0; decorators join the def that follows)."""
    starts = [m.start() for m in _TOP_RE.finditer(text)]
    chunks: list = []  # [start, end]
    joined = False
    for i, a in enumerate(starts):
        b = starts[i + 1] if i + 1 < len(starts) else len(text)
        if joined:
            chunks[-1][1] = b
        else:
            chunks.append([a, b])
        joined = text.startswith("@", a)
    return chunks


def _statement_summary(text: str, a: int, b: int, spans: bool, entry_words) -> tuple:
    """(statement summary or None, registration or None) of the top-level statement
    ``text[a:b]`` (:func:`_text_statements`). Every name and word of both is a
    substring of the statement, except an entry import's words (the entry words,
    which it holds): what :class:`_LazyText` relies on."""
    chunk = text[a:b]
    if chunk.startswith(("import ", "from ")):
        if any(w in chunk for w in entry_words):
            # `from torch._subclasses import FakeTensorMode as FTM`: FTM is a way in
            words = _WORD.findall(chunk.split(" import", 1)[-1])
            bound = frozenset(w for w in words if w != "as")
            return ((bound, frozenset(entry_words), -1, -1) if spans else (bound, frozenset(entry_words))), None
        return None, None  # the project import bindings say what the others bind
    bound = set()
    for m in _BIND_RE.finditer(chunk):
        if m.group(1):
            bound.add(m.group(1))
        elif m.group(2):
            bound.update(x.strip() for x in m.group(2).split(",") if x.strip().isidentifier())
    words = None
    item = reg = None
    if bound or (spans and chunk.startswith(_COMPOUND)):
        # (with spans: a compound statement that binds nothing by its text too: its
        # code may, `for x in` / `with m as x`)
        words = frozenset(map(sys.intern, _WORD.findall(chunk)))
        item = (frozenset(bound), words, a, b) if spans else (frozenset(bound), words)
    m = _REG_RE.match(chunk)
    if m is not None and (m.group(1) or not bound):
        if words is None:
            words = frozenset(_WORD.findall(chunk))
        reg = (m.group(1) or m.group(2), frozenset(bound), words)
    return item, reg


# A module larger than this (bytes, as WHOLE_PARSE_CHARS) gets a lazy text summary (:class:`_LazyText`): only
# the statements that hold a name that can matter are summarized (autoparallel's
# generated FX dumps, 0.4-1.7 MB each, name `tracing_mode` in a few statements)
LAZY_TEXT = True
LAZY_TEXT_BYTES = 400_000


class _LazyText:
    """The text summary of a large module (what :func:`_text_statements` gives with
    spans), made statement by statement when asked: :meth:`candidates` finds, by
    substring search, the statements whose text holds one of some names (every name
    a summary holds is a substring of its statement, so a statement outside them has
    none of those names), and only those are summarized. :func:`hot_names` visits
    the candidates in the order and passes of the eager form, so the fixed point is
    the same (``tests/test_relevance_prefilter_scans.py`` compares both on real
    trees)."""

    def __init__(self, text: str):
        from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

        self.text = text
        self.spans = _top_chunks(text)
        self.starts = [a for a, _b in self.spans]
        self._entry_words = ENTRY_WORDS
        self._items: dict = {}  # statement index -> (summary or None, registration or None)
        self._where: dict = {}  # name -> indices of the statements whose text holds it
        self._top = None

    def item(self, k: int):
        hit = self._items.get(k)
        if hit is None:
            a, b = self.spans[k]
            got, reg = _statement_summary(self.text, a, b, True, self._entry_words)
            hit = self._items[k] = (None if got is None else (got[0], got[1]), reg)
        return hit

    def candidates(self, names) -> set:
        import bisect

        out: set = set()
        find, starts, spans = self.text.find, self.starts, self.spans
        for w in names:
            hit = self._where.get(w)
            if hit is None:
                hit = set()
                i = find(w) if w else -1
                while i >= 0:
                    k = bisect.bisect_right(starts, i) - 1
                    if k >= 0 and i < spans[k][1]:
                        hit.add(k)
                        i = find(w, max(i + 1, spans[k][1] - len(w) + 1))
                    else:
                        i = find(w, i + 1)
                hit = self._where[w] = frozenset(hit)
            out |= hit
        return out

    def top(self) -> set:
        """Every name the module's statements bind (all of them summarized)."""
        if self._top is None:
            self._top = set()
            for k in range(len(self.spans)):
                got = self.item(k)[0]
                if got is not None:
                    self._top |= got[0]
        return self._top

    def regs_with(self, names) -> list:
        """The registrations among the statements that hold one of ``names``, in order."""
        return [r for r in (self.item(k)[1] for k in sorted(self.candidates(names))) if r is not None]


class _LazyTop:
    """:meth:`_LazyText.top` made only when read (``w & top``, ``name in top``)."""

    def __init__(self, info):
        self.info = info

    def __contains__(self, name):
        return name in self.info.top()

    def __rand__(self, other):
        return other & self.info.top()


def _hot_names_lazy(info, hot, fed, entries, dynamic, text_may, code_hot) -> frozenset:
    """The fixed point of :func:`hot_names` over a :class:`_LazyText`: the same
    passes, each visiting in order only the statements that hold a name its test
    can meet (a name that turns hot during a pass adds the statements after the
    current one that hold it, as the eager form would reach them later in that pass)."""
    import heapq

    top = _LazyTop(info)
    if fed:
        for i in sorted(info.candidates(fed)):
            got = info.item(i)[0]
            if got is not None and not got[0].isdisjoint(fed):
                hot |= got[0] | (got[1] & top)

    def visit(first_names, step):
        queue = sorted(info.candidates(first_names))
        queued = set(queue)
        grew = False
        while queue:
            i = heapq.heappop(queue)
            before = len(hot)
            step(i)
            if len(hot) != before:
                grew = True
                for k in info.candidates(hot - seen_hot[0]):
                    if k > i and k not in queued:
                        heapq.heappush(queue, k)
                        queued.add(k)
            seen_hot[0] = set(hot)
        return grew

    seen_hot = [set()]
    done: set = set()

    def main_step(i):
        if i in done:
            return
        got = info.item(i)[0]
        if got is None:
            return
        bound, words = got
        if not text_may(words):
            return
        if bound <= hot or code_hot(words):
            hot.update(bound)
            done.add(i)

    def reg_step(i):
        reg = info.item(i)[1]
        if reg is None:
            return
        name, bound, words = reg
        head = name.partition(".")[0]
        if head in hot or not (not bound.isdisjoint(hot) or (not bound and not words.isdisjoint(hot))):
            return
        if head not in top:
            return
        for j in sorted(info.candidates((head,))):
            got = info.item(j)[0]
            if got is not None and head in got[0]:
                b2, w2 = got
                if not (b2 | (w2 & top)) <= hot:
                    hot.update(b2 | (w2 & top))

    changed = True
    while changed:
        seen_hot[0] = set(hot)
        changed = visit(entries | hot | (_DYNAMIC_WORDS if dynamic else set()), main_step)
        seen_hot[0] = set(hot)
        changed = visit(set(hot), reg_step) or changed
    return frozenset(w for w in hot if "." not in w)


_COMPOUND = ("for ", "async ", "with ", "if ", "elif ", "else", "try", "except", "finally", "while ")


# a registration: `@register("fake")` / `@registry.register` before a def or class,
# or a top-level `register("fake", FakeBackend)`, `REGISTRY["fake"] = FakeBackend`,
# `REGISTRY.update(...)`
_REG_RE = re.compile(r"@[ \t]*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)|([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)[ \t]*[(\[.]")


def _through_reexports(fed) -> set:
    """``fed`` (module, name) pairs, and the modules each name comes from when
    a module only re-exports it (``core/__init__.py``: ``from .registry import
    register_probe``), to a depth of 8."""
    out = set(fed)
    todo = list(fed)
    for _ in range(8):
        more = []
        for target, name in todo:
            for local, src, orig, _sub in _summary(target, None, False)[0]:
                if local == name and src is not None and orig not in (None, "*") and (src, orig) not in out:
                    out.add((src, orig))
                    more.append((src, orig))
        if not more:
            break
        todo = more
    return out


def _feeds(path: str, hot) -> set:
    """(module file, name) for each name this module imports from another project
    module and registers a hot value with (a decorator on a hot def or class, a
    top-level call or store that names a hot name)."""
    bindings, _info, _entry, regs, _specs = _summary(path, None)
    if isinstance(regs, _LazyText):
        regs = regs.regs_with(hot)
    used = {name for name, bound, words in regs if not bound.isdisjoint(hot) or (not bound and not words.isdisjoint(hot))}
    if not used:
        return set()
    # a name used as `local` or `local.attr` (the registry's module imported whole:
    # `@registry.register("fake")`, `registry.REG["fake"] = cls` feed `register`, `REG`)
    heads: dict = {}
    for u in used:
        head, _, attr = u.partition(".")
        heads.setdefault(head, set()).add(attr)
    out = set()
    for local, target, name, _sub in bindings:
        if target is None or local not in heads:
            continue
        if name not in (None, "*"):
            out.add((target, name))
        elif name is None:
            out.update((target, attr) for attr in heads[local] if attr)
    return out


def hot_names(path: str, text: str | None, depth: int = 0) -> frozenset:
    """Names bound at the top level of a module that can reach a fake region: hot
    names it imports from other project modules (a module imported whole counts
    when it holds one), and the names bound by a top-level statement (a def, a
    class, an assignment, the targets of a compound statement's header) whose code
    (:mod:`callgraph`: not its annotations, docstrings or type tests) names a fake
    mode, another hot name, a hot attribute of an imported module (``clang.full``
    when ``full`` is hot there) or reads names computed at run time. A superset."""
    from fakegrad_lint.analysis.callgraph import DYNAMIC
    from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

    bindings, _info, entry, _regs, specs = _summary(path, text, False)
    imported = _hot_imports("", path, None, "", depth, bindings)
    fed = _fed.get(path)
    if not imported and not entry and not fed:
        return frozenset()
    _b, info, _e, regs, _s = _summary(path, text)
    entries = set(ENTRY_WORDS)
    hot = set(imported)
    lazy = isinstance(info, _LazyText)
    top = set() if lazy else set().union(*(bound for bound, _w in info)) if info else set()
    refine = CALL_GRAPH and isinstance(info, _Chunks)
    code = info.code if refine else (lambda i: (info[i],))
    whole = refine and info.whole_mode
    if whole:
        # what the module's code binds at its top level (not the text's every `name =`)
        top = set().union(*(b2 for i in range(len(info)) for b2, _w in code(i)))
    resolve = _ChainResolver(path, specs, depth)
    chain_memo: dict = {}
    dynamic = bool(imported or entry or fed)  # `globals()[name]`, `import_module(name)`: may be any of them

    def code_hot(words) -> bool:
        """Do these words of code (:mod:`callgraph`) reach a region? A fake mode,
        a hot name, a hot chain `m.f`, a read of names computed at run time."""
        if not words.isdisjoint(entries) or not words.isdisjoint(hot) or (dynamic and DYNAMIC in words):
            return True
        for w in words:
            if "." in w:
                hit = chain_memo.get(w)
                if hit is None:
                    hit = chain_memo[w] = resolve(w)
                head = w.partition(".")[0]
                # a chain on a name this module also binds itself (`m = None` in an
                # `except ImportError`) is hot with that name
                if hit or (head in top and head in hot):
                    return True
        return False

    def text_may(words) -> bool:
        """Can the statement with these words of text reach a region (a superset)?"""
        return not words.isdisjoint(entries) or not words.isdisjoint(hot) or (dynamic and not words.isdisjoint(_DYNAMIC_WORDS))

    if lazy:
        return _hot_names_lazy(info, hot, fed, entries, dynamic, text_may, code_hot)
    if fed:
        # a name hot code of another module uses: it and the top-level names its
        # code touches (`BACKENDS[name] = cls` in `register`) hold hot values
        for i, (bound, _words) in enumerate(info):
            if not bound.isdisjoint(fed):
                for b2, w2 in code(i):
                    if not b2.isdisjoint(fed):
                        hot |= b2 | (w2 & top)
    done: set = set()
    changed = True
    while changed:
        changed = False
        for i, (bound, words) in enumerate(info):
            if i in done or (not whole and not text_may(words)):
                continue
            all_hot = True
            for b2, w2 in code(i):
                if b2 <= hot:
                    continue
                if code_hot(w2):
                    hot |= b2
                    changed = True
                else:
                    all_hot = False
            if all_hot:
                done.add(i)
        # a registration into this module's own registry (`@register_mode("fake")` on
        # a hot def, `register_mode` defined here): the registering function and the
        # top-level names its code touches (`MODES[name] = factory`) hold hot values
        for name, bound, words in regs:
            head = name.partition(".")[0]
            if head in hot or not (not bound.isdisjoint(hot) or (not bound and not words.isdisjoint(hot))):
                continue
            if head not in top:
                continue
            for j, (b, _w) in enumerate(info):
                if head in b:
                    for b2, w2 in code(j):
                        if head in b2 and not (b2 | (w2 & top)) <= hot:
                            hot |= b2 | (w2 & top)
                            changed = True
    return frozenset(w for w in hot if "." not in w)


_DYNAMIC_WORDS = frozenset({"globals", "vars", "eval", "exec", "__import__", "import_module"})


class _ChainResolver:
    """Is ``m.a.b`` hot, ``m`` bound by an import of the module at ``path``? The
    longest prefix that is a project module, then the next name among its hot
    names; a chain that ends at a module is hot when the module holds a hot name.
    ``m`` bound by an import of a name (not a module) is hot with that name."""

    def __init__(self, path, specs, depth):
        self.depth = depth
        self.own, self.is_pkg = module_name_of(path)
        self.project = Project(roots_for(path))
        self.me = os.path.abspath(path)
        self.heads: dict = {}  # local -> [(dotted module or None, (module file, name) or None)]
        for spec in specs:
            if spec[0] == "import":
                dotted, local = spec[1], spec[2]
                self.heads.setdefault(local, []).append(
                    (local if local == dotted.split(".")[0] else dotted, None))
                continue
            base = absolute_name(self.own, self.is_pkg, spec[2] or None, spec[1])
            if base is None:
                continue
            for name, local in spec[3]:
                if name == "*":
                    continue
                self.heads.setdefault(local, []).append((f"{base}.{name}", (base, name)))

    def __call__(self, chain: str) -> bool:
        head, *parts = chain.split(".")
        for dotted, named in self.heads.get(head, ()):
            if named is not None and self.project.find(dotted) is None:
                target = self.project.find(named[0])
                if target is not None and os.path.abspath(target) != self.me \
                        and named[1] in hot_names_of(target, self.depth + 1):
                    return True  # `from m import f`: `f.x` is hot with `f`
            if self._module_chain(dotted, parts):
                return True
        return False

    def _module_chain(self, dotted, parts) -> bool:
        find = self.project.find
        # the longest prefix of the chain that is a project module (a namespace
        # package has no file of its own: `import ns.mod`, `ns.mod.f`)
        target, i = None, 0
        for k in range(len(parts), -1, -1):
            cur = ".".join([dotted, *parts[:k]])
            target = find(cur)
            if target is not None:
                i = k
                break
        if target is None:
            return False  # not a project module (torch, the standard library)
        if target is None or os.path.abspath(target) == self.me:
            return False
        names = hot_names_of(target, self.depth + 1)
        return bool(names) if i == len(parts) else parts[i] in names
