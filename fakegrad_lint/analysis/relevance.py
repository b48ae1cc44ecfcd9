"""Which code can reach a fake region, so that cost follows the lines that can
matter: the top-level functions and methods analysed on their own (parameters
unknown) because their text opens a region or names a module-level mode, and the
test ``_may_matter`` that lets a call outside any region skip a body that can
neither open a region nor make a real requires-grad value.
"""

from __future__ import annotations

import ast
import bisect
import re
from itertools import accumulate
from operator import add

from fakegrad_lint.analysis.library_classes import library_kind
from fakegrad_lint.analysis.code_text import (
    _ENTRY_RE,
    _WORD_RE,
    _call_sites,
    _called_names,
    _hot_in_code,
    _makes_real_values,
    _names_a_word,
    _word_starts,
)
from fakegrad_lint.analysis.state import Crashed, State, YieldReached, _BlockExit
from fakegrad_lint.analysis.summaries import summarize
from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS
from fakegrad_lint.analysis.torch_values import _module_classes
from fakegrad_lint.analysis.valueops import _interesting
from fakegrad_lint.analysis.values import (ClassVal, CtxVal, FuncVal, MaybeVal, ModeVal, ModRef, ProjModVal, SeqVal,
    TracedFn)


# Leave out the standalone runs that cannot reach a real requires-grad value (every
# default finding needs one): analysis/sources_gate.py
SOURCE_GATE = True


