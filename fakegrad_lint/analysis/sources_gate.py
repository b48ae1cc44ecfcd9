"""The source gate: can a unit analysed on its own reach a real requires-grad value?

Every default finding (FGL001-FGL004) is a leak record, and a record needs an
:class:`~fakegrad_lint.analysis.values.Origin`: a real requires-grad value made by a
known constructor (``requires_grad=True``, ``requires_grad_()``, ``.requires_grad =
True``, ``nn.Parameter``, an ``nn.Module`` subclass or a torch layer, a model factory,
``to_empty``), never an unknown argument. A unit run with unknown arguments can only
report when such a constructor, or a value made by one, is reachable from its code: in
its body, in a function or class it names (to any depth, through the values bound to
the names: a registry, a partial, a bound method...), in a module-level value it reads,
or in the instance its method runs on (``__init__``). :func:`value_sources` answers that
from the values the analysis holds and the AST of each def (:func:`_facts`, once per
node), a superset: anything it cannot follow counts as a source.
"""

from __future__ import annotations

import ast
import os
import weakref

from fakegrad_lint.analysis import roots as R
from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.torch_values import _is_module_factory, _is_nn_module_class
from fakegrad_lint.analysis.values import (UNKNOWN, AutogradApply, BoundMethod, ChildName, ClassVal,
    ConstVal, CtxVal, DecoratorVal, DispatchRegister, ExitStackVal, ExportedProgramVal, FieldVal, FuncVal,
    GeneratorVal, GetterVal, HookHandle, InstanceVal, LazyImport, LibraryMethod, MaybeVal, MethodRef, ModeVal, ModRef,
    ModuleVal, OptimizerVal, PartialVal, ProjModVal, ReturnsVal, WeakRefVal, SeqVal, SingleDispatchVal, SuperVal, TracedFn,
    TransformVal, TVal, Value, WorkerVal)

_SOURCE_ATTRS = N.SOURCE_ATTRS
# words of a chain on a name the gate cannot resolve (a local): `m.nn.Linear`
_SOURCE_PARTS = _SOURCE_ATTRS | {"nn"}
# names that read names computed at run time: any value of the module may be reached
_DYNAMIC = frozenset({"globals", "vars", "eval", "exec", "__import__", "import_module", "locals"})
_FALSE_LIKE = (False, None)
# methods a framework calls by itself (test runners, pytest, Lightning-style hooks)
_IMPLICIT = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass", "asyncSetUp", "asyncTearDown",
                       "setup_method", "teardown_method", "setup_class", "teardown_class", "setup", "teardown",
                       "forward", "run", "main"})
# calls that read an attribute by a name given as data (the argument: the name)
_BY_NAME = frozenset({"getattr", "hasattr", "setattr", "delattr", "attrgetter", "methodcaller"})
# names that list an object's members
_MEMBER_LISTS = frozenset({"vars", "dir", "__dict__", "getmembers", "__slots__"})


def source_qualname(q: str) -> bool:
    """Does the torch (or model-library) value named ``q`` make, or lead by its
    attributes to what makes, a real requires-grad value?"""
    if q in N.PARAMETER or _is_nn_module_class(q) or _is_module_factory(q):
        return True
    last = q.rpartition(".")[2]
    if last in _SOURCE_ATTRS:
        return True
    if q in ("torch.nn", "torch.nn.modules", "torch.nn.parameter") or (
            q.startswith("torch.nn.modules.") and q.count(".") == 3):
        return True  # a package or module of layers, passed on or read by `getattr`
    for prefix, how in N.MODULE_FACTORIES:
        p = prefix.rstrip(".")
        if q == p or p.startswith(q + "."):
            return True  # `torchvision`, `torchvision.models`, `timm`
        if how == "loader" and q.startswith(prefix):
            rest = q[len(prefix):].split(".")
            if len(rest) == 1 and rest[0][:1].isupper():
                return True  # `transformers.AutoModel` (its `from_pretrained`)
    return False


