"""A finished analysis is freed by reference counting, not by the cyclic collector.

Its values refer to each other (a scope holds the functions defined in it, which hold
the scope; a class holds its methods, which hold the class; a ``yield`` that pauses a
``@contextmanager`` helper raised an exception its own frame held), so without
``interpreter._release`` a file's whole analysis, and the AST its values hold, was
cyclic garbage: every collection that ran before it was freed traversed it (15-20 %
of the CPU on torch's files that name a fake mode). The check: with automatic
collection off, lint a file, then collect with ``DEBUG_SAVEALL`` and look at what
was only reachable through cycles.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
from pathlib import Path

import pytest

from fakegrad_lint.engine import lint
from fakegrad_lint.rules import DEFAULT_CODES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = [
    "hazard_contextmanager_helper.py",  # a helper paused at its yield
    "hazard_custom_module_method.py",  # classes and methods
    "hazard_closure.py",  # a function defined in a function
    "hazard_mro_inherited_region.py",  # bases and the MRO
    "hazard_exit_stack.py",
]


def _torch_file(rel):
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / rel
    return path if path.exists() else None


def _cyclic_garbage_after(path: Path) -> tuple[list, int]:
    text = path.read_text(encoding="utf-8")
    nodes = sum(1 for _ in ast.walk(ast.parse(text)))
    was = gc.isenabled()
    gc.disable()
    gc.collect()
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            lint.lint_source(text, str(path), DEFAULT_CODES, fixes=False)
            gc.collect()
            garbage = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    finally:
        gc.collect()
        if was:
            gc.enable()
    return garbage, nodes


@pytest.mark.parametrize("name", CASES)
def test_the_analysis_of_a_file_is_not_cyclic_garbage(name):
    garbage, nodes = _cyclic_garbage_after(FIXTURES / name)
    assert not any(isinstance(o, ast.Module) for o in garbage)
    left = sum(isinstance(o, ast.AST) for o in garbage)
    assert left <= nodes // 10, (left, nodes)


@pytest.mark.parametrize("rel", ["_subclasses/fake_utils.py", "_guards.py"])
def test_a_torch_file_that_names_a_fake_mode_is_not_cyclic_garbage(rel):
    path = _torch_file(rel)
    if path is None:
        pytest.skip(f"torch/{rel} is not installed")
    garbage, nodes = _cyclic_garbage_after(path)
    assert not any(isinstance(o, ast.Module) for o in garbage)
    assert sum(isinstance(o, ast.AST) for o in garbage) <= nodes // 10
    assert len(garbage) < 5_000, len(garbage)
