"""Reads of a real gradient that only ask what it is: ``type(model.weight.grad)``.

A hazard leaves a FakeTensor in the real ``.grad``; a correct fix leaves ``None`` there
(the gradients land on the fake copies). A read that uses the gradient (``.shape``,
``.norm()``, ``is not None`` in an assertion, an optimizer) would see something else after
the fix, so a fix is display-only while such a read exists elsewhere. A read that is only
``type(x.grad)`` (the way programs print the symptom, ``type(p.grad).__name__``) keeps
working: it sees ``NoneType`` where it saw ``FakeTensor``, which is the point of the fix.
Such reads do not hold a fix back (it stays unsafe, and its message says which line
changes). Only the builtin ``type`` counts (not when the file binds the name).
"""

from __future__ import annotations

import ast

__all__ = ["type_probe", "real_reads"]


def _probes(tree) -> tuple[set, set]:
    """``(ids of the .grad loads inside type(...), lines with a .grad load that is not)``."""
    cached = getattr(tree, "_fgl_grad_probes", None)
    if cached is not None:
        return cached
    probes, other = set(), set()
    if not _binds_type(tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
                    and len(node.args) == 1 and not node.keywords and _is_grad(node.args[0]):
                probes.add(id(node.args[0]))
    for node in ast.walk(tree):
        if _is_grad(node) and id(node) not in probes:
            other.add(node.lineno)
    cached = (probes, other)
    try:
        tree._fgl_grad_probes = cached
    except AttributeError:  # pragma: no cover - ast nodes take attributes
        pass
    return cached


def _is_grad(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.ctx, ast.Load)


def _binds_type(tree) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "type" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "type":
            return True
        if isinstance(node, ast.arg) and node.arg == "type":
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == "type" for a in node.names):
            return True
    return False


def type_probe(tree, node) -> bool:
    """Is ``node`` (a ``.grad`` load) the argument of ``type(...)``?"""
    return id(node) in _probes(tree)[0]


def real_reads(tree, lines) -> list:
    """The lines of ``lines`` that read a gradient other than through ``type(...)``
    (a line with no ``.grad`` load at all is kept: the analysis saw a read there)."""
    probes, other = _probes(tree)
    probe_lines = {n.lineno for n in ast.walk(tree) if id(n) in probes}
    return [ln for ln in lines if ln in other or ln not in probe_lines]


def probe_lines(tree, lines) -> list:
    """The lines of ``lines`` whose gradient reads are all ``type(...)`` probes."""
    real = set(real_reads(tree, lines))
    return [ln for ln in lines if ln not in real]