class _Facts:
    """What a def's code can reach, from its AST (not its decorators, defaults or
    annotations: those ran where it was defined). ``prim``: it makes a real
    requires-grad value itself (or does what the gate cannot follow)."""

    __slots__ = ("prim", "names", "chains", "kw_calls", "splats", "weak", "imports", "imported", "dynamic",
                 "attr_names", "every", "__weakref__")

    def __init__(self):
        self.prim = False
        self.names: set = set()
        self.chains: set = set()  # maximal dotted chains `a.b.c`
        self.kw_calls: list = []  # (dotted callee or None, flag) for each `requires_grad=` that is not off
        self.splats: list = []  # dotted callees (or None) given `**mapping`
        self.weak = False  # a WEAK requires-grad flag given to `requires_grad_` or stored
        self.imports: dict = {}  # local name -> (module, name or None), of imports inside the def
        self.imported: list = []  # (module, None) for `import module`, (module, name) for `from module import name`
        self.dynamic = False
        self.attr_names: set = set()  # attributes read (and identifier-like string constants)
        self.every = False  # reads an attribute by a computed name: any attribute

    def note(self, flag, _call):
        if flag == STRONG:
            self.prim = True
        elif flag == WEAK:
            self.weak = True


_FACTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _flag(e, names) -> int:
    """What a requires-grad flag given to a call, to ``requires_grad_`` or stored in
    ``.requires_grad`` can be: OFF (False, None), WEAK (True only if one came in: another
    value's flag ``a.requires_grad``, which reads as unknown on a tensor and holds True on
    an object only where a class attribute, a constructor keyword or a counted store put
    it; a keyword-only parameter whose default is off, which only a caller's keyword or
    ``**`` can set; ``and``/``or``/``if`` of those; a local assigned only those), or STRONG
    (anything else). ``names``: the flag of each name of the def (:func:`_name_flags`)."""
    t = type(e)
    if t is ast.Constant:
        return OFF if e.value in _FALSE_LIKE else STRONG
    if t is ast.Attribute and e.attr == "requires_grad" and type(e.ctx) is ast.Load:
        return WEAK
    if t is ast.Name:
        return names.get(e.id, STRONG)
    if t is ast.BoolOp:
        if type(e.op) is ast.And:
            return _flag(e.values[-1], names)  # (True only as its last value: the others are truthy then)
        return max(_flag(v, names) for v in e.values)
    if t is ast.IfExp:
        return max(_flag(e.body, names), _flag(e.orelse, names))
    return STRONG


def _name_flags(node) -> dict:
    """The flag (:func:`_flag`) of each name bound in a def (and the defs in it, merged):
    a keyword-only parameter with an off default is WEAK, a name bound only by plain
    ``name = expr`` the most its values give; any other parameter or binding, and a name
    the def does not bind (a global), STRONG (left out of the map: the default)."""
    strong: set = set()
    weak: set = set()
    values: dict = {}
    plain: set = set()
    for n in ast.walk(node):
        t = type(n)
        if t in _DEF_NODES:
            a = n.args
            w = _weak_params(n)
            weak |= w
            strong.update(p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                          if p is not None and p.arg not in w)
        elif t is ast.Assign and len(n.targets) == 1 and type(n.targets[0]) is ast.Name:
            values.setdefault(n.targets[0].id, []).append(n.value)
            plain.add(id(n.targets[0]))
        elif t is ast.AnnAssign and type(n.target) is ast.Name:
            if n.value is not None:
                values.setdefault(n.target.id, []).append(n.value)
            plain.add(id(n.target))
    for n in ast.walk(node):
        t = type(n)
        if t is ast.Name and type(n.ctx) is not ast.Load and id(n) not in plain:
            strong.add(n.id)  # a `for` target, a tuple, `with ... as`, `del`
        elif t in (ast.Global, ast.Nonlocal):
            strong.update(n.names)
        elif t is ast.alias:
            strong.add(n.asname or n.name.partition(".")[0])
        elif t is ast.ExceptHandler and n.name:
            strong.add(n.name)
        elif t is ast.NamedExpr:
            strong.add(n.target.id)
    cands = [w for w in (weak | values.keys()) if w not in strong]
    names = {w: (WEAK if w in weak else OFF) for w in cands}
    for _ in range(8):
        changed = False
        for w in cands:
            fl = max([names[w]] + [_flag(v, names) for v in values.get(w, ())])
            if fl != names[w]:
                names[w] = fl
                changed = True
        if not changed:
            break
    else:
        for w in cands:
            names[w] = STRONG
    return names


