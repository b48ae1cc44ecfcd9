"""Qualified names the analysis recognises (re-exported from ``torch_tables``).

Names are resolved through the file's imports (``import torch.nn as nn``,
``from torch._subclasses import FakeTensorMode as FTM``) before they are looked
up here, so a local class or variable that merely has one of these spellings is
never mistaken for torch's.
"""

from __future__ import annotations

import ast


def dotted_name(node) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None

from fakegrad_lint.analysis.torch_tables import *  # noqa: E402,F401,F403  (the tables live there)
