"""Python's and torch's semantics in the interpreter, one feature at a time.

Each feature has a hazard and a safe look-alike (small programs; lines that must
be flagged end with ``# FGLxxx``, every code exact, opt-in FGL004 included). The
runnable versions with labels checked by torch are the fixtures named in each
comment; these are the unit-level pairs, including shapes that no runtime label
can pin down (unknown keys and conditions: "may" never reports).
"""

from __future__ import annotations

import textwrap

import pytest
from markers import markers_in_source

from fakegrad_lint.engine.lint import check_source

HEAD = """\
import contextlib
import copy
import functools
from dataclasses import dataclass, field

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode, FakeCopyMode, unset_fake_temporarily
"""

CASES = {
    # ---------------------------------------------------------------- decorators
    "decorator_wrapper_opens_region": """
def fake(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return fn(*args, **kwargs)
    return wrapper

@fake
def step(net, x):
    net(x).sum().backward()  # FGL001

step(nn.Linear(2, 2), torch.ones(1, 2))
""",
    "decorator_wrapper_unsets_mode": """
def real(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with unset_fake_temporarily():
            return fn(*args, **kwargs)
    return wrapper

@real
def step(net, n):
    net(torch.ones(n, 2)).sum().backward()

with FakeTensorMode(allow_non_fake_inputs=True):
    step(nn.Linear(2, 2), 1)
""",
    "decorator_factory_as_call": """
def estimate(allow):
    def deco(fn):
        def run(*args):
            with FakeTensorMode(allow_non_fake_inputs=allow):
                return fn(*args)
        return run
    return deco

def step(net, x):
    net(x).sum().backward()  # FGL001

step = estimate(True)(step)
step(nn.Linear(2, 2), torch.ones(1, 2))
""",
    "decorator_factory_grad_off": """
def estimate(allow):
    def deco(fn):
        def run(*args):
            with FakeTensorMode(allow_non_fake_inputs=allow), torch.no_grad():
                return fn(*args)
        return run
    return deco

@estimate(True)
def step(net, x):
    return net(x).shape

step(nn.Linear(2, 2), torch.ones(1, 2))
""",
    "partial_of_decorated_function": """
def fake(fn):
    def wrapper(*args, **kwargs):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return fn(*args, **kwargs)
    return wrapper

@fake
def step(net, x, scale=1.0):
    (net(x) * scale).sum().backward()  # FGL001

run = functools.partial(step, nn.Linear(2, 2))
run(torch.ones(1, 2), scale=2.0)
""",
    # ------------------------------------------------------- classes and the MRO
    "class_attribute_mode_classmethod": """
class Probe:
    mode = FakeTensorMode(allow_non_fake_inputs=True)

    @classmethod
    def run(cls, net):
        with cls.mode:
            net(torch.ones(1, 2)).sum().backward()  # FGL001

Probe.run(nn.Linear(2, 2))
""",
    "class_attribute_nullcontext": """
class Probe:
    mode = contextlib.nullcontext()

    @classmethod
    def run(cls, net):
        with cls.mode:
            net(torch.ones(1, 2)).sum().backward()

Probe.run(nn.Linear(2, 2))
""",
    "mro_first_base_wins": """
class Fake:
    def ctx(self):
        return FakeTensorMode(allow_non_fake_inputs=True)

class Real:
    def ctx(self):
        return contextlib.nullcontext()

class Runner(Real, Fake):
    def run(self, net):
        with self.ctx():
            net(torch.ones(1, 2)).sum().backward()

Runner().run(nn.Linear(2, 2))
""",
    "mro_inherited_method": """
class Fake:
    def ctx(self):
        return FakeTensorMode(allow_non_fake_inputs=True)

class Real:
    def other(self):
        return 1

class Runner(Real, Fake):
    def run(self, net):
        with self.ctx():
            net(torch.ones(1, 2)).sum().backward()  # FGL001

Runner().run(nn.Linear(2, 2))
""",
    "super_init_builds_real_submodule": """
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(2, 2)

class Net(Base):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        return self.body(x) * self.scale

net = Net()
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "super_init_builds_inside_region": """
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(2, 2)

class Net(Base):
    def __init__(self):
        super().__init__()

with FakeTensorMode(allow_non_fake_inputs=True):
    net = Net()
    net(torch.ones(1, 2)).sum().backward()
""",
    "property_returns_mode": """
class Holder:
    def __init__(self):
        self._m = FakeTensorMode(allow_non_fake_inputs=True)

    @property
    def mode(self):
        return self._m

w = torch.ones(2, requires_grad=True)
with Holder().mode:
    (w * 2).sum().backward()  # FGL001
""",
    # -------------------------------------------------------------- user dunders
    "user_enter_exit_delegates_mode": """
class Sandbox:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)

    def __enter__(self):
        return self.mode.__enter__()

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)

