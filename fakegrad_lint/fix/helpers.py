"""Fixes inside the function whose code leaks (``FixPlan.placement == "function"``).

The analysis plans these when the real value reaches the fake op through code that
runs in a region opened somewhere else (see :mod:`fakegrad_lint.analysis.fix_plans`):
a helper reading a global or a closure variable, a function bound by
``functools.partial`` or run by a decorator's wrapper, a method picked by ``getattr``,
the body of a ``with`` over a context-manager class, a mode entered through an
``ExitStack`` under a condition. The mode has no name in that code, so the fix asks
torch for the active one and converts only when there is one::

    fake_mode = torch._guards.detect_fake_mode()
    pos_table_fake = pos_table if fake_mode is None else fake_mode.from_tensor(pos_table)

Outside any fake region ``detect_fake_mode()`` is ``None`` and the real value is used
as before: every other caller of the helper keeps working, which is why the edit lands
in the helper (every caller in a region is fixed) and not at one call. A real module
called there runs with :func:`torch.func.functional_call` over ``from_tensor`` copies
of its parameters and buffers (an empty dict outside a region: the module's own); any
other use of a module (a method, a loop, an argument) gets a fake deep copy
(``FakeCopyMode`` under ``unset_fake_temporarily``, which works under strict and
permissive modes alike). The conversion goes right above the statement with the first
use, in the innermost block that holds every use (inside a loop over modules it
converts the loop variable each time round; ``from_tensor`` gives the same fake copy of
the same tensor every time).

Always unsafe (the mode is found at run time); display-only when the code reads the
real gradient (``x.grad``, a parameter's ``.grad`` of the module).
"""

from __future__ import annotations

import ast
import re

from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.findings import Applicability, Fix
from fakegrad_lint.fix import probes

_SKIP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BLOCKS = ("body", "orelse", "finalbody")

DETECT = "_guards.detect_fake_mode()"


