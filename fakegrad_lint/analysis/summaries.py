"""Per-module facts, computed once per module content and shared by every analysis
of the process.

A project module imported by many linted files is parsed once
(:func:`fakegrad_lint.analysis.roots.load`, keyed by path, modification time and
size; function bodies parsed on first use), and what the analysis reads of its
text is kept with it here (:func:`summarize`): whether a name occurs again in the
module (its import can then be bound lazily), the text of a def, the words it
names and the names it calls, whether it can make a real requires-grad value.
Facts of single AST nodes (is a def a generator, does a loop switch requires_grad)
are kept with the node in :mod:`.code_text`.

What running the module's body *binds* is not shared between linted files: it
depends on the importing analysis (its call depth and step budget when the import
runs, the names bound lazily to that analysis, the project modules it has already
loaded), and the values are mutable (a module frozen by one file's code would stay
frozen for the next), so a shared namespace would change results. The body runs
once per linted file that imports it, and only up to the names that file uses.
"""

from __future__ import annotations

from fakegrad_lint.analysis.code_text import _WORD_RE, _called_names, _makes_real_values, _word_count


class ModuleSummary:
    """The text facts of one module (its source and lines), each computed on first use."""

    __slots__ = ("source", "lines", "_again", "_nodes", "_methods", "tree")

    def __init__(self, source: str, lines: list, tree=None):
        self.source, self.lines, self.tree = source, lines, tree
        self._again: dict = {}  # name -> does it occur twice or more (as a whole word)
        self._nodes: dict = {}  # def node -> [text, words, called names, makes real values]
        self._methods = None  # method name -> def nodes of the module's top-level classes

    def methods_named(self, name: str) -> list:
        """The defs called ``name`` in the bodies of the module's top-level classes."""
        if self._methods is None:
            import ast

            index: dict = {}
            for stmt in getattr(self.tree, "body", ()):
                if isinstance(stmt, ast.ClassDef):
                    for item in stmt.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            index.setdefault(item.name, []).append(item)
            self._methods = index
        return self._methods.get(name, ())

    def used_again(self, name: str) -> bool:
        """Does ``name`` occur at least twice in the module, as a whole word?"""
        hit = self._again.get(name)
        if hit is None:
            hit = _word_count(self.source, name, 2) >= 2
            if hit:
                # comments are not code: `from . import modes  # registers the modes`
                # names `modes` once (its import runs now, for its side effects)
                code = 0
                for line in self._rows_holding(name):
                    h = line.find("#")
                    if h >= 0 and not any(q in line[:h] for q in ("'", '"')):
                        line = line[:h]
                    code += _word_count(line, name, 2)
                    if code >= 2:
                        break
                hit = code >= 2
            self._again[name] = hit
        return hit

    def _rows_holding(self, name: str):
        """The rows of the module (``self.lines``, in order, each once) that hold
        ``name`` as a substring: the only rows where :meth:`used_again` can count it.
        Found from the occurrences in the source (a module of 6,000 rows was
        scanned row by row for each of ~1,000 names: 7 % of thunder's analysis)."""
        src, find = self.source, self.source.find
        if "\r" in src or not name or "\n" in name:  # rows end at \r\n, \r or \n (split_rows): row by row
            yield from (line for line in self.lines if name in line)
            return
        i = find(name)
        while i >= 0:
            start = src.rfind("\n", 0, i) + 1
            end = find("\n", i)
            if end < 0:
                end = len(src)
            yield src[start:end]
            i = find(name, end)

    def _facts(self, node) -> list:
        facts = self._nodes.get(node)
        if facts is None:
            facts = self._nodes[node] = ["\n".join(self.lines[node.lineno - 1 : node.end_lineno]), None, None, None]
        return facts

    def text(self, node) -> str:
        """The lines of ``node`` (a def or class), joined."""
        return self._facts(node)[0]

    def words(self, node) -> set:
        """The words the text of ``node`` names (``code_text._WORD_RE``)."""
        facts = self._facts(node)
        if facts[1] is None:
            facts[1] = set(_WORD_RE.findall(facts[0]))
        return facts[1]

    def calls(self, node) -> set:
        """The names the text of ``node`` calls (``code_text._called_names``)."""
        facts = self._facts(node)
        if facts[2] is None:
            facts[2] = _called_names(facts[0])
        return facts[2]

    def makes_real_values(self, node) -> bool:
        facts = self._facts(node)
        if facts[3] is None:
            facts[3] = _makes_real_values(facts[0])
        return facts[3]


