"""Abstract values tracked by the interpreter.

Each value answers the questions the rules ask: is it a real tensor that
requires grad (and where did it come from), is it fake (and which mode made it,
and which leaks are in its autograd graph), is it a mode or a context manager.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


# The project module whose code the interpreter is running (None: the linted
# file). Origins and regions remember it, for the trace of a finding.
CURRENT_FILE: list = [None]


def _current_file():
    return CURRENT_FILE[0]


# The call of the linted file's code into another project module that the running
# code was reached by (the entry itself, ``MODULE_BODY`` for the body of an imported
# module, None for the linted file's own code). Origins remember it: a real value
# made by an earlier call of the linted file (``model = build()``) and handed over
# through module state (a registry, a global) comes from the linted file too.
CURRENT_ENTRY: list = [None]
MODULE_BODY = object()


def _current_entry():
    return CURRENT_ENTRY[0]


class Value:
    """Base: an unknown value."""

    __slots__ = ()

    def real_rg(self) -> frozenset:
        return frozenset()

    def taint(self) -> frozenset:
        return frozenset()

    def fake_mode(self):
        return None

    def proven_rg(self) -> bool:
        """Is this, on every path, a real value with requires-grad provenance?"""
        return bool(self.real_rg())

    def proven_fake(self) -> bool:
        """Is this, on every path, a fake value?"""
        return False


class _Unknown(Value):
    __slots__ = ()

    def __repr__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()


@dataclass(eq=False)
class Origin:
    """Where a real requires-grad value was made."""

    name: str  # "x", "model", "self.net"
    kind: str  # "tensor", "parameter", "module", "parameters"
    line: int
    grad_reads: list = field(default_factory=list)  # lines where `.grad` of it is read
    parent: "Origin | None" = None  # a module's origin, for its `.weight`/`.bias`
    param: str | None = None  # which parameter of ``parent`` this is
    param_names: frozenset | None = None  # a module's parameters, when known
    frozen: set = field(default_factory=set)  # parameters switched off one by one
    disabled: bool = False  # requires_grad switched off (e.g. every parameter frozen)
    owner: object = None  # the ModuleVal of a module of the file (its submodules are its parameters too)
    # its .grad is a real tensor (a real backward reached it, no zero_grad since): True,
    # None when that holds on some paths only; a backward through a fake op then
    # accumulates into the real .grad in place, and the .grad stays real
    grad_real: object = False
    # a fake tensor was written to its .grad (`p.grad = fake`) and is still there: True
    # (None on some paths only); a reset (`zero_grad()`, `p.grad = None`) ends it
    fake_grad: object = False
    file: object = field(default_factory=_current_file)  # project module it was made in (None: the linted file)
    made_in: object = field(default_factory=_current_entry)  # CURRENT_ENTRY when it was made
    # a module whose parameters' requires-grad is not known (one returned by a call the
    # analysis cannot follow, given real storage by ``to_empty``): its leaks are only
    # possible until the program proves it (a backward that would raise otherwise)
    rg_unknown: bool = False
    # a layer's per-parameter origins by parameter name, made once when its parameters are
    # first seen one by one (param_leaves.py); None until then
    leaves: "dict | None" = None


def origin_order(o: Origin):
    """A stable order of origins (sets of them iterate in address order): where each was
    made, so that which of several origins a finding names is the same on every run."""
    return (str(getattr(o.file, "path", "") or ""), o.line, o.name, o.kind, o.param or "")


@dataclass(eq=False)
class LeakRecord:
    """A real requires-grad value entering a fake op (mutable until the end of the file)."""

    node: ast.AST
    origin: Origin
    value_text: str
    region: "Region"
    route: str  # "in-region" | "leaked-mix"
    crash: bool
    sinks: list = field(default_factory=list)  # (description, line)
    fix_plan: object = None
    value_kind: str = "tensor"  # "tensor", "parameter", "module", "container"
    may: bool = False  # some link is only possible (a may value, a may region): never a default finding
    file: object = None  # project module of ``node`` (None: the linted file)
    entry: object = None  # when ``file`` is set: (call node, arg exprs, arg values, statement) in the linted file
    sink_sites: list = field(default_factory=list)  # (description, node, project module or None)
    grad_written: bool = False  # made by `p.grad = fake`: a hazard while the fake .grad stays (to the end)
    # the origin's requires-grad is not known (``Origin.rg_unknown``) and no sink proved it yet;
    # ``rg_proof``: (description, node) of the backward that proves it
    rg_unproved: bool = False
    rg_proof: object = None
    # the call of the linted file that handed the real value to the function doing the op
    # (its innermost call site whose arguments or receiver carry it): (call node, argument expr)
    handover: object = None


@dataclass(eq=False)
class ModeVal(Value):
    """A FakeTensorMode object (entering it opens a fake region)."""

    allow: object  # True, False or None (unknown)
    line: int
    desc: str
    node: ast.AST | None = None  # the constructor call, when known
    conditional: bool = False  # chosen by a conditional expression (`... if FLAG else nullcontext()`)
    file: object = field(default_factory=_current_file)  # project module that made it (None: the linted file)
    cls: object = None  # an instance of a subclass of the file: its ClassVal
    attrs: dict = field(default_factory=dict)  # (of such an instance)

    def __repr__(self):
        return f"Mode({self.desc}, allow={self.allow})"


@dataclass(eq=False)
class Region:
    mode: ModeVal
    allow: object  # effective (after patch.object)
    with_node: ast.AST | None = None  # the `with` statement that opened it, when direct
    item_index: int = -1
    bound_name: str | None = None  # how the code can name the mode inside the region
    uses: dict = field(default_factory=dict)  # (fix kind, value text) -> expressions that leak it here
    may: bool = False  # entered on some paths only (a context chosen by an unknown condition or key)
    func_node: object = None  # the function whose code entered it (None: implicit)
    file: object = field(default_factory=_current_file)  # project module that entered it (None: the linted file)


@dataclass(frozen=True, eq=False)
class TVal(Value):
    """A tensor. ``origins``: real requires-grad provenance (empty: no grad or fake).
    ``mode``: the FakeTensorMode it belongs to when fake. ``leaks``: leak records in
    its autograd graph (for fake values computed from real requires-grad ones)."""

    origins: frozenset = frozenset()
    mode: ModeVal | None = None
    leaks: frozenset = frozenset()
    derived: bool = False  # computed from a requires-grad value (not a leaf)
    may_fake: bool = False  # made in a region entered on some paths only (fake or real)
    shape: tuple | None = None  # its sizes, when known on every path (a tuple of ints)
    device: str | None = None  # the device type of its storage, when known ("cpu", "meta")
    itemsize: int | None = None  # bytes per element, when its dtype is known (a factory's)
    # every leaf of its graph that can require grad is known: its origins and the origins
    # of its leaks (False: an operand the analysis does not know, a fake requires-grad leaf)
    closed: bool = False

    def real_rg(self):
        return self.origins if self.mode is None else frozenset()

    def taint(self):
        return self.leaks

    def fake_mode(self):
        return self.mode

    def proven_fake(self):
        return self.mode is not None and not self.may_fake


@dataclass(eq=False)
class ModuleVal(Value):
    """An nn.Module instance. Real modules built outside a region carry real parameters."""

    origin: Origin | None  # None: fake / no parameters
    mode: ModeVal | None = None
    cls: object = None  # ClassVal for modules defined in the file
    attrs: dict = field(default_factory=dict)
    meta: bool = False  # parameters on the meta device: no data, but not fake either (a fake mode
    # treats them as non-fake inputs: a strict one crashes, an allowing one fakes their .grad)
    may_fake: bool = False  # made in a region entered on some paths only (fake or real)
    fake_out: bool = False  # its forward is known to use fake parameters: calling it, anywhere, gives fakes
    container: bool = False  # a torch container (Sequential, ModuleList, ModuleDict): its forward runs every child
    torch_class: str | None = None  # a torch layer's class name ("Linear"), when built by its constructor
    children: tuple | None = None  # a container's child names, in order, when every child is known (attrs hold them)
    sequence: int = 0  # a Sequential of known children: how many (attrs "0", "1", ...), run in turn
    device: str | None = None  # the device type of all its storage, when known (set by to_empty(device=...))
    # a value the analysis could not follow, known to be a module only by a method no
    # other common type has (``to_empty``, ``named_modules``...): its class, parameters and
    # forward are not known (``analysis.torch_tables.MODULE_ONLY_METHODS``)
    opaque: bool = False
    layer_args: tuple | None = None  # a torch layer's constant constructor arguments (args, kwargs), for its output shape

    def is_real(self):
        return self.origin is not None and self.mode is None

    def real_rg(self):
        return frozenset([self.origin]) if self.is_real() else frozenset()

    def fake_mode(self):
        return self.mode

    def proven_fake(self):
        """Are its outputs fake on every path (a module built in a region, with fake parameters)?"""
        return self.mode is not None and self.fake_out and not self.may_fake


class _OfParts:
    """A value made of other values (its ``parts()``): it carries what each of them does."""

    def real_rg(self):
        out = frozenset()
        for v in self.parts():
            out |= v.real_rg()
        return out

    def taint(self):
        out = frozenset()
        for v in self.parts():
            out |= v.taint()
        return out

    def fake_mode(self):
        for v in self.parts():
            m = v.fake_mode()
            if m is not None:
                return m
        return None


@dataclass(frozen=True, eq=False)
class SeqVal(_OfParts, Value):
    """A container (list, tuple, dict, generator); ``items`` is the join of its elements,
    ``elts`` the positional elements when known (tuples)."""

    items: tuple = ()
    elts: tuple | None = None
    keys: tuple | None = None  # a dict with constant keys: keys[i] names elts[i]
    is_dict: bool = False  # a mapping: ``items`` are its values, iterating it gives its keys

    def lookup(self, key):
        """The value under a constant key of a dict with known keys (None: not known)."""
        if self.keys is None or self.elts is None:
            return None
        for k, v in zip(self.keys, self.elts):
            if k == key and type(k) is type(key):
                return v
        return None

    def parts(self):
        return self.items


@dataclass(frozen=True, eq=False)
class ConstVal(Value):
    value: object


@dataclass(frozen=True, eq=False)
class ModRef(Value):
    """A module or an imported name, by qualified name."""

    qualname: str


@dataclass(eq=False)
class FuncVal(Value):
    node: ast.AST  # FunctionDef / AsyncFunctionDef / Lambda
    scope: object  # defining Scope (closures see it)
    cls: object = None
    contextmanager: bool = False
    grad_off: bool = False  # decorated with @torch.no_grad()
    kind: str = "plain"  # "plain", "static", "class", "property" (how a class attribute binds)
    defaults: list = field(default_factory=list)
    kw_defaults: dict = field(default_factory=dict)
    wrapped: "FuncVal | None" = None  # a decorator's wrapper: the function it was given
    memo: bool = False  # functools.lru_cache / cache: equal arguments give the first result
    # context managers used as its decorators (a ContextDecorator: `@torch.enable_grad()`,
    # `@my_contextmanager()`): each call of the function runs inside them, outermost first
    contexts: tuple = ()
    setter: "FuncVal | None" = None  # a property's `@name.setter` function: `obj.name = v` calls it
    cached: bool = False  # a functools.cached_property: the first read's value stays in obj.__dict__


@dataclass(eq=False)
class BoundMethod(Value):
    """``func`` bound to ``self_val``: a method looked up on an instance (or a class
    method on its class)."""

    func: FuncVal
    self_val: Value


@dataclass(eq=False)
class ClassVal(Value):
    node: ast.ClassDef
    scope: object
    is_module: bool
    methods: dict = field(default_factory=dict)  # every method visible, by the MRO
    bases: tuple = ()
    own: dict = field(default_factory=dict)  # methods defined in this class body
    attrs: dict = field(default_factory=dict)  # class attributes defined in this class body (or set later)
    mro: tuple = ()  # in-file classes, this one first (C3 linearization)
    torch_base: bool = False  # derives from a torch.nn class that has parameters of its own
    dataclass: bool = False
    matters: bool = False  # its code (or a base's) can open a region or make a real requires-grad value
    # the library class it derives from, when the analysis models that class's methods
    # (torch_tables.LIBRARY_CLASSES): its qualified name, e.g. "unittest.TestCase"
    library: str | None = None
    members: dict | None = None  # an enum: member name -> the member (an InstanceVal)
    meta: "ClassVal | None" = None  # its metaclass, when a class of the file (given or inherited)

    def lookup_method(self, name):
        """The function Python would run for ``name`` (None: none known to be a function)."""
        for c in self.mro or (self,):
            m = c.own.get(name)
            if m is not None:
                return m if isinstance(m, FuncVal) else None
        m = self.methods.get(name)
        return m if isinstance(m, FuncVal) else None

    def lookup_attr(self, name):
        for c in self.mro or (self,):
            if name in c.attrs:
                return c.attrs[name]
        return None

    def fields(self):
        """Annotated class-level names, bases first (dataclass / NamedTuple order)."""
        out = []
        for c in reversed(self.mro or (self,)):
            for n in c.node.body:
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id not in out:
                    out.append(n.target.id)
        return out


@dataclass(eq=False)
class InstanceVal(Value):
    cls: ClassVal
    attrs: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class CtxVal(Value):
    """A context manager other than a mode: kind in {"null", "grad_off", "grad_on",
    "unset_fake", "fake_copy", "exit_stack", "patch_allow", "gen"}."""

    kind: str
    target: object = None  # patch_allow: the ModeVal; gen: (FuncVal, args); fake_copy: ModeVal


@dataclass(frozen=True, eq=False)
class GetterVal(Value):
    """``operator.attrgetter(*names)`` (kind "attr") / ``itemgetter(*keys)`` ("item") /
    ``methodcaller(name, *args, **kwargs)`` ("method": keys ``(name, args, kwargs items)``)."""

    kind: str
    keys: tuple


@dataclass(eq=False)
class GeneratorVal(Value):
    """A generator object: ``fv`` called with ``args``/``kwargs``. Its body runs as the
    generator is consumed (a ``for``, ``next()``, ``list()``, ``yield from``), up to
    where consumption stops; a generator nobody resumes never runs past its yield.
    ``state``: "new" (not started), "suspended" (at a yield, ``frame`` the
    generator's state there), "done" (exhausted or closed), "unknown" (resumed where
    the analysis cannot follow it)."""

    fv: object
    args: list
    kwargs: dict
    site: object = None
    state: str = "new"
    frame: object = None  # the generator's State at the yield it is suspended at
    held: tuple = ()  # regions it entered and is suspended inside (active for its consumer)


@dataclass(eq=False)
class ExitStackVal(Value):
    pushed: list = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class MaybeVal(_OfParts, Value):
    """One of several values (``each=False``: a conditional whose test is unknown, a
    lookup by an unknown key, a function with several returns), or each of several
    (``each=True``: the elements of a container, all of them used)."""

    options: tuple
    each: bool = False

    def proven_rg(self):
        opts = [o for o in self.options if not _is_none(o)]
        if not opts:
            return False
        if self.each:
            return any(o.proven_rg() for o in opts)
        return all(o.proven_rg() for o in opts)

    def parts(self):
        return self.options


@dataclass(eq=False)
class TracedFn(Value):
    """make_fx(f, tracing_mode="fake", ...): calling it runs f under a fake mode."""

    func: Value
    mode: ModeVal


@dataclass(eq=False)
class OptimizerVal(Value):
    params: Value
    attrs: dict = field(default_factory=dict)  # its step hooks, under torch's attribute names (heap_set)


@dataclass(eq=False)
class ExportedProgramVal(Value):
    """torch.export.export(m, args): ``.module()`` keeps m's parameters; calling the
    program itself fakifies them (not a leak by the caller)."""

    module: Value


@dataclass(eq=False)
class TransformVal(Value):
    """torch.func.grad(f) and friends: calling it runs f; ``kind`` says what it returns."""

    kind: str
    func: Value
    argnums: object = 0


@dataclass(eq=False)
class SingleDispatchVal(Value):
    """``functools.singledispatch(default)``: a call runs the implementation registered
    for the type of its first argument (``method``: singledispatchmethod, the argument
    after ``self``). ``registry``: (type value, implementation) in registration order."""

    default: Value
    registry: list = field(default_factory=list)
    method: bool = False


@dataclass(eq=False)
class DispatchRegister(Value):
    """``sd.register`` (or ``sd.register(cls)``): a decorator that registers what it is
    given under ``cls``, or under its first parameter's annotation."""

    sd: SingleDispatchVal
    cls: Value | None = None