class RelevanceMixin:
    """Which code is worth running: standalone units, bodies that can matter."""

    def _standalone(self):
        """Analyse, with unknown arguments, the top-level functions and methods that can
        reach a fake region: those whose text opens one or names a module-level mode or
        fake value (or a ``self`` attribute holding one), and their in-file callers."""
        lines = self.pos.lines
        mvars = self.module_scope.vars
        hot = set(self._entry_aliases())
        helpers = set()  # @contextmanager helpers: entered with `with`, they may open a region
        modules = {}  # name -> a project module it is bound to (its attributes decide)
        for name, val in mvars.items():
            if isinstance(val, (ModeVal, CtxVal, TracedFn)) or val.fake_mode() is not None:
                hot.add(name)
            elif isinstance(val, FuncVal) and val.contextmanager:
                helpers.add(name)
            elif self.project is not None and isinstance(val, ProjModVal) and val is not self.main \
                    and val.mf is not None and name not in ENTRY_WORDS:
                modules[name] = val
            elif self.project is not None and self._reaches_region(val):
                hot.add(name)  # a function, class or module of the project that can open a region
        units = []  # (FuncVal, ClassVal or None, text)
        for d in self.tree.body:
            val = mvars.get(getattr(d, "name", None))
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d in self.defs:
                units.append((self.defs[d], None))  # the function itself, before its decorators
            elif isinstance(d, ast.ClassDef) and isinstance(val, ClassVal) and val.node is d:
                units.extend((self.defs[m], val) for m in d.body if m in self.defs and self.defs[m].cls is val)
        if not units:
            return
        # an entry word the file binds to a def of its own (torch's fake_tensor.py defines
        # `class FakeTensorMode`), or a @contextmanager helper of the file: its bare uses
        # run that def; they make a unit relevant only once that def is (or where the
        # unit may bind the word to something else)
        top = set(self.tree.body)
        own = {w: v for w in set(ENTRY_WORDS) | helpers if w not in hot
               for v in [mvars.get(w)] if isinstance(v, (ClassVal, FuncVal)) and v.node in top}
        hot |= (set(ENTRY_WORDS) | helpers) - own.keys()

        # one scan of the file, not one per unit: where the hot words and the calls are
        joined = "\n".join(lines)
        # a module bound by an import (`import pkg.clang as clang`): `clang.full` is hot
        # when `full` is a hot name of that module (analysis/callgraph), `clang` alone
        # (passed on, `getattr(clang, name)`) when the module holds any hot name
        chains = _module_chains(self, modules, joined) if modules else []
        hot_re = _words_re(hot, chains)
        # offset of each line in `joined`: line i starts after i lines and i newlines
        starts = list(map(add, accumulate(map(len, lines), initial=0), range(len(lines) + 1)))
        # a unit's text (its lines, from its first decorator), made when first needed
        texts = _Texts(lambda fv: joined.__getitem__(slice(*span(fv))))
        hot_lines = sorted({bisect.bisect_right(starts, i) for w in hot | {c[0] for c in chains}
                            for i in _word_starts(joined, w)})

        def span(fv):
            """The offsets in `joined` of the unit's text (from its first decorator)."""
            n = fv.node
            first = min([n.lineno] + [dec.lineno for dec in n.decorator_list])
            return starts[first - 1], starts[n.end_lineno] - 1

        def names_hot(fv):
            n = fv.node
            first = min([n.lineno] + [dec.lineno for dec in n.decorator_list])
            i = bisect.bisect_left(hot_lines, first)
            return i < len(hot_lines) and hot_lines[i] <= n.end_lineno

        relevant = {fv for fv, _ in units if names_hot(fv) and _hot_in_code(fv.node, texts[fv], hot_re)}
        # the lines where each own word may be bound again (one scan of the file per word)
        rebind_lines = {w: _rebind_lines(joined, starts, w) for w in own if w in joined}

        # where each own word stands in `joined` (as a substring, as `w in text` sees it)
        own_at = {w: _occurrences(joined, w) for w in own}

        def may_rebind(fv, w):
            n = fv.node
            if not _occurs_in(own_at[w], *span(fv), len(w)):
                return False  # `w not in text`, without making the text
            first = min([n.lineno] + [dec.lineno for dec in n.decorator_list])
            return _unit_rebinds(texts[fv], first, n.end_lineno, rebind_lines.get(w), w)

        for fv, _ in units:
            rebound = [w for w in own if may_rebind(fv, w)]
            if fv not in relevant and rebound:
                rx = _words_re(hot | set(rebound), chains)
                if rx.search(texts[fv]) and _hot_in_code(fv.node, texts[fv], rx):
                    relevant.add(fv)
        revived: set = set()

        def revive():
            """The entry words whose own def has become relevant: their units are too."""
            new = {w for w, v in own.items() if w not in revived
                   and any(c is v or fv.node is v.node for fv, c in units if fv in relevant)}
            revived.update(new)
            if new:
                rx = _words_re(new)
                relevant.update(fv for fv, _ in units if fv not in relevant and rx.search(texts[fv])
                                and _hot_in_code(fv.node, texts[fv], rx))
            return bool(new)

        while own and revive():
            pass
        # self attributes that hold a mode, in classes that have a relevant method
        for cls in {c for fv, c in units if c is not None and fv in relevant}:
            inst = self._instance_for(cls)
            attrs = [a for a, v in inst.attrs.items() if isinstance(v, (ModeVal, CtxVal)) or v.fake_mode() is not None]
            if library_kind(cls) == "testcase":
                # a test case's fixtures (`setUp`...) set what its tests read: an attribute a
                # relevant fixture assigns from a hot word (`self.mode = FakeTensorMode(...)`)
                attrs += [a for fv, c in units if c is cls and fv in relevant and fv.node.name in _FIXTURE_METHODS
                          for a in _hot_self_assignments(texts[fv], hot_re) if a not in attrs]
            if attrs:
                attr_re = re.compile(r"\bself\.(?:%s)\b" % "|".join(map(re.escape, attrs)))
                relevant |= {fv for fv, c in units if c is cls and attr_re.search(texts[fv])}
        # the names each unit calls, `f(...)` and `self.f(...)` (code_text._called_names
        # of its text; a superset is fine: it only decides what is worth analysing)
        calls = {}
        if relevant:
            sites = _call_sites(joined)
            words_at = [a for a, _p, _n in sites]
            for fv, _ in units:
                a, b = span(fv)
                calls[fv] = _calls_between(sites, words_at, a, b)
        changed = True
        while changed and relevant:
            changed = False
            names = {fv.node.name for fv in relevant}
            for fv, _ in units:
                if fv not in relevant and calls[fv] & names:
                    relevant.add(fv)
                    changed = True
            if own and revive():
                changed = True
        # a TestCase class of the file runs as a test runner (unittest discovery, pytest)
        # runs it: setUpClass, then per test setUp / the test / tearDown, so that what the
        # fixtures set on the class or the instance is known in the test (library_classes)
        cases = []
        for fv, cls in units:
            if fv in relevant and cls is not None and library_kind(cls) == "testcase" \
                    and fv.node.name.startswith("test") and not any(c is cls for c in cases):
                cases.append(cls)
        runs = [(None, cls) for cls in cases]
        runs += [(fv, cls) for fv, cls in units if fv in relevant and not any(c is cls for c in cases)]
        if SOURCE_GATE and runs and not self._can_reach_source(runs):
            # no run can make a real requires-grad value (analysis/sources_gate.py), which
            # every default finding needs. All of them or none: a run that cannot may
            # still leave state (a global, the shared instance) to one that can, and one
            # that can may leave a real value to one whose own code makes none
            runs = []
        for fv, cls in runs:
            if fv is None:
                try:
                    self.run_tests(None, [cls], State(self.module_scope))
                except (Crashed, YieldReached, _BlockExit):
                    pass
            else:
                self._run_standalone(fv, self._instance_for(cls) if cls is not None else None)

    def _can_reach_source(self, runs) -> bool:
        """Can any of these runs (a standalone unit and the instance it runs on, or a
        TestCase class run as a test runner runs it) reach a real requires-grad value?"""
        from fakegrad_lint.analysis.sources_gate import SourceGate

        gate = SourceGate(self)
        for fv, cls in runs:
            if fv is None:
                # a test runner runs every method it finds (setUpClass, setUp, test_*...)
                ms = [m for c in (cls.mro or (cls,)) for m in (*c.own.values(), *c.methods.values())]
                if gate.add(cls) or any(gate.add(m) for m in ms):
                    return True
                continue
            if gate.add(fv):
                return True
            if fv is not None and cls is not None and not self._is_static(fv) and gate.add(self._instance_for(cls)):
                return True
        return False

    def _reaches_region(self, val):
        """Can this value of the project open a region? A def or class bound at the top
        level of another module by its own name: when that name is a hot name of its
        module (the call graph: :func:`project.hot_names_of`); anything else: by
        :meth:`_opens_region` (its text)."""
        if isinstance(val, (FuncVal, ClassVal)):
            ctx = self._scope_ctx.get(getattr(val.scope, "module", None))
            node = val.node
            if ctx is not None and ctx is not self.main and ctx.mf is not None and ctx.scope is not None \
                    and getattr(node, "name", None) is not None and ctx.scope.vars.get(node.name) is val \
                    and node in ctx.mf.tree.body:
                from fakegrad_lint.analysis.project import hot_names_of

                return node.name in hot_names_of(ctx.mf.path, 0)
        return self._opens_region(val)

    def _instance_for(self, cls):
        inst = self.instances.get(cls)
        if inst is None:
            st = State(self.module_scope)
            inst = self.instantiate(cls, [], {}, st, None)
            self.instances[cls] = inst
        return inst

    def _run_standalone(self, fv, self_val):
        st = State(self.module_scope)
        args = []
        if self_val is not None and not self._is_static(fv):
            args = [self_val]
        try:
            self.call_function(fv, args, {}, st)
        except (Crashed, YieldReached, _BlockExit):
            pass

    @staticmethod
    def _is_static(fv):
        if fv.kind in ("static", "class"):
            return True
        for dec in fv.node.decorator_list:
            if isinstance(dec, ast.Name) and dec.id in ("staticmethod", "classmethod"):
                return True
        return False

    def _init_matters(self, fv):
        """``__init__`` of a class whose code can open a region or make a real
        requires-grad value: the attributes it sets decide what its methods do."""
        cls = fv.cls
        if cls is None or getattr(fv.node, "name", None) != "__init__" or not isinstance(cls, ClassVal):
            return False
        return self._may_matter(cls.node, self._lines_of(fv))

    def _entry_aliases(self, scope=None):
        """Local names bound by imports to a way into a fake region (``FTM`` in
        ``from torch._subclasses.fake_tensor import FakeTensorMode as FTM``, ``ft``
        in ``import torch._subclasses.fake_tensor as ft``)."""
        out = set()
        for name, val in (scope or self.module_scope).vars.items():
            if isinstance(val, ModRef) and (
                _ENTRY_RE.search(val.qualname) or val.qualname in ("torch._subclasses", "torch._subclasses.fake_tensor")
            ):
                out.add(name)
        return out

    def _entry_words(self, ctx=None):
        """The words that are a way into a fake region in the code of ``ctx`` (the
        running module by default): the entry words and the module's aliases of them."""
        ctx = ctx or self.ctx
        words = self._ctx_entry_words.get(ctx)
        if words is None:
            scope = ctx.scope if ctx is not self.main else None
            words = self._ctx_entry_words[ctx] = tuple(sorted(set(ENTRY_WORDS) | self._entry_aliases(scope)
                                                              | self._module_hot_names(ctx)))
        return words

    def _names_entry(self, text, ctx=None):
        """Does ``text`` name a way into a fake region (as a whole word)?"""
        return _names_a_word(text, self._entry_words(ctx))

    def _may_matter(self, node, lines=None, ctx=None):
        """Can running this function's body outside a region matter? Only if its
        text can open a region or make a real requires-grad value."""
        flag = self._matter.get(node)
        if flag is None:
            ctx = ctx or self.ctx
            lines = lines or self.pos.lines
            # the text facts of a project module's def are computed once per process
            summary = summarize(ctx.mf) if ctx is not self.main and ctx.mf is not None and lines is ctx.mf.pos.lines \
                else None
            text = summary.text(node) if summary is not None else "\n".join(lines[node.lineno - 1 : node.end_lineno])
            flag = bool(self._names_entry(text, ctx)
                        or (summary.makes_real_values(node) if summary is not None else _makes_real_values(text)))
            if not flag:
                # names a module-level value of interest (a registry of module classes,
                # or of functions that matter)
                mvars = ctx.scope.vars
                self._matter[node] = False  # guard recursion
                words = summary.words(node) if summary is not None else set(_WORD_RE.findall(text))
                named = [self._force(mvars[w]) for w in words if w in mvars]
                flag = any(_interesting(v) or _module_classes(v) or self._registry_matters(v, node) for v in named)
            if not flag:
                # calls a function of its module that matters (by name)
                for name in (summary.calls(node) if summary is not None else _called_names(text)):
                    target = self._force(ctx.scope.vars.get(name))
                    # a function or class by that name, or a method of a class of the file
                    cands = []
                    if isinstance(target, (FuncVal, ClassVal)):
                        cands.append((target.node, self._lines_of(target),
                                      self._scope_ctx.get(getattr(target.scope, "module", None), ctx)))
                    if ctx is self.main:
                        cands += [(t, None, ctx) for t in self.method_index.get(name, [])]
                    elif ctx.mf is not None:
                        cands += self._module_methods_named(ctx, name)  # (`self.build(...)` in a project module)
                    for t, tlines, tctx in cands:
                        if t is not node and self._matter.get(t, None) is not False:
                            self._matter[node] = False  # guard recursion
                            if self._may_matter(t, tlines, tctx):
                                flag = True
                                break
                    if flag:
                        break
            self._matter[node] = flag
        return flag

    def _registry_matters(self, v, node, depth=0):
        """A container of functions, one of which matters (a registry of model factories)."""
        if isinstance(v, SeqVal) and depth < 2:
            return any(self._registry_matters(x, node, depth + 1) for x in v.items)
        if isinstance(v, MaybeVal) and depth < 2:
            return any(self._registry_matters(x, node, depth + 1) for x in v.options)
        if depth and isinstance(v, FuncVal) and v.node is not node and self._matter.get(v.node, None) is not False:
            return self._may_matter(v.node, self._lines_of(v),
                                    self._scope_ctx.get(getattr(v.scope, "module", None), self.ctx))
        if depth and isinstance(v, ClassVal) and not v.is_module:
            # a registry of classes (backends, plugins): one whose methods matter
            return any(self._registry_matters(m, node, depth) for m in v.methods.values() if isinstance(m, FuncVal))
        return False


