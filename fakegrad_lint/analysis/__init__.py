"""The facts: computed once per file from the CPython AST and shared by all rules."""

from __future__ import annotations

import ast

from fakegrad_lint.analysis.leaks import Leak


def analyze(tree: ast.Module, source: str, project=None, filename: str | None = None, deps: dict | None = None) -> list[Leak]:
    """``project``: a :class:`fakegrad_lint.analysis.project.Project` (imports of
    its modules are followed); ``deps`` is filled with ``{path: sha256}`` of the
    project modules the analysis read."""
    from fakegrad_lint.analysis.interpreter import analyze_module

    return analyze_module(tree, source, project, filename, deps)
