"""Gradients taken with respect to a real module's parameters in a region that the fix
runs on fake copies (``torch.autograd.grad(loss, params)`` after ``model(x)`` became
``functional_call(model, model_fake_state, (x,))``).

The fixed graph holds the fake copies, not the real parameters: ``autograd.grad`` with
respect to the real ones would raise (``One of the differentiated Tensors appears to not
have been used in the graph``). ``fake_mode.from_tensor`` memoizes (measured on torch
2.13: ``fake_mode.from_tensor(p) is model_fake_state[name]`` for the parameter ``p`` of
that name), so the inputs become ``[fake_mode.from_tensor(t) for t in params]``: the
same fake copies the graph holds, in the same order, and the gradients have the shapes
and dtypes the code computed before, with the real parameters left alone.

Only inputs proved to be parameters of the module are converted, written as
``model.parameters()`` (in ``list(...)``, ``tuple(...)``, a comprehension over it, a
starred element of a list) or a name bound once, before the region, to such an
expression (``params = [p for p in model.parameters() if p.requires_grad]``, ``names,
params = zip(*model.named_parameters())``), or an attribute the analysis proved a parameter
of the module (``[model.embed.weight]``, a torch layer's own or an ``nn.Parameter``
attribute; ``FixPlan.param_paths``); an element the region made itself
(``mixed = (...).requires_grad_()``) stays as it is. Anything else: no conversion (the
fix stays display-only).
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis.names import dotted_name

__all__ = ["autograd_grad_calls", "converted_inputs"]

_PARAMS = ("parameters", "named_parameters")
_WRAPPERS = ("list", "tuple")


def autograd_grad_calls(stmts):
    """Every ``torch.autograd.grad(...)`` call of ``stmts`` with its inputs expression."""
    out = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and (dotted_name(node.func) or "").endswith("autograd.grad"):
                inputs = node.args[1] if len(node.args) > 1 else next(
                    (kw.value for kw in node.keywords if kw.arg == "inputs"), None)
                out.append((node, inputs))
    return out


def _params_call(node, module: str):
    """``module.parameters()`` / ``module.named_parameters()``: the method name, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PARAMS \
            and dotted_name(node.func.value) == module and not node.args and not node.keywords:
        return node.func.attr
    return None


def _is_param_seq(node, module: str, bound: dict) -> bool:
    """Does ``node`` denote a sequence of ``module``'s parameters (see the module docstring)?"""
    if _params_call(node, module) == "parameters":
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS \
            and len(node.args) == 1 and not node.keywords:
        return _is_param_seq(node.args[0], module, bound)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
        gen = node.generators[0]
        kind = _params_call(gen.iter, module)
        if gen.is_async or kind is None:
            return False
        if kind == "parameters":
            return isinstance(gen.target, ast.Name) and isinstance(node.elt, ast.Name) \
                and node.elt.id == gen.target.id
        return isinstance(gen.target, ast.Tuple) and len(gen.target.elts) == 2 and \
            isinstance(gen.target.elts[1], ast.Name) and isinstance(node.elt, ast.Name) and \
            node.elt.id == gen.target.elts[1].id
    if isinstance(node, ast.Name):
        return bound.get(node.id) is True
    return False


def param_names(stmts, module: str) -> dict:
    """``{name: True}`` for the plain names ``stmts`` bind exactly once, to a sequence of
    ``module``'s parameters (``False`` for a name bound more than once)."""
    bound: dict = {}

    def bind(name, value):
        bound[name] = value if name not in bound else False

    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        bind(t.id, _is_param_seq(node.value, module, bound))
                    elif isinstance(t, (ast.Tuple, ast.List)):
                        zipped = isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and \
                            node.value.func.id == "zip" and len(node.value.args) == 1 and \
                            isinstance(node.value.args[0], ast.Starred) and \
                            _params_call(node.value.args[0].value, module) == "named_parameters"
                        for i, elt in enumerate(t.elts):
                            if isinstance(elt, ast.Name):
                                bind(elt.id, zipped and len(t.elts) == 2 and i == 1)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                target = node.target
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        bind(n.id, False)
    return {k: v for k, v in bound.items() if v}


