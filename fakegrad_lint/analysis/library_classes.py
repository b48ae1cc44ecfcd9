"""Library classes the interpreter models (``torch_tables.LIBRARY_CLASSES``), for
their own instances and for the file's subclasses of them: a method a subclass does
not define is the library's, and ``super().name(...)`` reaches the library's.

- ``unittest``: a runner (``unittest.main()``, ``TextTestRunner().run(suite)``,
  ``suite.run(result)``) runs, per TestCase class, ``setUpClass``, then for each
  ``test*`` method in name order a new instance's ``setUp``, the test, ``tearDown``
  and the cleanups ``addCleanup`` registered (last first); what a test raises is
  caught by the runner (a strict mode's AssertionError ends that test only).
- ``torch.fx.Interpreter``: ``run(*args)`` runs the module it was given on them
  (a ``run_node`` the subclass overrides runs on the output, with
  ``super().run_node(n)`` giving it).
- ``threading.Thread``/``Timer``: ``__init__`` keeps the call ``run()`` makes
  (``torch_tables.THREAD_SIGNATURES``), ``start()`` runs ``run()`` (a subclass's
  override, else the library's ``target(*args, **kwargs)``) in a new thread.
- ``FakeTensorMode``: an instance of a subclass is a mode (:class:`ModeVal` with its
  class); ``super().__init__(allow_non_fake_inputs=...)`` decides what it allows,
  ``super().__enter__()`` enters it.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.calls import OpenKwargs
from fakegrad_lint.analysis.heap import heap_field, heap_set
from fakegrad_lint.analysis.state import Crashed, YieldReached, _BlockExit
from fakegrad_lint.analysis.valueops import _dict_val
from fakegrad_lint.analysis.values import (UNKNOWN, ClassVal, ConstVal, CtxVal, FuncVal, InstanceVal, ModeVal, ModRef,
    SeqVal, Value, WorkerVal)

# exceptions a runner (or a library method) catches for the code it runs
_ENDS = (Crashed, _BlockExit, YieldReached)


def library_kind(cls):
    """What the modelled library class of ``cls`` is ("testcase", "enum", ...), or None."""
    q = getattr(cls, "library", None)
    return N.LIBRARY_CLASSES.get(q) if q is not None else None


def _test_names(cls):
    """The test methods unittest's loader finds on ``cls``: ``test*`` functions, sorted."""
    return sorted(n for n, m in cls.methods.items() if n.startswith("test") and isinstance(m, FuncVal))


