"""Fake copies of real modules, the form each module fix uses (measured on torch 2.13).

Two forms keep every shape of the region and never touch the real module:

- ``torch.func.functional_call(model, state, args)`` over ``state = {name:
  fake_mode.from_tensor(t) ...}`` (:mod:`fakegrad_lint.fix.builders`): for a direct
  call ``model(x)``. Works under a strict and an allow mode; forward hooks run (on the
  real module object, with fake tensors); gradients and in-place buffer updates land on
  the fake state; no real storage.
- ``copy.deepcopy(model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(),
  *model.buffers()]})``: a deep copy whose parameters and buffers are looked up in the
  memo, so each one is replaced by its fake copy (``from_tensor`` memoizes: tied
  weights stay tied, the copy's parameters are ``nn.Parameter`` fakes). Works under a
  strict and an allow mode (no tensor op runs; ``FakeCopyMode`` raises the strict-mode
  error inside a strict region, and a plain ``copy.deepcopy`` inside an allow region
  fails on ``set_`` of a meta storage); hooks are copied with the module; buffer
  updates and gradients land on the copy; the only real memory is the module's Python
  objects. Used for a method other than ``forward``, a loop over the module's
  parameters or children, a ``copy.deepcopy(model)`` in a strict region (FGL002), when
  the region itself reads the gradients (they are read on the copy), in a file that runs
  threads (:func:`runs_threads`), and where activation checkpointing can rerun the
  module's forward in the backward (:func:`recomputes_forward`).
"""

from __future__ import annotations

import ast
import os
import re

from fakegrad_lint.analysis.names import dotted_name

__all__ = ["fake_copy", "module_loads", "grad_reads_in", "uses_own_methods", "leaked_refusal",
           "recomputes_forward"]

# nn.Module's own methods: calling one of them in the region is no reason for a copy
_NN_MODULE_METHODS = frozenset({
    "forward", "train", "eval", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type",
    "requires_grad_", "zero_grad", "apply", "parameters", "named_parameters", "buffers",
    "named_buffers", "children", "named_children", "modules", "named_modules", "state_dict",
    "load_state_dict", "extra_repr", "get_submodule", "get_parameter", "get_buffer", "share_memory",
    "to_empty", "register_buffer", "register_parameter", "register_module", "add_module",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_backward_hook", "register_full_backward_pre_hook",
})


def fake_copy(copy_fn: str, module: str, mode: str, each: bool = False, share_state: bool = False) -> str:
    """The expression of a fake deep copy of ``module`` made by ``mode`` (``each``: of a
    list of modules, or the children a container module iterates over). With
    ``share_state`` the copy shares the objects of the public attributes of every
    submodule (``self.logged``, ``self.hparams``: the memo maps each to itself), so a
    method that records into them (``self.logged[name] = ...``) records into the real
    module's, as before the fix; only the tensors and nn.Module's own ``_``-state are
    copied."""
    if share_state and not each:
        return (f"{copy_fn}({module}, {{**{{id(v): v for sub in {module}.modules() for k, v in vars(sub).items() "
                f"if not k.startswith(\"_\")}}, **{{id(t): {mode}.from_tensor(t) for t in "
                f"[*{module}.parameters(), *{module}.buffers()]}}}})")
    if each:
        return (f"{copy_fn}({module}, {{id(t): {mode}.from_tensor(t) for m in {module} for t in "
                f"[*m.parameters(), *m.buffers()]}})")
    return (f"{copy_fn}({module}, {{id(t): {mode}.from_tensor(t) for t in "
            f"[*{module}.parameters(), *{module}.buffers()]}})")


def handed_on(stmts, module: str, to_helper: bool = False) -> bool:
    """Is ``module`` an argument of a call in ``stmts`` (``gradient_penalty(critic, x)``)?
    The helper then runs the real module in the region too: the region uses a fake copy
    throughout. ``to_helper``: only calls that may run the module's own methods (not the
    builtins that iterate over it, ``enumerate(net)``)."""
    skip = _METADATA_CALLS | _ITERATING_BUILTINS if to_helper else _METADATA_CALLS
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Call):
                args = [a.value if isinstance(a, ast.Starred) else a for a in n.args] + [k.value for k in n.keywords]
                if any(dotted_name(a) == module for a in args) and \
                        (dotted_name(n.func) or "").rsplit(".", 1)[-1] not in skip:
                    return True
    return False


