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

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from fix_examples import HEAD, example_tests, fixed  # noqa: E402
from regen_golden import BASE_ARGS, cli  # noqa: E402


def detected_state(module: str, state: str, indent: int) -> str:
    """What every in-function module fix hoists: the mode found at run time and the fake
    state of ``module`` (an empty dict outside a region)."""
    pad = " " * indent
    return (f"{pad}fake_mode = torch._guards.detect_fake_mode()\n"
            f"{pad}{state} = {{}} if fake_mode is None else {{\n"
            f"{pad}    name: fake_mode.from_tensor(t)\n"
            f"{pad}    for name, t in [*{module}.named_parameters(), *{module}.named_buffers()]\n"
            f"{pad}}}\n")


# `out = net(x)` run in a region opened elsewhere (a context-manager class, an ExitStack):
# the module is called over fake copies made with the mode found at run time
NET_CALL_IN_THE_CODE_THAT_RUNS_THERE = (
    "    out = net(torch.randn(4, 3))\n",
    detected_state("net", "net_fake_state", 4)
    + "    out = torch.func.functional_call(net, net_fake_state, (torch.randn(4, 3),))\n",
)


# (name, code, what --fix --unsafe-fixes writes): the fixed code is the program with the
# edits `fixed()` checks and applies, so each setup is written once
INVALID = [
    (
        'closure_factory',
        _closure_factory := HEAD + """\


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
        fixed(
            _closure_factory,
            ("""\
        loss = model(x).sum()
""",
             detected_state('model', 'model_fake_state', 8) + """\
        loss = torch.func.functional_call(model, model_fake_state, (x,)).sum()
"""),
        ),
    ),
    (
        'comprehension_in_helper',
        _comprehension_in_helper := HEAD + """\


def l2(model):
    return sum(p.pow(2).sum() for p in model.parameters())


net = nn.Linear(3, 2)
penalty = l2
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = penalty(net)
    loss.backward()
print(tuple(loss.shape))
""",
        fixed(
            _comprehension_in_helper,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = penalty(net)
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    net_fake = copy.deepcopy(
        net,
        {
            **{id(v): v for sub in net.modules() for k, v in vars(sub).items() if not k.startswith("_")},
            **{id(t): fake_mode.from_tensor(t) for t in [*net.parameters(), *net.buffers()]},
        },
    )
    loss = penalty(net_fake)
"""),
        ),
    ),
    (
        'context_manager_class',
        _context_manager_class := HEAD + """\


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
        fixed(
            _context_manager_class,
            NET_CALL_IN_THE_CODE_THAT_RUNS_THERE,
        ),
    ),
    (
        'decorator_wrapper',
        _decorator_wrapper := """\
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
        fixed(
            _decorator_wrapper,
            ("""\
    loss = model(torch.randn(n, 3)).pow(2).mean()
""",
             detected_state('model', 'model_fake_state', 4) + """\
    loss = torch.func.functional_call(
        model, model_fake_state, (torch.randn(n, 3),),
    ).pow(2).mean()
"""),
        ),
    ),
    (
        'exitstack_conditional',
        _exitstack_conditional := """\
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
        fixed(
            _exitstack_conditional,
            NET_CALL_IN_THE_CODE_THAT_RUNS_THERE,
        ),
    ),
    (
        'getattr_method',
        _getattr_method := HEAD + """\


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
        fixed(
            _getattr_method,
            ("""\
        loss = self.model(x).sum()
""",
             detected_state('self.model', 'model_fake_state', 8) + """\
        loss = torch.func.functional_call(
            self.model, model_fake_state, (x,),
        ).sum()
"""),
        ),
    ),
    (
        'global_tensor_in_helper',
        _global_tensor_in_helper := """\
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
        fixed(
            _global_tensor_in_helper,
            ("""\
    return tokens + pos
""",
             """\
    fake_mode = torch._guards.detect_fake_mode()
    pos_fake = pos if fake_mode is None else fake_mode.from_tensor(pos)
    return tokens + pos_fake
"""),
        ),
    ),
    (
        'lambda_registry',
        _lambda_registry := HEAD + """\

LOSSES = {"l2": lambda m, x: m(x).pow(2).mean()}
net = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = LOSSES["l2"](net, torch.randn(4, 3))
    loss.backward()
print(tuple(loss.shape))
""",
        fixed(
            _lambda_registry,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = LOSSES["l2"](net, torch.randn(4, 3))
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    net_fake = copy.deepcopy(
        net,
        {
            **{id(v): v for sub in net.modules() for k, v in vars(sub).items() if not k.startswith("_")},
            **{id(t): fake_mode.from_tensor(t) for t in [*net.parameters(), *net.buffers()]},
        },
    )
    loss = LOSSES["l2"](net_fake, torch.randn(4, 3))
"""),
        ),
    ),
    (
        'loop_over_global_modules',
        _loop_over_global_modules := HEAD + """\

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
        fixed(
            _loop_over_global_modules,
            ("""\
        x = blk(x)
""",
             detected_state('blk', 'blk_fake_state', 8) + """\
        x = torch.func.functional_call(blk, blk_fake_state, (x,))
"""),
        ),
    ),
    (
        'module_argument_of_helper',
        _module_argument_of_helper := HEAD + """\


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
        fixed(
            _module_argument_of_helper,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = train_step(net, torch.randn(4, 3))
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    net_fake = copy.deepcopy(
        net,
        {
            **{id(v): v for sub in net.modules() for k, v in vars(sub).items() if not k.startswith("_")},
            **{id(t): fake_mode.from_tensor(t) for t in [*net.parameters(), *net.buffers()]},
        },
    )
    loss = train_step(net_fake, torch.randn(4, 3))
"""),
        ),
    ),
    (
        'partial_bound',
        _partial_bound := """\
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
        fixed(
            _partial_bound,
            ("""\
    loss = model(x).sum()
""",
             detected_state('model', 'model_fake_state', 4) + """\
    loss = torch.func.functional_call(model, model_fake_state, (x,)).sum()
"""),
        ),
    ),
]