@dataclass(eq=False)
class LibraryMethod(Value):
    """A method of a modelled library class (``analysis.library_classes``) looked up on
    ``recv`` (``super().__init__``, ``self.addCleanup``): calling it runs the library's."""

    recv: Value
    name: str


@dataclass(eq=False)
class WeakRefVal(Value):
    """``weakref.ref(target)``: calling it gives ``target`` while something holds it
    (proved only for a value a module-level name holds), else None."""

    target: Value


@dataclass(eq=False)
class ReturnsVal(Value):
    """A function known only by what calling it returns (``torch.func.vjp``'s ``vjp_fn``)."""

    result: Value


@dataclass(eq=False)
class FieldVal(Value):
    """dataclasses.field(default=..., default_factory=...)."""

    default: Value | None = None
    factory: Value | None = None


@dataclass(eq=False)
class PartialVal(Value):
    """functools.partial(func, *args, **kwargs)."""

    def __init__(self, func, args, kwargs):
        self.func, self.args, self.kwargs = func, args, kwargs


class AutogradApply(Value):
    """``Cls.apply`` of a ``torch.autograd.Function`` subclass: a call is one
    differentiable op on its tensor arguments (its ``forward`` dispatches on them and
    its ``backward`` sends gradients back to them)."""

    def __init__(self, cls):
        self.cls = cls