# builtins that only look at a module (no tensor op): handing it to them is no reason for a copy
_METADATA_CALLS = frozenset({"isinstance", "type", "id", "print", "repr", "str", "len", "hasattr", "getattr",
                             "callable", "vars", "dir"})
# builtins that iterate over a module's children: they call none of its own methods
_ITERATING_BUILTINS = frozenset({"enumerate", "zip", "list", "tuple", "iter", "reversed", "sorted", "map",
                                 "filter", "next", "set", "dict"})


def method_receiver(stmts, uses) -> bool:
    """Is one of ``uses`` the receiver of a call of a method of the module's own class
    (``module.training_step(...)``, not one of nn.Module's)? Such a method may keep Python
    state on the module (see ``fake_copy(share_state=True)``)."""
    ids = {id(u) for u in uses}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and id(n.func.value) in ids
               and n.func.attr not in _NN_MODULE_METHODS and not n.func.attr.startswith("__")
               for s in stmts for n in ast.walk(s))


def iterated(stmts, expr) -> bool:
    """Is ``expr`` the iterable of a loop or comprehension in ``stmts`` itself (``for blk
    in blocks``), not the receiver of ``.children()``/``.parameters()``?"""
    return any(isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) and n.iter is expr
               for s in stmts for n in ast.walk(s))


def wrapped(stmt_head: str, call: str, indent: str, unit: str, limit: int) -> str:
    """``name = copy.deepcopy(module, {...})`` as one line, or its arguments on a line of
    their own when the line would pass ``limit``."""
    line = f"{stmt_head}{call}"
    if len(indent) + len(line) <= limit:
        return line
    fn, args = call.split("(", 1)
    if len(indent + unit) + len(args) - 1 <= limit or ", {**" not in args:
        return f"{stmt_head}{fn}(\n{indent}{unit}{args[:-1]}\n{indent})"
    # one argument a line, and a dict display that merges several (`{**a, **b}`) one entry a line
    inner = indent + unit
    parts = []
    for part in split_top(args[:-1]):
        entries = split_top(part[1:-1]) if part.startswith("{**") and part.endswith("}") else None
        if entries and len(entries) > 1:
            part = "{\n" + "".join(f"{inner}{unit}{e},\n" for e in entries) + inner + "}"
        parts.append(f"{inner}{part},\n")
    return f"{stmt_head}{fn}(\n" + "".join(parts) + indent + ")"


def split_top(text: str) -> list[str]:
    """``text`` split at its top-level commas (not inside brackets or strings), stripped."""
    out, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def wrapped_call(call: str, line: str, old_len: int, indent: str, unit: str, limit: int) -> str:
    """``call`` replacing ``old_len`` characters of ``line``, its arguments on a line of
    their own when the line would pass ``limit``."""
    if len(line) - old_len + len(call) <= limit:
        return call
    fn, args = call.split("(", 1)
    return f"{fn}(\n{indent}{unit}{args[:-1]}\n{indent})"


def module_loads(stmts, module: str, from_line: int):
    """Every load of ``module`` (``model``, ``self.net``) in ``stmts`` from ``from_line``
    on, outermost first (``model.fc`` gives ``model``); None when the name is assigned
    there or read in a nested function (the copy would not be what those read)."""
    out = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                if any(dotted_name(n) == module for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))):
                    return None
            if isinstance(node, (ast.Name, ast.Attribute)) and dotted_name(node) == module:
                if not isinstance(node.ctx, ast.Load):
                    return None
                if node.lineno >= from_line:
                    out.append(node)
    return out


# nn.Module methods that convert every tensor through `_apply`: on a copy whose tensors are
# `from_tensor` fakes they raise (measured on torch 2.13: `Couldn't swap Linear.weight`)
_CONVERSIONS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "to_empty", "xpu",
                          "mps", "ipu", "share_memory"})