class _Texts(dict):
    """unit -> its text, made when first asked for (most units never need theirs)."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, fv):
        text = self[fv] = self.make(fv)
        return text


def _occurrences(text, word):
    """Every position where ``word`` starts in ``text`` (overlapping ones too)."""
    out = []
    i = text.find(word)
    while i >= 0:
        out.append(i)
        i = text.find(word, i + 1)
    return out


def _occurs_in(at, a, b, size):
    """``word in text[a:b]``, from ``at`` (:func:`_occurrences` of the word in ``text``)
    and the word's ``size``."""
    i = bisect.bisect_left(at, a)
    return i < len(at) and at[i] + size <= b


def _calls_between(sites, words_at, a, b):
    """The names of the call sites whose name starts at or after ``a`` and whose
    parenthesis is before ``b`` (``sites`` in order of their names)."""
    out = set()
    for k in range(bisect.bisect_left(words_at, a), len(sites)):
        start, paren, name = sites[k]
        if start >= b:
            break
        if paren < b:
            out.add(name)
    return out


def _words_re(words, chains=()):
    """A regex for any of ``words`` as a whole word, and for the module chains
    ``(name, attributes, bare)`` of :func:`_module_chains`: ``name.attr`` for
    each of the attributes, ``name`` not followed by a dot when ``bare``."""
    alts = [re.escape(w) for w in sorted(words)]
    for name, attrs, bare in chains:
        n = re.escape(name)
        if attrs:
            alts.append(r"%s[ \t]*\.[ \t]*(?:%s)" % (n, "|".join(map(re.escape, sorted(attrs)))))
        if bare:
            alts.append(r"%s(?![ \t]*\.)" % n)
    if not alts:
        return re.compile(r"(?!x)x")
    return re.compile(r"\b(?:%s)\b" % "|".join(alts))


_ATTR_RE_CACHE: dict = {}


def _module_chains(interp, modules, joined):
    """``(name, hot attributes used, bare use is hot)`` for each name of the file bound
    to a project module that holds a hot name (:func:`project.hot_names_of`): the
    attributes the file reads on it (``name.attr``) that are hot names of the module
    or submodules that hold one; a module that holds none is not a way in at all."""
    from fakegrad_lint.analysis.project import hot_names_of

    out = []
    for name, val in modules.items():
        names = hot_names_of(val.mf.path, 0)
        if not names:
            continue
        rx = _ATTR_RE_CACHE.get(name)
        if rx is None:
            rx = _ATTR_RE_CACHE[name] = re.compile(r"\b%s[ \t]*\.[ \t]*(\w+)" % re.escape(name))
        attrs = set()
        for attr in set(rx.findall(joined)):
            if attr in names:
                attrs.add(attr)
            elif val.is_pkg and val.name:
                sub = interp.project.find(f"{val.name}.{attr}")
                if sub is not None and hot_names_of(sub, 0):
                    attrs.add(attr)  # `pkg.sub.f`: a submodule that holds a hot name
        out.append((name, attrs, True))
    return out


def _rebind_lines(joined, starts, word):
    """The (1-based, sorted) lines of ``joined`` where :func:`_may_rebind`'s patterns
    that stay on one line match: a unit's text (whole lines of the file) matches
    one of them exactly when one of these lines is among its own."""
    w = re.escape(word)
    rx = re.compile(rf"\bimport\b[^\n]*\b{w}\b|\.[ \t]*{w}\b|\bas[ \t]+{w}\b|\b{w}[ \t]*(?::[^\n=]*)?=(?!=)")
    # every pattern holds the word as a whole word: only the lines where it stands are
    # searched (a search bounded to a line sees the newlines around it, as a unit's text
    # sees its own ends)
    out = []
    for line in sorted({bisect.bisect_right(starts, i) for i in _word_starts(joined, word)}):
        if rx.search(joined, starts[line - 1], starts[line] - 1 if line < len(starts) else len(joined)):
            out.append(line)
    return out