class DecoratorVal(Value):
    """A decorator known by what it does: ``identity`` (functools.wraps(fn),
    torch.compile(mode=...)) returns the function it is given."""

    kind: str = "identity"


@dataclass(eq=False)
class ArgParserVal(Value):
    """An ``argparse.ArgumentParser`` (or one of its groups): the arguments its
    ``add_argument`` calls declare, parsed by argparse itself when the argument list is
    known (``valueops.argparse_parse``). ``complete`` is False once a call it cannot read
    was made (then parsing gives no known namespace)."""

    defaults: dict = field(default_factory=dict)  # set_defaults(): dest -> Value
    complete: bool = True
    specs: list = field(default_factory=list)  # (group, flags, options, opaque dest) per add_argument, in order
    options: dict = field(default_factory=dict)  # the constructor's plain options (prog, prefix_chars...)
    root: "ArgParserVal | None" = None  # a group: the parser it declares into
    group: tuple | None = None  # a mutually exclusive group: ("mutex", n, required)


@dataclass(frozen=True, eq=False)
class RealTreeVal(Value):
    """What ``torch.load`` (TENSOR_LOADERS) returned outside every fake region: a tree
    of containers of unknown structure whose tensors are all real (``ckpt["model"]``,
    ``ckpt.get("state")``: a part of the same tree). Whether they require grad is not
    known; that they are not fake is."""