def converts(stmts, module: str) -> bool:
    """Does ``stmts`` call a converting method of ``module`` (``model.float()``, ``model.to(d)``)?
    A fake copy cannot run those (see ``_CONVERSIONS``)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _CONVERSIONS
               and dotted_name(n.func.value) == module for s in stmts for n in ast.walk(s))


def uses_own_methods(stmts, module: str, calls) -> bool:
    """Does the region call a method of the module's own class (``ddp.all_reduce_grads()``,
    not one of ``nn.Module``'s) besides the leaking calls? Such a method reads the state the
    fake run makes (gradients, statistics): the region then runs on a fake copy, which the
    method reads too."""
    own = {id(c) for c in calls}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and id(node) not in own and isinstance(node.func, ast.Attribute) \
                    and dotted_name(node.func.value) == module and node.func.attr not in _NN_MODULE_METHODS \
                    and not node.func.attr.startswith("__"):
                return True
    return False


_THREAD_MODULES = ("threading", "_thread", "concurrent.futures", "multiprocessing.pool", "multiprocessing.dummy")


def runs_threads(tree) -> bool:
    """Does the file import a thread API (``threading``, ``concurrent.futures``, a thread
    pool)? ``torch.func.functional_call`` swaps its tensors into the module object for the
    call's duration, visible to every thread that runs the module meanwhile; a fake copy
    of the module per region is not shared."""
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) \
            else []
        if any(n == m or n.startswith(m + ".") for n in names for m in _THREAD_MODULES):
            return True
    return False


_CHECKPOINT_RE = re.compile(
    r"\btorch\.utils\.checkpoint\b|\bfrom\s+torch\.utils\s+import\b[^\n]*\bcheckpoint\b")
_MAX_IMPORTED = 200  # project modules read by recomputes_forward at most (more: assumed yes)


def recomputes_forward(source: str, path: str | None) -> bool:
    """Does ``source`` (the file at ``path``), or a module of its project that it imports
    directly or through other project modules, name ``torch.utils.checkpoint``?
    Activation checkpointing (``checkpoint(block, x, use_reentrant=False)`` in a forward)
    runs the block's forward again during the backward, after
    ``torch.func.functional_call`` has swapped the real tensors back into the module: the
    recompute sees the real parameters (under a strict mode the backward raises the
    strict-mode error, measured on torch 2.13, vault7 project
    ``hazard_planning_ctx_checkpointed_strict``). A fake copy keeps its fake parameters
    for the recompute. The module's class may be in any module the file imports, so every
    project module it reaches is read (the modules of ``torch`` and other installed
    packages are not the project's)."""
    if _CHECKPOINT_RE.search(source):
        return True
    if not path or path.startswith("<") or "import" not in source:
        return False
    from fakegrad_lint.analysis.project import imported_modules
    from fakegrad_lint.analysis.roots import OVERLAY, Project

    project = Project.for_file(path)
    if project is None:
        return False
    seen, todo = {os.path.abspath(path)}, [(source, path)]
    while todo:
        text, where = todo.pop()
        for name in imported_modules(text, where, project):
            found = project.find(name)
            if found is None or os.path.abspath(found) in seen:
                continue
            seen.add(os.path.abspath(found))
            if len(seen) > _MAX_IMPORTED:
                return True
            try:
                other = OVERLAY.get(os.path.abspath(found))
                if other is None:
                    with open(found, encoding="utf-8", errors="replace") as fh:
                        other = fh.read()
            except OSError:
                return True  # not readable: not proved free of checkpointing
            if _CHECKPOINT_RE.search(other):
                return True
            todo.append((other, found))
    return False


def call_receivers(calls, module: str) -> list:
    """The expressions that name ``module`` in its calls (``model`` of ``model(x)`` and of
    ``model.forward(x)``)."""
    out = []
    for call in calls:
        func = call.func
        out.append(func if dotted_name(func) == module or not isinstance(func, ast.Attribute) else func.value)
    return out


def leaked_refusal(leak, plan) -> str | None:
    """Why a leaked fake mixed with a real value (FGL003) gets no fix, or None. Under a
    strict mode every other real input of the op raises too: converting the module's
    parameters does not make a call with real inputs run (a tensor mixed with the fake in
    one op is converted: the fake is the other operand)."""
    if getattr(leak.verdict, "value", None) == "crash" and plan.kind == "leaked-module":
        return ("the leaked fake's mode is strict: the op's other real inputs would still raise "
                "(compute the value outside the fake region instead)")
    return None


def grad_read_roots(stmts, module: str, fresh=frozenset()):
    """The loads of ``module`` through which ``stmts`` read its gradients: the root of
    ``module.fc.weight.grad``, the receiver of ``module.parameters()`` (any method) that a
    loop or comprehension reading ``.grad`` draws from. None when a gradient is read
    some other way (through another name), except through a name of ``fresh`` (tensors
    the region made itself, see :func:`made_in`: never one of the module's)."""
    def drawn(it):
        return it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
            dotted_name(it.func.value) == module else None

    def reads_grad(nodes) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr == "grad" for b in nodes for n in ast.walk(b))

    roots, covered = [], set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            clipped = clip_root(node, module)
            if clipped is not None:
                roots.append(clipped)
            elif isinstance(node, (ast.For, ast.AsyncFor)) and drawn(node.iter) is not None and reads_grad(node.body):
                roots.append(drawn(node.iter))
                covered.update(id(n) for b in node.body for n in ast.walk(b))
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                gens = [drawn(g.iter) for g in node.generators]
                if any(g is not None for g in gens) and reads_grad([node]):
                    roots.extend(g for g in gens if g is not None)
                    covered.update(id(n) for n in ast.walk(node))
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and node.attr == "grad" and id(node) not in covered:
                if isinstance(node.value, ast.Name) and node.value.id in fresh:
                    continue
                base = chain_to(node.value, module)
                if base is None:
                    return None
                roots.append(base)
    return roots