def build_function_fix(leak, source: str, plan=None, detect: str = DETECT, why: str | None = None) -> Fix:
    """``plan`` (default ``leak.fix``) converted in its function with the mode found at run
    time by ``torch.<detect>``; ``why``: the fix stands for a mode taken from an operand
    that the file does not prove fake (``fix/operand_mode.py``), said in its message."""
    from fakegrad_lint.fix import builders as B

    plan = leak.fix if plan is None else plan
    func = plan.func_node
    if not plan.uses:
        raise B.NoFix("the function has no statement to convert the value in")
    if plan.kind == "module" and not isinstance(func, ast.Module):
        # the function reads the gradients the region makes (`p.grad` over `model.parameters()`):
        # it runs a fake copy and those reads go to the copy (`grad_read_copy`)
        plan = grad_read_copy(plan, _Block(func.body), [], leak) or plan
    paths = [_path(func, u) for u in plan.uses]
    if any(p is None for p in paths):
        raise B.NoFix("a use of the value is not in a statement of the function (a lambda, a default)")
    block, index = _common_point(paths)
    stmt = block[index]
    value, kind, uses = plan.value, plan.kind, list(plan.uses)
    root = value.split(".", 1)[0].split("[", 1)[0]
    comp = _comprehension_binding(stmt, uses, root)
    if comp is not None:
        loop_root = plan.loop_modules.get(id(comp))
        if loop_root is None or dotted_name(loop_root) is None:
            raise B.NoFix(f"`{root}` is a comprehension or lambda variable not drawn from a real module")
        # `sum(p.sum() for p in model.parameters())`: the comprehension draws from a fake copy
        value, kind, uses = dotted_name(loop_root), "module-copy", [loop_root]
        root = value.split(".", 1)[0]
    if _stored_before_use(block[index:], root, stmt.lineno, max(u.lineno for u in uses)):
        raise B.NoFix(f"`{root}` is rebound in `{_fname(func)}` before it leaks")

    nodes = B._Nodes(source)
    pos = nodes.pos
    before = nodes.stmt(stmt)
    if nodes.file.positions[before].start.line != stmt.lineno or \
            nodes.file.positions[before].start.column != pos.char_pos(stmt.lineno, stmt.col_offset)[1]:
        raise B.NoFix("the statement that leaks shares its line with other code")
    taken = nodes.file.names_taken(before)
    ops = nodes.ops()
    _, indent = B._hoist_point(_Block(block), pos, stmt.lineno - 1 if index == 0 else block[index - 1].end_lineno,
                               stmt)
    torch_name, needs_torch = B._torch_module_name(plan.module_tree, pos, stmt.lineno)
    unit = nodes.file.indent
    lines = []
    existing = _existing(block[:index], pos)
    mode = existing.get(f"{torch_name}.{detect}")
    if mode is None:
        mode = B._unique("fake_mode", taken)
        lines.append(f"{mode} = {torch_name}.{detect}")
    taken = taken | {mode}
    base = re.sub(r"\W+", "_", value.rsplit(".", 1)[-1]).strip("_") or "value"
    base = base.lower() if base.isupper() else base
    wanted = []

    if kind == "tensor":
        convert = f"{mode}.from_tensor({value})" + (".detach().requires_grad_()" if plan.derived else "")
        rhs = f"{value} if {mode} is None else {convert}"
        fake = existing.get(rhs) or B._unique(f"{base}_fake", taken)
        if rhs not in existing:
            lines.append(f"{fake} = {rhs}")
        for node in uses:
            ops.replace(nodes.expr(node), fake)
        what = f"Convert `{value}`"
    elif kind == "module":
        pairs = f"[*{value}.named_parameters(), *{value}.named_buffers()]"
        static = ", static_shapes=True" if plan.static_shapes else ""
        rhs = f"{{}} if {mode} is None else {{name: {mode}.from_tensor(t{static}) for name, t in {pairs}}}"
        state = existing.get(rhs) or B._unique(f"{base}_fake_state", taken)
        if rhs not in existing:
            stmt_text = f"{state} = {rhs}"
            if len(indent) + len(stmt_text) > B._Layout(pos).limit:
                stmt_text = (f"{state} = {{}} if {mode} is None else {{\n{indent}{unit}name: {mode}.from_tensor(t{static})"
                             f"\n{indent}{unit}for name, t in {pairs}\n{indent}}}")
            lines.append(stmt_text)
        for call in uses:
            new_call = B._functional_call(call, value, state, torch_name, pos, taken)
            if new_call is None:
                raise B.NoFix("a positional argument follows a keyword argument in the module call")
            ops.replace(nodes.expr(call), new_call)
        what = f"Call `{value}` with `torch.func.functional_call` over fake copies of its parameters and buffers"
    elif kind == "module-copy":
        names = B._bound_imports(plan.module_tree, stmt.lineno)
        copy_name = _import_name(names, taken, ("copy", None), "copy", wanted)
        fcm = _import_name(names, taken, ("torch._subclasses.fake_tensor", "FakeCopyMode"), "FakeCopyMode", wanted)
        unset = _import_name(names, taken, ("torch._subclasses.fake_tensor", "unset_fake_temporarily"),
                             "unset_fake_temporarily", wanted)
        if None in (copy_name, fcm, unset):
            raise B.NoFix("`copy`, `FakeCopyMode` or `unset_fake_temporarily` names something else here")
        fake = B._unique(f"{base}_fake", taken)
        lines.append(f"{fake} = {value}\nif {mode} is not None:\n{indent}{unit}with {unset}(), {fcm}({mode}):"
                     f"\n{indent}{unit}{unit}{fake} = {copy_name}.deepcopy({value})")
        for node in uses:
            ops.replace(nodes.expr(node), fake)
        what = f"Use a fake copy of `{value}` (`copy.deepcopy` under `FakeCopyMode`)"
    else:
        raise B.NoFix(f"no fix inside a function is known for a {kind}")
    if lines:
        ops.insert_before(before, "\n".join(lines), indent)
    if needs_torch:
        ops.add_import("torch")
    for module, obj in wanted:
        ops.add_import(module, obj)

    where = ("in " if isinstance(func, ast.Module) else "inside ") + _fname(func)
    if why is not None:
        message = (f"{what} {where}, with the mode found when it runs (`torch.{detect}`: where the "
                   f"operand is real it keeps the real value; {why})")
    else:
        message = (f"{what} {where}, with the mode active when it runs (`torch._guards.detect_fake_mode()`: "
                   f"outside a fake region it keeps the real value, so every caller keeps working)")
    probed = []
    read = None if plan.grad_redirect and kind == "module-copy" else _grad_read(plan, kind, value, probed)
    if read is not None:
        return Fix(f"{message} (not applied: line {read} reads the real gradient of `{value}`)",
                   Applicability.DISPLAY_ONLY, ops.edits())
    return B._with_probe_note(Fix(message, Applicability.UNSAFE, ops.edits()), plan.module_tree, probed)


_PARAM_ITERATORS = frozenset({"parameters", "named_parameters", "modules", "named_modules", "children",
                              "named_children"})


