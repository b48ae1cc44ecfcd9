"""The rules as a Fixit 2 rule pack: an adapter over the engine's one path
(:func:`fakegrad_lint.engine.lint.lint_and_fix`, the findings and fixes of ``check``).

    # pyproject.toml
    [tool.fixit]
    enable = ["fakegrad_lint.integrations.fixit"]

    fixit lint src/            # the findings `fakegrad-lint` reports (default rules)
    fixit fix --automatic src/ # the file `fakegrad-lint --fix` writes (safe fixes)

One Fixit rule per default-on code (``FakeGradHazard`` FGL001,
``RealTensorInStrictFakeMode`` FGL002, ``LeakedFakeMixedWithRealGrad`` FGL003);
the opt-in FGL004 is ``fakegrad_lint.integrations.fixit_optin:RealGradEntersFakeRegion``.
Each rule visits the module once; the analysis runs once per module for all of
them (the first rule to visit caches it). Positions are the CLI's (Fixit prints
0-based columns, as libcst counts them). ``# noqa: FGL001`` works as in the CLI,
and so does Fixit's own ``# lint-ignore``.

Projects: a file on disk is reported from one run over the Python files of its Fixit
configuration's root, the run ``fakegrad-lint check ROOT`` makes
(:mod:`fakegrad_lint.integrations.project_run`): a helper's findings and the fixes that land
in the module where the region is opened are the CLI's. Fixit rewrites only the file it
lints: the violation of a finding whose fix edits another module carries no replacement
(its message names that file), and that module's own violations (the finding at the
helper's line) carry its fixed text, so ``fixit fix ROOT`` writes what
``fakegrad-lint --fix ROOT`` writes.

Fixes: Fixit replaces nodes, one per violation; fakegrad-lint's fix is a set of
edits applied in a loop until nothing fixable is left. So every fixable violation
carries the same replacement, the whole module as ``fakegrad-lint --fix`` writes it:
accepting any of them gives exactly the CLI's file. Unsafe fixes are not offered
(Fixit has no safety levels; use ``fakegrad-lint --fix --unsafe-fixes``).
"""

from __future__ import annotations

import os
from typing import ClassVar

import libcst as cst
from fixit import Invalid, LintRule, Valid
from libcst.metadata import CodePosition, CodeRange

from fakegrad_lint.findings import HELPER_OF, applies
from fakegrad_lint.integrations.project_run import RunFiles
from fakegrad_lint.rules import RULES_BY_CODE

__all__ = ["FakeGradHazard", "RealTensorInStrictFakeMode", "LeakedFakeMixedWithRealGrad"]

_CODES = frozenset(code for code, rule in RULES_BY_CODE.items() if rule.default)
_last: list = []  # [(module node, codes, findings, fixed module or None)]: the latest module analysed


def _on_disk(path: str, module: cst.Module) -> bool:
    """Is ``module`` the text of the file ``path`` (not a test case, nor stdin)?"""
    try:
        with open(path, "rb") as fh:
            return fh.read() == module.bytes
    except OSError:
        return False


def _analyse(module: cst.Module, codes: frozenset, run=None):
    """``(findings, fixed module or None)``: what ``fakegrad-lint check`` reports for the
    module and what ``fakegrad-lint --fix`` writes (safe fixes). ``run``: ``(root, (path,))``
    from :class:`~fakegrad_lint.integrations.project_run.RunFiles`; a file on disk is taken
    from the run over its configuration root's files (a fix that lands in another module,
    a helper's findings), anything else is linted alone."""
    for node, key, findings, fixed in _last:
        if node is module and key == codes:
            return findings, fixed
    from fakegrad_lint.integrations import project_run

    outcome = None
    if run is not None and len(run[1]) == 1 and _on_disk(run[1][0], module):
        files = project_run.project_files(run[0])
        if files:
            outcome = project_run.outcome_for(run[1][0], (run[0], tuple(files)), codes, unsafe=False)
    if outcome is not None:
        findings, text = outcome.findings, outcome.text
    else:
        from fakegrad_lint.engine.lint import lint_and_fix

        findings, fixed_outcome = lint_and_fix(module.code, "<fixit>", unsafe=False, codes=codes)
        text = fixed_outcome.text if fixed_outcome.changed else None
    fixed = None if text is None else cst.parse_module(text.encode(module.encoding))
    _last[:] = [(module, codes, findings, fixed)]
    return findings, fixed