OFF, WEAK, STRONG = 0, 1, 2


def _weak_params(fn) -> frozenset:
    """The keyword-only parameters of a def whose default is off (or absent)."""
    a = getattr(fn, "args", None)
    if a is None:
        return frozenset()
    return frozenset(p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults)
                     if d is None or (type(d) is ast.Constant and d.value in _FALSE_LIKE))


from fakegrad_lint.sources.lazyparse import LAZY_DEF_TYPES  # noqa: E402

_DEF_NODES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, *LAZY_DEF_TYPES})


_COMPARE_OPS = frozenset({ast.In, ast.NotIn, ast.Is, ast.IsNot})  # (`==` may run an `__eq__`)
_TYPE_TESTS = frozenset({"isinstance", "issubclass"})


def _mark_compared(x, out):
    """The names and chains of an operand of a comparison or type test (a tuple's too)."""
    t = type(x)
    if t in (ast.Tuple, ast.List, ast.Set):
        for e in x.elts:
            _mark_compared(e, out)
    elif t is ast.Attribute or t is ast.Name:
        out.add(id(x))


def _facts(node, module: str | None, is_pkg: bool) -> _Facts:
    hit = _FACTS.get(node)
    if hit is not None:
        return hit
    f = _Facts()
    d = getattr(node, "__dict__", {})
    lazy = d.get("_lazy_ctx") if "_lazy_body" not in d else None
    err = lazy.error if lazy is not None else None
    body = node.body if isinstance(node.body, list) else [node.body]
    if lazy is not None and lazy.error is not err:
        # a body that does not parse (sources/lazyparse): its error is the analysis' to
        # find if it reads the body, as before the gate looked
        lazy.error = err
        d.pop("_lazy_body", None)
        f.prim = True
        return f
    inner = set()  # Attribute nodes inside a longer chain
    roots = set()  # Name nodes at the root of a chain
    compared: set = set()  # names and chains only compared or type-tested
    chains = []
    weak0 = None  # the flags of the def's names, made when a flag is first read
    todo = [(stmt, None, None) for stmt in reversed(body)]
    pop, push = todo.pop, todo.append
    while todo:
        n, parent, _ = pop()
        t = type(n)
        if id(n) in compared:
            # a class only compared (`type(t) in (torch.Tensor, nn.Parameter)`,
            # `isinstance(m, nn.Module)`): nothing is made of it
            continue
        if t is ast.Compare:
            if all(type(op) in _COMPARE_OPS for op in n.ops):
                for x in (n.left, *n.comparators):
                    _mark_compared(x, compared)
        elif t is ast.Call and type(n.func) is ast.Name and n.func.id in _TYPE_TESTS and len(n.args) == 2:
            _mark_compared(n.args[1], compared)
        if t is ast.Name:
            if id(n) not in roots:
                f.names.add(n.id)  # (a name read whole: the root of a chain is read by the chain)
        elif t is ast.Attribute:
            attr = n.attr
            f.attr_names.add(attr)
            if attr in _SOURCE_ATTRS:
                if attr == "requires_grad_" and type(parent) is ast.Call and parent.func is n:
                    flag = _flag(parent.args[0], weak0 if weak0 is not None else (weak0 := _name_flags(node))) if parent.args else STRONG
                    for kw in parent.keywords:
                        if kw.arg == "requires_grad":
                            flag = _flag(kw.value, weak0 if weak0 is not None else (weak0 := _name_flags(node)))
                        elif kw.arg is None:
                            flag = STRONG
                    f.note(flag, False)
                else:
                    f.prim = True
            elif attr == "requires_grad" and type(n.ctx) is not ast.Load:
                pt = type(parent)
                if pt is ast.Assign or pt is ast.AnnAssign:
                    f.note(_flag(parent.value, weak0 if weak0 is not None else (weak0 := _name_flags(node))) if parent.value is not None else OFF, False)
                else:
                    f.prim = True  # an augmented store, a tuple target, a `for` target: anything
            tv = type(n.value)
            if tv is ast.Attribute:
                inner.add(id(n.value))
            elif tv is ast.Name:
                roots.add(id(n.value))
            chains.append(n)
        elif t is ast.Call:
            fn = n.func
            fname = fn.id if type(fn) is ast.Name else fn.attr if type(fn) is ast.Attribute else None
            if fname in _BY_NAME:
                k = 1 if fname in ("getattr", "hasattr", "setattr", "delattr") else 0
                arg = n.args[k] if len(n.args) > k else None
                if arg is None or type(arg) not in (ast.Constant, ast.Name):
                    f.every = True  # `getattr(obj, f"on_{event}")`
            for kw in n.keywords:
                if kw.arg == "requires_grad":
                    flag = _flag(kw.value, weak0 if weak0 is not None else (weak0 := _name_flags(node)))
                    if flag:
                        f.kw_calls.append((dotted_name(fn), flag))
                elif kw.arg is None:
                    f.splats.append(dotted_name(fn))  # `f(**kwargs)`: what it holds goes on
        elif t is ast.Constant:
            if type(n.value) is str:
                if n.value == "requires_grad" or n.value == "requires_grad_":
                    f.prim = True  # setattr(t, "requires_grad", True), {"requires_grad": True}
                elif n.value.isidentifier():
                    f.attr_names.add(n.value)
        elif t is ast.Import:
            for a in n.names:
                if a.asname:
                    f.imports[a.asname] = (a.name, None)
                else:
                    head = a.name.partition(".")[0]
                    f.imports[head] = (head, None)
                f.imported.append((a.name, None))
        elif t is ast.ImportFrom:
            base = _absolute(module, is_pkg, n.module, n.level)
            for a in n.names:
                if a.name == "*" or not base:
                    f.prim = True  # binds what the gate cannot list
                    continue
                f.imports[a.asname or a.name] = (base, a.name)
                f.imported.append((base, a.name))
        skip = getattr(n, "annotation", None) or getattr(n, "returns", None)  # (never evaluated)
        for child in ast.iter_child_nodes(n):
            if child is not skip:
                push((child, n, None))
    for n in chains:
        if id(n) not in inner:
            d = dotted_name(n)
            if d is not None:
                f.chains.add(d)
    f.dynamic = not f.names.isdisjoint(_DYNAMIC)
    if not f.every and (not f.names.isdisjoint(_MEMBER_LISTS) or not f.attr_names.isdisjoint(_MEMBER_LISTS)):
        f.every = True  # `vars(obj)`, `obj.__dict__`, `inspect.getmembers(obj)`
    _FACTS[node] = f
    return f


