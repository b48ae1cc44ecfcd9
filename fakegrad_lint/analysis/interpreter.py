"""The abstract interpreter over the CPython AST of one file: the walker.

It runs the module body in program order, follows calls to functions, methods
and classes of the same file and of the project's modules (arguments to
parameters, closures, globals, ``self`` attributes), and tracks for every value
whether it is a real tensor that requires grad, a fake tensor (and which real
leaves are in its autograd graph), a FakeTensorMode, or a context manager. Every
time a real requires-grad value becomes an operand of an op while a fake mode
dispatches it, a ``LeakRecord`` is made; a later ``.backward()`` /
``torch.autograd.grad`` on a value whose graph holds that leak marks it as a hazard.

:class:`Interpreter` is the walker's state (the file, its positions, the records)
assembled from one mixin per concern, each in its own module:

- :mod:`.statements` (statements, assignment), :mod:`.expressions` (expressions,
  attributes, MRO lookups), :mod:`.calls` (calls, arguments, builtins),
  :mod:`.definitions` (def/class, decorators, dataclasses, instances);
- :mod:`.regions` (``with``, modes and contexts), :mod:`.torch_calls` and
  :mod:`.method_calls` (torch's API and methods of values), :mod:`.dispatch`
  (ops under a mode: leaks and sinks);
- :mod:`.facts` (records -> proved :class:`~fakegrad_lint.analysis.leaks.Leak` facts
  with traces and fix plans), :mod:`.fix_plans` (fix plans outside the region's block),
  :mod:`.relevance` (which code can reach a region), :mod:`.project_link` (imports of
  project modules);
- pure helpers: :mod:`.state`, :mod:`.valueops`, :mod:`.torch_values`, :mod:`.code_text`.

Top-level functions and methods that can touch a fake region are also analysed
on their own (parameters unknown), so library code with no call site is covered.
Unknown values never produce findings: precision first.
"""

from __future__ import annotations

import ast
import os

from fakegrad_lint.analysis.descriptors import DescriptorsMixin
from fakegrad_lint.analysis.param_leaves import ParamLeavesMixin
from fakegrad_lint.analysis import roots as R
from fakegrad_lint.analysis import state as _state
from fakegrad_lint.analysis import values as _values
from fakegrad_lint.analysis.calls import CallsMixin
from fakegrad_lint.analysis.code_text import _DEFINITIONS
from fakegrad_lint.analysis.definitions import DefinitionsMixin
from fakegrad_lint.analysis.dispatch import DispatchMixin
from fakegrad_lint.analysis.expressions import EXPRESSION_METHODS, ExpressionsMixin
from fakegrad_lint.analysis.facts import FactsMixin
from fakegrad_lint.analysis.fix_plans import FixPlansMixin
from fakegrad_lint.analysis.leaks import Leak
from fakegrad_lint.analysis.method_calls import MethodCallsMixin
from fakegrad_lint.analysis.positions import PositionMap
from fakegrad_lint.analysis.project_link import ProjectLinkMixin
from fakegrad_lint.analysis.regions import RegionsMixin
from fakegrad_lint.analysis.relevance import RelevanceMixin
from fakegrad_lint.analysis.state import Crashed, Scope, State, YieldReached, _BlockExit
from fakegrad_lint.analysis.statements import STATEMENT_METHODS, StatementsMixin
from fakegrad_lint.analysis.torch_calls import TorchCallsMixin
from fakegrad_lint.analysis.values import ClassVal, ConstVal, ModuleVal, ProjModVal


