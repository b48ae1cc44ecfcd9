"""fakegrad-lint's fixes as a LibCST codemod: an adapter over the engine's one path
(:func:`fakegrad_lint.engine.lint.lint_and_fix`; the file is written exactly as
``fakegrad-lint --fix`` writes it).

    python -m libcst.tool codemod -x fakegrad_lint.integrations.codemod.FixFakeGrad --no-format PATHS
    python -m libcst.tool codemod -x fakegrad_lint.integrations.codemod.FixFakeGrad --no-format --unsafe-fixes PATHS

(``-x`` takes the command as a module path; without it, list ``fakegrad_lint.integrations`` under
``modules`` in ``.libcst.codemod.yaml`` and run ``codemod codemod.FixFakeGrad``.
``--no-format`` keeps the file as fixed, as the CLI writes it; without it libcst
runs the configured formatter, ``black`` by default.)

The files of the run are fixed together, as ``fakegrad-lint --fix PATHS`` fixes them
(:mod:`fakegrad_lint.integrations.project_run`): a fix whose edit lands in another module of
the run, where the region is opened, rewrites that module. The run is made once per worker
process.

A file without an applicable fix is skipped (reported as skipped, never
rewritten). ``# noqa`` comments are honoured as by the CLI.
"""

from __future__ import annotations

import argparse

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from fakegrad_lint.integrations.project_run import RunFiles
from fakegrad_lint.rules import DEFAULT_CODES

__all__ = ["FixFakeGrad"]


class FixFakeGrad(VisitorBasedCodemodCommand):
    # libcst hands every path of the run (and the repository root) to RunFiles: the files
    # are fixed as one `fakegrad-lint --fix PATHS` run fixes them
    METADATA_DEPENDENCIES = (RunFiles,)
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
        from fakegrad_lint.integrations.project_run import outcome_for

        outcome = None
        run = self._run()
        if run is not None and self.context.filename:
            outcome = outcome_for(self.context.filename, run, DEFAULT_CODES, self.unsafe_fixes)
        if outcome is not None:
            text, fixed = outcome.text, outcome.fixed
        else:
            from fakegrad_lint.engine.lint import lint_and_fix

            _findings, loop = lint_and_fix(tree.code, self.context.filename or "<codemod>", unsafe=self.unsafe_fixes)
            text, fixed = (loop.text if loop.changed else None), loop.fixed
        if text is None or text == tree.code:
            raise SkipFile("no applicable fakegrad-lint fix")
        self.context.scratch["fakegrad_fixed"] = self.context.scratch.get("fakegrad_fixed", 0) + fixed
        return cst.parse_module(text.encode(tree.encoding))

    def _run(self):
        """``(repository root, every file of the run)`` from libcst's full-repository
        manager (None without one: stdin, or a caller that runs the command itself)."""
        manager, filename = self.context.metadata_manager, self.context.filename
        if manager is None or not filename:
            return None
        try:
            return manager.get_cache_for_path(filename).get(RunFiles)
        except Exception:  # noqa: BLE001 - a path the manager was not given: the file alone
            return None
