"""Containers of real tensors converted at the region boundary without
``torch.utils._pytree`` (private): a generated comprehension.

The analysis proves what a container holds (:func:`fakegrad_lint.analysis.leaks.describe_container`:
leaf tensors, tensors computed from a requires-grad one, nested lists/dicts, or values
that are not all tensors) and the code says what the container is (its bindings: a
list display, ``list(...)``, a dict display, ``dict(...)``, ``.state_dict(...)``, a
``*args`` tuple, ``**kwargs``). The conversion keeps that type and every key:

- ``[fake_mode.from_tensor(t) for t in params]`` (a list), ``tuple(... for t in args)``;
- ``{k: fake_mode.from_tensor(v) for k, v in sd.items()}`` (a dict);
- a nested container converts each level (``type(v)(...)`` for an inner list or tuple);
- an element that is not proven a tensor is converted behind ``isinstance(t, torch.Tensor)``;
- a tensor computed from a requires-grad one becomes a fake leaf of its own
  (``.detach().requires_grad_(t.requires_grad)``: ``from_tensor`` of a non-leaf keeps a
  fake history that backward cannot walk).

``from_tensor`` memoizes: the fake copy of a tensor is the same object wherever it is
made, so a container converted here and a module converted elsewhere in the region
share their fake parameters. When the container's type is not known (a generator
would be consumed, a named tuple has no ``type(x)(iterable)``), there is no fix.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis.names import dotted_name

__all__ = ["container_kind", "conversion"]

_LIST_CALLS = {"list", "sorted"}
_TUPLE_CALLS = {"tuple"}
_DICT_CALLS = {"dict", "OrderedDict", "collections.OrderedDict"}
_DICT_METHODS = {"state_dict"}


def _kind_of(expr, tree=None) -> str | None:
    if tree is not None and isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        made = _returned_kind(tree, expr.func.id)
        if made is not None:
            return made
    if isinstance(expr, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(expr, ast.Tuple):
        return "tuple"
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _kind_of(expr.left), _kind_of(expr.right)
        return left if left == right else left or right
    if isinstance(expr, ast.Call):
        name = dotted_name(expr.func) or ""
        if name in _LIST_CALLS:
            return "list"
        if name in _TUPLE_CALLS:
            return "tuple"
        if name in _DICT_CALLS:
            return "dict"
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in _DICT_METHODS:
            return "dict"
    return None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _returned_kind(tree, name: str) -> str | None:
    """The container type a function of the file returns (``state = params_and_buffers(block)``,
    whose ``return state`` follows ``state = dict(module.named_parameters())``): ``name`` is
    bound once in the module, by a plain top-level ``def`` (no decorator, no generator) whose
    last statement is a ``return`` and whose every ``return`` gives the same type (a display,
    ``dict(...)``, or a local name every binding of which makes it, as
    :func:`container_kind` reads them). Else None."""
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(defs) != 1 or defs[0].decorator_list or not defs[0].body or \
            not isinstance(defs[0].body[-1], ast.Return):
        return None
    func = defs[0]
    for node in ast.walk(tree):
        if node is func:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name or \
                isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) or \
                isinstance(node, (ast.Import, ast.ImportFrom)) and \
                any((a.asname or a.name.split(".")[0]) == name for a in node.names):
            return None
    nodes = list(_scope_nodes(func))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)) for n in nodes):
        return None
    kinds = set()
    for node in nodes:
        if isinstance(node, ast.Return):
            if node.value is None:
                return None
            if isinstance(node.value, ast.Name):
                kinds.add(_kind_of_bindings(nodes, node.value.id))
            else:
                kinds.add(_kind_of(node.value))
    return kinds.pop() if len(kinds) == 1 else None


def _scope_nodes(scope):
    """The nodes of ``scope`` (a function or the module), not those of the functions,
    lambdas and classes nested in it (their bindings are their own); a function's own
    ``arguments`` included."""
    todo = [scope.args] if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    todo += list(scope.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(node))


def _scope_of(tree, line: int):
    best = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno \
                and (best is tree or node.lineno >= best.lineno):
            best = node
    return best


def container_kind(tree, value: str, line: int | None = None) -> str | None:
    """``"list"``, ``"tuple"`` or ``"dict"`` when every binding of ``value`` (an
    assignment, a ``*args``/``**kwargs`` parameter) makes that type; else None. With
    ``line``, the bindings are those of the scope that holds the line (the module's when
    that function binds no such name: a global), otherwise those of the whole file."""
    root = value.split(".", 1)[0]
    nodes = list(ast.walk(tree))
    if line is not None:
        scope = _scope_of(tree, line)
        nodes = list(_scope_nodes(scope))
        declared = any(isinstance(n, (ast.Global, ast.Nonlocal)) and root in n.names for n in nodes)
        if scope is not tree and (declared or not _binds(nodes, root)):
            if declared or any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not scope
                               and n.lineno < scope.lineno <= n.end_lineno for n in ast.walk(tree)):
                return None  # a closure variable or a declared global: not worked out here
            nodes = list(_scope_nodes(tree))
    return _kind_of_bindings(nodes, value, tree)


def _binds(nodes, name: str) -> bool:
    for node in nodes:
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
    return False


_ANNOTATED = {"Dict": "dict", "dict": "dict", "Mapping": "dict", "MutableMapping": "dict", "OrderedDict": "dict",
              "List": "list", "list": "list", "Sequence": None, "Tuple": "tuple", "tuple": "tuple"}


def _annotated_kind(annotation) -> str | None:
    """The container type a parameter's annotation names (``Dict[str, Tensor]`` ->
    ``"dict"``), else None. Trusted only together with the analysis' proof of what the
    argument holds (:func:`conversion` checks that the two agree)."""
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = dotted_name(node) if node is not None else None
    return _ANNOTATED.get(name.rsplit(".", 1)[-1]) if name else None


def _kind_of_bindings(nodes, value: str, tree=None) -> str | None:
    """``tree``: the module, whose functions' returns a call of one gives (``_returned_kind``)."""
    kinds = set()
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(dotted_name(t) == value for t in targets):
                kinds.add(_kind_of(node.value, tree))
            elif any(dotted_name(e) == value for t in targets if isinstance(t, (ast.Tuple, ast.List))
                     for e in ast.walk(t)):
                kinds.add(None)  # unpacked from something else
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem, ast.NamedExpr)):
            target = node.optional_vars if isinstance(node, ast.withitem) else node.target
            if target is not None and any(dotted_name(e) == value for e in ast.walk(target)):
                kinds.add(None)
        elif isinstance(node, ast.arguments):
            if node.vararg is not None and node.vararg.arg == value:
                kinds.add("tuple")
            if node.kwarg is not None and node.kwarg.arg == value:
                kinds.add("dict")
            for a in [*node.posonlyargs, *node.args, *node.kwonlyargs]:
                if a.arg == value:
                    kinds.add(_annotated_kind(a.annotation))
    if len(kinds) == 1:
        return kinds.pop()
    return None


