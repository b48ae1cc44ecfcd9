"""Fixes outside the block that opened the region, tested like Fixit's rules.

The code that leaks runs in a region opened somewhere else: a helper reading a global, a
closure or a ``functools.partial``, a function run by a decorator's wrapper, a method
called through ``getattr``, the body of a ``with`` over a context-manager class, a mode
entered through an ``ExitStack`` under a condition (``fakegrad_lint/fix/helpers.py``,
placement ``"function"``), or a real module handed to a helper or a lambda called in the
region's block (a fake copy at the call). Each INVALID example carries the code
``--fix --unsafe-fixes`` writes for it, checked through the real LibCST codemod test case
(``assertCodemod``) and the real CLI (a second ``--fix`` changes nothing); each VALID
example is a safe look-alike that gets no finding and is never touched. The slow half
runs every example under the runtime oracle: each INVALID one is a hazard before its fix
and runs clean with the same output after it; each VALID one runs clean.
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

# (name, code, what --fix --unsafe-fixes writes)
INVALID = [
    (
        "closure_factory",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def make_step(model):
    def step(x):
        loss = model(x).sum()
        loss.backward()
        return loss

    return step


net = nn.Linear(3, 2)
step = make_step(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = step(torch.randn(4, 3))
print(tuple(loss.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def make_step(model):
    def step(x):
        fake_mode = torch._guards.detect_fake_mode()
        model_fake_state = {} if fake_mode is None else {
            name: fake_mode.from_tensor(t)
            for name, t in [*model.named_parameters(), *model.named_buffers()]
        }
        loss = torch.func.functional_call(model, model_fake_state, (x,)).sum()
        loss.backward()
        return loss

    return step


net = nn.Linear(3, 2)
step = make_step(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = step(torch.randn(4, 3))
print(tuple(loss.shape))
""",
    ),
    (
        "comprehension_in_helper",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def l2(model):
    return sum(p.pow(2).sum() for p in model.parameters())


net = nn.Linear(3, 2)
penalty = l2
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = penalty(net)
    loss.backward()
print(tuple(loss.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
import copy


def l2(model):
    return sum(p.pow(2).sum() for p in model.parameters())


net = nn.Linear(3, 2)
penalty = l2
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    net_fake = copy.deepcopy(
        net, {id(t): fake_mode.from_tensor(t) for t in [*net.parameters(), *net.buffers()]}
    )
    loss = penalty(net_fake)
    loss.backward()
print(tuple(loss.shape))
""",
    ),
    (
        "context_manager_class",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Probe:
    def __init__(self):
        self._mode = FakeTensorMode(allow_non_fake_inputs=True)

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


net = nn.Linear(3, 2)
with Probe():
    out = net(torch.randn(4, 3))
    out.sum().backward()
print(tuple(out.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Probe:
    def __init__(self):
        self._mode = FakeTensorMode(allow_non_fake_inputs=True)

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


net = nn.Linear(3, 2)
with Probe():
    fake_mode = torch._guards.detect_fake_mode()
    net_fake_state = {} if fake_mode is None else {
        name: fake_mode.from_tensor(t)
        for name, t in [*net.named_parameters(), *net.named_buffers()]
    }
    out = torch.func.functional_call(net, net_fake_state, (torch.randn(4, 3),))
    out.sum().backward()
print(tuple(out.shape))
""",
    ),
    (
        "decorator_wrapper",
        """\
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def dry_run(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return fn(*args, **kwargs)

    return wrapper


@dry_run
def train_step(model, n):
    loss = model(torch.randn(n, 3)).pow(2).mean()
    loss.backward()
    return tuple(loss.shape)


print(train_step(nn.Linear(3, 2), 4))
""",
        """\
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def dry_run(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return fn(*args, **kwargs)

    return wrapper


@dry_run
def train_step(model, n):
    fake_mode = torch._guards.detect_fake_mode()
    model_fake_state = {} if fake_mode is None else {
        name: fake_mode.from_tensor(t)
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    loss = torch.func.functional_call(
        model, model_fake_state, (torch.randn(n, 3),),
    ).pow(2).mean()
    loss.backward()
    return tuple(loss.shape)


print(train_step(nn.Linear(3, 2), 4))
""",
    ),
    (
        "exitstack_conditional",
        """\
import contextlib

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

DRY_RUN = True
net = nn.Linear(3, 2)
with contextlib.ExitStack() as stack:
    if DRY_RUN:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    out = net(torch.randn(4, 3))
    out.sum().backward()
print(tuple(out.shape))
""",
        """\
import contextlib

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

DRY_RUN = True
net = nn.Linear(3, 2)
with contextlib.ExitStack() as stack:
    if DRY_RUN:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    fake_mode = torch._guards.detect_fake_mode()
    net_fake_state = {} if fake_mode is None else {
        name: fake_mode.from_tensor(t)
        for name, t in [*net.named_parameters(), *net.named_buffers()]
    }
    out = torch.func.functional_call(net, net_fake_state, (torch.randn(4, 3),))
    out.sum().backward()
print(tuple(out.shape))
""",
    ),
    (
        "getattr_method",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Runner:
    def __init__(self, model):
        self.model = model

    def run(self, phase, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return getattr(self, f"_{phase}")(x)

    def _train(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss.shape


print(Runner(nn.Linear(3, 2)).run("train", torch.randn(4, 3)))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Runner:
    def __init__(self, model):
        self.model = model

    def run(self, phase, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return getattr(self, f"_{phase}")(x)

    def _train(self, x):
        fake_mode = torch._guards.detect_fake_mode()
        model_fake_state = {} if fake_mode is None else {
            name: fake_mode.from_tensor(t)
            for name, t in [*self.model.named_parameters(), *self.model.named_buffers()]
        }
        loss = torch.func.functional_call(
            self.model, model_fake_state, (x,),
        ).sum()
        loss.backward()
        return loss.shape


print(Runner(nn.Linear(3, 2)).run("train", torch.randn(4, 3)))
""",
    ),
    (
        "global_tensor_in_helper",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

pos = torch.zeros(1, 4, requires_grad=True)


def embed(tokens):
    return tokens + pos


with FakeTensorMode(allow_non_fake_inputs=True):
    h = embed(torch.randn(2, 4))
    h.sum().backward()
print(tuple(h.shape), embed(torch.ones(2, 4)).shape)
""",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

pos = torch.zeros(1, 4, requires_grad=True)


def embed(tokens):
    fake_mode = torch._guards.detect_fake_mode()
    pos_fake = pos if fake_mode is None else fake_mode.from_tensor(pos)
    return tokens + pos_fake


with FakeTensorMode(allow_non_fake_inputs=True):
    h = embed(torch.randn(2, 4))
    h.sum().backward()
print(tuple(h.shape), embed(torch.ones(2, 4)).shape)
""",
    ),
    (
        "lambda_registry",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

LOSSES = {"l2": lambda m, x: m(x).pow(2).mean()}
net = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = LOSSES["l2"](net, torch.randn(4, 3))
    loss.backward()
print(tuple(loss.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
import copy

LOSSES = {"l2": lambda m, x: m(x).pow(2).mean()}
net = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    net_fake = copy.deepcopy(
        net, {id(t): fake_mode.from_tensor(t) for t in [*net.parameters(), *net.buffers()]}
    )
    loss = LOSSES["l2"](net_fake, torch.randn(4, 3))
    loss.backward()
print(tuple(loss.shape))
""",
    ),
    (
        "loop_over_global_modules",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))


def run(x):
    for blk in blocks:
        x = blk(x)
    return x


with FakeTensorMode(allow_non_fake_inputs=True):
    out = run(torch.randn(2, 4))
    out.sum().backward()
print(tuple(out.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))


def run(x):
    for blk in blocks:
        fake_mode = torch._guards.detect_fake_mode()
        blk_fake_state = {} if fake_mode is None else {
            name: fake_mode.from_tensor(t)
            for name, t in [*blk.named_parameters(), *blk.named_buffers()]
        }
        x = torch.func.functional_call(blk, blk_fake_state, (x,))
    return x


with FakeTensorMode(allow_non_fake_inputs=True):
    out = run(torch.randn(2, 4))
    out.sum().backward()
print(tuple(out.shape))
""",
    ),
    (
        "module_argument_of_helper",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


net = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = train_step(net, torch.randn(4, 3))
print(tuple(loss.shape))
print(tuple(train_step(net, torch.randn(4, 3)).shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
import copy


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


net = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    net_fake = copy.deepcopy(
        net, {id(t): fake_mode.from_tensor(t) for t in [*net.parameters(), *net.buffers()]}
    )
    loss = train_step(net_fake, torch.randn(4, 3))
print(tuple(loss.shape))
print(tuple(train_step(net, torch.randn(4, 3)).shape))
""",
    ),
    (
        "partial_bound",
        """\
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


net = nn.Linear(3, 2)
step = functools.partial(train_step, net)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = step(torch.randn(4, 3))
print(tuple(loss.shape))
""",
        """\
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def train_step(model, x):
    fake_mode = torch._guards.detect_fake_mode()
    model_fake_state = {} if fake_mode is None else {
        name: fake_mode.from_tensor(t)
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    loss = torch.func.functional_call(model, model_fake_state, (x,)).sum()
    loss.backward()
    return loss


net = nn.Linear(3, 2)
step = functools.partial(train_step, net)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = step(torch.randn(4, 3))
print(tuple(loss.shape))
""",
    ),
]

# safe look-alikes: no finding, never touched
VALID = [
    (
        "closure_over_module_made_in_region",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def make_step(model):
    def step(x):
        loss = model(x).sum()
        loss.backward()
        return loss

    return step


with FakeTensorMode(allow_non_fake_inputs=True):
    step = make_step(nn.Linear(3, 2))
    loss = step(torch.randn(4, 3))
print(tuple(loss.shape))
""",
    ),
    (
        "context_manager_class_without_mode",
        """\
import time

import torch
from torch import nn


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.start


net = nn.Linear(3, 2)
with Timer():
    out = net(torch.randn(4, 3))
    out.sum().backward()
print(tuple(out.shape), net.weight.grad is not None)
""",
    ),
    (
        "decorator_wrapper_no_grad",
        """\
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def dry_run(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
            return fn(*args, **kwargs)

    return wrapper


@dry_run
def forward_shape(model, n):
    return tuple(model(torch.randn(n, 3)).shape)


print(forward_shape(nn.Linear(3, 2), 4))
""",
    ),
    (
        "exitstack_flag_off",
        """\
import contextlib

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

DRY_RUN = False
net = nn.Linear(3, 2)
with contextlib.ExitStack() as stack:
    if DRY_RUN:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    out = net(torch.randn(4, 3))
    out.sum().backward()
print(tuple(out.shape), net.weight.grad is not None)
""",
    ),
    (
        "global_tensor_detached",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

pos = torch.zeros(1, 4, requires_grad=True)


def embed(tokens):
    return tokens + pos.detach()


with FakeTensorMode(allow_non_fake_inputs=True):
    h = embed(torch.randn(2, 4, requires_grad=True))
    h.sum().backward()
print(tuple(h.shape))
""",
    ),
    (
        "helper_converts_with_from_tensor",
        """\
import torch
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode

pos = torch.zeros(1, 4, requires_grad=True)


def embed(tokens):
    mode = detect_fake_mode()
    return tokens + (pos if mode is None else mode.from_tensor(pos))


with FakeTensorMode(allow_non_fake_inputs=True):
    h = embed(torch.randn(2, 4))
    h.sum().backward()
print(tuple(h.shape))
""",
    ),
    (
        "lambda_registry_fake_module",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

LOSSES = {"l2": lambda m, x: m(x).pow(2).mean()}
with FakeTensorMode(allow_non_fake_inputs=True):
    net = nn.Linear(3, 2)
    loss = LOSSES["l2"](net, torch.randn(4, 3))
    loss.backward()
print(tuple(loss.shape))
""",
    ),
    (
        "partial_called_outside_region",
        """\
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


net = nn.Linear(3, 2)
step = functools.partial(train_step, net)
with FakeTensorMode(allow_non_fake_inputs=True):
    shape = tuple(torch.randn(4, 3).shape)
loss = step(torch.randn(*shape))
print(tuple(loss.shape), net.weight.grad is not None)
""",
    ),
]


class TestInvalidExamples(CodemodTest):
    """``assertCodemod(before, after)`` on the project's LibCST codemod (the same
    analysis, builders, proofs and fix loop as the CLI)."""

    TRANSFORM = FixFakeGrad


for _name, _before, _after in INVALID:
    setattr(TestInvalidExamples, f"test_{_name}",
            lambda self, b=_before, a=_after: self.assertCodemod(b, a, unsafe_fixes=True))


class TestValidExamples(CodemodTest):
    TRANSFORM = FixFakeGrad


for _name, _code in VALID:
    setattr(TestValidExamples, f"test_{_name}",
            lambda self, c=_code: self.assertCodemod(c, c, expected_skip=True, unsafe_fixes=True))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every example copied to a folder, fixed there by the real CLI; then a second run."""
    root = tmp_path_factory.mktemp("helpers")
    for name, code, *_ in INVALID + VALID:
        (root / f"{name}.py").write_text(code, encoding="utf-8")
    mtimes = {p.name: p.stat().st_mtime_ns for p in root.glob("*.py")}
    first = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", ".", cwd=root)
    assert first.returncode in (0, 1) and first.stderr == "", first.stderr
    after_first = {p.name: p.read_bytes() for p in root.glob("*.py")}
    second = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", ".", cwd=root)
    return root, mtimes, after_first, second


@pytest.mark.parametrize("name,before,after", INVALID, ids=[c[0] for c in INVALID])
def test_cli_writes_the_expected_fix(written, name, before, after):
    root, _, _, _ = written
    assert (root / f"{name}.py").read_text(encoding="utf-8") == after


@pytest.mark.parametrize("name,code", VALID, ids=[c[0] for c in VALID])
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


def _fix_message(code: str, tmp_path: Path) -> tuple[str, str]:
    import json

    path = tmp_path / "case.py"
    path.write_text(code, encoding="utf-8")
    proc = cli(*BASE_ARGS, "--unsafe-fixes", "--output-format", "json", str(path))
    (finding,) = json.loads(proc.stdout)
    return (finding["fix"] or {}).get("message", ""), finding["no_fix"] or ""


def _example(name):
    return next(c for c in INVALID if c[0] == name)[1]


def test_in_function_fix_says_why_it_lands_in_the_helper(tmp_path):
    message, _ = _fix_message(_example("global_tensor_in_helper"), tmp_path)
    assert "inside `embed`" in message and "every caller keeps working" in message


def test_call_site_fix_says_the_helper_is_left_for_its_other_callers(tmp_path):
    message, _ = _fix_message(_example("module_argument_of_helper"), tmp_path)
    assert "to `train_step` in the region" in message and "left as it is for its other callers" in message


def test_starred_arguments_of_a_wrapper_are_not_copied(tmp_path):
    # `fn(*args)`: the name is the whole tuple; the fix goes into the decorated function
    code = _example("decorator_wrapper")
    path = tmp_path / "case.py"
    path.write_text(code, encoding="utf-8")
    cli(*BASE_ARGS, "--fix", "--unsafe-fixes", str(path))
    fixed = path.read_text(encoding="utf-8")
    assert "return fn(*args, **kwargs)" in fixed and "deepcopy(args)" not in fixed


def test_in_place_init_of_a_real_parameter_gets_no_helper_fix(tmp_path):
    # a fake copy would take the initialisation away from the parameter
    code = '''\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.weight)


net = nn.Sequential(nn.Linear(4, 4))
with FakeTensorMode():
    net.apply(init)
'''
    message, _ = _fix_message(code, tmp_path)
    assert message == ""


def test_lambda_that_reads_a_module_from_outside_has_no_fix(tmp_path):
    code = '''\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

net = nn.Linear(3, 2)
LOSSES = {"l2": lambda x: net(x).pow(2).mean()}
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = LOSSES["l2"](torch.randn(4, 3))
    loss.backward()
print(tuple(loss.shape))
'''
    message, _ = _fix_message(code, tmp_path)
    assert message == ""


# --------------------------------------------------------------------------
# runtime (real torch)


@pytest.mark.slow
def test_examples_at_run_time(written, tmp_path):
    """Each INVALID example is a hazard that runs clean with the same output after
    its fix; each VALID one runs clean."""
    pytest.importorskip("torch")
    import oracle
    from test_fix_runtime import judge

    root, _, _, _ = written
    originals = []
    for name, code, *_ in INVALID + VALID:
        p = tmp_path / f"{name}.py"
        p.write_text(code, encoding="utf-8")
        originals.append(p)
    fixed = [root / p.name for p in originals]
    results = oracle.run_fixtures([*originals, *fixed], jobs=2)
    bad = []
    for name, *_ in INVALID:
        before, after = results[str(tmp_path / f"{name}.py")], results[str(root / f"{name}.py")]
        verdict = judge(before, after)
        if before.outcome != "hazard" or verdict != "ok":
            bad.append(f"{name}: {before.outcome} -> {verdict}")
    for name, _ in VALID:
        res = results[str(tmp_path / f"{name}.py")]
        if res.outcome != "clean":
            bad.append(f"{name} (valid): {res.outcome} {res.detail[-200:]}")
    assert not bad, "\n".join(bad)


def test_gradient_read_in_another_function_makes_the_copy_display_only(tmp_path):
    # (this shape once ended the whole lint with an internal error)
    code = _example("module_argument_of_helper").replace(
        "print(tuple(train_step(net, torch.randn(4, 3)).shape))\n",
        "\n\ndef report(m):\n    print(type(m.weight.grad).__name__)\n\n\nreport(net)\n")
    assert "report(net)" in code
    message, _ = _fix_message(code, tmp_path)
    assert "not applied" in message and "reads the real gradient of `net`" in message
    path = tmp_path / "case.py"
    proc = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", str(path))
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert path.read_text(encoding="utf-8") == code


def test_module_gradients_read_after_the_block_go_to_the_copy(tmp_path):
    code = '''\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Sequential(nn.Linear(5, 5), nn.Linear(5, 1))
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.randn(3, 5)).sum().backward()
print(sum(p.grad.numel() for p in model.parameters()), type(model[0].weight.grad).__name__)
'''
    path = tmp_path / "case.py"
    path.write_text(code, encoding="utf-8")
    cli(*BASE_ARGS, "--fix", "--unsafe-fixes", str(path))
    fixed = path.read_text(encoding="utf-8")
    assert "model_fake = copy.deepcopy(\n        model, {id(t): fake_mode.from_tensor(t)" in fixed
    assert "for p in model_fake.parameters()" in fixed and "type(model_fake[0].weight.grad)" in fixed