def _absolute(module, is_pkg, name, level):
    if not level:
        return name or ""
    if module is None:
        return None
    parts = module.split(".")
    if not is_pkg:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    return f"{base}.{name}" if name and base else (name or base)


class SourceGate:
    """What the runs of one analysis can reach, as one closure that only grows: runs are
    added one at a time (:meth:`add`), and the answer is whether a source is reachable
    from any run added so far. The closure of several runs holds the closure of each,
    so a run added before a source was found cannot reach one on its own.

    A class's methods (and class attributes) are in the closure only once their name
    is: an attribute read anywhere in the closure's code (``obj.build()``, ``self.x``),
    a string constant of it (``getattr(obj, "build")``), or a special method Python
    calls by itself (``__init__``, ``__call__``, ``__enter__`` ...); every one once the
    code reads an attribute by a computed name (``getattr(obj, f"on_{event}")``)."""

    def __init__(self, interp):
        self.interp = interp
        self.found = False
        self.visited: dict = {}  # id(item) -> item
        self.todo: list = []
        self.attrs: set = set()  # attribute names the closure's code reads
        self.all_attrs = False
        self.classes: list = []  # the classes (ClassVal) in the closure
        self.modules: list = []  # the project modules (ProjModVal) in it as values
        # requires-grad flags: a STRONG one given to project code, a WEAK one used, a
        # `**mapping` handed to code outside the project (see _flag)
        self.strong_in = self.weak = self.splat_out = False
        self._imports: dict = {}  # (module, name) -> what an import inside a def binds
        self.steps = 0

    def add(self, item) -> bool:
        """Add a run (a unit's FuncVal, a class, an instance) to the closure: can any run
        added so far reach a source?"""
        if not self.found:
            self._push(item)
            try:
                self._drain()
            except RecursionError:
                self.found = True
        return self.found

    def _push(self, x):
        k = id(x)
        if k not in self.visited:
            self.visited[k] = x
            self.todo.append(x)

    def _drain(self):
        todo = self.todo
        while todo and not self.found:
            x = todo.pop()
            for e in self._edges(x):
                if e is True:
                    self.found = True
                    todo.clear()
                    return
                self._push(e)

    def _named(self, names, every=False):
        """The closure's code reads these attribute names: the methods and class
        attributes of that name of every class in the closure are in it."""
        if every and not self.all_attrs:
            self.all_attrs = True
            for cls in self.classes:
                for x in (*cls.methods.values(), *cls.own.values(), *cls.attrs.values()):
                    self._push(x)
            for mv in self.modules:
                for x in list(mv.scope.vars.values()):
                    self._push(x)
        new = names - self.attrs if not self.all_attrs else ()
        if new:
            self.attrs |= new
            for cls in self.classes:
                for n in new:
                    for d in (cls.methods, cls.own, cls.attrs):
                        x = d.get(n)
                        if x is not None:
                            self._push(x)
            for mv in self.modules:
                for n in new:
                    x = mv.scope.vars.get(n)
                    if x is not None:
                        self._push(x)

    def _class_members(self, cls):
        self.classes.append(cls)
        attrs, every = self.attrs, self.all_attrs
        for d in (cls.methods, cls.own, cls.attrs):
            for n, x in d.items():
                if every or n in attrs or (n.startswith("__") and n.endswith("__")) or n in _IMPLICIT:
                    yield x

    # ---- the edges of each kind of value: a value to visit, or True (a source)
    def _edges(self, v):
        self.steps += 1
        t = type(v)
        if t is LazyImport:
            yield self.interp._force(v)
            return
        if t is FuncVal:
            yield from self._func_edges(v)
            return
        if t is ClassVal:
            if v.is_module:
                yield True
                return
            if _may_be_true(v.lookup_attr("requires_grad")) or any(
                    "requires_grad" in d for c in (v.mro or (v,)) for d in (c.own, c.methods)):
                yield True  # `requires_grad = True` in a class body, a property (`obj.requires_grad` reads it)
                return
            for b in v.bases:
                if isinstance(b, ModRef):
                    if source_qualname(b.qualname):
                        yield True
                        return
                else:
                    yield b
            yield from (c for c in v.mro if c is not v)
            yield from list(self._class_members(v))
            if v.meta is not None:
                yield v.meta
            if v.members:
                yield from v.members.values()
            return
        if t is ModRef:
            if source_qualname(v.qualname):
                yield True
            return
        if t is TVal:
            if v.origins or v.leaks:
                yield True
            return
        if t is ModuleVal:
            yield True
            return
        if t is ConstVal:
            if type(v.value) is str:
                if v.value == "requires_grad" or v.value == "requires_grad_":
                    yield True
                elif v.value.isidentifier():
                    self._named({v.value})  # (a method name kept as data: `getattr(obj, NAME)`)
            return
        if t is InstanceVal:
            if _may_be_true(v.attrs.get("requires_grad")):
                yield True  # (`torch.ones(3, requires_grad=obj.requires_grad)` makes a source)
                return
            yield v.cls
            yield from v.attrs.values()
            return
        if t is SeqVal:
            if v.keys and "requires_grad" in v.keys:
                yield True  # `dict(requires_grad=True)`, handed on as `**opts`
                return
            yield from v.items
            if v.elts:
                yield from v.elts
            return
        if t is MaybeVal:
            yield from v.options
            return
        if t is ProjModVal:
            if v.scope is None:
                yield True
                return
            # a module as a value: its names are read as attributes, as a class's
            self.modules.append(v)
            attrs, every = self.attrs, self.all_attrs
            yield from [x for n, x in v.scope.vars.items() if every or n in attrs]
            return
        if t is _ScopeItem:
            yield from list(v.scope.vars.values())
            return
        if v is UNKNOWN or t in _INERT:
            return
        if t is ModeVal:
            if v.cls is not None:
                yield v.cls
            yield from v.attrs.values()
            return
        if t is PartialVal and "requires_grad" in (v.kwargs or {}):
            yield True  # functools.partial(torch.randn, 4, requires_grad=True)
            return
        parts = _PARTS.get(t)
        if parts is None:
            yield True  # a value the gate does not know: it may hold anything
            return
        for name in parts:
            x = getattr(v, name, None)
            yield from _values_in(x)

    def _func_edges(self, fv):
        interp = self.interp
        ctx = interp._scope_ctx.get(getattr(fv.scope, "module", None)) or interp.main
        module, is_pkg = ctx.name, ctx.is_pkg
        f = _facts(fv.node, module, is_pkg)
        if f.prim:
            yield True
            return
        self._named(f.attr_names, f.every)
        for x in (fv.wrapped, fv.setter):
            if x is not None:
                yield x
        yield from _values_in(fv.defaults)
        yield from _values_in(fv.kw_defaults)
        for c in fv.contexts:
            yield c
        scope = fv.scope
        lookup = scope.lookup
        for base, name in f.imported:
            if self._imported(base, name) is True:
                yield True  # (the import itself may run a module's body)
                return
        for name in f.names:
            imp = f.imports.get(name)
            x = lookup(name) if imp is None else self._imported(*imp)
            if x is not None:
                yield x
        for chain in f.chains:
            head, *rest = chain.split(".")
            imp = f.imports.get(head)
            x = lookup(head) if imp is None else self._imported(*imp)
            if x is None:
                if any(p in _SOURCE_PARTS for p in rest):
                    yield True  # a chain on a local: `m.nn.Linear`
                    return
                continue
            got = self._chain(x, rest)
            if got is True:
                yield True
                return
            if got is not None:
                yield got
        if f.weak:
            self.weak = self.weak or (fv, None)
        for callee, flag in f.kw_calls:
            project = self._project_callee(callee, lookup, f)
            if flag == STRONG and not project:
                yield True  # `torch.ones(3, requires_grad=True)` (or a callee the gate cannot name)
                return
            if flag == STRONG:
                self.strong_in = self.strong_in or (fv, callee)
            else:
                self.weak = self.weak or (fv, callee)
        for callee in f.splats:
            if not self._project_callee(callee, lookup, f):
                self.splat_out = self.splat_out or (fv, callee)
        if self.strong_in and (self.weak or self.splat_out):
            # a True flag handed to project code, and code that passes a flag on
            # without saying which: it may reach a torch factory
            yield True
            return
        if f.dynamic:
            yield _ScopeItem(scope.module)

    def _imported(self, base, name):
        """What an import inside a def binds, for the gate: True (a source, or a project
        module not run yet: its body would run), a value to visit, or None (nothing to
        follow: a module outside the project, such as the standard library, or one the
        analysis will not load any more, which binds an unknown value)."""
        key = (base, name)
        if key in self._imports:
            return self._imports[key]
        got = self._imports[key] = self._import_value(base, name)
        return got

    def _import_value(self, base, name):
        q = base if name is None else f"{base}.{name}"
        interp = self.interp
        find = interp.project.find if interp.project is not None else None
        path = find(base) if find is not None else None
        if path is None:
            sub = find(q) if find is not None else None
            if sub is None:
                return ModRef(q)  # torch, the standard library: what the tables know
            return self._module(sub)
        mv = self._module(path)
        if mv is True or mv is None or name is None:
            return mv
        v = mv.scope.vars.get(name)
        if v is not None:
            return v
        sub = find(q)
        got = self._module(sub) if sub is not None else True
        if got is None:
            return mv.scope.vars.get("__getattr__")  # (a module `__getattr__` answers then)
        return got

    def _module(self, path):
        """The project module at ``path`` when the analysis has run its body (the linted
        file's own too); None when it never will (over the analysis' limits, or
        unreadable: an import of it binds an unknown value); True when it may still run
        (its body may make a source)."""
        interp = self.interp
        if interp.main_path is not None and os.path.abspath(path) == interp.main_path:
            return interp.main
        mv = interp._modules.get(path)
        if mv is not None:
            return mv if mv.scope is not None else True
        if len(interp._modules) >= R.MAX_MODULES or interp.exhausted:
            return None
        try:
            size = os.path.getsize(path)
        except OSError:
            return None
        if interp._loaded_bytes + size > R.MAX_PROJECT_BYTES:
            return None  # (the limits only fill up: it will not run later either)
        return True

    def _chain(self, x, rest):
        """The value ``x.a.b`` names, as far as the gate can follow it (True: a source,
        None: nothing more than ``x`` itself, already an edge)."""
        x = self.interp._force(x)
        for i, attr in enumerate(rest):
            if isinstance(x, ModRef):
                return True if source_qualname(".".join([x.qualname, *rest[i:]])) else None
            if isinstance(x, ProjModVal) and x.scope is not None:
                nxt = x.scope.vars.get(attr)
                if nxt is None:
                    sub = self.interp.project.find(f"{x.name}.{attr}") if self.interp.project is not None else None
                    nxt = self._module(sub) if sub is not None else True
                    if nxt is None:
                        return x.scope.vars.get("__getattr__")  # an unknown value, or the module's __getattr__
                if nxt is True:
                    return True  # not bound (yet): a submodule not run, or a name set later
                x = self.interp._force(nxt)
                continue
            return x  # a class, an instance...: all of it
        return x

    def _project_callee(self, callee, lookup, f) -> bool:
        """Is ``callee`` (a dotted name, or None) code of the project that the closure
        follows (a def, a class, an instance with ``__call__``...), not torch or a
        callee the gate cannot name?"""
        if callee is None:
            return False
        head, *rest = callee.split(".")
        imp = f.imports.get(head)
        x = lookup(head) if imp is None else self._imported(*imp)
        if x is None or x is True:
            return False
        x = self._chain(x, rest) if rest else self.interp._force(x)
        return x is not None and x is not True and not isinstance(x, ModRef) and x is not UNKNOWN