def _examples(code: str):
    """Fixit's VALID/INVALID cases from the rule's own examples; an invalid case
    expects the safe fix (the unsafe ones are not applied by this pack)."""
    from fakegrad_lint.engine.lint import lint_and_fix

    rule = RULES_BY_CODE[code]
    valid = [Valid(src) for src in rule.valid]
    invalid = []
    for src in rule.invalid:
        _, outcome = lint_and_fix(src, "<example>", unsafe=False, codes={code})
        invalid.append(Invalid(src, expected_replacement=outcome.text if outcome.changed else None))
    return valid, invalid


def _carries(f, fixed) -> bool:
    """Does the violation of ``f`` carry the fixed module? When its fix applies and edits
    its own file; a finding at a helper's line (``HELPER_OF``) carries the edits that land
    in the helper's file from the findings of its callers (a Fixit replacement can only
    rewrite the file being linted)."""
    if fixed is None:
        return False
    if HELPER_OF in f.extra:
        return True
    return applies(f.fix, unsafe=False) and not f.fix.elsewhere(f.filename)


def _carried_in(path: str, run, codes: frozenset) -> bool:
    """Does a violation of the file ``path`` (of the same run) carry its fixed text?"""
    from fakegrad_lint.integrations import project_run

    files = project_run.project_files(run[0]) if run is not None else None
    outcome = project_run.outcome_for(path, (run[0], tuple(files)), codes, unsafe=False) if files else None
    return outcome is not None and outcome.text is not None and any(HELPER_OF in g.extra for g in outcome.findings)


class _FakegradRule(LintRule):
    CODE: ClassVar[str] = ""
    CODES: ClassVar[frozenset] = _CODES
    METADATA_DEPENDENCIES = (RunFiles,)

    def visit_Module(self, node: cst.Module) -> bool:
        try:
            run = self.get_metadata(RunFiles, node, None)
        except Exception:  # noqa: BLE001 - no file path (a test case, stdin): the module alone
            run = None
        findings, fixed = _analyse(node, self.CODES, run)
        for f in findings:
            if f.code != self.CODE:
                continue
            position = CodeRange(CodePosition(f.location.row, f.location.column),
                                 CodePosition(f.end_location.row, f.end_location.column))
            replacement = fixed if _carries(f, fixed) else None
            message = f"{f.code} {f.message}"
            if f.no_fix:
                message += f" (no fix: {f.no_fix})"
            elif applies(f.fix, unsafe=False) and f.fix.elsewhere(f.filename):
                here = os.path.dirname(os.path.abspath(f.filename))
                others = f.fix.elsewhere(f.filename)
                names = ", ".join(os.path.relpath(os.path.abspath(p), here).replace(os.sep, "/") for p in others)
                if all(_carried_in(p, run, self.CODES) for p in others):
                    message += f" (its fix edits {names}: `fixit fix` writes it there)"
                else:
                    message += f" (its fix edits {names}, which Fixit cannot write from here: `fakegrad-lint --fix`)"
            self.report(node, message, position=position, replacement=replacement)
        return False


def _rule(class_name: str, code: str, codes: frozenset = _CODES):
    valid, invalid = _examples(code)
    rule = RULES_BY_CODE[code]
    return type(class_name, (_FakegradRule,), {
        "__doc__": f"{code} ({rule.name}): {rule.summary}",
        "__module__": __name__,
        "CODE": code,
        "CODES": codes,
        "TAGS": {"fakegrad", code},
        "VALID": valid,
        "INVALID": invalid,
    })


FakeGradHazard = _rule("FakeGradHazard", "FGL001")
RealTensorInStrictFakeMode = _rule("RealTensorInStrictFakeMode", "FGL002")
LeakedFakeMixedWithRealGrad = _rule("LeakedFakeMixedWithRealGrad", "FGL003")
