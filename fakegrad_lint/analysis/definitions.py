"""Definitions: ``def`` makes a function value and applies its decorators as calls
(``f = deco(f)``, factories, ``functools.wraps``, ``@contextmanager``,
``@torch.no_grad()``); ``class`` runs its body, computes the C3 MRO and applies
class decorators (``@dataclass``, registries); instantiating runs ``__init__`` or
fills dataclass fields (``default_factory`` called) and ``__post_init__``. A module
class instantiated outside a region is a real module with requires-grad parameters
when it (or a base) is a torch module.
"""

from __future__ import annotations

import ast
import copy

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.state import Crashed, Scope, YieldReached, _BlockExit
from fakegrad_lint.analysis.torch_values import _forward_uses_fakes, _is_nn_module_class
from fakegrad_lint.analysis.valueops import _dict_val
from fakegrad_lint.analysis.values import (UNKNOWN, BoundMethod, ClassVal, ConstVal, CtxVal, DispatchRegister, FieldVal,
    FuncVal, InstanceVal, ModRef, ModuleVal, Origin, PartialVal, SeqVal, SingleDispatchVal, _same_const, is_enum_member,
    TVal, join_all)


def _c3_mro(cv):
    """C3 linearization over the in-file classes among the bases (others are opaque)."""
    seqs = [list(b.mro or (b,)) for b in cv.bases if isinstance(b, ClassVal)]
    seqs.append([b for b in cv.bases if isinstance(b, ClassVal)])
    out = [cv]
    while True:
        seqs = [q for q in seqs if q]
        if not seqs:
            return tuple(out)
        for q in seqs:
            head = q[0]
            if not any(any(head is x for x in t[1:]) for t in seqs):
                break
        else:  # inconsistent hierarchy (a TypeError at run time): depth-first order
            rest = []
            for q in seqs:
                rest.extend(c for c in q if not any(c is x for x in out + rest))
            return tuple(out + rest)
        out.append(head)
        for q in seqs:
            if q and q[0] is head:
                q.pop(0)


def _library_of(cv):
    """The modelled library class ``cv`` derives from (the first in its MRO), or None."""
    for c in cv.mro or (cv,):
        for b in c.bases:
            if isinstance(b, ModRef) and b.qualname in N.LIBRARY_CLASSES:
                return b.qualname
            if isinstance(b, ClassVal) and b.library is not None:
                return b.library
    return None