w = torch.ones(2, requires_grad=True)
with Sandbox():
    (w * 2).sum().backward()  # FGL001
(w * 3).sum().backward()
""",
    "user_enter_exit_converts": """
class Sandbox:
    def __init__(self, t):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        self.t = t

    def __enter__(self):
        self.mode.__enter__()
        return self.mode.from_tensor(self.t)

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)

w = torch.ones(2, requires_grad=True)
with Sandbox(w) as fw:
    (fw * 2).sum().backward()
""",
    "user_call_opens_region": """
class Estimator:
    def __call__(self, net, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            net(x).sum().backward()  # FGL001

Estimator()(nn.Linear(2, 2), torch.ones(1, 2))
""",
    "dataclass_default_factory_mode": """
@dataclass
class Cfg:
    name: str
    mode: object = field(default_factory=lambda: FakeTensorMode(allow_non_fake_inputs=True))

cfg = Cfg("a")
w = torch.ones(2, requires_grad=True)
with cfg.mode:
    (w * 2).sum().backward()  # FGL001
""",
    "dataclass_default_factory_nullcontext": """
@dataclass
class Cfg:
    name: str
    mode: object = field(default_factory=contextlib.nullcontext)

cfg = Cfg("a")
w = torch.ones(2, requires_grad=True)
with cfg.mode:
    (w * 2).sum().backward()
""",
    # --------------------------------------------------------- boolean operators
    "and_returns_last_operand": """
w = torch.ones(2, requires_grad=True)
with (FakeTensorMode(allow_non_fake_inputs=True) and torch.no_grad() and contextlib.nullcontext()):
    (w * 2).sum().backward()
""",
    "or_returns_first_truthy": """
w = torch.ones(2, requires_grad=True)
with (FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()):
    (w * 2).sum().backward()  # FGL001
""",
    "or_with_unknown_first_operand": """
def run(ctx, w):
    with (ctx or FakeTensorMode(allow_non_fake_inputs=True)):
        (w * 2).sum().backward()

run(make_context(), torch.ones(2, requires_grad=True))
""",
    # ------------------------------------------------------ methods return self
    "chained_freeze": """
model = nn.Linear(2, 2)
model.eval().requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = model(torch.ones(1, 2))
""",
    "chained_self_still_trainable": """
model = nn.Linear(2, 2).train().float()
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "tensor_requires_grad_chained": """
w = torch.ones(2).float().requires_grad_()
with FakeTensorMode(allow_non_fake_inputs=True):
    (w * 2).sum().backward()  # FGL001
""",
    # --------------------------------------------------------------- may values
    "unknown_key_dict_with_nullcontext": """
CTX = {"real": contextlib.nullcontext(), "fake": FakeTensorMode(allow_non_fake_inputs=True)}

def run(kind, w):
    with CTX[kind]:
        (w * 2).sum().backward()

run(read_kind(), torch.ones(2, requires_grad=True))
""",
    "constant_key_dict_picks_mode": """
CTX = {"real": contextlib.nullcontext(), "fake": FakeTensorMode(allow_non_fake_inputs=True)}
w = torch.ones(2, requires_grad=True)
with CTX["fake"]:
    (w * 2).sum().backward()  # FGL001
""",
    "unknown_condition_mode_or_nullcontext": """
w = torch.ones(2, requires_grad=True)
with (FakeTensorMode(allow_non_fake_inputs=True) if read_flag() else contextlib.nullcontext()):
    (w * 2).sum().backward()
""",
    "unknown_condition_between_modes": """
w = torch.ones(2, requires_grad=True)
with (FakeTensorMode(allow_non_fake_inputs=True) if read_flag() else FakeTensorMode(allow_non_fake_inputs=True)):
    (w * 2).sum().backward()  # FGL001
""",
    "maybe_frozen_module": """
model = nn.Linear(2, 2)
if read_flag():
    model.requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.ones(1, 2)).sum().backward()
""",
    "maybe_requires_grad_tensor": """
w = torch.ones(2)
if read_flag():
    w = torch.ones(2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    (w * 2).sum().backward()
""",
    "registry_of_module_classes": """
class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)

class B(A):
    pass

MODELS = {"a": A, "b": B}
model = MODELS[read_name()]()
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "registry_with_unknown_candidate": """
class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)