@dataclass(eq=False)
class DataFileVal(Value):
    """A data file of the project opened for reading by a constant path
    (``open("config.json")``): its text, as the program run from the project reads it."""

    text: str
    path: str


@dataclass(eq=False)
class MethodRef(Value):
    """``recv.name`` read without calling it, for a receiver whose methods are torch's
    (a torch module, a tensor, an optimizer): calling it later is ``recv.name(...)``
    (``fwd = model.forward``, ``getattr(model, "forward")`` in a proxy's ``__getattr__``)."""

    recv: Value
    name: str

    def real_rg(self):
        return frozenset()


@dataclass(eq=False)
class ChildName(Value):
    """A name ``module.named_children()`` yields: ``setattr(module, name, m)`` replaces
    one of its children with ``m`` (which one is not known)."""

    module: Value


@dataclass(eq=False)
class WorkerVal(Value):
    """A thread pool (``kind="executor"``) or a ``threading.Thread`` (``kind="thread"``,
    with its target call): the functions given to it run where they are started."""

    kind: str
    target: object = None  # thread: (fn, args, kwargs)
    result: object = None  # a future: the function's return value


@dataclass(eq=False)
class HookHandle(Value):
    """What ``module.register_forward_hook(fn)`` (or an optimizer's
    ``register_step_post_hook(fn)``) returns: ``remove()`` takes ``fn`` off the
    owner's hooks (``module``: the module or optimizer; ``key``: the attribute that holds them)."""

    module: Value
    key: str
    fn: Value


