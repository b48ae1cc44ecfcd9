"""Regions and modes: ``with`` items and explicit ``__enter__()`` calls change the
dispatch context (:class:`~fakegrad_lint.analysis.context.DispatchContext`):
a fake mode opens a region; grad-mode contexts, ``unset_fake_temporarily``,
``FakeCopyMode``, ``patch.object(mode, "allow_non_fake_inputs", True)`` and the
meta device change what ops do; a user class's ``__enter__``/``__exit__`` and a
``@contextmanager`` helper (run up to its ``yield``) are run as Python runs them.
Each entry pushes an undo that leaves it.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.state import Crashed, PseudoWith, YieldReached, _BlockExit
from fakegrad_lint.analysis.valueops import _is_none_const
from fakegrad_lint.analysis.values import (UNKNOWN, ConstVal, CtxVal, DataFileVal, ExitStackVal, InstanceVal, MaybeVal, ModeVal,
    Region, WorkerVal)


class RegionsMixin:
    """Entering and leaving context managers: regions and modes."""

    def exec_with(self, s, st):
        undo = []
        before = None  # record keys when a context that catches the AssertionError was entered
        try:
            for i, item in enumerate(s.items):
                cm = self.eval(item.context_expr, st)
                # (a `with` that enters a fake mode on one run and another context on
                # another, a loop's iterations: no fix in its block holds for both)
                seen = self.__dict__.setdefault("_with_kinds", {}).setdefault((id(s), i), [s, set()])
                seen[1].add("mode" if isinstance(cm, ModeVal) else "other")
                if isinstance(cm, CtxVal) and cm.kind == "suppress_assert" and before is None:
                    before = set(self.records)
                bound = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
                entered = self.enter(cm, st, undo, with_node=s, index=i, bound=bound, expr=item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, entered, st, None)
            self.exec_block(s.body, st)
        except Crashed:
            if before is None:
                raise  # (a crash in a later item's __enter__ is caught as well)
        finally:
            for fn in reversed(undo):
                fn(st)
            if before is not None:
                self.crashes_caught(before)

    def enter(self, cm, st, undo, with_node=None, index=-1, bound=None, expr=None, may=False, raw=False):
        """Enter a context manager value: ``st.ctx`` becomes the context inside it; its undo,
        a function of the state that leaves it, goes on ``undo``.
        ``may``: the value is entered on some paths only (its region proves nothing)."""
        if isinstance(cm, MaybeVal) and cm.each and not st.may:
            # each of several (a loop over a known list entering every item): all of
            # them are entered, in order
            for o in cm.options:
                if not _is_none_const(o):
                    self.enter(o, st, undo, None, index, None, None, may=may)
            return UNKNOWN
        if isinstance(cm, MaybeVal):
            opts = [o for o in cm.options if not _is_none_const(o)]
            modes = [o for o in opts if isinstance(o, ModeVal)]
            if modes:
                # an unknown condition or key selects a fake mode on some path: enter it,
                # as a may region unless every option is a mode (no fix: the block
                # cannot know which one it got)
                pick = modes[0]
                if any(m.allow != pick.allow for m in modes):
                    pick = ModeVal(None, pick.line, pick.desc, pick.node, pick.conditional)
                return self.enter(pick, st, undo, None, index, None, None, may=may or len(modes) < len(opts))
            others = [o for o in opts if isinstance(o, (CtxVal, ExitStackVal, InstanceVal))]
            if len(others) == 1 and len(opts) == 1:
                return self.enter(others[0], st, undo, with_node, index, bound, expr, may=may)
            return UNKNOWN
        if isinstance(cm, InstanceVal):
            return self.enter_instance(cm, st, undo, may)
        if isinstance(cm, WorkerVal):
            return cm  # `with ThreadPoolExecutor() as pool:` (leaving it waits for the work)
        if isinstance(cm, DataFileVal):
            return cm  # `with open("config.json") as fh:`
        if isinstance(cm, ModeVal) and not raw and cm.cls is not None and cm.cls.lookup_method("__enter__") is not None:
            return self.enter_instance(cm, st, undo, may)  # a subclass's own __enter__ (super().__enter__() enters it)
        if isinstance(cm, ModeVal):
            name = bound
            if name is None and expr is not None:
                d = dotted_name(expr)
                if d is not None:
                    name = d
            region = Region(cm, cm.allow, with_node, index, name, may=bool(may or st.may))
            region.func_node = st.scope.func_node
            st.ctx = st.ctx.entering(region)
            undo.append(lambda s: setattr(s, "ctx", s.ctx.leaving(region)))
            return cm
        if isinstance(cm, CtxVal):
            k = cm.kind
            if k == "grad_off" or k == "grad_on":
                # (set_grad_enabled restores what grad mode was before its constructor ran)
                old = cm.target[1] if isinstance(cm.target, tuple) and cm.target[:1] == ("restores",) else st.grad_enabled
                old_inf = st.ctx.inference
                # (inside inference mode grad mode may be on, but nothing records a graph)
                inf = cm.target[1] if isinstance(cm.target, tuple) and cm.target[:1] == ("inference",) else old_inf
                st.ctx = st.ctx.but(grad_enabled=k == "grad_on" and not inf, inference=inf)
                undo.append(lambda s: setattr(s, "ctx", s.ctx.but(grad_enabled=old, inference=old_inf)))
            elif k == "unset_fake":
                st.dispatch_off += 1
                undo.append(lambda s: setattr(s, "dispatch_off", max(0, s.dispatch_off - 1)))
            elif k == "fake_copy":
                old = st.fake_copy
                st.fake_copy = cm.target
                undo.append(lambda s: setattr(s, "fake_copy", old))
            elif k == "patch_allow":
                if cm.target is not None and cm.target not in st.patched:
                    target = cm.target
                    st.ctx = st.ctx.but(patched=st.patched | {target})
                    undo.append(lambda s: setattr(s, "ctx", s.ctx.but(patched=s.patched - {target})))
            elif k == "meta_device":
                old_meta = st.meta_device
                st.meta_device = True
                undo.append(lambda s: setattr(s, "meta_device", old_meta))
            elif k == "gen":
                return self.enter_generator(cm, st, undo, with_node, index, bound)
            elif k == "null" and cm.target is not None:
                return cm.target  # nullcontext(x): entering gives x, nothing else happens
            return UNKNOWN
        if isinstance(cm, ExitStackVal):
            marker = []  # undo actions of the contexts entered through this stack
            cm.pushed.append(marker)

            def close(s, marker=marker):
                for fn in reversed(marker):
                    fn(s)
                marker.clear()

            undo.append(close)
            return cm
        return UNKNOWN

    def enter_instance(self, cm, st, undo, may=False):
        """``with obj:`` for an instance of a class of the file: run its ``__enter__`` as a
        method (what it enters stays entered) and its ``__exit__`` when the block ends."""
        # (`async with obj:` runs `__aenter__`/`__aexit__`; awaiting their result is the call)
        enter_fn = cm.cls.lookup_method("__enter__") or cm.cls.lookup_method("__aenter__")
        if enter_fn is None:
            return UNKNOWN
        before = list(st.regions)
        if may:
            st.may += 1
        try:
            res = self.call_function(enter_fn, [cm], {}, st, force=True, propagate=True)
        except (YieldReached, _BlockExit):
            res = UNKNOWN
        finally:
            if may:
                st.may -= 1
        for r in st.regions:
            if r not in before:
                r.with_node = None  # opened inside a method: no block of this code to fix
                r.may = r.may or may
        exit_fn = cm.cls.lookup_method("__exit__") or cm.cls.lookup_method("__aexit__")

        def leave(s):
            if exit_fn is not None:
                try:
                    self.call_function(exit_fn, [cm, ConstVal(None), ConstVal(None), ConstVal(None)], {}, s,
                                       force=True, propagate=True)
                except (Crashed, YieldReached, _BlockExit):
                    pass
            # what __enter__ opened and __exit__ did not close (unknown to us) ends here
            s.ctx = s.ctx.but(regions=tuple(r for r in s.regions if r in before))

        undo.append(leave)
        return res

    def enter_generator(self, cm, st, undo, with_node=None, index=-1, bound=None):
        """Enter a @contextmanager helper: run it up to its ``yield`` and keep the
        regions and grad state active there for the body of the ``with``."""
        fv, args, kwargs = cm.target
        outer = st.ctx
        prev, self._capture_gen = self._capture_gen, fv.node
        try:
            self.call_function(fv, args, kwargs, st, run_generator=True)
        except YieldReached as y:
            # the context at the yield is the context of the block (the exception
            # unwound the generator's own with-blocks, not what they had entered)
            for r in y.ctx.regions:
                if r not in outer.regions and r.mode is y.value and with_node is not None:
                    # the helper yields its mode: the block can bind and use it
                    r.with_node, r.item_index, r.bound_name = with_node, index, bound
                    r.func_node = st.scope.func_node
            st.ctx = y.ctx.but(patched=outer.patched | y.ctx.patched, may=outer.may)
            def restore(s, gst=y.state):
                self._resume_generator(fv, gst, s)
                s.ctx = s.ctx.but(regions=tuple(r for r in s.regions if r in outer.regions),
                                  grad_enabled=outer.grad_enabled, dispatch_off=outer.dispatch_off,
                                  patched=s.patched & outer.patched)

            undo.append(restore)
            return y.value
        except (Crashed, _BlockExit):
            pass
        finally:
            self._capture_gen = prev
        return UNKNOWN

    def _resume_generator(self, fv, gst, st, to_yield=False):
        """The ``with`` block of a ``@contextmanager`` helper ends: Python resumes the
        generator after its ``yield`` (the statements after it, out to the function's
        end, and the ``finally`` blocks around it: ``handle.remove()``,
        ``mode.__exit__(...)``), in the context the block leaves (``st``). Not
        followed when the yield is inside a loop (False). ``to_yield``: a plain
        generator's ``next()``, which stops at the next ``yield`` (YieldReached goes
        to the caller); leaving a ``with`` of the generator leaves what it entered."""
        where = gst.cur
        path = _path_to_block(fv.node.body, where[0]) if where is not None else None
        if not path or any(isinstance(owner, (ast.For, ast.AsyncFor, ast.While)) for _b, _i, owner, _f in path):
            return False
        path[-1] = (path[-1][0], where[1], path[-1][2], path[-1][3])
        ctx = self._scope_ctx.get(getattr(fv.scope, "module", None)) if self.project is not None else None
        prev = self.ctx
        switch = ctx is not None and ctx is not prev
        if switch:
            self._entries.append((prev, None, None, False, (), {}))
            self._switch(ctx)
        gst.ctx = st.ctx
        returning = False

        def run(stmts):
            nonlocal returning
            try:
                self.exec_block(stmts, gst)
            except _BlockExit:
                returning = True

        try:
            for block, i, owner, field in reversed(path):
                if not returning:
                    run(block[i + 1:])
                if isinstance(owner, (ast.With, ast.AsyncWith)):
                    gst.ctx = gst.ctx.but(regions=tuple(r for r in gst.regions if r.with_node is not owner))
                if isinstance(owner, ast.Try) or type(owner).__name__ == "TryStar":
                    if field == "body" and not returning:
                        run(owner.orelse)
                    if field != "finalbody":
                        run(owner.finalbody)
        except YieldReached:
            if to_yield:
                raise
        except Crashed:
            if to_yield:
                raise
        finally:
            if switch:
                self._entries.pop()
                self._switch(prev)
        st.ctx = gst.ctx.but(may=st.may)
        return True

    def _rest_of_block(self, st, exit_call=None):
        """The statements after the current one in its block (up to a matching
        ``mode.__exit__(...)``): the body of a region entered without ``with``."""
        if st.cur is None:
            return None
        block, i = st.cur
        end = len(block)
        if exit_call is not None:
            for j in range(i + 1, len(block)):
                if exit_call in self.pos.segment(block[j]):
                    end = j
                    break
        body = block[i + 1 : end]
        if not body:
            return None
        return PseudoWith(body=body, header_end=block[i].end_lineno)


def _path_to_block(body, target, owner=None, field=None, depth=0):
    """The blocks from ``body`` (a function's) down to the block ``target`` (a list of
    statements, by identity): ``[(block, index of the statement holding the next
    level, the statement whose ``field`` the block is)]``, outermost first (the
    function's body has owner None); None when not found."""
    if body is target:
        return [(body, -1, owner, field)]
    if depth > 32:
        return None
    for i, stmt in enumerate(body):
        blocks = [(f, getattr(stmt, f, None)) for f in ("body", "orelse", "finalbody")]
        blocks += [("handler", h.body) for h in getattr(stmt, "handlers", ())]
        blocks += [("case", c.body) for c in getattr(stmt, "cases", ())]
        for name, inner in blocks:
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                sub = _path_to_block(inner, target, stmt, name, depth + 1)
                if sub is not None:
                    return [(body, i, owner, field)] + sub
    return None