def summarize(mf) -> ModuleSummary:
    """The summary of a project module (a :class:`~fakegrad_lint.analysis.roots.ModuleFile`),
    made once and kept with it."""
    summary = mf.summary
    if summary is None:
        summary = mf.summary = ModuleSummary(mf.source, mf.pos.lines, mf.tree)
    return summary


# ---------------------------------------------------------------------------
# text summaries of project modules, by content (the prefilter's project side)

import hashlib as _hashlib
import marshal as _marshal
import os as _os

STORE_FORMAT = "fgl-module-summary-1"
_by_content: dict = {}  # key -> summary, for the process
_fingerprint: list = [None]
store_stats = {"memory": 0, "disk": 0, "made": 0}


def _code_fingerprint() -> bytes:
    """What the summaries' shape depends on: the code that makes them and the
    entry words (a new version of either never reads an old entry)."""
    if _fingerprint[0] is None:
        from fakegrad_lint.analysis import project
        from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS

        h = _hashlib.sha256(STORE_FORMAT.encode())
        try:
            with open(project.__file__, "rb") as fh:
                h.update(fh.read())
        except OSError:
            h.update(b"?")
        h.update("\0".join(ENTRY_WORDS).encode())
        _fingerprint[0] = h.digest()
    return _fingerprint[0]


def content_key(raw: bytes) -> str:
    """The key of a module's bytes in the store (with the code that summarises them)."""
    return _hashlib.sha256(_code_fingerprint() + raw).hexdigest()


def by_content(content: str, form: str, make):
    """The summary ``make()`` computes from a module's bytes (``content``: their
    :func:`content_key`), once per content: from this process' memory, else from
    the on-disk store (keyed by the content, the form and the code that makes it),
    else made and stored. Values are what ``marshal`` holds (tuples, frozensets,
    strings, numbers)."""
    key = f"{content}-{form}"
    hit = _by_content.get(key)
    if hit is not None:
        store_stats["memory"] += 1
        return hit
    from fakegrad_lint.analysis.roots import summary_store

    folder = summary_store()
    target = _os.path.join(folder, key[:2], key[2:]) if folder else None
    if target is not None:
        try:
            with open(target, "rb") as fh:
                hit = _marshal.loads(fh.read())
            store_stats["disk"] += 1
        except (OSError, EOFError, ValueError, TypeError):
            hit = None
    if hit is None:
        hit = make()
        store_stats["made"] += 1
        if target is not None:
            _write(target, _marshal.dumps(hit))
    if len(_by_content) < 50_000:
        _by_content[key] = hit
    return hit


def _prepare(cache_dir: str) -> None:
    """A new cache folder is marked as the engine's cache marks it (CACHEDIR.TAG,
    a ``.gitignore`` of ``*``), so the summaries never show up in a checkout."""
    _os.makedirs(cache_dir, exist_ok=True)
    for name, text in (("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# fakegrad-lint cache\n"),
                       (".gitignore", "# created by fakegrad-lint\n*\n")):
        marker = _os.path.join(cache_dir, name)
        if not _os.path.exists(marker):
            with open(marker, "w", encoding="utf-8") as fh:
                fh.write(text)


def _write(target: str, data: bytes) -> None:
    """Atomically, never failing the run (a read-only cache folder keeps it in memory)."""
    import tempfile

    try:
        folder = _os.path.dirname(target)
        if not _os.path.isdir(folder):
            _prepare(_os.path.dirname(_os.path.dirname(folder)))
        _os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with _os.fdopen(fd, "wb") as fh:
                fh.write(data)
            _os.replace(tmp, target)
        except BaseException:
            try:
                _os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass
