"""Statements, run in program order: assignment (with unpacking, attributes and
subscripts), loops (a body that may run), ``if`` with both branches joined when the
test is unknown, ``try``, imports, ``return``/``raise`` ending the block.

``with`` is in :mod:`regions`; definitions in :mod:`definitions`.
"""

from __future__ import annotations

import ast
import sys
from itertools import compress
from operator import is_not

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.code_text import _FUNCTION_DEFS, _is_main_guard, _sets_requires_grad
from fakegrad_lint.analysis.expressions import module_children
from fakegrad_lint.analysis.heap import Branch, heap_field, heap_set, merge
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.state import STEP_BUDGET, UNROLL_DEPTH, UNROLL_MAX, UNROLL_MAX_KEYED, Crashed, YieldReached, _BlockExit
from fakegrad_lint.analysis.torch_values import (_MODULE_ITERATORS, _disable_module_origins, _enable_module_origins,
    _name_origins)
from fakegrad_lint.analysis.valueops import _dict_val, _is_none_const, _truth, concat_seqs, const_tuple
from fakegrad_lint.analysis.values import (UNKNOWN, ClassVal, ConstVal, FuncVal, GeneratorVal, InstanceVal, MaybeVal, ModeVal, ModRef,
    ModuleVal, Origin, SeqVal, TVal, is_enum_member, join, union)


def _mark_may_regions(regions, before):
    """Regions entered in a branch whose test is unknown, still entered after it:
    after the ``if`` they are entered on some paths only."""
    for r in regions:
        if not any(r is b for b in before):
            r.may = True


def _join_names(merged, other):
    """``merged`` (a branch's names, changed in place) joined with ``other``'s: each
    name of ``other`` whose value is not the very one ``merged`` holds gets the join
    of both (``other``'s value where ``merged`` has none), in ``other``'s order. The
    names that differ are found by C-level passes (``map``, ``compress``), so a name
    neither branch rebound costs no Python step: an unknown ``if`` in a module of
    hundreds of names touches only those its branches bound."""
    get = merged.get
    for k in list(compress(other, map(is_not, map(get, other), other.values()))):
        a, b = get(k), other[k]
        merged[k] = b if a is None else join(a, b)
    return merged


def _builtin_exception(v):
    """The builtin exception class a ``ModRef`` names (None: not one)."""
    import builtins

    if not (isinstance(v, ModRef) and v.qualname.startswith("builtins.")):
        return None
    c = getattr(builtins, v.qualname[len("builtins."):], None)
    return c if isinstance(c, type) and issubclass(c, BaseException) else None


def _subclass_of(cls, base, depth=0):
    """Is the exception class ``cls`` (a class of the file or a builtin's ModRef) a
    subclass of ``base``? True, False or None (not known)."""
    b = _builtin_exception(base)
    if isinstance(base, ClassVal):
        if cls is base:
            return True
        if not isinstance(cls, ClassVal):
            return False if _builtin_exception(cls) is not None else None
    elif b is None:
        return None
    if isinstance(cls, ModRef):
        c = _builtin_exception(cls)
        return None if c is None else (b is not None and issubclass(c, b))
    if not isinstance(cls, ClassVal) or depth > 8:
        return None
    answers = [_subclass_of(x, base, depth + 1) for x in cls.bases] or [False]
    if any(not isinstance(x, (ClassVal, ModRef)) for x in cls.bases):
        return None
    return True if True in answers else (None if None in answers else False)


def _catches_assertion(t):
    """Does ``except t:`` catch the AssertionError of a strict fake mode?"""
    if t is None:
        return True  # a bare `except:`
    if isinstance(t, ast.Tuple):
        return any(_catches_assertion(x) for x in t.elts)
    name = dotted_name(t)
    return name is not None and name.rsplit(".", 1)[-1] in N.CATCHES_ASSERTION and name.count(".") <= 1


def _may_catch_runtime(t):
    """May ``except t:`` catch a RuntimeError (a backward's "does not require grad")?
    Only a builtin exception type that is no base of it is known not to."""
    if t is None:
        return True
    if isinstance(t, ast.Tuple):
        return any(_may_catch_runtime(x) for x in t.elts)
    name = dotted_name(t)
    builtin = getattr(__builtins__, name, None) if not isinstance(__builtins__, dict) else __builtins__.get(name)
    return not (isinstance(builtin, type) and issubclass(builtin, BaseException)
                and not issubclass(RuntimeError, builtin))


