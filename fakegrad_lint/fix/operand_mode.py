"""A mode taken from an operand (``x.fake_mode``): proved, or found at run time.

Three plan kinds name the mode through a value instead of the region: a leaked fake
mixed with a real value (``leaked-*``: ``f.fake_mode.from_tensor(w)``), a function traced
by ``make_fx`` (``traced-*``: ``x.fake_mode`` of a traced input) and code that runs in a
region opened elsewhere (``op-*``: a fake operand of the op). ``x.fake_mode`` only works
where ``x`` is a FakeTensor at every execution of the statement: a discriminator's
``forward(self, x)`` that other callers call with real data, a closure that is traced by
``make_fx`` and also called eagerly (``build_loss(model)(a, b, y)``), raise
``AttributeError: 'Tensor' object has no attribute 'fake_mode'`` there.

:func:`unproved` says when the file does not prove it (None: proved). The proof is
syntactic and conservative:

- ``traced-*``: the traced function's name is read exactly once in the file, as the first
  argument of ``make_fx(...)`` (no direct call, no alias, no return of it), and the input
  is one of its parameters that it never rebinds (the analysis checks that);
- ``op-*`` and ``leaked-*`` through a parameter: the function has a name that is called
  exactly once in the file and read nowhere else (a method is called through attributes:
  never proved);
- ``leaked-*`` through a local or a global name: every binding of the name in its scope
  is inside the ``with`` of the fake's region (that ``with`` is in the same scope), and no
  ``global``/``nonlocal`` declaration of it elsewhere rebinds it.

Anything else (an attribute such as ``self.samples``, a name bound outside the region)
is not proved; the fix then asks torch at run time, right above the statement
(:func:`fakegrad_lint.fix.helpers.build_function_fix` with the inputs named)::

    fake_mode = torch._guards.detect_fake_mode([self.samples])
    D_fake_state = {} if fake_mode is None else {name: fake_mode.from_tensor(t) ...}
    logits_fake = torch.func.functional_call(self.D, D_fake_state, (self.samples,))

``detect_fake_mode(inputs)`` is the active mode, else the mode of the FakeTensors among
``inputs``, else None (measured on torch 2.13: ``None`` for a real tensor, the fake's
mode for a leaked fake, the tracer's mode inside ``make_fx`` under ``"fake"`` and
``"symbolic"``). Where the operand is real the code runs the real value as before, so no
execution of the statement can fail on the fix.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.fix.traced import _function_name

__all__ = ["unproved", "guarded_plan"]

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def operand(plan) -> str:
    """``x`` of the plan's ``x.fake_mode``."""
    return plan.mode_name[: -len(".fake_mode")] if plan.mode_name.endswith(".fake_mode") else plan.mode_name


def unproved(plan, leak) -> str | None:
    """Why the file does not prove that the operand is a FakeTensor at every execution of
    the statement (None: proved)."""
    tree = plan.module_tree
    name = operand(plan)
    if not plan.mode_name.endswith(".fake_mode"):
        return "the mode is not an operand's"
    if getattr(plan, "mode_from_root", False):
        return f"the fake operand is computed at the op from `{name}`, which is not proved fake itself"
    if plan.kind.startswith("traced-"):
        fn = plan.with_node
        fname = _function_name(tree, fn)
        if fname is None:
            return "the traced function has no name of its own"
        reads = _reads(tree, fname)
        if len(reads) != 1 or not _make_fx_argument(tree, reads[0]):
            return f"`{fname}` is read elsewhere than as `make_fx`'s function (it may run with real inputs)"
        return None
    if "." in name or "[" in name:
        return f"`{name}` is an attribute or an element: other code may set it to a real value"
    use = plan.uses[0]
    func = _innermost_function(tree, use)
    if func is not None and name in _params(func):
        return _called_once(tree, func, name)
    if plan.kind.startswith("op-"):
        return f"`{name}` is not a parameter of the function that runs in the region"
    scope = _binding_scope(tree, use, name)
    if scope is None:
        return f"`{name}` is not bound where the file shows it"
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in ast.walk(tree)):
        return f"`{name}` is declared `global` or `nonlocal`: other code may rebind it"
    withs = [n for n in _own_nodes(scope) if isinstance(n, (ast.With, ast.AsyncWith)) and n.lineno == leak.mode_line]
    binds = [n for n in _own_nodes(scope) if _binds(n, name)]
    if len(binds) == 1 and _runs_once(scope, binds[0]) and _runs_once(scope, use) and _scope_runs_once(tree, scope):
        # code outside any loop of the module, or of a function called once from there (`main()`):
        # the one binding and the op each run once, as the analysis followed them (it proved
        # the value fake there)
        return None
    if not withs or not binds:
        return f"`{name}` is not bound in the fake region's block"
    inside = {id(n) for w in withs for stmt in w.body for n in ast.walk(stmt)}
    outside = next((b for b in binds if id(b) not in inside), None)
    if outside is not None:
        return f"`{name}` is also bound outside the fake region (line {outside.lineno})"
    return None


