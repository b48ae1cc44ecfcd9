"""Abstract interpreter over the CPython AST (work in progress)."""

from __future__ import annotations


def analyze_module(tree, source):
    return []
