"""Fix examples tested like Fixit's rules, shared by the ``tests/test_fix_*.py`` files that
list them (``INVALID``: name, program, what ``--fix --unsafe-fixes`` writes; ``VALID``:
name, a safe look-alike that gets no finding and is never touched).

:func:`example_tests` makes the tests of one such list, for the test module to install
with ``globals().update(example_tests(INVALID, VALID, "tag"))``:

- ``TestInvalidExamples`` / ``TestValidExamples``: the real LibCST codemod test case
  (``assertCodemod``) on the project's codemod (the same analysis, builders, proofs and
  fix loop as the CLI);
- the real CLI writes the expected fix, leaves each look-alike's bytes and mtime alone, and a
  second ``--fix`` changes nothing;
- (slow) under the runtime oracle each INVALID example is a hazard (or a crash) before its
  fix and runs clean with the same output after it; each VALID one runs clean.

:func:`fixed` and :data:`HEAD` let an example's fixed code be written as its program with
a few edits, so that each setup is written once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from libcst.codemod import CodemodTest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from regen_golden import BASE_ARGS, cli  # noqa: E402

from fakegrad_lint.integrations.codemod import FixFakeGrad  # noqa: E402

HEAD = "import torch\nfrom torch import nn\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"


def fixed(code: str, *edits: tuple[str, str]) -> str:
    """``code`` with each ``(old, new)`` edit applied; each ``old`` stands in it exactly once."""
    for old, new in edits:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return code


def example_tests(invalid, valid, tag: str) -> dict:
    """The tests of one list of examples (see the module docstring), by name."""

    class TestInvalidExamples(CodemodTest):
        TRANSFORM = FixFakeGrad

    for name, before, after in invalid:
        setattr(TestInvalidExamples, f"test_{name}",
                lambda self, b=before, a=after: self.assertCodemod(b, a, unsafe_fixes=True))

    class TestValidExamples(CodemodTest):
        TRANSFORM = FixFakeGrad

    for name, code in valid:
        setattr(TestValidExamples, f"test_{name}",
                lambda self, c=code: self.assertCodemod(c, c, expected_skip=True, unsafe_fixes=True))

    @pytest.fixture(scope="module")
    def written(tmp_path_factory):
        """Every example copied to a folder, fixed there by the real CLI; then a second run."""
        root = tmp_path_factory.mktemp(tag)
        for name, code, *_ in invalid + valid:
            (root / f"{name}.py").write_text(code, encoding="utf-8")
        mtimes = {p.name: p.stat().st_mtime_ns for p in root.glob("*.py")}
        first = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", ".", cwd=root)
        assert first.returncode in (0, 1) and first.stderr == "", first.stderr
        after_first = {p.name: p.read_bytes() for p in root.glob("*.py")}
        second = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", ".", cwd=root)
        return root, mtimes, after_first, second

    @pytest.mark.parametrize("name,before,after", invalid, ids=[c[0] for c in invalid])
    def test_cli_writes_the_expected_fix(written, name, before, after):
        root, _, _, _ = written
        assert (root / f"{name}.py").read_text(encoding="utf-8") == after

    @pytest.mark.parametrize("name,code", valid, ids=[c[0] for c in valid])
    def test_safe_look_alike_is_not_touched(written, name, code):
        root, mtimes, _, _ = written
        path = root / f"{name}.py"
        assert path.read_text(encoding="utf-8") == code
        assert path.stat().st_mtime_ns == mtimes[path.name]
        proc = cli(*BASE_ARGS, "--unsafe-fixes", str(path))
        assert proc.returncode == 0, proc.stdout

    def test_second_fix_changes_nothing(written):
        root, _, after_first, second = written
        assert second.returncode == 0, second.stdout
        assert {p.name: p.read_bytes() for p in root.glob("*.py")} == after_first

    @pytest.mark.slow
    def test_examples_at_run_time(written, tmp_path):
        """Each INVALID example is a hazard (or a crash) that runs clean with the same output
        after its fix; each VALID one runs clean."""
        pytest.importorskip("torch")
        import oracle
        from test_fix_runtime import judge

        root, _, _, _ = written
        originals = []
        for name, code, *_ in invalid + valid:
            p = tmp_path / f"{name}.py"
            p.write_text(code, encoding="utf-8")
            originals.append(p)
        fixed_paths = [root / p.name for p in originals]
        results = oracle.run_fixtures([*originals, *fixed_paths], jobs=2)
        bad = []
        for name, *_ in invalid:
            before, after = results[str(tmp_path / f"{name}.py")], results[str(root / f"{name}.py")]
            verdict = judge(before, after)
            if before.outcome not in ("hazard", "crash") or verdict != "ok":
                bad.append(f"{name}: {before.outcome} -> {verdict}")
        for name, _ in valid:
            res = results[str(tmp_path / f"{name}.py")]
            if res.outcome != "clean":
                bad.append(f"{name} (valid): {res.outcome} {res.detail[-200:]}")
        assert not bad, "\n".join(bad)

    return {
        "TestInvalidExamples": TestInvalidExamples,
        "TestValidExamples": TestValidExamples,
        "written": written,
        "test_cli_writes_the_expected_fix": test_cli_writes_the_expected_fix,
        "test_safe_look_alike_is_not_touched": test_safe_look_alike_is_not_touched,
        "test_second_fix_changes_nothing": test_second_fix_changes_nothing,
        "test_examples_at_run_time": test_examples_at_run_time,
    }
