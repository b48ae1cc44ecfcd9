"""Turn a leak's fix plan into edits (work in progress)."""
from __future__ import annotations
from dataclasses import dataclass, field
import ast

@dataclass(eq=False)
class FixPlan:
    kind: str
    value: str
    with_node: ast.AST
    item_index: int
    mode_name: str | None
    call: ast.AST | None
    module_tree: ast.Module
    grad_reads: list = field(default_factory=list)

def build_fix(leak, source):
    return None