MODELS = {"a": A, "b": load_from_plugin}
model = MODELS[read_name()]()
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.ones(1, 2)).sum().backward()
""",
    # ---------------------------------------------- copies, storage, the devices
    "deepcopy_inside_allow_region": """
model = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    copy.deepcopy(model)(torch.ones(1, 2)).sum().backward()
""",
    "deepcopy_under_strict_region": """
model = nn.Linear(2, 2)
with FakeTensorMode():
    twin = copy.deepcopy(model)  # FGL002
""",
    "fake_copy_mode_under_strict_region": """
model = nn.Linear(2, 2)
mode = FakeTensorMode()
with mode:
    with FakeCopyMode(mode):
        twin = copy.deepcopy(model)  # FGL002
""",
    "fake_copy_mode_outside_region": """
model = nn.Linear(2, 2)
mode = FakeTensorMode()
with FakeCopyMode(mode):
    twin = copy.deepcopy(model)
with mode:
    twin(torch.ones(1, 2)).sum().backward()
""",
    "to_empty_inside_region": """
with torch.device("meta"):
    model = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    model.to_empty(device="cpu")
    model(torch.ones(1, 2)).sum().backward()
""",
    "to_empty_outside_region": """
model = nn.Linear(2, 2, device="meta")
model.to_empty(device="cpu")
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "to_meta_outside_region": """
model = nn.Linear(2, 2).to("meta")
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.ones(1, 2, device="meta")).sum().backward()  # FGL001
""",
    "meta_module_without_a_fake_mode": """
model = nn.Linear(2, 2).to("meta")
model(torch.ones(1, 2, device="meta")).sum().backward()
""",
    "meta_module_under_strict_mode": """
with torch.device("meta"):
    model = nn.Linear(2, 2)
with FakeTensorMode():
    model(torch.ones(1, 2))  # FGL002
""",
    # ----------------------------------------------------------- torch.func etc.
    "func_grad_over_real_params_written_back": """
model = nn.Linear(2, 1)
params = dict(model.named_parameters())

def loss(p, x):
    return torch.func.functional_call(model, p, (x,)).sum()  # FGL001

with FakeTensorMode(allow_non_fake_inputs=True):
    g = torch.func.grad(loss)(params, torch.ones(1, 2))  # FGL001
for name, p in model.named_parameters():
    p.grad = g[name]
""",
    "func_grad_over_fake_copies": """
model = nn.Linear(2, 1)

def loss(p, x):
    return torch.func.functional_call(model, p, (x,)).sum()

with FakeTensorMode(allow_non_fake_inputs=True) as m:
    fake = {k: m.from_tensor(v) for k, v in model.named_parameters()}
    g = torch.func.grad(loss)(fake, torch.ones(1, 2))
for name, p in model.named_parameters():
    # (the real parameters' .grad becomes the fake gradient: the oracle says hazard)
    p.grad = g[name]  # FGL003
""",
    "functorch_make_fx_strict": """
from functorch import make_fx
lin = nn.Linear(2, 2)

def f(x):
    return lin(x)  # FGL002

make_fx(f, tracing_mode="symbolic")(torch.ones(1, 2))
""",
    "functorch_make_fx_params_as_inputs": """
from functorch import make_fx
lin = nn.Linear(2, 2)

def f(params, x):
    return torch.func.functional_call(lin, params, (x,))

make_fx(f, tracing_mode="fake")(dict(lin.named_parameters()), torch.ones(1, 2))
""",
    "symbolic_trace_keeps_params": """
gm = torch.fx.symbolic_trace(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    gm(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "compile_keeps_params": """
net = torch.compile(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "export_module_keeps_params": """
gm = torch.export.export(nn.Linear(2, 2), (torch.ones(1, 2),)).module()
with FakeTensorMode(allow_non_fake_inputs=True):
    gm(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "export_with_fake_args_outside_region": """
mode = FakeTensorMode(allow_non_fake_inputs=True)
with mode:
    args = (torch.ones(1, 2),)
ep = torch.export.export(nn.Linear(2, 2), args)
""",
    "exported_program_called_under_mode": """
ep = torch.export.export(nn.Linear(2, 2), (torch.ones(1, 2),))
with FakeTensorMode(allow_non_fake_inputs=True):
    out = ep(torch.ones(1, 2))
""",
    "skip_init_real_module": """
lin = torch.nn.utils.skip_init(nn.Linear, 2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    lin(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "skip_init_inside_region": """
with FakeTensorMode(allow_non_fake_inputs=True):
    lin = torch.nn.utils.skip_init(nn.Linear, 2, 2)
    lin(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------- third-party module factories
    "torchvision_factory_real": """
import torchvision
net = torchvision.models.resnet18()
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 3, 8, 8)).sum().backward()  # FGL001
""",
    "timm_factory_inside_region": """
import timm
with FakeTensorMode(allow_non_fake_inputs=True):
    net = timm.create_model("resnet18")
    net(torch.ones(1, 3, 8, 8)).sum().backward()
""",
    "transformers_from_pretrained_real": """
from transformers import AutoModelForCausalLM
lm = AutoModelForCausalLM.from_pretrained("gpt2")
with FakeTensorMode(allow_non_fake_inputs=True):
    lm(torch.ones(1, 4, dtype=torch.long)).logits.sum().backward()  # FGL001
""",
    "transformers_from_config_on_meta": """
from transformers import AutoConfig, AutoModel
with torch.device("meta"):
    lm = AutoModel.from_config(AutoConfig.for_model("gpt2"))
with FakeTensorMode(allow_non_fake_inputs=True):
    lm(torch.ones(1, 4, dtype=torch.long))  # FGL004
""",
    # ----------------------------------------------------------- import spellings
    "import_module_spelling": """
import importlib
ft = importlib.import_module("torch._subclasses.fake_tensor")
w = torch.ones(2, requires_grad=True)
with ft.FakeTensorMode():
    w * 2  # FGL002
""",
    "dynamo_detect_fake_mode_spelling": """
from unittest import mock
from torch._dynamo.utils import detect_fake_mode
w = torch.ones(2, requires_grad=True)
mode = detect_fake_mode()
with mock.patch.object(mode, "allow_non_fake_inputs", True), mode:
    (w * 2).sum().backward()  # FGL001
""",
    # ------------------------------------------------------------ more Python
    "class_based_decorator": """
class fake_region:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *a, **k):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return self.fn(*a, **k)