class LibraryMixin:
    """Methods of the modelled library classes."""

    def library_class(self, q):
        """A class standing for the library class ``q`` itself (``unittest.TestSuite()``)."""
        cache = self.__dict__.setdefault("_library_classes", {})
        cv = cache.get(q)
        if cv is None:
            node = ast.ClassDef(name=q.rsplit(".", 1)[-1], bases=[], keywords=[], body=[], decorator_list=[],
                                type_params=[])
            node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = 1, 0, 1, 0
            cv = ClassVal(node, None, False, {}, (ModRef(q),))
            cv.mro = (cv,)
            cv.library = q
            cache[q] = cv
        return cv

    def new_library_instance(self, cls, args, kwargs, st, node):
        """An instance of a class deriving from a modelled library class, before its
        ``__init__`` runs (a FakeTensorMode subclass: a mode)."""
        if library_kind(cls) == "fake_mode":
            self._modes_made = True
            name = cls.node.name
            return ModeVal(False, getattr(node, "lineno", cls.node.lineno), f"{name}()", node, cls=cls)
        return InstanceVal(cls, {})

    def library_method(self, e, recv, name, args, kwargs, st):
        """``recv.name(...)`` run as the library class of ``recv`` runs it (None: the
        library's method is not modelled, the call is unknown)."""
        kind = library_kind(getattr(recv, "cls", None))
        run = _METHODS.get((kind, name))
        if run is None:
            return None
        return run(self, e, recv, args, kwargs, st)

    def library_attr(self, obj, attr):
        """``obj.attr`` for a method of the library class (a value to call later)."""
        from fakegrad_lint.analysis.values import LibraryMethod

        kind = library_kind(getattr(obj, "cls", None))
        return LibraryMethod(obj, attr) if (kind, attr) in _METHODS else None

    # ------------------------------------------------------------ FakeTensorMode
    def _mode_init(self, e, mode, args, kwargs, st):
        v = kwargs.get(N.MODE_ALLOW_KEYWORD, UNKNOWN if isinstance(kwargs, OpenKwargs) else ConstVal(False))
        heap_field(mode, "allow", bool(v.value) if isinstance(v, ConstVal) else None)
        name = mode.cls.node.name if mode.cls is not None else "FakeTensorMode"
        heap_field(mode, "desc", f"{name}(allow_non_fake_inputs=True)" if mode.allow
                   else (f"{name}()" if mode.allow is False else f"{name}(...)"))
        return UNKNOWN

    def _mode_enter(self, e, mode, args, kwargs, st):
        self.enter(mode, st, [], raw=True)
        return mode

    def _mode_exit(self, e, mode, args, kwargs, st):
        for r in reversed(st.regions):
            if r.mode is mode:
                st.ctx = st.ctx.leaving(r)
                break
        return UNKNOWN

    # ---------------------------------------------------------------- unittest
    def _case_init(self, e, inst, args, kwargs, st):
        heap_set(inst, "_testMethodName", args[0] if args else kwargs.get("methodName", ConstVal("runTest")))
        return UNKNOWN

    def _add_cleanup(self, e, inst, args, kwargs, st):
        if args:
            held = inst.attrs.get("<cleanups>")
            entry = SeqVal((args[0], SeqVal(tuple(args[1:])), _dict_val(list(kwargs), list(kwargs.values()))))
            heap_set(inst, "<cleanups>", SeqVal((held.items if isinstance(held, SeqVal) else ()) + (entry,)))
        return UNKNOWN

    def _do_cleanups(self, e, inst, args, kwargs, st):
        held = inst.attrs.get("<cleanups>")
        if held is not None:
            heap_set(inst, "<cleanups>", SeqVal(()))
        for entry in reversed(held.items if isinstance(held, SeqVal) else ()):
            fn, fargs, fkw = entry.items
            if isinstance(fn, _Undo):
                for undo in reversed(fn.undo):
                    undo(st)
                continue
            try:
                self.call_value(e, fn, list(fargs.items), dict(zip(fkw.keys or (), fkw.elts or ())), st, func_expr=None)
            except _ENDS:
                pass
        return UNKNOWN

    def _enter_context(self, e, inst, args, kwargs, st):
        """``self.enterContext(cm)``: entered now, left by the cleanups."""
        if not args:
            return UNKNOWN
        undo = []
        res = self.enter(args[0], st, undo)
        if undo:
            held = inst.attrs.get("<cleanups>")
            entry = SeqVal((_Undo(undo), SeqVal(()), _dict_val([], [])))
            heap_set(inst, "<cleanups>", SeqVal((held.items if isinstance(held, SeqVal) else ()) + (entry,)))
        return res

    def _assert_raises(self, e, inst, args, kwargs, st):
        caught = args[0] if args else kwargs.get("expected_exception", UNKNOWN)
        names = [x.qualname for x in (caught.items if isinstance(caught, SeqVal) else (caught,)) if isinstance(x, ModRef)]
        catches = any(n.rsplit(".", 1)[-1] in N.CATCHES_ASSERTION and n.startswith("builtins.") for n in names)
        if len(args) < 2:
            return CtxVal("suppress_assert" if catches else "null")  # `with self.assertRaises(E):`
        before = set(self.records)
        try:
            self.call_value(e, args[1], list(args[2:]), kwargs, st, func_expr=None)
        except Crashed:
            if not catches:
                raise
        finally:
            if catches:
                self.crashes_caught(before)
        return UNKNOWN

    def _null_context(self, e, inst, args, kwargs, st):
        return CtxVal("null")

    def _nothing(self, e, inst, args, kwargs, st):
        return UNKNOWN

    def _case_run(self, e, inst, args, kwargs, st):
        self.run_tests(e, [inst], st)
        return UNKNOWN

    def run_tests(self, e, tests, st):
        """Run ``tests`` (TestCase classes, instances, suites) as unittest's runner does."""
        order = []  # (class, instance) in run order
        self._collect_tests(tests, order, 0, st)
        done_classes = []
        for cls, inst in order:
            if not any(cls is c for c in done_classes):
                done_classes.append(cls)
                self._run_fixture_method(e, cls, "setUpClass", cls, st)
            self.run_one_test(e, inst, st)
        for cls in done_classes:
            self._run_fixture_method(e, cls, "tearDownClass", cls, st)

    def _collect_tests(self, tests, order, depth, st):
        for t in tests:
            if depth > 4:
                return
            if isinstance(t, ClassVal) and library_kind(t) == "testcase":
                for name in _test_names(t):
                    inst = self.instantiate(t, [ConstVal(name)], {}, st, None)
                    if isinstance(inst, InstanceVal):
                        order.append((t, inst))
            elif isinstance(t, InstanceVal) and library_kind(t.cls) == "testcase":
                order.append((t.cls, t))
            elif isinstance(t, InstanceVal) and library_kind(t.cls) == "test_suite":
                held = t.attrs.get("<tests>")
                self._collect_tests(held.items if isinstance(held, SeqVal) else (), order, depth + 1, st)
            elif isinstance(t, SeqVal):
                self._collect_tests(t.items, order, depth + 1, st)

    def _run_fixture_method(self, e, cls, name, first, st):
        fn = cls.lookup_method(name)
        if fn is None:
            return True
        try:
            self.call_function(fn, [first], {}, st, force=True)
        except _ENDS:
            return False
        return True

    def run_one_test(self, e, inst, st):
        """One test: setUp, the test method, tearDown (when setUp succeeded), then the
        cleanups; the runner catches what they raise (a strict mode's crash there is
        not the program's: it goes on)."""
        name = inst.attrs.get("_testMethodName")
        method = inst.cls.lookup_method(name.value) if isinstance(name, ConstVal) and isinstance(name.value, str) else None
        if method is None:
            return
        before = set(self.records)
        try:
            if self._run_fixture_method(e, inst.cls, "setUp", inst, st):
                try:
                    self.call_function(method, [inst], {}, st, force=True)
                except _ENDS:
                    pass
                self._run_fixture_method(e, inst.cls, "tearDown", inst, st)
            self._do_cleanups(e, inst, [], {}, st)
        finally:
            self.crashes_caught(before)

    # ------------------------------------------------------- suites and runners
    def _suite_init(self, e, suite, args, kwargs, st):
        tests = args[0] if args else kwargs.get("tests")
        heap_set(suite, "<tests>", SeqVal(tuple(tests.items) if isinstance(tests, SeqVal) else ()))
        return UNKNOWN

    def _suite_add(self, e, suite, args, kwargs, st):
        held = suite.attrs.get("<tests>")
        items = held.items if isinstance(held, SeqVal) else ()
        for a in args:
            items += tuple(a.items) if isinstance(a, SeqVal) else (a,)
        heap_set(suite, "<tests>", SeqVal(items))
        return UNKNOWN

    def _suite_run(self, e, suite, args, kwargs, st):
        self.run_tests(e, [suite], st)
        return UNKNOWN

    def _load_case(self, e, loader, args, kwargs, st):
        return self.new_suite(args[:1], st)

    def new_suite(self, tests, st):
        suite = InstanceVal(self.library_class("unittest.TestSuite"), {})
        suite.attrs["<tests>"] = SeqVal(tuple(t for t in tests if isinstance(t, ClassVal)))
        return suite

    def _runner_run(self, e, runner, args, kwargs, st):
        if args:
            self.run_tests(e, [args[0]], st)
        return UNKNOWN

    def unittest_main(self, e, args, kwargs, st):
        """``unittest.main()``: every TestCase class of the running module, by name."""
        scope = st.scope.module
        classes = [v for k, v in sorted(scope.vars.items()) if isinstance(v, ClassVal) and library_kind(v) == "testcase"]
        self.run_tests(e, classes, st)
        return UNKNOWN

    # ------------------------------------------------------------- torch.fx
    def _fx_init(self, e, interp, args, kwargs, st):
        heap_set(interp, "module", args[0] if args else kwargs.get("module", UNKNOWN))
        return UNKNOWN

    def _fx_run(self, e, interp, args, kwargs, st):
        mod = interp.attrs.get("module", UNKNOWN)
        out = self.call_value(e, mod, list(args), {}, st, func_expr=None)
        override = interp.cls.lookup_method("run_node")
        if override is None:
            return out
        heap_set(interp, "<fx output>", out)  # what the library's run_node gives the override
        try:
            return self.call_function(override, [interp, UNKNOWN], {}, st, force=True)
        except (YieldReached, _BlockExit):
            return UNKNOWN
        finally:
            heap_set(interp, "<fx output>", UNKNOWN)

    def _fx_run_node(self, e, interp, args, kwargs, st):
        return interp.attrs.get("<fx output>", UNKNOWN)


    # ------------------------------------------------------------- threading
    def _thread_init(self, e, inst, args, kwargs, st):
        """``Thread.__init__(group, target, name, args, kwargs, *, daemon)`` /
        ``Timer.__init__(interval, function, args, kwargs)``: the call ``run()`` makes
        (None: not known)."""
        target = thread_target(library_kind(inst.cls), args, kwargs)
        heap_set(inst, "<target>", UNKNOWN if target is None else WorkerVal("thread", target))
        return UNKNOWN

    def _thread_start(self, e, inst, args, kwargs, st):
        """``start()``: ``run()`` (the subclass's, else the library's) in a new thread."""
        run = inst.cls.lookup_method("run")
        if run is not None:
            self._in_new_thread(lambda: self.call_function(run, [inst], {}, st, force=True), st)
        else:
            self._in_new_thread(lambda: self._thread_run(e, inst, [], {}, st), st)
        return UNKNOWN

    def _thread_run(self, e, inst, args, kwargs, st):
        target = inst.attrs.get("<target>")
        if isinstance(target, WorkerVal):
            fn, targs, tkw = target.target
            self.call_value(e, fn, list(targs), dict(tkw), st, func_expr=None)
        return UNKNOWN


