"""Fixes that once broke working code, each pinned by the program that showed it.

Every program here is fixed by the real CLI (``--fix --unsafe-fixes``) in a
temporary folder; the ones that can run are then run with real torch by the
oracle (``tests/oracle.py``) and must end ``clean`` printing what the original
printed (or, for a strict-mode crash, what it went on to infer). The static
checks (``import torch`` position, comments kept, line length, names) read the
fixed bytes.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from regen_golden import BASE_ARGS, cli  # noqa: E402

HEAD = "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n"

PROGRAMS: dict[str, bytes] = {
    # the module fix moved the forward onto fake copies, but `autograd.grad` asked for
    # the real parameters: "One of the differentiated Tensors appears to not have been used";
    # now the inputs are the same fake copies (`from_tensor` memoizes)
    "module_autograd_grad_wrt_real_params.py": (HEAD + """\
model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))
params = list(model.parameters())
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = model(torch.ones(3, 2)).sum()
    gs = torch.autograd.grad(loss, params)
print([tuple(g.shape) for g in gs])
""").encode(),
    # inputs not proved to be the module's parameters: the module fix is not applied
    "module_autograd_grad_unknown_inputs.py": (HEAD + """\
import random
model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))
params = random.sample(list(model.parameters()), 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = model(torch.ones(3, 2)).sum()
    gs = torch.autograd.grad(loss, params)
print([tuple(g.shape) for g in gs])
""").encode(),
    # the hoist went below the statement that uses it: NameError
    "hoist_before_first_use.py": (HEAD + """\
w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
with FakeTensorMode(allow_non_fake_inputs=True) as fm, torch.enable_grad():
    y = (fm.from_tensor(x) * w).sum()
    y.backward()
print(tuple(y.shape))
""").encode(),
    # `inputs.fake_mode` on a *args tuple: AttributeError
    "leaked_fake_in_star_args.py": (HEAD + """\
w = torch.randn(3, requires_grad=True)
def run(*inputs):
    return torch.add(*inputs, w).sum()
with FakeTensorMode(allow_non_fake_inputs=True):
    f = torch.randn(3)
loss = run(f)
loss.backward()
print(tuple(loss.shape))
""").encode(),
    # a program that is not a tensor: never `from_tensor(exported)`
    "exported_program.py": (HEAD + """\
model = torch.nn.Linear(3, 2)
exported = torch.export.export(model, (torch.randn(4, 3),))
def estimate(ep, m, x):
    return m(x) * len(ep.graph.nodes)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = estimate(exported, model, torch.randn(4, 3))
    out.sum().backward()
print(tuple(out.shape))
""").encode(),
    # no top-level import: `import torch` went above the shebang and the encoding line
    "shebang_latin1.py": """\
#!/usr/bin/env python
# -*- coding: latin-1 -*-
# caf\xe9
def main():
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    model = torch.nn.Linear(3, 2)
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = model(torch.randn(4, 3))
        out.sum().backward()
    print(tuple(out.shape), "caf\xe9")
main()
""".encode("latin-1"),
    # docstring and __future__ import: `import torch` goes below them, above the region
    "docstring_future.py": b'''\
"""A docstring."""
from __future__ import annotations
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = model(model.weight.new_zeros(4, 3))
    out.sum().backward()
import os
print(tuple(out.shape), os.sep)
''',
    # `import torch` exists, but below the region: it must be bound before the use
    "import_below_region.py": b"""\
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = model(model.weight.new_zeros(4, 3))
    out.sum().backward()
import torch
print(tuple(out.shape), torch.__name__)
""",
    # comments inside the module call's arguments were deleted
    "comments_in_call.py": (HEAD + """\
model = torch.nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = model(
        # the input
        torch.randn(4, 3),  # keep me
    )
    out.sum().backward()
print(tuple(out.shape))
""").encode(),
    # a body indented with a form feed was marked fixable and left alone
    "form_feed_indent.py": (HEAD + "x = torch.randn(3, requires_grad=True)\n"
                            "with FakeTensorMode(allow_non_fake_inputs=True):\n"
                            "\x0c    y = (x * 2).sum()\n"
                            "\x0c    y.backward()\n"
                            "print(tuple(y.shape))\n").encode(),
    # one 120+ character line; `fake_mode2` because another function has a `fake_mode`
    "long_names_and_scope.py": (HEAD + """\
def other():
    fake_mode = 1
    return fake_mode


def main():
    a_really_long_model_name_here = torch.nn.Linear(3, 2)
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = a_really_long_model_name_here(torch.randn(4, 3), )
        out.sum().backward()
    print(tuple(out.shape), other())


main()
""").encode(),
}


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("regressions")
    originals = tmp_path_factory.mktemp("originals")
    for name, data in PROGRAMS.items():
        (folder / name).write_bytes(data)
        (originals / name).write_bytes(data)
    proc = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", *PROGRAMS, cwd=folder)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    return {name: (originals / name, folder / name) for name in PROGRAMS}


@pytest.fixture(scope="module")
def runs(fixed):
    pytest.importorskip("torch")
    import oracle

    paths = [p for pair in fixed.values() for p in pair]
    results = oracle.run_fixtures(paths, jobs=2)
    return {name: (results[str(a)], results[str(b)]) for name, (a, b) in fixed.items()}


def text(fixed, name, encoding="utf-8"):
    return fixed[name][1].read_bytes().decode(encoding)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fixed_program_parses_and_never_breaks(fixed, runs, name):
    ast.parse(fixed[name][1].read_bytes())
    before, after = runs[name]
    assert after.outcome != "error", f"{name}: the fixed program fails\n{after.detail}"
    if before.outcome in ("hazard", "crash") and fixed[name][1].read_bytes() != PROGRAMS[name]:
        assert after.outcome == "clean", f"{name}: {after.outcome} {after.detail}"
        assert after.stdout == before.stdout


def test_module_fix_takes_autograd_grad_over_the_fake_copies(fixed):
    fixed_text = text(fixed, "module_autograd_grad_wrt_real_params.py")
    assert "torch.func.functional_call(model, model_fake_state" in fixed_text
    assert "gs = torch.autograd.grad(loss, [fake_mode.from_tensor(t) for t in params])" in fixed_text


def test_module_fix_is_not_applied_when_autograd_grad_inputs_are_not_proved(fixed):
    assert text(fixed, "module_autograd_grad_unknown_inputs.py") == PROGRAMS["module_autograd_grad_unknown_inputs.py"].decode()


def test_hoist_lands_before_the_first_use(fixed):
    lines = text(fixed, "hoist_before_first_use.py").splitlines()
    assert lines.index("    w_fake = fm.from_tensor(w)") < lines.index("    y = (fm.from_tensor(x) * w_fake).sum()")


def test_leaked_fake_from_star_args_is_not_asked_for_its_mode(fixed):
    assert "inputs.fake_mode" not in text(fixed, "leaked_fake_in_star_args.py")


def test_exported_program_is_never_converted(fixed):
    fixed_text = text(fixed, "exported_program.py")
    assert "from_tensor(exported)" not in fixed_text


def test_import_torch_goes_below_shebang_and_encoding(fixed):
    fixed_text = text(fixed, "shebang_latin1.py", "latin-1")
    lines = fixed_text.splitlines()
    assert lines[:3] == ["#!/usr/bin/env python", "# -*- coding: latin-1 -*-", "# caf\xe9"]
    assert "import torch" in lines[3:]


def test_import_torch_goes_below_docstring_and_future(fixed):
    lines = text(fixed, "docstring_future.py").splitlines()
    at = lines.index("import torch")
    assert lines.index("from __future__ import annotations") < at < lines.index("model = nn.Linear(3, 2)")


def test_import_torch_is_bound_before_the_region(fixed):
    lines = text(fixed, "import_below_region.py").splitlines()
    use = next(i for i, line in enumerate(lines) if "torch.func.functional_call" in line)
    assert "import torch" in lines[:use]


def test_comments_in_the_call_are_kept(fixed):
    fixed_text = text(fixed, "comments_in_call.py")
    assert "functional_call(" in fixed_text
    assert "# the input" in fixed_text and "# keep me" in fixed_text


def test_form_feed_body_is_fixed(fixed):
    assert "x_fake = fake_mode.from_tensor(x)" in text(fixed, "form_feed_indent.py")


def test_fix_keeps_to_the_file_line_length_and_scope_names(fixed):
    fixed_text = text(fixed, "long_names_and_scope.py")
    longest = max(len(line) for line in PROGRAMS["long_names_and_scope.py"].decode().splitlines())
    assert max(len(line) for line in fixed_text.splitlines()) <= max(longest, 79)
    assert "fake_mode2" not in fixed_text and "as fake_mode:" in fixed_text


def test_second_fix_changes_nothing(fixed):
    folder = next(iter(fixed.values()))[1].parent
    before = {name: (folder / name).read_bytes() for name in PROGRAMS}
    proc = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", *PROGRAMS, cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    assert {name: (folder / name).read_bytes() for name in PROGRAMS} == before


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
def test_huge_line_gets_no_fix_and_says_why(tmp_path):
    """A 1 MB line: no fix is offered, at once (libcst's parser would take half a
    minute on it), and the finding says why."""
    big = "DATA = [" + ", ".join(["1"] * 200_000) + "]\n"
    path = tmp_path / "huge.py"
    path.write_text(big + PROGRAMS["hoist_before_first_use.py"].decode(), encoding="utf-8")
    proc = cli(*BASE_ARGS, "--output-format", "json", "huge.py", cwd=tmp_path)
    import json

    [finding] = json.loads(proc.stdout)
    assert finding["fix"] is None
    assert "longer than" in (finding.get("no_fix") or "")
    proc = cli(*BASE_ARGS, "huge.py", cwd=tmp_path)
    assert "no fix: line 1 is longer than" in proc.stdout and "[*]" not in proc.stdout