def converted_inputs(inputs, module: str, mode: str, before, fresh, segment, param_paths=frozenset()) -> str | None:
    """The text that replaces ``inputs`` (an ``autograd.grad`` call's inputs), or None when
    it cannot be proved to hold only ``module``'s parameters and tensors the region made
    (``fresh`` names); ``""`` when it holds none of the parameters. ``param_paths``: the
    attributes the analysis proved parameters of the module (``model.embed.weight``), each
    converted on its own (``from_tensor`` gives the fake the fixed call holds)."""
    bound = param_names(before, module)
    if dotted_name(inputs) in param_paths:
        return f"{mode}.from_tensor({segment(inputs)})"

    def fake_seq(node):
        return f"[{mode}.from_tensor(t) for t in {segment(node)}]"

    def done(node) -> bool:  # converted by an earlier fix (another finding of the module)
        return isinstance(node, ast.ListComp) and isinstance(node.elt, ast.Call) and \
            dotted_name(node.elt.func) == f"{mode}.from_tensor"

    if done(inputs):
        return ""
    if _is_param_seq(inputs, module, bound):
        return fake_seq(inputs)
    if isinstance(inputs, (ast.List, ast.Tuple)):
        parts, changed = [], False
        for elt in inputs.elts:
            if isinstance(elt, ast.Starred) and done(elt.value):
                parts.append(segment(elt))
            elif isinstance(elt, ast.Starred) and _is_param_seq(elt.value, module, bound):
                parts.append("*" + fake_seq(elt.value))
                changed = True
            elif isinstance(elt, ast.Name) and elt.id in fresh:
                parts.append(segment(elt))
            elif dotted_name(elt) in param_paths:
                parts.append(f"{mode}.from_tensor({segment(elt)})")
                changed = True
            elif isinstance(elt, ast.Call) and dotted_name(elt.func) == f"{mode}.from_tensor":
                parts.append(segment(elt))  # converted by an earlier fix
            else:
                return None
        if not changed:
            return ""
        return "[" + ", ".join(parts) + "]" if isinstance(inputs, ast.List) else \
            "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(inputs, ast.Name) and inputs.id in fresh:
        return ""
    return None


def helper_grads_over_copy(plan, w, following) -> bool:
    """A fake copy of the module handed to a helper of the file in the region
    (``grads = layer_grads(model_fake, x, y)``) whose every ``torch.autograd.grad`` takes
    the gradients with respect to its own parameter's parameters
    (``params = [p for p in model.parameters() if p.requires_grad]``): inside the helper
    that parameter *is* the copy, so the inputs are the fakes the graph holds and nothing
    needs converting. True only when every use of the module in the plan is such an
    argument, the helper never rebinds the parameter, and neither the region nor the code
    right after it takes ``autograd.grad`` itself (it could name the real parameters)."""
    if plan.kind != "module-copy" or not plan.helper or not plan.uses:
        return False
    if autograd_grad_calls(w.body) or autograd_grad_calls(following):
        return False
    defs = [n for n in plan.module_tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == plan.helper]
    if len(defs) != 1 or _bound_elsewhere(plan.module_tree, plan.helper, defs[0]):
        return False
    helper = defs[0]
    positional = [*helper.args.posonlyargs, *helper.args.args]
    names = set()
    for use in plan.uses:
        call = next((c for stmt in w.body for c in ast.walk(stmt) if isinstance(c, ast.Call)
                     and isinstance(c.func, ast.Name) and c.func.id == plan.helper
                     and any(a is use for a in c.args)), None)
        if call is None:
            return False
        index = next(i for i, a in enumerate(call.args) if a is use)
        if any(isinstance(a, ast.Starred) for a in call.args[:index + 1]) or index >= len(positional):
            return False
        names.add(positional[index].arg)
    if len(names) != 1:
        return False
    (param,) = names
    if _stores(helper.body, param):
        return False
    calls = autograd_grad_calls(helper.body)
    bound = param_names(helper.body, param)
    return bool(calls) and all(inputs is not None and _is_param_seq(inputs, param, bound) for _, inputs in calls)


def _stores(stmts, name: str) -> bool:
    """Does ``stmts`` (nested functions included: a ``nonlocal`` may rebind) store ``name``?"""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
               or isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names
               for stmt in stmts for n in ast.walk(stmt))


def _bound_elsewhere(tree, name: str, func) -> bool:
    """Is ``name`` bound in ``tree`` by anything else than ``func`` (a second def, an
    assignment, an import)?"""
    for n in ast.walk(tree):
        if n is func:
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            return True
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == name
                                                                for a in n.names):
            return True
    return False