def thread_target(kind, args, kwargs):
    """(fn, args, kwargs) a ``Thread``/``Timer`` constructed with ``args``/``kwargs``
    calls in ``run()`` (``torch_tables.THREAD_SIGNATURES``), or None when any part is
    not known (no function, ``*args`` not a known tuple, ``**kwargs`` not a known dict)."""
    names, fn_name = N.THREAD_SIGNATURES[kind]
    bound = dict(zip(names, args))
    if len(args) > len(names) or any(k in bound for k in kwargs):
        return None
    bound.update(kwargs)
    fn = bound.get(fn_name)
    if fn is None or isinstance(kwargs, OpenKwargs):
        return None
    targs = bound.get("args", SeqVal((), ()))
    tkw = bound.get("kwargs", ConstVal(None))
    if isinstance(targs, ConstVal) and targs.value is None:
        targs = SeqVal((), ())
    if isinstance(tkw, ConstVal) and tkw.value is None:
        tkw = SeqVal((), (), (), is_dict=True)
    if not (isinstance(targs, SeqVal) and targs.elts is not None and targs.keys is None):
        return None
    if not (isinstance(tkw, SeqVal) and tkw.is_dict and tkw.keys is not None and tkw.elts is not None):
        return None
    return fn, tuple(targs.elts), dict(zip(tkw.keys, tkw.elts))