@fake_region
def step(net, x):
    net(x).sum().backward()  # FGL001

step(nn.Linear(2, 2), torch.ones(1, 2))
""",
    "method_decorated_by_factory_with_mode_kwargs": """
def with_mode(**mode_kwargs):
    def deco(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with FakeTensorMode(**mode_kwargs):
                return fn(*args, **kwargs)
        return inner
    return deco

class Trainer:
    def __init__(self):
        self.model = nn.Linear(2, 2)

    @with_mode(allow_non_fake_inputs=True)
    def dry_run(self, x):
        self.model(x).sum().backward()  # FGL001

Trainer().dry_run(torch.ones(1, 2))
""",
    "region_entered_in_unknown_branch": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    if read_flag():
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    net(torch.ones(1, 2)).sum().backward()
""",
    "region_entered_and_used_in_unknown_branch": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    if read_flag():
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "static_and_class_method_builders": """
class Zoo:
    @staticmethod
    def build(d):
        return nn.Linear(d, 1)

    @classmethod
    def default(cls):
        return cls.build(3)

m = Zoo.default()
with FakeTensorMode(allow_non_fake_inputs=True):
    m(torch.ones(1, 3)).sum().backward()  # FGL001
""",
    "property_returns_module": """
class Wrapper:
    def __init__(self):
        self._net = nn.Linear(3, 1)

    @property
    def net(self):
        return self._net

w = Wrapper()
with FakeTensorMode(allow_non_fake_inputs=True):
    w.net(torch.ones(1, 3)).sum().backward()  # FGL001
""",
    "property_returns_frozen_module": """
class Wrapper:
    def __init__(self):
        self._net = nn.Linear(3, 1).requires_grad_(False)

    @property
    def net(self):
        return self._net

w = Wrapper()
with FakeTensorMode(allow_non_fake_inputs=True):
    w.net(torch.ones(1, 3))
""",
    "freeze_reaches_submodules": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(3, 3)
        self.head = nn.Linear(3, 1)

net = Net()
for p in net.parameters():
    p.requires_grad = False
with FakeTensorMode(allow_non_fake_inputs=True):
    net.head(net.body(torch.ones(1, 3))).sum().backward()
""",
    "partial_freeze_keeps_head_trainable": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(3, 3)
        self.head = nn.Linear(3, 1)

net = Net()
net.body.requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    net.head(net.body(torch.ones(1, 3))).sum().backward()  # FGL001
""",
    "set_grad_enabled_unknown": """
w = torch.ones(2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True), torch.set_grad_enabled(read_flag()):
    y = (w * 2).sum()
""",
    "checkpoint_runs_the_block": """
from torch.utils.checkpoint import checkpoint
block = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    checkpoint(block, torch.ones(1, 2), use_reentrant=False).sum().backward()  # FGL001
""",
    "checkpoint_of_block_built_inside": """
from torch.utils.checkpoint import checkpoint
with FakeTensorMode(allow_non_fake_inputs=True):
    block = nn.Linear(2, 2)
    checkpoint(block, torch.ones(1, 2), use_reentrant=False).sum().backward()
""",
    "optimizer_step_runs_closure": """
net = nn.Linear(2, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)

def closure():
    loss = net(torch.ones(1, 2)).sum()  # FGL001
    loss.backward()
    return loss

with FakeTensorMode(allow_non_fake_inputs=True):
    opt.step(closure)
""",
    "optimizer_step_closure_outside_region": """
net = nn.Linear(2, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)

def closure():
    loss = net(torch.ones(1, 2)).sum()
    loss.backward()
    return loss

opt.step(closure)
""",
    "getattr_layer_names_from_config": """
SPEC = [("Linear", (2, 2)), ("Tanh", ())]
net = nn.Sequential(*[getattr(nn, kind)(*a) for kind, a in SPEC])
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "getattr_paramless_layer_names": """
SPEC = ["ReLU", "Tanh"]
net = nn.Sequential(*[getattr(nn, kind)() for kind in SPEC])
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()
""",
    "apply_runs_init_under_strict_mode": """
def init(m):
    nn.init.zeros_(m.weight)  # FGL002

net = nn.Linear(2, 2)
with FakeTensorMode():
    net.apply(init)
""",
    "apply_runs_init_outside_region": """
def init(m):
    nn.init.zeros_(m.weight)

net = nn.Linear(2, 2).apply(init)
with FakeTensorMode(allow_non_fake_inputs=True) as mode:
    fake = mode.from_tensor(net.weight)
""",
    "classmethod_factory_returns_module": """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)

    @classmethod
    def build(cls, d):
        return cls(d)