class DefinitionsMixin:
    """def and class statements, decorators, instances."""

    def make_function(self, node, st, cls=None):
        fv = FuncVal(node, st.scope, cls)
        if not isinstance(node, ast.Lambda):
            fv.defaults = [self.eval(d, st) for d in node.args.defaults]
            fv.kw_defaults = {a.arg: self.eval(d, st) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None}
            self.defs[node] = fv
        out = fv
        # decorators apply bottom-up, each a call on what the one below returned
        for dec in reversed(getattr(node, "decorator_list", ())):
            out = self.apply_decorator(dec, out, st)
        return out

    def apply_decorator(self, dec, f, st):
        if isinstance(dec, ast.Attribute) and dec.attr in ("setter", "deleter"):
            prop = self.eval(dec.value, st)  # `@prop.setter`: the class keeps the property
            if isinstance(prop, FuncVal) and dec.attr == "setter" and isinstance(f, FuncVal):
                prop.setter = f  # (`obj.prop = v` runs it: StatementsMixin.set_attribute)
            return prop if isinstance(prop, FuncVal) else f
        if isinstance(dec, ast.Call):
            callee = self.eval(dec.func, st)
            args, kwargs = self.eval_args(dec, st)
            if isinstance(callee, ModRef) and callee.qualname in N.MEMO_DECORATORS:
                dv = callee  # `@lru_cache(maxsize=...)`: the options do not change what it keeps
            elif isinstance(callee, ModRef):
                dv = self.call_qualname(dec, callee.qualname, args, kwargs, st)
            else:
                dv = self.call_forced(dec, callee, args, kwargs, st)  # a decorator factory
        else:
            dv = self.eval(dec, st)
        return self.decorate(dv, f, st, dec)

    def decorate(self, dv, f, st, node):
        """``f = dv(f)``: what a decorator returns, evaluated (unknown decorators leave
        the function as it was)."""
        if isinstance(dv, ModRef):
            q = dv.qualname
            if q in N.SINGLEDISPATCH or q in N.SINGLEDISPATCHMETHOD:
                return SingleDispatchVal(f, [], q in N.SINGLEDISPATCHMETHOD)
            if isinstance(f, FuncVal):
                if q in N.CONTEXT_MANAGER:
                    f.contextmanager = True
                elif q in N.GRAD_OFF:
                    f.grad_off = True
                elif q in N.STATIC_DECORATORS:
                    f.kind = "static"
                elif q in N.CLASS_DECORATORS:
                    f.kind = "class"
                elif q in N.PROPERTY_DECORATORS:
                    f.kind = "property"
                    f.cached = q in N.CACHED_PROPERTY_DECORATORS
                elif q in N.MEMO_DECORATORS:
                    f.memo = True
            return f
        if isinstance(dv, CtxVal):
            return self.context_decorate(dv, f)
        if isinstance(dv, DispatchRegister):
            return self.register_dispatch(dv, f, st)
        if isinstance(dv, (FuncVal, BoundMethod, PartialVal, ClassVal, InstanceVal)):
            res = self.call_forced(node, dv, [f], {}, st)
            if res is UNKNOWN or res is None:
                return f
            if isinstance(res, FuncVal) and res is not f and isinstance(f, FuncVal):
                res.wrapped = f
                if res.cls is None:
                    res.cls = f.cls
            return res
        return f

    def register_dispatch(self, reg, f, st):
        """``@sd.register`` / ``@sd.register(cls)`` / ``sd.register(cls, f)``: ``f`` is the
        implementation for ``cls`` (or for its first parameter's annotation); register
        returns ``f`` itself."""
        cls = reg.cls
        if cls is None and isinstance(f, FuncVal) and not isinstance(f.node, ast.Lambda):
            params = list(f.node.args.posonlyargs) + list(f.node.args.args)
            first = params[1 if reg.sd.method and len(params) > 1 else 0] if params else None
            if first is not None and first.annotation is not None:
                cls = self.eval(first.annotation, st)
        if cls is None:
            return DispatchRegister(reg.sd, f) if not isinstance(f, FuncVal) else f
        reg.sd.registry.append((cls, f))
        return f

    def context_decorate(self, cm, f):
        """``@cm`` / ``cm(f)`` with a context manager ``cm`` (torch's grad modes and
        ``@contextmanager`` helpers are ContextDecorators): a function whose every call
        runs inside ``cm``. Anything else given stays what it was."""
        if not isinstance(f, FuncVal):
            return f
        if cm.kind == "grad_off":
            f.grad_off = True  # `@torch.no_grad()`
            return f
        if cm.kind in ("null", "suppress_assert"):
            return f
        out = copy.copy(f)
        out.contexts = (cm,) + f.contexts  # (decorators apply bottom-up: this one is outer)
        out.wrapped = f
        return out

    def make_class(self, node, st):
        bases = tuple(self.eval(b, st) for b in node.bases)
        is_module = False
        torch_base = False
        for b in bases:
            if isinstance(b, ModRef) and _is_nn_module_class(b.qualname):
                is_module = True
                if b.qualname not in N.NN_MODULE_BASE:
                    torch_base = True
            elif isinstance(b, ClassVal) and b.is_module:
                is_module = True
                torch_base = torch_base or b.torch_base
        cv = ClassVal(node, st.scope, is_module, {}, bases)
        cv.torch_base = torch_base
        cv.mro = _c3_mro(cv)
        cv.library = _library_of(cv)
        # (an instance of it is worth following into calls: its methods can open a region)
        text = "\n".join(self.pos.lines[node.lineno - 1 : node.end_lineno])
        cv.matters = self._names_entry(text) or any(isinstance(b, ClassVal) and b.matters for b in bases)
        # the class body runs in its own scope; its names become class attributes
        cls_scope = Scope(parent=st.scope, module=st.scope.module, func_node=st.scope.func_node)
        cst = st.child(cls_scope)
        cst.depth = st.depth
        complete = True
        for i, item in enumerate(node.body):
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fv = self.make_function(item, cst, cls=cv)
                base = self.defs.get(item)
                if base is not None:
                    base.scope = st.scope  # methods do not see the class body as a closure
                cls_scope.vars[item.name] = fv
                cv.own[item.name] = fv
                self.method_index.setdefault(item.name, []).append(item)
                continue
            cst.cur = (node.body, i)
            try:
                self.exec_stmt(item, cst)
            except (Crashed, _BlockExit, YieldReached):
                complete = False
                break
        # the namespace the class body made, as a metaclass's `__new__(mcls, name, bases, ns)`
        # receives it: a dict of the names it bound (unknown when the body did not run to its end)
        ns = _dict_val(["__module__", "__qualname__"] + list(cls_scope.vars),
                       [UNKNOWN, ConstVal(node.name)]
                       + list(cls_scope.vars.values())) if complete else UNKNOWN
        for name, v in cls_scope.vars.items():
            if name in cv.own:
                continue
            if isinstance(v, FuncVal) and not isinstance(v.node, ast.Lambda):
                cv.own[name] = v  # `__call__ = forward`
            else:
                cv.attrs[name] = v
        for c in reversed(cv.mro):
            cv.methods.update(c.own)
        if cv.library is not None and N.LIBRARY_CLASSES.get(cv.library) == "enum":
            self.make_enum_members(cv, st)
        meta = next((self.eval(k.value, st) for k in node.keywords if k.arg == "metaclass"), None)
        if meta is None:
            meta = next((b.meta for b in bases if isinstance(b, ClassVal) and b.meta is not None), None)
        if isinstance(meta, ClassVal):
            cv = self.run_metaclass(meta, cv, node, bases, st, ns)
        self.set_names(cv, st)  # (type.__new__: `__set_name__` before `__init_subclass__`)
        hook = next((c.own["__init_subclass__"] for c in cv.mro[1:] if "__init_subclass__" in c.own), None)
        if isinstance(hook, FuncVal):
            # a base's __init_subclass__ runs on the new class (implicitly a class method)
            keywords = {k.arg: self.eval(k.value, st) for k in node.keywords if k.arg is not None and k.arg != "metaclass"}
            try:
                self.call_function(hook, [cv], keywords, st, force=True)
            except (YieldReached, _BlockExit):
                pass
        out = cv
        for dec in reversed(node.decorator_list):
            dv = self.eval(dec.func if isinstance(dec, ast.Call) else dec, st)
            if isinstance(dv, ModRef) and dv.qualname in N.DATACLASS:
                cv.dataclass = True
                continue
            out = self.apply_decorator(dec, out, st)  # `cls = register("name")(cls)`
        return out

    def run_metaclass(self, meta, cv, node, bases, st, ns=UNKNOWN):
        """A metaclass of the file makes the class: its ``__new__(mcls, name, bases, ns)``
        runs (``super().__new__(...)`` there is the class the body made) and then its
        ``__init__`` (a registry filled by a metaclass)."""
        cv.meta = meta
        args = [ConstVal(node.name), SeqVal(bases, bases), ns]
        new = meta.lookup_method("__new__")
        if new is not None:
            prev, self._meta_new = getattr(self, "_meta_new", None), cv
            try:
                res = self.call_function(new, [meta] + args, {}, st, force=True)
            except (YieldReached, _BlockExit):
                res = None
            finally:
                self._meta_new = prev
            if isinstance(res, ClassVal):
                cv = res
        init = meta.lookup_method("__init__")
        if init is not None:
            try:
                self.call_function(init, [cv] + args, {}, st, force=True)
            except (YieldReached, _BlockExit):
                pass
        return cv

    def make_enum_members(self, cv, st):
        """An enum class: each public class attribute that is not a descriptor is a
        member, one object per distinct value (an equal value names the same member,
        an alias), with its ``value`` and ``name``; ``__init__`` runs on each member
        with its value (spread when a tuple), as ``enum`` does."""
        if any(isinstance(b, ClassVal) and b.members for b in cv.bases):
            return  # (a subclass of an enum with members cannot be made: a TypeError)
        members = {}
        init = cv.lookup_method("__init__")
        for name, v in list(cv.attrs.items()):
            if name.startswith("_") or isinstance(v, (FuncVal, ClassVal, FieldVal, SingleDispatchVal, DispatchRegister)):
                continue
            alias = next((m for m in members.values() if isinstance(v, ConstVal)
                          and isinstance(m.attrs["value"], ConstVal) and _same_const(m.attrs["value"].value, v.value)), None)
            if alias is not None:
                members[name] = alias
                cv.attrs[name] = alias
                continue
            member = InstanceVal(cv, {"value": v, "_value_": v, "name": ConstVal(name), "_name_": ConstVal(name)})
            members[name] = member
            cv.attrs[name] = member
            if init is not None:
                spread = list(v.elts) if isinstance(v, SeqVal) and v.elts is not None and v.keys is None else [v]
                try:
                    self.call_function(init, [member] + spread, {}, st, force=True)
                except (YieldReached, _BlockExit, Crashed):
                    pass
        cv.members = members

    def enum_lookup(self, cls, args):
        """``Cls(value)``: the member with that value (a member given: itself); not known:
        one of the members."""
        members = list(dict.fromkeys(cls.members.values()))
        if not args:
            return InstanceVal(cls, {})  # (a TypeError in Python; for methods run on their own: some member)
        v = args[0]
        if is_enum_member(v) and v.cls is cls:
            return v
        if isinstance(v, ConstVal):
            for m in members:
                mv = m.attrs.get("value")
                if isinstance(mv, ConstVal) and _same_const(mv.value, v.value):
                    return m
            return UNKNOWN  # a ValueError
        return join_all(members)

    def instantiate(self, cls, args, kwargs, st, node, force=False):
        if cls.members is not None:
            return self.enum_lookup(cls, args)
        region = st.active_region()
        if cls.is_module:
            inst = ModuleVal(None, region.mode if region else None, cls, {})
        elif cls.library is not None:
            inst = self.new_library_instance(cls, args, kwargs, st, node)
        else:
            inst = InstanceVal(cls, {})
        init = cls.lookup_method("__init__")
        if init is not None:
            try:
                # (always run: the state it sets, a cache, a registry, decides what later calls do)
                self.call_function(init, [inst] + list(args), kwargs, st, force=True)
            except (YieldReached, _BlockExit):
                pass
        elif cls.library is not None and not cls.is_module:
            try:
                self.library_method(node, inst, "__init__", list(args), kwargs, st)  # the library's own
            except (YieldReached, _BlockExit):
                pass
        else:
            # a dataclass / NamedTuple-style class: annotated fields take the arguments,
            # else their defaults (``field(default_factory=...)`` is called)
            for i, name in enumerate(cls.fields()):
                if i < len(args):
                    inst.attrs[name] = args[i]
                elif name in kwargs:
                    inst.attrs[name] = kwargs[name]
                else:
                    default = cls.lookup_attr(name)
                    if isinstance(default, FieldVal):
                        if default.factory is not None:
                            default = self.call_forced(node, default.factory, [], {}, st)
                        else:
                            default = default.default
                    inst.attrs[name] = default if default is not None else UNKNOWN
            post = cls.lookup_method("__post_init__")
            if post is not None:
                try:
                    self.call_function(post, [inst], {}, st, force=True)
                except (YieldReached, _BlockExit):
                    pass
        if cls.is_module and region is not None:
            inst.may_fake = region.may or bool(st.may)
            inst.fake_out = _forward_uses_fakes(cls, inst.attrs)
        if cls.is_module and region is None:
            has_params = cls.torch_base or any(
                v.real_rg() or (isinstance(v, ModuleVal) and v.origin is not None) for v in inst.attrs.values()
            )
            if has_params:
                name = "module"
                inst.origin = Origin(name, "module", getattr(node, "lineno", 0), owner=inst)
                inst.meta = st.meta_device
                if not cls.torch_base:
                    _frozen_by_its_parts(inst)
        return inst


def _frozen_by_its_parts(inst):
    """A module of the file whose every part with parameters was frozen while it was built
    (``self.requires_grad_(False)`` at the end of ``__init__``, which ran before the module
    had an origin of its own; a frozen backbone held as an attribute) is frozen. Its module
    parts become parts of it, so unfreezing one of them later unfreezes it again."""
    parts = {k: v for k, v in inst.attrs.items()
             if (isinstance(v, ModuleVal) and v.origin is not None) or (isinstance(v, TVal) and v.real_rg())}
    origins = [o for v in parts.values() for o in (v.real_rg() if isinstance(v, TVal) else (v.origin,))]
    if not origins or not all(o.disabled is True for o in origins):
        return
    for k, v in parts.items():
        if isinstance(v, ModuleVal) and v.origin.parent is None:
            v.origin.parent, v.origin.param = inst.origin, k
    inst.origin.param_names = frozenset(parts)
    inst.origin.frozen = set(parts)
    inst.origin.disabled = True