# safe look-alikes: no finding, never touched (most are an INVALID program with one change)
VALID = [
    (
        'closure_over_module_made_in_region',
        fixed(
            _closure_factory,
            ("""\
net = nn.Linear(3, 2)
step = make_step(net)
""",
             ''),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True):
    step = make_step(nn.Linear(3, 2))
"""),
        ),
    ),
    (
        'context_manager_class_without_mode',
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
        'decorator_wrapper_no_grad',
        fixed(
            _decorator_wrapper,
            ("""\
        with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
        with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
"""),
            ("""\
def train_step(model, n):
    loss = model(torch.randn(n, 3)).pow(2).mean()
    loss.backward()
    return tuple(loss.shape)
""",
             """\
def forward_shape(model, n):
    return tuple(model(torch.randn(n, 3)).shape)
"""),
            ("""\
print(train_step(nn.Linear(3, 2), 4))
""",
             """\
print(forward_shape(nn.Linear(3, 2), 4))
"""),
        ),
    ),
    (
        'exitstack_flag_off',
        fixed(
            _exitstack_conditional,
            ("""\
DRY_RUN = True
""",
             """\
DRY_RUN = False
"""),
            ("""\
print(tuple(out.shape))
""",
             """\
print(tuple(out.shape), net.weight.grad is not None)
"""),
        ),
    ),
    (
        'global_tensor_detached',
        fixed(
            _global_tensor_in_helper,
            ("""\
    return tokens + pos
""",
             """\
    return tokens + pos.detach()
"""),
            ("""\
    h = embed(torch.randn(2, 4))
""",
             """\
    h = embed(torch.randn(2, 4, requires_grad=True))
"""),
            ("""\
print(tuple(h.shape), embed(torch.ones(2, 4)).shape)
""",
             """\
print(tuple(h.shape))
"""),
        ),
    ),
    (
        'helper_converts_with_from_tensor',
        fixed(
            _global_tensor_in_helper,
            ("""\
import torch
""",
             """\
import torch
from torch._guards import detect_fake_mode
"""),
            ("""\
    return tokens + pos
""",
             """\
    mode = detect_fake_mode()
    return tokens + (pos if mode is None else mode.from_tensor(pos))
"""),
            ("""\
print(tuple(h.shape), embed(torch.ones(2, 4)).shape)
""",
             """\
print(tuple(h.shape))
"""),
        ),
    ),
    (
        'lambda_registry_fake_module',
        fixed(
            _lambda_registry,
            ("""\
net = nn.Linear(3, 2)
""",
             ''),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True):
    net = nn.Linear(3, 2)
"""),
        ),
    ),
    (
        'partial_called_outside_region',
        fixed(
            _partial_bound,
            ("""\
    loss = step(torch.randn(4, 3))
print(tuple(loss.shape))
""",
             """\
    shape = tuple(torch.randn(4, 3).shape)
loss = step(torch.randn(*shape))
print(tuple(loss.shape), net.weight.grad is not None)
"""),
        ),
    ),
]


globals().update(example_tests(INVALID, VALID, "helpers"))


def _fix_message(code: str, tmp_path: Path) -> tuple[str, str]:
    import json

    path = tmp_path / "case.py"
    path.write_text(code, encoding="utf-8")
    proc = cli(*BASE_ARGS, "--unsafe-fixes", "--output-format", "json", str(path))
    findings = json.loads(proc.stdout)
    # a leak in a helper is also reported where the call hands the real value over (a
    # finding with a `call` step and no fix of its own): the message is the leak's own
    (finding,) = [f for f in findings if not any(s.get("kind") == "call" for s in f.get("trace") or ())]
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


def test_gradient_read_in_another_function_makes_the_copy_display_only(tmp_path):
    # (this shape once ended the whole lint with an internal error)
    code = _example("module_argument_of_helper").replace(
        "print(tuple(train_step(net, torch.randn(4, 3)).shape))\n",
        "\n\ndef report(m):\n    print(tuple(m.weight.grad.shape))\n\n\nreport(net)\n")
    # (a read that only asks `type(m.weight.grad)` is no reason: test_fix_probes.py)
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