class _Undo(Value):
    """A cleanup that leaves what ``enterContext`` entered."""

    def __init__(self, undo):
        self.undo = undo


_METHODS = {
    ("fake_mode", "__init__"): LibraryMixin._mode_init,
    ("fake_mode", "__enter__"): LibraryMixin._mode_enter,
    ("fake_mode", "__exit__"): LibraryMixin._mode_exit,
    ("testcase", "__init__"): LibraryMixin._case_init,
    ("testcase", "addCleanup"): LibraryMixin._add_cleanup,
    ("testcase", "doCleanups"): LibraryMixin._do_cleanups,
    ("testcase", "enterContext"): LibraryMixin._enter_context,
    **{("testcase", n): LibraryMixin._assert_raises for n in N.TESTCASE_RAISES},
    **{("testcase", n): LibraryMixin._null_context for n in N.TESTCASE_NULL_CONTEXTS},
    **{("testcase", n): LibraryMixin._nothing for n in ("setUp", "tearDown", "setUpClass", "tearDownClass")},
    ("testcase", "run"): LibraryMixin._case_run,
    ("testcase", "__call__"): LibraryMixin._case_run,
    ("test_suite", "__init__"): LibraryMixin._suite_init,
    ("test_suite", "addTest"): LibraryMixin._suite_add,
    ("test_suite", "addTests"): LibraryMixin._suite_add,
    ("test_suite", "run"): LibraryMixin._suite_run,
    ("test_suite", "__call__"): LibraryMixin._suite_run,
    ("test_loader", "loadTestsFromTestCase"): LibraryMixin._load_case,
    ("test_runner", "run"): LibraryMixin._runner_run,
    ("fx_interpreter", "__init__"): LibraryMixin._fx_init,
    ("fx_interpreter", "run"): LibraryMixin._fx_run,
    ("fx_interpreter", "run_node"): LibraryMixin._fx_run_node,
    **{(k, "__init__"): LibraryMixin._thread_init for k in N.THREAD_SIGNATURES},
    **{(k, "start"): LibraryMixin._thread_start for k in N.THREAD_SIGNATURES},
    **{(k, "run"): LibraryMixin._thread_run for k in N.THREAD_SIGNATURES},
    **{(k, n): LibraryMixin._nothing for k in N.THREAD_SIGNATURES for n in ("join", "is_alive", "setDaemon")},
}