def _dead_import_handler(s, h):
    """``except ImportError:`` (or ModuleNotFoundError) around a body of imports that
    succeed wherever the program runs: torch's and the standard library's modules."""
    if h.type is None:
        return False
    types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    if not all((dotted_name(t) or "").rsplit(".", 1)[-1] in N.IMPORT_ERRORS for t in types):
        return False
    for stmt in s.body:
        if isinstance(stmt, ast.Import):
            names = [a.name for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            names = [stmt.module]
        else:
            return False
        if not all(_always_importable(n) for n in names):
            return False
    return True


def _always_importable(module):
    top = module.split(".", 1)[0]
    return top in N.ALWAYS_IMPORTABLE or top in sys.stdlib_module_names


class StatementsMixin:
    """Statements: run in program order; branches joined as may values."""

    _unroll_depth = 0  # loops over known elements being run once per element

    def exec_block(self, stmts, st):
        for i, stmt in enumerate(stmts):
            st.cur = (stmts, i)
            self.exec_stmt(stmt, st)

    def _tick(self):
        self.steps += 1
        if self.steps > STEP_BUDGET:
            self.exhausted = True

    def exec_stmt(self, s, st):
        self.steps = steps = self.steps + 1  # _tick, inlined: this runs for every statement
        if steps > STEP_BUDGET:
            self.exhausted = True
        run = self._statement_table.get(type(s))
        if run is not None:
            run(s, st)
        # Pass, Delete, Nonlocal, etc.: nothing

    def _exec_expr(self, s, st):
        self.eval(s.value, st)

    def _exec_assign(self, s, st):
        val = self.eval(s.value, st)
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            _name_origins(val, s.targets[0].id, s.lineno)
        for target in s.targets:
            self.assign(target, val, st, s.value)

    def _exec_ann_assign(self, s, st):
        if s.value is not None:
            self.assign(s.target, self.eval(s.value, st), st, s.value)

    def _exec_aug_assign(self, s, st):
        left = self.eval(s.target, st)
        right = self.eval(s.value, st)
        if isinstance(left, SeqVal) and isinstance(right, SeqVal):
            val = concat_seqs(left, right)  # `layers += [nn.Linear(...)]`
        else:
            val = self.binop(s, [(left, s.target), (right, s.value)], st)
        self.assign(s.target, val, st, s)

    def _exec_def(self, s, st):
        fv = self.make_function(s, st)
        st.scope.assign(s.name, fv)

    def _exec_class(self, s, st):
        st.scope.assign(s.name, self.make_class(s, st))

    def note_loop_module(self, node, iter_expr, it, st):
        """A fact for the fix builders: a loop (or a comprehension's ``for``) in a region
        draws from a real module (``model.children()``, ``model.parameters()``) or from a
        list of real modules (``for layer in layers``); the fix draws from a fake copy.
        ``enumerate(X)`` draws from ``X``."""
        if isinstance(iter_expr, ast.Call) and isinstance(iter_expr.func, ast.Name) and \
                iter_expr.func.id == "enumerate" and len(iter_expr.args) == 1 and not iter_expr.keywords:
            iter_expr, it = iter_expr.args[0], None
        root = iter_expr.func.value if (isinstance(iter_expr, ast.Call) and isinstance(iter_expr.func, ast.Attribute)
                                        and not iter_expr.args and iter_expr.func.attr in _MODULE_ITERATORS) else iter_expr
        if st.regions and dotted_name(root) is not None:
            root_val = self.eval(root, st) if root is not iter_expr or it is None else it
            if isinstance(root_val, ModuleVal) and root_val.is_real() or (
                    isinstance(root_val, SeqVal) and not root_val.is_dict and root_val.items
                    and all(isinstance(v, ModuleVal) and v.is_real() for v in root_val.items)):
                self.loop_modules[id(node)] = root

    def _unrolled(self, s, it):
        """The elements a ``for`` over ``it`` binds, in order, when Python's are known
        (a tuple or list of known elements, a dict's known keys) and few; else None."""
        if isinstance(s.target, ast.Name) and _sets_requires_grad(s, s.target.id):
            return None  # (the container's tensors change: the joined run below tracks that)
        return self.known_elements(it)

    def known_elements(self, it):
        """What iterating ``it`` gives, element by element, when known and few (None: not)."""
        if isinstance(it, ModuleVal) and self._unroll_depth < UNROLL_DEPTH:
            kids = module_children(it)  # a torch container's children
            return kids if kids and len(kids) <= UNROLL_MAX else None
        if not isinstance(it, SeqVal) or self._unroll_depth >= UNROLL_DEPTH:
            return None
        if it.is_dict:
            elems = [ConstVal(k) for k in it.keys] if it.keys is not None and it.elts is not None else None
        else:
            elems = list(it.elts) if it.elts is not None and it.keys is None else None
        if not elems or (len(elems) > UNROLL_MAX and (len(elems) > UNROLL_MAX_KEYED or self._unroll_depth
                                                      or not all(map(_keyed, elems)))):
            return None
        return elems

    def _exec_for_each(self, s, elems, st):
        """``for`` over known elements: the body runs once per element with the target
        bound to it, as Python runs it (``break`` ends the loop and skips ``else``,
        ``continue`` goes on with the next element, ``return``/``raise`` leave)."""
        self._unroll_depth += 1
        broke = False
        try:
            for x in elems:
                self.assign(s.target, x, st, None)
                try:
                    self.exec_block(s.body, st)
                except _BlockExit as b:
                    if b.kind == "break":
                        broke = True
                        break
                    if b.kind != "continue":
                        raise
        finally:
            self._unroll_depth -= 1
        if not broke:
            self.exec_block(s.orelse, st)

    def _exec_for(self, s, st):
        self.loop_iters.add(id(s.iter))
        it = self.eval(s.iter, st)
        if isinstance(it, GeneratorVal):
            it = self.gen_consume(it, st)  # its body runs as the loop consumes it
        self.note_loop_module(s, s.iter, it, st)
        held = self._gen_regions.get(id(it))
        inside = held[1] if held is not None and held[0] is it else ()
        elems = self._unrolled(s, it)
        if elems is not None:
            for region in inside:
                st.ctx = st.ctx.entering(region)  # each step runs while the generator is suspended in them
            try:
                return self._exec_for_each(s, elems, st)
            finally:
                for region in reversed(inside):
                    st.ctx = st.ctx.leaving(region)
        item = self.iter_item(it, st)
        self.assign(s.target, item, st, None)
        for region in inside:
            st.ctx = st.ctx.entering(region)  # the generator is suspended inside them
        try:
            self.exec_branch(s.body, st)
        finally:
            for region in reversed(inside):
                st.ctx = st.ctx.leaving(region)
        if isinstance(it, SeqVal) and isinstance(s.target, ast.Name) and _sets_requires_grad(s, s.target.id):
            # `for t in ts: t.requires_grad_()` changes the tensors in the container
            now = st.scope.lookup(s.target.id)
            if now is not None and now is not item and now.real_rg() - item.real_rg():
                container = s.iter
                is_dict = False
                if isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute) and container.func.attr == "values":
                    container = container.func.value  # `for v in d.values()`
                    is_dict = True
                whole = self.eval(container, st) if is_dict else it
                if is_dict and isinstance(whole, SeqVal) and whole.keys is not None and whole.elts is not None:
                    # every value changed: the dict keeps its keys, each value now also `now`
                    elts = tuple(union(e, now) for e in whole.elts)
                    self.rebind(container, SeqVal(elts, elts, whole.keys, is_dict=True), st)
                else:
                    self.rebind(container, SeqVal(it.items + (now,), is_dict=is_dict), st)
        self.exec_branch(s.orelse, st)

    def _exec_while(self, s, st):
        self.eval(s.test, st)
        self.exec_branch(s.body, st)
        self.exec_branch(s.orelse, st)

    def _exec_return(self, s, st):
        if s.value is not None:
            st.returns.append(self.eval(s.value, st))
        raise _BlockExit("return")

    def _exec_raise(self, s, st):
        cls = None
        if s.exc is not None:
            self.eval(s.exc, st)
            # `raise Error(...)` / `raise Error`: the class raised, as the handlers see it
            cls = self.eval(s.exc.func if isinstance(s.exc, ast.Call) else s.exc, st)
            if not (isinstance(cls, ClassVal) or (isinstance(cls, ModRef) and _builtin_exception(cls) is not None)):
                cls = None
        raise _BlockExit("raise", cls)

    def _handler_catches(self, h, cls, st):
        """Does ``except h.type:`` catch an exception of the class ``cls`` (a class of
        the file or a builtin exception)? True, False or None (not known)."""
        if h.type is None:
            return True
        t = self.eval(h.type, st)
        types = t.elts if isinstance(t, SeqVal) and t.elts is not None and not t.is_dict else (t,)
        if cls is None:
            return None
        answers = [_subclass_of(cls, x) for x in types]
        return True if True in answers else (None if None in answers else False)

    def _exec_jump(self, s, st):
        raise _BlockExit("break" if isinstance(s, ast.Break) else "continue")

    def _exec_import(self, s, st):
        for alias in s.names:
            if self.project is not None and self._import_project(alias, st):
                continue
            if alias.asname:
                st.scope.assign(alias.asname, ModRef(alias.name))
            else:
                top = alias.name.split(".")[0]
                st.scope.assign(top, ModRef(top))

    def _exec_import_from(self, s, st):
        if self.project is not None and self._import_from_project(s, st):
            pass
        elif s.level == 0 and s.module:
            for alias in s.names:
                if alias.name == "*":
                    for name in N.STAR_EXPORTS.get(s.module, ()):
                        st.scope.assign(name, ModRef(f"{s.module}.{name}"))
                    continue
                st.scope.assign(alias.asname or alias.name, ModRef(f"{s.module}.{alias.name}"))
        else:
            for alias in s.names:
                st.scope.assign(alias.asname or alias.name, UNKNOWN)

    def _exec_global(self, s, st):
        st.scope.global_names.update(s.names)

    def _exec_nonlocal(self, s, st):
        st.scope.nonlocal_names.update(s.names)

    def _exec_delete(self, s, st):
        """``del d[k]`` of a list or dict: the object loses the element (see
        ``remove_from_container``); other targets keep what they hold."""
        for t in s.targets:
            if isinstance(t, ast.Subscript):
                obj = self.eval(t.value, st)
                if isinstance(obj, SeqVal):
                    self.remove_from_container(t.value, obj, "del", [self.eval(t.slice, st)], st)

    def _exec_assert(self, s, st):
        self.eval(s.test, st)

    def _exec_match(self, s, st):
        subject = self.eval(s.subject, st)
        if isinstance(subject, (ConstVal, InstanceVal)):
            # a known subject: Python runs the first case whose pattern matches it
            for case in s.cases:
                hit = self._pattern_matches(case.pattern, subject, st)
                if hit and case.guard is not None and not (isinstance(case.pattern, ast.MatchAs) and case.pattern.name):
                    hit = _truth(self.eval(case.guard, st))  # `case "x" if flag:`
                elif hit and case.guard is not None:
                    hit = None
                if hit is None:
                    break  # not decidable here: every case may run
                if hit:
                    if isinstance(case.pattern, ast.MatchAs) and case.pattern.name:
                        st.scope.assign(case.pattern.name, subject)
                    self.exec_block(case.body, st)
                    return
            else:
                return  # no case matches: nothing runs
        for case in s.cases:
            self.exec_branch(case.body, st)

    def _pattern_matches(self, p, subject, st):
        """Does ``case p:`` match the known constant ``subject`` (None: not known)?
        An instance of a class of the file matches a class pattern by its class and
        its attributes (positional ones through a dataclass's fields)."""
        if isinstance(p, ast.MatchAs) and p.pattern is None:
            return True  # `case _:` / `case name:`
        if isinstance(p, ast.MatchOr):
            hits = [self._pattern_matches(q, subject, st) for q in p.patterns]
            return True if any(h is True for h in hits) else (False if all(h is False for h in hits) else None)
        if isinstance(p, ast.MatchValue) and is_enum_member(subject):
            # `case Phase.TRAIN:` compares by ==, which is identity for the members of
            # an enum of the file (another class's member, or another value: not known)
            v = self.eval(p.value, st)
            own_eq = subject.cls.lookup_method("__eq__") is not None
            return (v is subject) if is_enum_member(v) and v.cls is subject.cls and not own_eq else None
        if isinstance(subject, InstanceVal):
            return self._class_pattern_matches(p, subject, st)
        if isinstance(p, ast.MatchValue):
            v = self.eval(p.value, st)
            if isinstance(v, ConstVal) and type(v.value) in (str, int, float, bool, bytes) and type(subject.value) in (str, int, float, bool, bytes, type(None)):
                return subject.value == v.value
            return None
        if isinstance(p, ast.MatchSingleton):
            return subject.value is p.value
        return None

    def _class_pattern_matches(self, p, subject, st):
        if isinstance(p, ast.MatchOr):
            hits = [self._pattern_matches(q, subject, st) for q in p.patterns]
            return True if any(h is True for h in hits) else (False if all(h is False for h in hits) else None)
        if not isinstance(p, ast.MatchClass):
            return None
        cls = self.eval(p.cls, st)
        if not isinstance(cls, ClassVal) or not isinstance(subject.cls, ClassVal):
            return None
        if not any(c is cls for c in (subject.cls.mro or (subject.cls,))):
            # another class of the file: no match unless a base is not known
            known = all(isinstance(b, ClassVal) or (isinstance(b, ModRef) and b.qualname == "builtins.object")
                        for c in (subject.cls.mro or (subject.cls,)) for b in c.bases)
            return False if known else None
        if p.patterns and not (cls.dataclass and cls.lookup_attr("__match_args__") is None):
            return None  # positional patterns need __match_args__ (a dataclass's fields)
        names = list(zip(cls.fields(), p.patterns)) + list(zip(p.kwd_attrs, p.kwd_patterns))
        result = True
        for name, q in names:
            v = subject.attrs.get(name)
            if not isinstance(v, (ConstVal, InstanceVal)):
                return None
            hit = self._pattern_matches(q, v, st)
            if hit is False:
                return False
            if hit is None or (isinstance(q, ast.MatchAs) and q.name):
                result = None  # (a capture pattern inside: its binding is not followed)
        return result

    def exec_branch(self, stmts, st):
        """A block that may or may not run (loop body, else): dead ends stay local."""
        self.may_paths += 1  # (a generator whose run took none yields an exact sequence)
        try:
            self.exec_block(stmts, st)
        except _BlockExit:
            pass

    def exec_if(self, s, st):
        test = self.eval(s.test, st)
        truth = _truth(test)
        if truth is None and self.ctx is not self.main and _is_main_guard(s.test):
            truth = False  # an imported module's `if __name__ == "__main__":` never runs
        if truth is True:
            self.exec_block(s.body, st)
            return
        if truth is False:
            self.exec_block(s.orelse, st)
            return
        scope = st.scope
        before = dict(scope.vars)
        regions_before = st.ctx.regions  # (a tuple: the context is immutable)
        crashed = 0
        # objects changed in a branch (attributes, frozen parameters, a mode's flag, a
        # list) are joined after the `if` as names are (analysis/heap.py)
        with Branch() as body_path:
            try:
                self.exec_branch(s.body, st)
            except Crashed:
                crashed += 1
        if st.ctx.regions is not regions_before:
            _mark_may_regions(st.ctx.regions, regions_before)
        after_body = scope.vars
        if s.orelse:
            scope.vars = dict(before)
            with Branch() as else_path:
                try:
                    self.exec_branch(s.orelse, st)
                except Crashed:
                    crashed += 1
            other, else_changes = scope.vars, else_path.changes
        else:
            # no else: what it would bind is `before`, and it writes nothing (no copy of
            # a module's names per unknown `if`)
            other, else_changes = before, {}
        if st.ctx.regions is not regions_before:
            _mark_may_regions(st.ctx.regions, regions_before)
        if body_path.changes or else_changes:
            merge([body_path.changes, else_changes])
        scope.vars = _join_names(after_body, other)
        if crashed == 2:
            raise Crashed()

    def exec_try(self, s, st):
        """``try``: the body runs; after a strict mode's crash the handlers that catch
        its AssertionError run (a handler that re-raises lets the crash through).
        Otherwise no handler is known to run: each may (an exception the analysis does
        not see), so each runs as a path that only may be taken, joined with the
        path through ``else``. Handlers of an ``ImportError`` around imports that
        succeed (torch's, the standard library's) never run."""
        catches = any(_catches_assertion(h.type) and not any(isinstance(x, ast.Raise) for x in h.body) for h in s.handlers)
        before = set(self.records) if catches else None
        crashed = paused = False
        jump = raised = None
        # (a backward in the body that raises may be caught: it proves nothing, dispatch.py)
        catching = int(any(_may_catch_runtime(h.type) for h in s.handlers))
        self._catching = getattr(self, "_catching", 0) + catching
        try:
            try:
                self.exec_block(s.body, st)
            except _BlockExit as b:
                # (a `break`/`continue` of a loop run once per element leaves the try
                # after its finally, as in Python; the joined loop ignores them)
                if b.kind in ("break", "continue") and self._unroll_depth:
                    jump = b
                elif b.kind == "raise":
                    raised = b  # the body raises on every path that reaches here
            except Crashed:
                if not s.handlers:
                    raise
                crashed = True
            except YieldReached:
                # a @contextmanager helper paused at its yield inside this try: its
                # finally runs when the with-block exits, not before the block
                paused = True
                raise
            finally:
                if catches:
                    self.crashes_caught(before)
            if crashed:
                for h in s.handlers:
                    if h.name:
                        st.scope.assign(h.name, UNKNOWN)
                    self.exec_branch(h.body, st)
            elif jump is not None:
                pass  # (no exception: no handler runs, nor the else)
            elif raised is not None and self._raised_handler(s, raised, st):
                pass
            else:
                # `try: from .impl import f / except ImportError: f = None` over project
                # modules that import nothing that can be missing: the handlers never run
                dead = self.project is not None and self.imports_cannot_fail(s.body)  # (project_link)
                live = [] if dead else [h for h in s.handlers if not _dead_import_handler(s, h)]
                self._may_handlers(live, s.orelse, st)
        finally:
            self._catching -= catching
            if not paused:
                try:
                    self.exec_block(s.finalbody, st)
                except _BlockExit:
                    pass
        if jump is not None:
            raise jump

    def _raised_handler(self, s, raised, st):
        """The body raised (a ``raise`` reached on every path): the first handler that
        catches its class runs, and no other, nor the ``else``; none catching it, the
        exception leaves the ``try`` after its ``finally``. False when which handler
        catches it is not known (then each may run)."""
        for h in s.handlers:
            hit = self._handler_catches(h, raised.exc, st)
            if hit is None:
                return False
            if hit:
                if h.name:
                    st.scope.assign(h.name, UNKNOWN)
                self.exec_block(h.body, st)  # (its own raise or return leaves through the finally)
                return True
        raise raised

    def _may_handlers(self, handlers, orelse, st):
        """The ``else`` path and each handler's path (one that only may be taken), run
        from the state after the body and joined as branches are."""
        scope = st.scope
        start = dict(scope.vars)
        ends = []
        paths = []  # the object changes of each path that reaches the code after the try
        with Branch() as path:
            try:
                self.exec_block(orelse, st)
                ends.append(scope.vars)
                reached = True
            except _BlockExit:
                reached = False
        if reached:
            paths.append(path.changes)
        for h in handlers:
            scope.vars = dict(start)
            st.may += 1
            with Branch() as path:
                try:
                    if h.name:
                        st.scope.assign(h.name, UNKNOWN)
                    self.exec_block(h.body, st)
                    ends.append(scope.vars)
                    paths.append(path.changes)
                except (_BlockExit, Crashed):
                    pass  # (re-raised, returned: the code after the try is not reached this way)
                finally:
                    st.may -= 1
        if paths and any(paths):
            merge(paths)
        if not ends:
            scope.vars = start
            return
        merged = ends[0]
        for other in ends[1:]:
            for k in set(merged) | set(other):
                a, b = merged.get(k), other.get(k)
                if a is not b:
                    merged[k] = b if a is None else a if b is None else join(a, b)
        scope.vars = merged

    def crashes_caught(self, before):
        """A strict mode's AssertionError raised since ``before`` (the record keys then)
        is caught (``except AssertionError``, ``suppress(AssertionError)``): the program
        goes on, the crash is not a finding."""
        for key, rec in self.records.items():
            if key not in before and rec.crash:
                rec.may = True

    def assign(self, target, val, st, value_node):
        t = type(target)
        if t is ast.Name:
            st.scope.assign(target.id, val)
        elif t in (ast.Tuple, ast.List):
            elts = _tuple_elts(val, len(target.elts))
            for i, e in enumerate(target.elts):
                if isinstance(e, ast.Starred):
                    self.assign(e.value, SeqVal(items=(self.iter_item(val, st),)), st, None)
                elif elts is not None:
                    self.assign(e, elts[i], st, None)
                else:
                    self.assign(e, self.iter_item(val, st), st, None)
        elif t is ast.Attribute:
            obj = self.eval(target.value, st)
            if target.attr == "grad" and isinstance(obj, TVal) and obj.real_rg():
                # `p.grad = g`: a gradient computed under a fake mode (torch.func.grad)
                # becomes the real parameter's grad, with no backward (HAZARD 17)
                self.sink(val, ".grad assignment", target, st)
                self.fake_grad_written(target, obj, val, st)
                if isinstance(val, ConstVal) and val.value is None:
                    self.grads_reset(obj)  # `p.grad = None`
            self.set_attribute(target.value, obj, target.attr, val, target, st)
        elif t is ast.Subscript:
            obj = self.eval(target.value, st)
            key = self.eval(target.slice, st)
            kv = key.value if isinstance(key, ConstVal) else const_tuple(key)  # (a tuple of constants too)
            if isinstance(obj, SeqVal) and obj.keys is not None and (isinstance(key, ConstVal) or kv is not None):
                keys = [k for k in obj.keys if not (k == kv and type(k) is type(kv))]
                elts = [v for k, v in zip(obj.keys, obj.elts) if not (k == kv and type(k) is type(kv))]
                self.mutate_container(target.value, obj, _dict_val(keys + [kv], elts + [val]), st)
            elif isinstance(obj, SeqVal):
                self.mutate_container(target.value, obj, SeqVal(obj.items + (val,), is_dict=obj.is_dict), st)
        elif t is ast.Starred:
            self.assign(target.value, val, st, value_node)

    def set_attribute(self, obj_expr, obj, attr, val, node, st):
        """``obj.attr = val`` (also ``setattr(obj, "attr", val)``): an object's
        attribute, a mode's ``allow_non_fake_inputs`` (read when the mode is entered),
        a tensor's ``requires_grad``."""
        cls = obj.cls if isinstance(obj, (InstanceVal, ModuleVal)) and isinstance(obj.cls, ClassVal) else None
        prop = cls.lookup_method(attr) if cls is not None else None
        if prop is not None and prop.kind == "property" and prop.setter is not None:
            # a property with a setter: `obj.attr = v` is `type(obj).attr.fset(obj, v)`
            self.call_function(prop.setter, [obj, val], {}, st, force=True)
            return
        if self.data_descriptor_write(obj, attr, val, st):
            return  # `type(obj).attr.__set__(obj, val)` (descriptors.py)
        if isinstance(obj, ClassVal) and isinstance(val, FuncVal) and val.kind == "plain" and not val.cls:
            # `cls.method = fn` (a class decorator adding a method): its instances bind it
            obj.own[attr] = val
            obj.methods[attr] = val
        if isinstance(obj, (InstanceVal, ModuleVal, ClassVal)):
            heap_set(obj, attr, val)
        elif isinstance(obj, ModeVal) and obj.cls is not None and attr != "allow_non_fake_inputs":
            heap_set(obj, attr, val)  # an instance of a FakeTensorMode subclass of the file
        elif isinstance(obj, ModeVal) and attr == "allow_non_fake_inputs":
            if isinstance(val, ConstVal):
                heap_field(obj, "allow", bool(val.value))
                if obj.desc.startswith("FakeTensorMode("):
                    heap_field(obj, "desc", "FakeTensorMode(allow_non_fake_inputs=True)" if obj.allow else "FakeTensorMode()")
            else:
                heap_field(obj, "allow", None)  # an unknown value: the verdict is unknown
        elif attr == "requires_grad" and isinstance(obj, TVal) and obj.mode is None:
            if isinstance(val, ConstVal) and val.value is True:
                _enable_module_origins(obj)
                new = TVal(obj.origins | {Origin(dotted_name(obj_expr) or "tensor", "tensor", node.lineno)}, None, obj.leaks)
                self.rebind(obj_expr, new, st)
            elif isinstance(val, ConstVal) and val.value is False:
                _disable_module_origins(obj)
                self.rebind(obj_expr, TVal(frozenset(), None, obj.leaks), st)

    def mutate_container(self, expr, obj, new, st):
        """``d[k] = v``, ``xs.append(v)``...: the list or dict object itself changes, so
        every name and attribute that holds it (an argument, ``store`` in a hook, a
        registry) sees ``new``'s contents, as Python's aliasing does."""
        if isinstance(obj, SeqVal) and isinstance(new, SeqVal):
            for f in ("items", "elts", "keys", "is_dict"):
                heap_field(obj, f, getattr(new, f))
            new = obj
        self.rebind(expr, new, st)

    def rebind(self, expr, val, st):
        """A change to the object a name holds (``d[k] = v``, ``x.requires_grad_()``):
        the name is updated where it lives (a global or a closure variable too)."""
        if isinstance(expr, ast.Name):
            sc = st.scope
            while sc is not None and expr.id not in sc.vars:
                sc = sc.parent
            if sc is None or sc is st.scope:
                st.scope.assign(expr.id, val)
            else:
                sc.vars[expr.id] = val
        elif isinstance(expr, ast.Attribute):
            obj = self.eval(expr.value, st)
            if expr.attr == "__dict__" and isinstance(obj, InstanceVal):
                # `obj.__dict__[k] = v`, `obj.__dict__.update(...)`: the object's attributes
                if isinstance(val, SeqVal) and val.keys is not None and val.elts is not None:
                    for k, v in zip(val.keys, val.elts):
                        if isinstance(k, str):
                            heap_set(obj, k, v)
            elif isinstance(obj, (InstanceVal, ModuleVal)):
                heap_set(obj, expr.attr, val)