net = Net.build(3)
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 3)).sum().backward()  # FGL001
""",
    "forward_opens_region": """
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 3)
    def forward(self, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return self.net(x)  # FGL001
probe = Probe()
out = probe(torch.ones(1, 3))
out.sum().backward()
""",
    "forward_opens_region_converts": """
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 3)
    def forward(self, x):
        with FakeTensorMode(allow_non_fake_inputs=True) as m:
            return torch.func.functional_call(self.net, {k: m.from_tensor(v) for k, v in self.net.named_parameters()}, (x,))
probe = Probe()
out = probe(torch.ones(1, 3))
out.sum().backward()
""",
    "contextmanager_enter_try_finally": """
@contextlib.contextmanager
def fake_ctx(allow=True):
    mode = FakeTensorMode(allow_non_fake_inputs=allow)
    mode.__enter__()
    try:
        yield mode
    finally:
        mode.__exit__(None, None, None)
net = nn.Linear(3, 3)
with fake_ctx():
    net(torch.ones(1, 3)).sum().backward()  # FGL001
""",
    "exit_stack_passed_to_helper": """
def setup(stack, allow):
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=allow))
net = nn.Linear(3, 3)
with contextlib.ExitStack() as stack:
    setup(stack, True)
    net(torch.ones(1, 3)).sum().backward()  # FGL001
""",
    "init_default_or_mode": """
class Est:
    def __init__(self, model, mode=None):
        self.model = model
        self.mode = mode or FakeTensorMode(allow_non_fake_inputs=True)
    def run(self, x):
        with self.mode:
            self.model(x).sum().backward()  # FGL001
Est(nn.Linear(3, 3)).run(torch.ones(1, 3))
""",
    "fake_from_may_region_mixed_after": """
w = torch.ones(2, requires_grad=True)
with (FakeTensorMode(allow_non_fake_inputs=True) if read_flag() else contextlib.nullcontext()):
    feats = torch.ones(2) * 3
(feats * w).sum().backward()
""",
    "fake_from_region_mixed_after": """
