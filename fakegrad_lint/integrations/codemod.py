"""fakegrad-lint's fixes as a LibCST codemod: an adapter over the engine's one path
(:func:`fakegrad_lint.engine.lint.lint_and_fix`; the file is written exactly as
``fakegrad-lint --fix`` writes it).

    python -m libcst.tool codemod -x fakegrad_lint.integrations.codemod.FixFakeGrad --no-format PATHS
    python -m libcst.tool codemod -x fakegrad_lint.integrations.codemod.FixFakeGrad --no-format --unsafe-fixes PATHS

(``-x`` takes the command as a module path; without it, list ``fakegrad_lint.integrations`` under
``modules`` in ``.libcst.codemod.yaml`` and run ``codemod codemod.FixFakeGrad``.
``--no-format`` keeps the file as fixed, as the CLI writes it; without it libcst
runs the configured formatter, ``black`` by default.)

A file without an applicable fix is skipped (reported as skipped, never
rewritten). ``# noqa`` comments are honoured as by the CLI.
"""

from __future__ import annotations

import argparse

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

__all__ = ["FixFakeGrad"]


class FixFakeGrad(VisitorBasedCodemodCommand):
    DESCRIPTION = ("Convert real requires-grad tensors and modules at the boundary of FakeTensorMode regions "
                   "(fakegrad-lint's fixes: FGL001-FGL003).")

    def __init__(self, context: CodemodContext, unsafe_fixes: bool = False) -> None:
        super().__init__(context)
        self.unsafe_fixes = unsafe_fixes

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--unsafe-fixes", dest="unsafe_fixes", action="store_true", default=False,
                                help="also apply unsafe fixes (as fakegrad-lint --fix --unsafe-fixes)")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from fakegrad_lint.engine.lint import lint_and_fix

        findings, outcome = lint_and_fix(tree.code, self.context.filename or "<codemod>", unsafe=self.unsafe_fixes)
        if not outcome.changed:
            raise SkipFile("no applicable fakegrad-lint fix")
        for f in outcome.applied:
            self.context.scratch.setdefault("fakegrad_fixed", []).append(f.code)
        return cst.parse_module(outcome.text.encode(tree.encoding))