@dataclass(eq=False)
class SuperVal(Value):
    """super() in a method: attribute lookups start after ``cls`` in the MRO of ``self_val``."""

    cls: object
    self_val: Value


def closed_value(v):
    """Is every leaf of ``v``'s graph that can require grad known (``TVal.closed``)? A
    constant has none; a real module that is not the file's class (a torch layer, an
    opaque module) has its parameters, recorded as its origin; a container, its items'."""
    if isinstance(v, TVal):
        return v.closed
    if isinstance(v, ConstVal):
        return True
    if isinstance(v, ModuleVal):
        return v.origin is not None and v.mode is None and v.cls is None and not v.container
    if isinstance(v, SeqVal):
        return all(closed_value(x) for x in v.items)
    return False


def is_enum_member(v):
    """Is ``v`` a member of an enum class of the file (a singleton: identity is known)?"""
    if not isinstance(v, InstanceVal):
        return False
    members = getattr(v.cls, "members", None)
    return members is not None and any(v is m for m in members.values())


def _is_none(v):
    return isinstance(v, ConstVal) and v.value is None


def _same_const(x, y):
    try:
        return x is y or (isinstance(x, (int, float, str, bytes, bool, type(None))) and bool(x == y))
    except Exception:
        return False


def _options(v):
    return v.options if isinstance(v, MaybeVal) and not v.each else (v,)