w = torch.ones(2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    feats = torch.ones(2) * 3
(feats * w).sum().backward()  # FGL003
""",
    "backward_on_one_of_two_losses": """
w = torch.ones(2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    a = (w * 2).sum()  # FGL004
    loss = a if read_flag() else torch.ones(())
    loss.backward()
""",
    "state_dict_under_strict_mode": """
net = nn.Linear(2, 2)
with FakeTensorMode():
    sd = net.state_dict()  # FGL002
""",
    "state_dict_under_allow_mode": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    sd = net.state_dict()
""",
    "dual_use_decorator_without_arguments": """
def dry_run(fn=None, *, allow=True):
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with FakeTensorMode(allow_non_fake_inputs=allow):
                return func(*args, **kwargs)
        return wrapper
    if fn is not None:
        return decorate(fn)
    return decorate

@dry_run
def step(net):
    net(torch.ones(1, 2)).sum().backward()  # FGL001

step(nn.Linear(2, 2))
""",
    "dual_use_decorator_with_arguments": """
def dry_run(fn=None, *, allow=True):
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with FakeTensorMode(allow_non_fake_inputs=allow), torch.no_grad():
                return func(*args, **kwargs)
        return wrapper
    if fn is not None:
        return decorate(fn)
    return decorate

@dry_run(allow=True)
def step(net):
    return net(torch.ones(1, 2)).shape

step(nn.Linear(2, 2))
""",
    "comparisons_of_known_values": """
MODE = "fake"
w = torch.ones(2, requires_grad=True)
if MODE == "fake" and MODE in ("fake", "meta") and w is not None:
    ctx = FakeTensorMode(allow_non_fake_inputs=True)
else:
    ctx = contextlib.nullcontext()
with ctx:
    (w * 2).sum().backward()  # FGL001
""",
    "registry_of_factory_functions": """
_entry = {}
def register_model(fn):
    _entry[fn.__name__] = fn
    return fn
def model_entrypoint(name):
    return _entry[name]
def list_models():
    return sorted(_entry)
class Tiny(nn.Module):
    def __init__(self, width=4, num_classes=10):
        super().__init__()
        self.fc = nn.Linear(width, num_classes)
    def forward(self, x):
        return self.fc(x)
@register_model
def tiny(**kwargs):
    return Tiny(**kwargs)
@register_model
def tiny_wide(**kwargs):
    return Tiny(width=8, **kwargs)
def create_model(model_name, pretrained=False, **kwargs):
    if pretrained:
        raise RuntimeError("x")
    return model_entrypoint(model_name)(**kwargs)
def count_flops(model, size):
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = model(torch.randn(*size))  # FGL001
        out.sum().backward()
for name in list_models():
    model = create_model(name, num_classes=5)
    count_flops(model, (2, 4))
""",
    "detect_fake_mode_unpatched_allow_unknown": """
from torch._guards import detect_fake_mode
net = nn.Linear(2, 2)

def check(fake_input):
    mode = detect_fake_mode((fake_input,))
    with mode:
        return net(fake_input).shape

check(make_input())
""",
    "dynamo_optimize_keeps_params": """
net = torch._dynamo.optimize("eager")(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "compile_decorator_with_options_inside_region": """
@torch.compile(backend="eager")
def step(x):
    return (x * 2).sum()

with FakeTensorMode(allow_non_fake_inputs=True):
    step(torch.ones(2, requires_grad=True)).backward()
""",
    "func_grad_of_unknown_function": """
from mylib import loss_fn
model = nn.Linear(2, 1)
params = dict(model.named_parameters())
with FakeTensorMode(allow_non_fake_inputs=True):
    g = torch.func.grad(loss_fn)(params, torch.ones(1, 2))  # FGL001
for name, p in model.named_parameters():
    p.grad = g[name]
""",
    "unpack_pairs_of_one_of_two_modules": """
def convert(model, mode):
    with mode:
        for k, p in model.named_parameters():
            k.split(".")  # a name, never the parameter

a, b = nn.Linear(2, 2), nn.Linear(3, 3)
convert(a if read_flag() else b, FakeTensorMode())
""",
    "iterating_a_dict_gives_keys": """
params = dict(nn.Linear(2, 2).named_parameters())
with FakeTensorMode():
    for name in params:
        name.upper()
    for name in {"w": torch.ones(2, requires_grad=True)}:
        name.upper()
""",
    "dict_values_are_values": """
params = {"w": torch.ones(2, requires_grad=True)}
with FakeTensorMode():
    for v in params.values():
        v * 2  # FGL002
""",
    "class_body_method_chosen_by_condition": """
class Client:
    if read_flag():
        def __init__(self):
            self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    else:
        def __init__(self):
            self.mode = contextlib.nullcontext()

    def run(self, net):
        with self.mode:
            net(torch.ones(1, 2)).sum().backward()

Client().run(nn.Linear(2, 2))
""",
    "dunder_made_by_a_decorator_returning_one_of_two": """
def pick(fn):
    return fn if read_flag() else other_init

class Client:
    @pick
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)

    def run(self, net):
        with self.mode:
            net(torch.ones(1, 2)).sum().backward()

Client().run(nn.Linear(2, 2))
""",
    # ------------------------------------------- modules built in a region (fake modules)
    # (fixtures/heldout/hazard_leaked_fake_adapter_mixed.py)
    "fake_module_output_mixed_after_block": """
base = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    adapter = nn.Sequential(nn.Linear(4, 1, bias=False), nn.Linear(1, 4, bias=False))
x = torch.randn(2, 4)
delta = adapter(x)
y = base(x) + delta  # FGL003
y.sum().backward()
""",
    "fake_module_weight_mixed_after_block": """
w = torch.randn(4, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    lin = nn.Linear(4, 4)
loss = (lin.weight * w).sum()  # FGL003
loss.backward()
""",
    "fake_module_state_dict_mixed_after_block": """
w = torch.randn(4, 4, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    lin = nn.Linear(4, 4)
sd = lin.state_dict()
loss = (sd["weight"] * w).sum()  # FGL003
loss.backward()
""",
    "fake_module_of_the_file_output_mixed_after_block": """
class Adapter(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)

w = torch.randn(4, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    adapter = Adapter()
loss = (adapter(torch.ones(2, 4)) * w).sum()  # FGL003
loss.backward()
""",
    "fake_module_called_on_real_grad_input_after_block": """
w = torch.randn(2, 4, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    lin = nn.Linear(4, 4)
lin(w).sum().backward()  # FGL003
""",
    "fake_deepcopy_output_mixed_after_block": """
base = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    twin = copy.deepcopy(base)
x = torch.randn(2, 4)
y = base(x) + twin(x)  # FGL003
y.sum().backward()
""",
    "fake_to_empty_output_mixed_after_block": """
base = nn.Linear(4, 4)
shell = nn.Linear(4, 4, device="meta")
with FakeTensorMode(allow_non_fake_inputs=True):
    shell.to_empty(device="cpu")
x = torch.randn(2, 4)
y = base(x) + shell(x)  # FGL003
y.sum().backward()
""",
    "fake_module_output_mixed_with_no_grad_tensor": """
with FakeTensorMode(allow_non_fake_inputs=True):
    adapter = nn.Linear(4, 4)
x = torch.randn(2, 4)
y = adapter(x) + torch.randn(2, 4)
print(tuple(y.shape))
""",
    "fake_module_output_mixed_with_detached_value": """
base = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    adapter = nn.Linear(4, 4)
x = torch.randn(2, 4)
y = base(x).detach() + adapter(x)
y.sum().backward()
""",
    "fake_module_output_used_for_shape_only": """
base = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    adapter = nn.Linear(4, 4)
x = torch.randn(2, 4)
y = base(x) + torch.zeros(adapter(x).shape)
y.sum().backward()
""",
    "fake_module_called_inside_its_region": """
with FakeTensorMode(allow_non_fake_inputs=True):
    adapter = nn.Linear(4, 4)
    y = adapter(torch.randn(2, 4))
    y.sum().backward()
""",
    "paramless_module_from_region_on_real_grad_value": """
base = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    act = nn.ReLU()
act(base(torch.randn(2, 4))).sum().backward()
""",
    "module_of_the_file_from_region_wrapping_a_real_one": """
class Wrap(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)

base = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    wrapped = Wrap(base)
w = torch.randn(2, 4, requires_grad=True)
(wrapped(torch.ones(2, 4)) * w).sum().backward()
""",
    "fake_module_from_a_region_entered_on_some_paths": """
base = nn.Linear(4, 4)
with (FakeTensorMode(allow_non_fake_inputs=True) if read_flag() else contextlib.nullcontext()):
    adapter = nn.Linear(4, 4)
x = torch.randn(2, 4)
(base(x) + adapter(x)).sum().backward()
""",
    # ------------------------------------------ grad-mode constructors (torch_tables)
    "inference_mode_false_reenables_grad": """
w = torch.ones(2, requires_grad=True)
with torch.inference_mode():
    with torch.inference_mode(False), FakeTensorMode(allow_non_fake_inputs=True):
        (w * 2).sum().backward()  # FGL001
""",
    "inference_mode_true_keeps_grad_off": """
w = torch.ones(2, requires_grad=True)
with torch.inference_mode(mode=True), FakeTensorMode(allow_non_fake_inputs=True):
    y = (w * 2).sum()
""",
    "set_grad_enabled_true_under_no_grad": """
w = torch.ones(2, requires_grad=True)
with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True), torch.set_grad_enabled(True):
    (w * 2).sum().backward()  # FGL001
""",
    "set_grad_enabled_false_after_enable_grad": """
w = torch.ones(2, requires_grad=True)
with torch.enable_grad(), FakeTensorMode(allow_non_fake_inputs=True), torch.set_grad_enabled(mode=False):
    y = (w * 2).sum()
""",
    # ------------------------------------------------------ types.SimpleNamespace
    "simple_namespace_flag_enters_mode": """
from types import SimpleNamespace
cfg = SimpleNamespace(estimate_only=True, lr=0.1)
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    if cfg.estimate_only:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "simple_namespace_flag_false_or_unknown": """
import types
cfg = types.SimpleNamespace(estimate_only=False, **read_options())
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    if cfg.estimate_only:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    if cfg.dry_run:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------- getattr by a name built of constants
    "getattr_fstring_name_from_constant_loop": """
class Runner:
    def __init__(self, net):
        self.net = net

    def run(self, phase):
        handler = getattr(self, f"_phase_{phase}")
        with FakeTensorMode(allow_non_fake_inputs=True):
            return handler()

    def _phase_eval(self):
        with torch.no_grad():
            return self.net(torch.ones(1, 2)).shape

    def _phase_train(self):
        self.net(torch.ones(1, 2)).sum().backward()  # FGL001

runner = Runner(nn.Linear(2, 2))
for phase in ("eval", "train"):
    runner.run(phase)
""",
    "getattr_name_concatenated_or_unknown": """
class Runner:
    def __init__(self, net):
        self.net = net

    def run(self, phase):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return getattr(self, "_phase_" + phase)()

    def guess(self):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return getattr(self, f"_phase_{read_phase()}")()

    def _phase_eval(self):
        with torch.no_grad():
            return self.net(torch.ones(1, 2)).shape

    def _phase_train(self):
        self.net(torch.ones(1, 2)).sum().backward()

runner = Runner(nn.Linear(2, 2))
runner.run("eval")
runner.guess()
""",
    "getattr_name_concatenated_hazard": """
class Runner:
    def __init__(self, net):
        self.net = net

    def run(self, phase):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return getattr(self, "_phase_" + phase, None)()

    def _phase_train(self):
        self.net(torch.ones(1, 2)).sum().backward()  # FGL001

Runner(nn.Linear(2, 2)).run("train")
""",
    "getattr_each_of_constant_names": """
w = torch.ones(2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    for reduce in ("sum", "mean"):
        getattr(w * 2, reduce)().backward()  # FGL001
""",
    "getattr_each_of_unknown_names": """
w = torch.ones(2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    for reduce in read_names():
        getattr(w * 2, reduce)().backward()  # FGL004
    getattr(w * 2, "sum" if read_flag() else 3)().backward()  # FGL004
""",
    "getattr_known_method_of_module_output": """
def probe(fn, *args, reduce="sum", **kwargs):
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = fn(*args, **kwargs)  # FGL001
        if isinstance(out, tuple):
            out = out[0]
        getattr(out, reduce)().backward()

probe(nn.LSTMCell(3, 6), torch.zeros(2, 3), reduce="mean")
""",
    "getattr_unknown_method_of_module_output": """
def probe(fn, *args, reduce="sum", **kwargs):
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = fn(*args, **kwargs)  # FGL004
        getattr(out, reduce)().backward()
        return getattr(out, "mean")().shape

probe(nn.LSTMCell(3, 6), torch.zeros(2, 3), reduce=read_name())
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics(name):
    source = HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py")}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


def test_every_feature_has_a_hazard_and_a_safe_case():
    marked = [n for n, src in CASES.items() if markers_in_source(HEAD + textwrap.dedent(src))]
    assert len(marked) >= 20 and len(CASES) - len(marked) >= 20