def _unit_rebinds(text, first, last, lines_w, word):
    """``_may_rebind(text, word)`` for a unit's ``text``, lines ``first`` to ``last``
    of the file, from ``lines_w`` (:func:`_rebind_lines` of the file, or None)."""
    if word not in text:
        return False
    if lines_w:
        i = bisect.bisect_left(lines_w, first)
        if i < len(lines_w) and lines_w[i] <= last:
            return True
    return "import" in text and _import_paren_re(word).search(text) is not None


def _import_paren_re(word):
    """The pattern of :func:`_may_rebind` that can span lines (``from m import (a,\n w)``)."""
    return re.compile(rf"\bimport\s*\([^)]*\b{re.escape(word)}\b")


def _may_rebind(text, word):
    """Can ``text`` bind ``word`` to something else (an import, an assignment, an
    ``as`` target) or reach it as an attribute (``fake_tensor.FakeTensorMode``)?"""
    w = re.escape(word)
    return re.search(rf"\bimport\b[^\n]*\b{w}\b|\bimport\s*\([^)]*\b{w}\b|\.[ \t]*{w}\b|\bas[ \t]+{w}\b"
                     rf"|\b{w}[ \t]*(?::[^\n=]*)?=(?!=)", text) is not None


# the methods a test runner runs around each test of a TestCase (library_classes)
_FIXTURE_METHODS = frozenset({"setUp", "setUpClass", "asyncSetUp"})
_SELF_ASSIGN = re.compile(r"^\s*(?:self|cls)\.(\w+)\s*(?::[^=]*)?=(?!=)(.*)$", re.MULTILINE)


def _hot_self_assignments(text, hot_re):
    """``self.X = ...`` / ``cls.X = ...`` lines of a method whose value names a hot word."""
    return [m.group(1) for m in _SELF_ASSIGN.finditer(text) if hot_re.search(m.group(2))]
