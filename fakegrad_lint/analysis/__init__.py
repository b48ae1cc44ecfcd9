"""The facts: computed once per file from the CPython AST and shared by all rules."""

from __future__ import annotations

import ast

from fakegrad_lint.analysis.leaks import Leak


def analyze(tree: ast.Module, source: str) -> list[Leak]:
    from fakegrad_lint.analysis.interpreter import analyze_module

    return analyze_module(tree, source)