class _ScopeItem:
    """Every value of a module's scope (code that reads names computed at run time)."""

    __slots__ = ("scope",)

    def __init__(self, scope):
        self.scope = scope


_END = object()
_INERT = frozenset({Value, DecoratorVal, GetterVal, type(UNKNOWN)})
_PARTS = {
    BoundMethod: ("func", "self_val"),
    PartialVal: ("func", "args", "kwargs"),
    MethodRef: ("recv",),
    GeneratorVal: ("fv", "args", "kwargs"),
    CtxVal: ("target",),
    TracedFn: ("func", "mode"),
    TransformVal: ("func",),
    SingleDispatchVal: ("default", "registry"),
    DispatchRegister: ("sd", "cls"),
    OptimizerVal: ("params", "attrs"),
    ExportedProgramVal: ("module",),
    WorkerVal: ("target", "result"),
    LibraryMethod: ("recv",),
    ReturnsVal: ("result",),
    WeakRefVal: ("target",),
    FieldVal: ("default", "factory"),
    AutogradApply: ("cls",),
    ExitStackVal: ("pushed",),
    HookHandle: ("module", "fn"),
    SuperVal: ("cls", "self_val"),
    ChildName: ("module",),
}


def _may_be_true(v, depth=0) -> bool:
    """Can reading this attribute value give the constant True (a requires-grad flag
    that makes a source)?"""
    if v is None:
        return False
    t = type(v)
    if t is ConstVal:
        return v.value is True
    if t is MaybeVal and depth < 4:
        return any(_may_be_true(o, depth + 1) for o in v.options)
    if t is FieldVal and depth < 4:
        return _may_be_true(v.default, depth + 1) or v.factory is not None
    return t is LazyImport


def _values_in(x):
    """The values held by ``x``: a Value, or tuples, lists and dicts of them."""
    if x is None:
        return
    if isinstance(x, (Value, _ScopeItem)) or type(x) is LazyImport:
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _values_in(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _values_in(v)
    elif isinstance(x, (str, int, float, bool, bytes)):
        return
    elif hasattr(x, "lineno"):
        return  # an AST node (a thread's call site)
    else:
        yield True  # something the gate cannot read