def guarded_plan(plan):
    """The plan as a conversion with the mode found at run time, right above the statement
    of the op (``placement="function"``), and the ``detect_fake_mode`` call that finds it
    (the operand named for a leaked fake, whose mode is not active)."""
    tree = plan.module_tree
    func = _innermost_function(tree, plan.uses[0]) or tree
    kind = "module" if plan.kind.endswith("-module") else "tensor"
    detect = f"_guards.detect_fake_mode([{operand(plan)}])" if plan.kind.startswith("leaked-") else None
    return replace(plan, kind=kind, placement="function", func_node=func, with_node=None, mode_name=None,
                   uses=list(plan.uses)), detect


def bound_in_statement(plan) -> bool:
    """Is the operand's root name bound inside the op's own statement (a comprehension or
    lambda variable, a walrus)? A mode found above the statement would not see that value."""
    root = operand(plan).split(".", 1)[0].split("[", 1)[0]
    use = plan.uses[0]
    tree = plan.module_tree
    stmt = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, _SCOPES) and any(n is use for n in ast.walk(node)):
            if stmt is None or any(n is node for n in ast.walk(stmt)):
                stmt = node
    if stmt is None:
        return True
    for node in ast.walk(stmt):
        if isinstance(node, ast.comprehension) and any(isinstance(t, ast.Name) and t.id == root
                                                       for t in ast.walk(node.target)):
            return True
        if isinstance(node, ast.NamedExpr) and node.target.id == root:
            return True
        if isinstance(node, ast.Lambda) and root in _params(node):
            return True
    return False


# -- helpers ----------------------------------------------------------------------------


def _runs_once(tree, node) -> bool:
    """Does ``node`` sit in module code outside any loop, function or comprehension (it
    runs at most once)?"""
    def path(parent):
        if parent is node:
            return []
        for child in ast.iter_child_nodes(parent):
            sub = path(child)
            if sub is not None:
                return [parent, *sub]
        return None

    chain = (path(tree) or [])[1:]
    return path(tree) is not None and not any(isinstance(n, (ast.For, ast.AsyncFor, ast.While, *_FUNCS, ast.ListComp, ast.SetComp,
                                                  ast.DictComp, ast.GeneratorExp)) for n in chain)


def _scope_runs_once(tree, scope) -> bool:
    """The module, or a plain function called exactly once (and read nowhere else) by
    module code outside any loop."""
    if scope is tree:
        return True
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or _in_class_body(tree, scope):
        return False
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == scope.name]
    return len(calls) == 1 and len(_reads(tree, scope.name)) == 1 and _runs_once(tree, calls[0]) and \
        not any(s is scope for s in ast.walk(tree) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                and s is not scope and any(n is scope for n in ast.walk(s)))


def _reads(tree, name: str) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]


def _make_fx_argument(tree, node) -> bool:
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and call.args and call.args[0] is node and \
                (dotted_name(call.func) or "").rsplit(".", 1)[-1] == "make_fx":
            return True
    return False


def _params(fn) -> set:
    a = fn.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}


def _innermost_function(tree, node):
    """The innermost function (def or lambda) whose body holds ``node``; None: module level."""
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, _FUNCS) and any(n is node for n in ast.walk(fn)):
            if best is None or any(n is fn for n in ast.walk(best)):
                best = fn
    return best


def _called_once(tree, func, name) -> str | None:
    fname = _function_name(tree, func)
    if fname is None:
        return f"`{name}` is a parameter of a function with no name of its own: any caller may pass a real value"
    if _in_class_body(tree, func):
        return f"`{name}` is a parameter of the method `{fname}`, which other callers may call with a real value"
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fname]
    if len(calls) != 1 or len(_reads(tree, fname)) != 1:
        return f"`{name}` is a parameter of `{fname}`, which other callers may call with a real value"
    return None


def _in_class_body(tree, func) -> bool:
    return any(isinstance(c, ast.ClassDef) and any(s is func for s in c.body) for c in ast.walk(tree))


def _own_nodes(scope):
    """The nodes of ``scope``'s own code (not of the functions and classes nested in it)."""
    stack = list(scope.body) if not isinstance(scope, ast.Lambda) else [scope.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _binds(node, name) -> bool:
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
        return True
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, ast.ExceptHandler) and node.name == name:
        return True
    return False


def _binding_scope(tree, node, name):
    """The scope (function or module) that binds ``name`` as seen from ``node``: the
    innermost enclosing function that binds it, else the module; class bodies are skipped,
    as Python does."""
    chain = [tree]
    for fn in ast.walk(tree):
        if isinstance(fn, _FUNCS) and any(n is node for n in ast.walk(fn)):
            chain.append(fn)
    chain.sort(key=lambda s: sum(1 for _ in ast.walk(s)), reverse=True)  # outermost first
    for scope in reversed(chain):
        if scope is tree:
            return tree if any(_binds(n, name) for n in _own_nodes(tree)) else None
        if name in _params(scope):
            return None
        if any(_binds(n, name) for n in _own_nodes(scope)):
            return scope
    return None
