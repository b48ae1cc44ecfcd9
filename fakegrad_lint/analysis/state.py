"""The interpreter's state, kept apart from the walker: typed scopes (name ->
abstract value, with ``global`` declarations), the per-path :class:`State` (the
scope, the immutable dispatch context, the call stack and call sites), and the
exceptions that end a path (a strict-mode crash, a ``yield`` reached while
entering a ``@contextmanager`` helper, a ``return``/``break``/``raise``).

Nothing here walks the AST or knows torch.
"""

from __future__ import annotations

from weakref import ref

from fakegrad_lint.analysis.context import CallSite, DispatchContext
from fakegrad_lint.analysis.values import Value

MAX_DEPTH = 6


STEP_BUDGET = 400_000

# a loop over a sequence of known elements runs once per element (Python's own
# order) when it has at most this many, nested at most UNROLL_DEPTH deep
UNROLL_MAX = 8
UNROLL_DEPTH = 2
# ... or, for an outermost loop, this many when each element is keyed by a constant (a
# dict's keys or its `items()`: a module's namespace `vars(mod)`, a registry), whose
# loop bodies mostly select by that key (`if name.startswith("test_")`)
UNROLL_MAX_KEYED = 32


class Crashed(Exception):
    """A strict fake mode met a real tensor: execution stops here."""


class YieldReached(Exception):
    def __init__(self, state, value):
        self.state = state
        self.value = value


class _BlockExit(Exception):
    """return / break / continue / raise: the rest of the block is dead. ``kind``
    says which (a loop run once per known element needs to know)."""

    def __init__(self, kind="return", exc=None):
        super().__init__(kind)
        self.kind = kind
        self.exc = exc  # a raise: the class of what it raises, when known (a ClassVal or a builtin's ModRef)


class PseudoWith:
    """The body of a region opened by ``mode.__enter__()`` or
    ``ExitStack.enter_context(mode)``, shaped like a ``with`` for the fix builders."""

    def __init__(self, body, header_end):
        self.body = body
        self.header_end = header_end
        self.items = []
        self.bind_stmt = None


# Weak references to the scopes made while an analysis runs, so that it can break
# the cycles of those still alive when it ends (``interpreter._release``; a scope no
# value refers to is freed at once, as before); None outside an analysis.
SCOPES: list = [None]


class Scope:
    __slots__ = ("vars", "parent", "module", "global_names", "nonlocal_names", "func_node", "__weakref__")

    def __init__(self, parent=None, module=None, func_node=None):
        made = SCOPES[0]
        if made is not None:
            made.append(ref(self))
        self.vars: dict[str, Value] = {}
        self.parent = parent
        self.module = module if module is not None else self
        self.global_names: set[str] = set()
        self.nonlocal_names: set[str] = set()  # `nonlocal x`: x lives in an enclosing function's scope
        self.func_node = func_node

    def lookup(self, name):
        s = self
        while s is not None:
            v = s.vars.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def assign(self, name, value):
        if name in self.global_names:
            self.module.vars[name] = value
        elif name in self.nonlocal_names:
            # the nearest enclosing scope below the module's that binds it (Python
            # resolves `nonlocal` at compile time to exactly that one)
            s = self.parent
            while s is not None and s is not self.module and name not in s.vars:
                s = s.parent
            (s if s is not None and s is not self.module else self).vars[name] = value
        else:
            self.vars[name] = value


# the context outside every region: one shared value (a context is immutable, and
# nothing compares contexts by identity), not one per State made
_NO_CONTEXT = DispatchContext()


class State:
    """Where the interpreter is: the scope, the dispatch context (one immutable
    value, ``ctx``) and the call stack."""

    __slots__ = ("scope", "ctx", "returns", "depth", "stack", "self_val", "sites", "cur", "fv", "yield_regions")

    def __init__(self, scope):
        self.scope = scope
        self.ctx = _NO_CONTEXT
        self.returns: list = []
        self.depth = 0
        self.stack: tuple = ()
        self.self_val = None
        self.sites: tuple[CallSite, ...] = ()  # one per descent into a function
        self.cur = None  # (block, index) of the statement being executed
        self.fv = None  # the FuncVal being run
        self.yield_regions = None  # a plain generator's run: the regions active at each yield

    def child(self, scope):
        # (every slot set once: this runs for every call the analysis follows)
        c = _new_state(State)
        c.scope = scope
        c.ctx = self.ctx
        c.returns = []
        c.depth = self.depth + 1
        c.stack = self.stack
        c.self_val = None
        c.sites = self.sites
        c.cur = c.fv = c.yield_regions = None
        return c

    # the fields of the context, read (and replaced) by name
    regions = property(lambda self: self.ctx.regions)
    patched = property(lambda self: self.ctx.patched)
    grad_enabled = property(lambda self: self.ctx.grad_enabled,
                            lambda self, v: setattr(self, "ctx", self.ctx.but(grad_enabled=v)))
    dispatch_off = property(lambda self: self.ctx.dispatch_off,
                            lambda self, v: setattr(self, "ctx", self.ctx.but(dispatch_off=v)))
    fake_copy = property(lambda self: self.ctx.fake_copy,
                         lambda self, v: setattr(self, "ctx", self.ctx.but(fake_copy=v)))
    meta_device = property(lambda self: self.ctx.meta_device,
                           lambda self, v: setattr(self, "ctx", self.ctx.but(meta_device=v)))
    may = property(lambda self: self.ctx.may, lambda self, v: setattr(self, "ctx", self.ctx.but(may=v)))

    def active_region(self):
        return self.ctx.active_region()

    def allow_of(self, mode):
        return self.ctx.allow_of(mode)


_new_state = object.__new__