def _chain_root(node):
    """``model[0].fc.weight`` -> ``model`` (attributes and constant subscripts)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return None
        node = node.value
    return node


def grad_read_copy(plan, w, following, leak):
    r"""A real module run in the region whose parameter gradients the code then reads
    (``p.grad`` over ``model.parameters()``, ``model[0].weight.grad``), in the block or
    after it in the same block of code: the module runs as a fake copy made in the region
    and those reads go to the copy, so the code reads the same fake gradients (same shapes,
    ``None`` for the same frozen parameters) and the real ones stay untouched. None (the fix
    stays display-only) unless every reference to the module there is a use or such a
    read, and every gradient read the analysis knows of is among them."""
    from dataclasses import replace

    module = plan.value
    if leak.sink == "torch.autograd.grad":
        return None
    stmts = list(w.body) + list(following)
    reads = _grad_read_nodes(stmts, module, clips=True)
    if not reads:
        return None
    if plan.kind == "module":
        mods = []
        for call in plan.uses:
            func = call.func
            mods.append(func if dotted_name(func) == module or not isinstance(func, ast.Attribute) else func.value)
    else:
        mods = list(plan.uses)
    allowed = {id(n) for n in mods + reads}
    first = min(n.lineno for n in mods + reads)
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(getattr(node, "ctx", None), ast.Store) and node.lineno < first:
                continue  # `model = get_model(name)` in the block before the copy is made
            if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and id(node) not in allowed and \
                    dotted_name(node) == module:
                return None  # another use of the real module: it must stay real
    lines = {n.lineno for n in reads}
    if any(ln not in lines for ln in plan.grad_reads):
        return None  # a gradient read elsewhere (another function) would change
    uses = list({id(n): n for n in mods + reads}.values())
    return replace(plan, kind="module-copy", uses=uses, grad_redirect=True)


def _grad_read_nodes(stmts, module, clips: bool = False) -> list:
    """The expressions naming ``module`` in ``stmts`` through which its parameters'
    gradients are read: ``model[0].weight.grad`` (the ``model``), the ``model`` of
    ``model.parameters()`` (``named_parameters``...) in a loop or comprehension that
    reads ``.grad``."""
    from fakegrad_lint.fix.modules import clip_root

    reads = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            clipped = clip_root(node, module) if clips else None  # (`clip_grad_norm_` reads them all)
            if clipped is not None:
                reads.append(clipped)
            if isinstance(node, ast.Attribute) and node.attr == "grad":
                chain = node.value
                while isinstance(chain, (ast.Attribute, ast.Subscript)) and dotted_name(chain) != module:
                    if isinstance(chain, ast.Subscript) and not isinstance(chain.slice, ast.Constant):
                        chain = None
                        break
                    chain = chain.value
                if chain is not None and chain is not node.value and dotted_name(chain) == module:
                    reads.append(chain)
            loops = []
            if isinstance(node, (ast.For, ast.AsyncFor)):
                loops = [(node.iter, node.body)]
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                loops = [(g.iter, [node]) for g in node.generators]
            for it, body in loops:
                if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
                        it.func.attr in _PARAM_ITERATORS and dotted_name(it.func.value) == module and \
                        any(isinstance(n, ast.Attribute) and n.attr == "grad" for b in body for n in ast.walk(b)):
                    reads.append(it.func.value)
    return reads


def parameter_grad_read_elsewhere(tree, w, probed=None) -> int | None:
    """A line outside the function that holds ``w`` (the region's block) that reads the
    gradient of a loop variable or of an attribute of ``self`` (``for p in bucket:
    p.grad.div_(n)``), which can be a parameter of the module: whose it is is not known,
    so a module fix there could take those gradients away (display-only then)."""
    inside = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= _first_line_of(w) <= node.end_lineno:
            if inside is None or node.lineno >= inside.lineno:
                inside = node
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node is inside:
            continue
        loop_vars = set()
        for sub in ast.walk(node):
            if isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
                loop_vars |= {t.id for t in ast.walk(sub.target) if isinstance(t, ast.Name)}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr == "grad" and isinstance(sub.ctx, ast.Load):
                if probed is not None and probes.type_probe(tree, sub):
                    probed.append(sub.lineno)  # `type(p.grad)`: sees `NoneType` after the fix
                    continue
                base = _chain_root(sub.value)
                if isinstance(base, ast.Name) and (base.id in loop_vars or base.id == "self"):
                    return sub.lineno
    return None


def _first_line_of(w) -> int:
    bind = getattr(w, "bind_stmt", None)
    if bind is not None:
        return bind.lineno
    return getattr(w, "lineno", None) or w.body[0].lineno


class _Block:
    """A statement list shaped like a ``with`` for :func:`builders._hoist_point`."""

    def __init__(self, body):
        self.body = body


def _fname(func) -> str:
    if isinstance(func, ast.Module):
        return "the code that runs in the region"
    return f"`{func.name}`"


def _path(func, node):
    """``[(block, index), ...]`` from the function's body down to the innermost statement
    that holds ``node`` (None when it is not in a statement of ``func`` itself)."""
    target = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)

    def holds(stmt) -> bool:
        start = (stmt.lineno, stmt.col_offset)
        end = (stmt.end_lineno, stmt.end_col_offset)
        return start <= target[:2] and target[2:] <= end

    out = []
    blocks = [func.body]
    while blocks:
        for block in blocks:
            hit = next((i for i, s in enumerate(block) if holds(s)), None)
            if hit is not None:
                break
        else:
            return out or None
        stmt = block[hit]
        out.append((block, hit))
        if isinstance(stmt, _SKIP):
            return None  # inside a nested function or class: not run by this code
        blocks = _sub_blocks(stmt)
    return out


def _sub_blocks(stmt):
    out = [getattr(stmt, name) for name in _BLOCKS if isinstance(getattr(stmt, name, None), list)]
    for h in getattr(stmt, "handlers", ()) or ():
        out.append(h.body)
    for c in getattr(stmt, "cases", ()) or ():
        out.append(c.body)
    return [b for b in out if b]


def _common_point(paths):
    """The innermost block that holds every use, and the index of its first statement
    with a use."""
    depth = 0
    while all(len(p) > depth for p in paths) and len({id(p[depth][0]) for p in paths}) == 1:
        if len({p[depth][1] for p in paths}) > 1:
            break
        depth += 1
    if depth < min(len(p) for p in paths) and len({id(p[depth][0]) for p in paths}) == 1:
        level = depth
    else:
        level = depth - 1
    block = paths[0][level][0]
    return block, min(p[level][1] for p in paths)


def _comprehension_binding(stmt, uses, root):
    """The comprehension generator (``ast.comprehension``) or lambda that binds ``root``
    around one of the uses, if any."""
    spans = [(u.lineno, u.col_offset) for u in uses]

    def around(node) -> bool:
        return any((node.lineno, node.col_offset) <= s <= (node.end_lineno, node.end_col_offset) for s in spans)

    for node in ast.walk(stmt):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and around(node):
            for g in node.generators:
                if any(isinstance(t, ast.Name) and t.id == root for t in ast.walk(g.target)):
                    return g
        if isinstance(node, ast.Lambda) and around(node):
            a = node.args
            params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
            if root in params:
                return node
    return None


def _stored_before_use(stmts, root, from_line, last_use) -> bool:
    def stores(node):
        if isinstance(node, _SKIP):
            return
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id == root:
            yield node.lineno
        if isinstance(node, (ast.Global, ast.Nonlocal)) and root in node.names:
            yield node.lineno
        for child in ast.iter_child_nodes(node):
            yield from stores(child)

    return any(from_line <= line < last_use for s in stmts for line in stores(s))


def _existing(stmts, pos) -> dict:
    """``{normalised right-hand side: name}`` of the plain assignments of ``stmts``
    (a previous fix's hoist: reuse its name)."""
    out = {}
    for s in stmts:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            out["".join(pos.segment(s.value).split())] = s.targets[0].id
    return _Norm(out)


class _Norm(dict):
    """A dict whose keys are compared without white space."""

    def get(self, key, default=None):
        return super().get("".join(key.split()), default)

    def __contains__(self, key):
        return super().__contains__("".join(key.split()))


def _import_name(names, taken, key, default, wanted):
    name = names.get(key)
    if name is not None:
        return name
    if default in taken:
        return None
    wanted.append(key)
    return default


def _grad_read(plan, kind, value, probed) -> int | None:
    """A line that reads the real gradient the fix takes away (display-only then); the
    lines that only ask ``type()`` of it (``fix/probes.py``) go to ``probed`` instead."""
    tree = plan.module_tree
    probed += probes.probe_lines(tree, plan.grad_reads)
    real = probes.real_reads(tree, plan.grad_reads)
    if real:
        return real[0]  # the analysis' reads (another name of the value, another function)
    if kind == "tensor":
        return None
    reads = _grad_read_nodes(tree.body, value)
    probed += [n.lineno for n in reads if _probe_root(tree, n)]
    reads = [n for n in reads if not _probe_root(tree, n)]
    if reads:
        return min(n.lineno for n in reads)
    return parameter_grad_read_elsewhere(tree, plan.func_node.body[0], probed) if \
        not isinstance(plan.func_node, ast.Module) else None


def _probe_root(tree, root) -> bool:
    """Is every ``.grad`` read through ``root`` (a node of :func:`_grad_read_nodes`) a ``type()`` probe?"""
    line = getattr(root, "lineno", None)
    return line is not None and not probes.real_reads(tree, [line])