_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "arange", "randint", "tensor",
                        "linspace", "eye", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like"})


def made_in(stmts) -> frozenset:
    """Plain names that ``stmts`` (a region's block) bind, once, to a torch factory call
    (``x = torch.randn(6, 4, requires_grad=True)``): tensors made there, none of them a
    parameter of a module."""
    counts: dict = {}
    made = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.NamedExpr)) else []
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        counts[n.id] = counts.get(n.id, 0) + 1
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                pairs = [(node.targets[0], node.value)]
                if isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple) and \
                        len(node.targets[0].elts) == len(node.value.elts):
                    pairs = list(zip(node.targets[0].elts, node.value.elts))  # `a, b = torch.randn(2), torch.randn(3)`
                for target, value in pairs:
                    if isinstance(target, ast.Name) and isinstance(value, ast.Call) and \
                            isinstance(value.func, ast.Attribute) and value.func.attr in _FACTORIES and \
                            dotted_name(value.func.value) == "torch":
                        made.add(target.id)
    made = {n for n in made if counts.get(n) == 1}
    grown = True
    while grown:  # `mixed = (alpha * real + (1 - alpha) * fake).requires_grad_()` over tensors made there
        grown = False
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                        and counts.get(node.targets[0].id) == 1 and node.targets[0].id not in made:
                    reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                    calls = [n for n in ast.walk(node.value) if isinstance(n, ast.Call)]
                    if reads and reads <= made | {"torch"} and all(
                            isinstance(c.func, ast.Attribute) for c in calls):
                        made.add(node.targets[0].id)
                        grown = True
    return frozenset(made)


_GRAD_READERS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "get_total_norm"})


def clip_root(node, module: str):
    """``torch.nn.utils.clip_grad_norm_(module.parameters(), ...)`` (a read of every
    gradient of the module): the ``module`` node, else None."""
    if isinstance(node, ast.Call) and node.args and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in _GRAD_READERS:
        arg = node.args[0]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "parameters" \
                and dotted_name(arg.func.value) == module:
            return arg.func.value
    return None


def chain_to(node, module: str):
    """The node naming ``module`` at the root of ``node``'s chain of attributes and
    constant subscripts (``model[0].weight`` -> ``model``), or None."""
    while dotted_name(node) != module:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            node = node.value
        else:
            return None
    return node


def grad_reads_in(stmts, module: str) -> bool:
    """Does ``stmts`` read a gradient through ``module`` (``p.grad`` for ``p`` drawn
    from it, ``module.fc.weight.grad``)? (Then the region reads the gradients the fix
    sends to the fake copy.)"""
    from fakegrad_lint.fix.builders import _module_grad_read

    return _module_grad_read(stmts, module) is not None