def _tuple_elts(val, n, depth=0):
    """The values a tuple target of ``n`` names takes from ``val``, position by
    position: a tuple of ``n`` known elements; one of (or each of) several such tuples,
    nested too (``(k, p)`` pairs of one of two modules' ``named_parameters()``),
    element by element. None when not known."""
    if isinstance(val, SeqVal):
        return list(val.elts) if val.elts is not None and val.keys is None and len(val.elts) == n else None
    if not isinstance(val, MaybeVal) or depth > 4:
        return None
    opts = [o for o in val.options if not _is_none_const(o)]
    subs = [_tuple_elts(o, n, depth + 1) for o in opts]
    if not subs or any(x is None for x in subs):
        return None
    combine = union if val.each else join
    elts = subs[0]
    for x in subs[1:]:
        elts = [combine(a, b) for a, b in zip(elts, x)]
    return elts


def _keyed(v):
    """A constant string key, or a ``(key, value)`` pair of one (a dict's ``items()``)."""
    if isinstance(v, SeqVal) and v.elts is not None and len(v.elts) == 2 and v.keys is None:
        v = v.elts[0]
    return isinstance(v, ConstVal) and isinstance(v.value, str)


# statement type -> the method that runs it (types not listed do nothing)
STATEMENT_METHODS = {
    ast.Expr: "_exec_expr",
    ast.Assign: "_exec_assign",
    ast.AnnAssign: "_exec_ann_assign",
    ast.AugAssign: "_exec_aug_assign",
    **dict.fromkeys(_FUNCTION_DEFS, "_exec_def"),
    ast.ClassDef: "_exec_class",
    ast.With: "exec_with",
    ast.AsyncWith: "exec_with",
    ast.If: "exec_if",
    ast.For: "_exec_for",
    ast.AsyncFor: "_exec_for",
    ast.While: "_exec_while",
    ast.Try: "exec_try",
    **({ast.TryStar: "exec_try"} if hasattr(ast, "TryStar") else {}),
    ast.Return: "_exec_return",
    ast.Raise: "_exec_raise",
    ast.Break: "_exec_jump",
    ast.Continue: "_exec_jump",
    ast.Import: "_exec_import",
    ast.ImportFrom: "_exec_import_from",
    ast.Global: "_exec_global",
    ast.Nonlocal: "_exec_nonlocal",
    ast.Assert: "_exec_assert",
    ast.Delete: "_exec_delete",
    **({ast.Match: "_exec_match"} if hasattr(ast, "Match") else {}),
}