def join(a: Value, b: Value) -> Value:
    """One of ``a`` and ``b`` (branches, several returns, a lookup by an unknown key):
    what holds for the result must hold on both paths."""
    if a is b:
        return a
    if isinstance(a, ConstVal) and isinstance(b, ConstVal) and type(a.value) is type(b.value) and _same_const(a.value, b.value):
        return a  # the same constant on both paths
    if (isinstance(a, TVal) and isinstance(b, TVal) and a.mode is b.mode and bool(a.origins) == bool(b.origins)
            and a.leaks == b.leaks and a.may_fake == b.may_fake):
        return TVal(a.origins | b.origins, a.mode, a.leaks, a.derived or b.derived, a.may_fake,
                    a.shape if a.shape == b.shape else None, closed=a.closed and b.closed)
    opts = []
    for v in (a, b):
        for o in _options(v):
            if not any(o is p for p in opts):
                opts.append(o)
    if len(opts) > 6:
        opts = opts[:5] + [UNKNOWN]
    return MaybeVal(tuple(opts))


def union(a: Value, b: Value) -> Value:
    """Each of ``a`` and ``b`` (the elements of a container, all of them used)."""
    if a is b:
        return a
    if a is UNKNOWN:
        return b if not isinstance(b, (TVal, SeqVal)) else MaybeVal((a, b), each=True)
    if b is UNKNOWN:
        return a if not isinstance(a, (TVal, SeqVal)) else MaybeVal((a, b), each=True)
    if isinstance(a, TVal) and isinstance(b, TVal) and a.mode is b.mode:
        return TVal(a.origins | b.origins, a.mode, a.leaks | b.leaks, a.derived or b.derived, a.may_fake and b.may_fake,
                    a.shape if a.shape == b.shape else None, closed=a.closed and b.closed)
    opts = []
    for v in (a, b):
        for o in v.options if isinstance(v, MaybeVal) and v.each else (v,):
            if not any(o is p for p in opts):
                opts.append(o)
    if len(opts) > 6:
        opts = opts[:6]
    return MaybeVal(tuple(opts), each=True)


def _fold(combine, values) -> Value:
    values = list(values)
    if not values:
        return UNKNOWN
    out = values[0]
    for v in values[1:]:
        out = combine(out, v)
    return out


def join_all(values) -> Value:
    """:func:`join` over ``values`` (UNKNOWN when there are none)."""
    return _fold(join, values)


def union_all(values) -> Value:
    """:func:`union` over ``values`` (UNKNOWN when there are none)."""
    return _fold(union, values)


class ProjModVal(Value):
    """A project module as the interpreter sees it: its namespace (the module
    scope its body ran in) and the file it comes from. Also the interpreter's
    notion of "the file being run" (``Interpreter.ctx``)."""

    __slots__ = ("name", "is_pkg", "mf", "scope", "loaded")

    def __init__(self, name, is_pkg, mf, scope):
        self.name, self.is_pkg, self.mf, self.scope = name, is_pkg, mf, scope
        # its names as its body left them (None while the body runs): what a
        # `from mod import name` run at that time binds, whatever is reassigned later
        self.loaded = None

    def __repr__(self):
        return f"ProjMod({self.name})"


class LazyImport(Value):
    """A name an imported project module binds by an import of its own: the module
    it names is loaded only when the name is used (``Interpreter._force``)."""

    __slots__ = ("thunk", "value", "hint")

    def __init__(self, thunk, hint=None):
        # hint: (module file, name) for the text-level question "can it reach a region?"
        self.thunk, self.value, self.hint = thunk, None, hint

    def __repr__(self):
        return "LazyImport()"