class Interpreter(
    DescriptorsMixin,
    ParamLeavesMixin,
    StatementsMixin,
    ExpressionsMixin,
    CallsMixin,
    DefinitionsMixin,
    MethodCallsMixin,
    TorchCallsMixin,
    RegionsMixin,
    DispatchMixin,
    FixPlansMixin,
    FactsMixin,
    RelevanceMixin,
    ProjectLinkMixin,
):
    """One file's analysis: ``Interpreter(tree, source, project, filename).run()``
    returns its leaks."""

    def __init__(self, tree: ast.Module, source: str, project=None, filename: str | None = None):
        self.tree = tree
        self.source = source
        self.pos = PositionMap(source)
        self._main_pos = self.pos
        self.main_path = os.path.abspath(filename) if project is not None and filename else None
        # whole-project analysis (see analysis/project.py): imports of project
        # modules run those modules; ``ctx`` is the module whose code runs now
        self.project = project
        self.deps: dict = {}  # path -> content hash of every project module loaded
        self._modules: dict = {}  # path -> ProjModVal
        self._entries: list = []  # (from ctx, call site, statement, is_load) per crossing into another module
        self._ctx_entry_words: dict = {}  # ProjModVal -> its ways into a region (RelevanceMixin._entry_words)
        self._opens_memo: dict = {}
        self._gen_regions: dict = {}  # id(generator result) -> (it, regions its yields are in)
        self._own_forward_running: set = set()  # ids of modules whose instance `forward` attribute runs now
        self.may_paths = 0  # blocks run as may paths so far (StatementsMixin.exec_branch)
        self._memo_results: dict = {}  # lru_cache'd function node -> {argument key: first result}
        self._loaded_bytes = 0  # source of the project modules loaded so far
        self._main_ids = None  # ids of the linted file's nodes (computed when needed)
        self.records: dict = {}  # (id(node), id(origin)) -> LeakRecord
        # id(For node) -> the expression naming the real module its loop draws from
        # (`for layer in model.children()` -> `model`): the fix copies that module
        self.loop_modules: dict = {}
        self._getattr_calls: dict = {}  # (id(call), name) -> (call, `obj.name(...)`)
        self.steps = 0
        self.exhausted = False
        self.instances: dict = {}  # ClassVal -> instance for standalone method analysis
        self.module_scope = Scope()
        self.module_scope.func_node = tree
        self._capture_gen = None
        self._manual_undo: dict = {}  # id(context value) -> undo of its explicit __enter__()
        self.method_index: dict = {}  # method name -> def nodes of the classes of the file
        self.defs: dict = {}  # def node -> its FuncVal before decorators (standalone analysis runs it)
        self._matter: dict = {}
        name, is_pkg = R.module_name_of(filename) if project is not None and filename else ("__main__", False)
        self.main = ProjModVal(name, is_pkg, None, self.module_scope)
        self.ctx = self.main
        self._scope_ctx: dict = {self.module_scope: self.main}
        # node type -> bound method (the dispatch tables of statements and expressions)
        self._statement_table = {t: getattr(self, name) for t, name in STATEMENT_METHODS.items()}
        self._expression_table = {t: getattr(self, name) for t, name in EXPRESSION_METHODS.items()}
        _values.CURRENT_FILE[0] = None
        _values.CURRENT_ENTRY[0] = None

    def run(self) -> list[Leak]:
        _values.CURRENT_FILE[0] = None
        _values.CURRENT_ENTRY[0] = None
        st = State(self.module_scope)
        # the file runs as a script (how its hazards show): `if __name__ == "__main__":` is taken
        self.module_scope.vars["__name__"] = ConstVal("__main__")
        stopped = False
        for i, stmt in enumerate(self.tree.body):
            if stopped and not isinstance(stmt, _DEFINITIONS):
                continue  # after a crash only bind what later analysis needs
            st.cur = (self.tree.body, i)
            try:
                self.exec_stmt(stmt, st)
            except (Crashed, _BlockExit, YieldReached):
                stopped = True
        self._standalone()
        return self._leaks()


def analyze_module(tree: ast.Module, source: str, project=None, filename: str | None = None, deps: dict | None = None) -> list[Leak]:
    outer = _state.SCOPES[0]
    _state.SCOPES[0] = scopes = []
    try:
        interp = Interpreter(tree, source, project, filename)
        try:
            return interp.run()
        finally:
            _values.CURRENT_FILE[0] = None
            _values.CURRENT_ENTRY[0] = None
            if deps is not None:
                deps.update(interp.deps)
            _release(interp, scopes)
    finally:
        _state.SCOPES[0] = outer


def _release(interp, scopes):
    """Break the reference cycles of a finished analysis, so that reference counting
    frees its values and the AST they hold as soon as it ends: a scope holds the
    functions defined in it, which hold the scope (a module's scope is its own
    ``module``); a class holds its methods, which hold the class, and is in its own
    MRO; an instance of a module class of the file is its origin's owner; the
    walker holds its own bound methods. Left to the cyclic collector, a
    file's analysis (AST included, ~100,000 objects on torch's larger files) was
    traversed by one or two collections before it was freed. Only what this
    analysis made is touched (its scopes, the classes defined in them); the
    leaks returned keep the AST nodes they name."""
    scopes = [s for s in (r() for r in scopes) if s is not None]
    made = set(map(id, scopes))
    for s in scopes:
        for v in s.vars.values():
            if type(v) is ClassVal and id(v.scope) in made:
                v.methods.clear()
                v.own.clear()
                v.attrs.clear()
                v.mro = ()
            elif type(v) is ModuleVal:
                for m in (v, *v.attrs.values()):
                    o = getattr(m, "origin", None)
                    if o is not None and o.owner is m:
                        o.owner = None  # an instance of a module class of the file and its origin
        s.vars.clear()
        s.parent = s.module = s.func_node = None
    interp.__dict__.clear()