class _Names:
    def __init__(self, avoid):
        self.avoid = set(avoid)

    def new(self, name: str) -> str:
        out, i = name, 2
        while out in self.avoid:
            out, i = f"{name}{i}", i + 1
        self.avoid.add(out)
        return out


def _element(desc, var: str, mode: str, torch_name: str, names: _Names) -> tuple[str, bool]:
    """The expression converting ``var`` (described by ``desc``) and whether it reads
    ``torch``."""
    if desc == "tensor":
        return f"{mode}.from_tensor({var})", False
    if desc == "derived":
        return f"{mode}.from_tensor({var}).detach().requires_grad_({var}.requires_grad)", False
    if isinstance(desc, tuple):
        inner, reads_torch = _level(desc, var, None, mode, torch_name, names)
        return inner, reads_torch
    return f"({mode}.from_tensor({var}) if isinstance({var}, {torch_name}.Tensor) else {var})", True


def _level(desc, source: str, kind: str | None, mode, torch_name, names) -> tuple[str, bool]:
    top, inner = desc
    if top == "dict":
        k, v = names.new("k"), names.new("v")
        elt, reads = _element(inner, v, mode, torch_name, names)
        return f"{{{k}: {elt} for {k}, {v} in {source}.items()}}", reads
    t = names.new("t")
    elt, reads = _element(inner, t, mode, torch_name, names)
    if kind == "list":
        return f"[{elt} for {t} in {source}]", reads
    if kind == "tuple":
        return f"tuple({elt} for {t} in {source})", reads
    return f"type({source})({elt} for {t} in {source})", reads


class NoConversion(Exception):
    """No conversion is proven to fit the container."""


def conversion(plan, mode: str, torch_name: str, taken) -> tuple[str, bool]:
    """``(expression, reads_torch)``: the fake copy of the container ``plan.value``."""
    w = plan.with_node
    line = getattr(w, "lineno", None) or (w.body[0].lineno if getattr(w, "body", None) else None)
    kind = container_kind(plan.module_tree, plan.value, line)
    desc = plan.contents
    if kind is None:
        raise NoConversion(f"the type of `{plan.value}` is not known (a list, a tuple or a dict)")
    if not isinstance(desc, tuple):
        desc = ("dict" if kind == "dict" else "seq", "derived" if plan.derived else "any")
    if (desc[0] == "dict") != (kind == "dict"):
        raise NoConversion(f"`{plan.value}` is not proven a {'dict' if desc[0] == 'dict' else 'list or tuple'}")
    names = _Names({plan.value.split(".", 1)[0], mode, torch_name})  # comprehension names are local
    return _level(desc, plan.value, kind, mode, torch_name, names)
