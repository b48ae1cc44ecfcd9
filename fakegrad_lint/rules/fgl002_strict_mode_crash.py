from fakegrad_lint.analysis.leaks import Leak, Verdict
from fakegrad_lint.rules.base import Rule, where


def _message(leak: Leak) -> str:
    return (
        f"real requires-grad {leak.value_kind} `{leak.value}` reaches an op under {leak.mode} "
        f"({where(leak.mode_line, leak.mode_path)}), which raises `AssertionError: Please convert all Tensors "
        f"to FakeTensors first`"
    )


RULE = Rule(
    code="FGL002",
    name="real-tensor-in-strict-fake-mode",
    summary="Real requires-grad value reaches an op under a default FakeTensorMode (certain AssertionError)",
    what=(
        "A real tensor that requires grad, or a real `nn.Module` with its parameters, is used "
        "by an op while a FakeTensorMode that does not allow non-fake inputs is active "
        "(the default), including through a fake tensor that leaked out of such a region."
    ),
    why=(
        "FakeTensorMode refuses real inputs: the first op raises `AssertionError: Please "
        "convert all Tensors to FakeTensors first or instantiate FakeTensorMode with "
        "'allow_non_fake_inputs'`. Even `.detach()`, `.clone()` and ops under "
        "`torch.no_grad()` raise. Turning on `allow_non_fake_inputs` is not the fix: it "
        "trades the crash for silently fake gradients (FGL001)."
    ),
    fix_safety=(
        "Safe for a tensor: converting at the boundary with `fake_mode.from_tensor(x)` turns "
        "a certain crash into the shape computation the code intended; shapes are those of "
        "the real tensor and the real tensor is never touched. Safe for `copy.deepcopy(model)` "
        "in the region: it becomes `copy.deepcopy(model, {id(t): fake_mode.from_tensor(t) for t "
        "in [*model.parameters(), *model.buffers()]})`, the fake copy the code meant (works "
        "under the strict mode, where `FakeCopyMode` raises; the mode stays strict). Unsafe for a "
        "module call: `torch.func.functional_call` over `from_tensor` copies of its parameters "
        "and buffers, or for its other methods and loops over it, the same fake deep copy. In a "
        "function traced by `make_fx(f, tracing_mode=\"fake\" | \"symbolic\")` the real value "
        "is converted at the op with the tracer's mode (`x.fake_mode.from_tensor`; a module's "
        "copies under `\"symbolic\"` with `static_shapes=True`, or the tracer rejects their fresh "
        "symbolic sizes): unsafe. An element of a real torch container module picked by a computed "
        "key (`scaler.scales[group]` of an `nn.ParameterDict`) is picked from a fake copy of the "
        "container made the same way (chosen over `functional_call`, which has no call to wrap, "
        "and over `FakeCopyMode`, which raises under the strict mode): unsafe. Nested module calls "
        "(`head(enc(x))`) are converted one op at a time: the outer module's crash was masked by "
        "the inner one's."
    ),
    invalid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode():
    y = w @ torch.randn(3, 5)  # FGL002
print(tuple(y.shape))
""",
        """\
import copy

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))
with FakeTensorMode():
    twin = copy.deepcopy(model)  # FGL002
    out = twin(torch.empty(2, 8))
print(tuple(out.shape))
""",
        """\
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

encoder = nn.Linear(4, 4)


def forward_fn(x):
    return encoder(x).relu()  # FGL002


gm = make_fx(forward_fn, tracing_mode="symbolic")(torch.randn(3, 4))
print(gm.code)
""",
    ),
    valid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode() as fake_mode:
    y = fake_mode.from_tensor(w) @ torch.randn(3, 5)
print(tuple(y.shape))
""",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode():
    y = torch.zeros(w.shape) @ torch.randn(3, 5)  # metadata only
print(tuple(y.shape))
""",
        """\
import copy

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))
with FakeTensorMode() as fake_mode:
    twin = copy.deepcopy(model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]})
    out = twin(torch.empty(2, 8))
print(tuple(out.shape))
""",
    ),
    # What `--fix --unsafe-fixes` writes for each invalid example (None: no fix),
    # checked like Fixit's expected_replacement.
    invalid_fixed=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode() as fake_mode:
    w_fake = fake_mode.from_tensor(w)
    y = w_fake @ torch.randn(3, 5)  # FGL002
print(tuple(y.shape))
""",
        """\
import copy

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))
with FakeTensorMode() as fake_mode:
    twin = copy.deepcopy(
        model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
    )  # FGL002
    out = twin(torch.empty(2, 8))
print(tuple(out.shape))
""",
        """\
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

encoder = nn.Linear(4, 4)


def forward_fn(x):
    return torch.func.functional_call(
        encoder,
        {name: x.fake_mode.from_tensor(t, static_shapes=True) for name, t in [*encoder.named_parameters(), *encoder.named_buffers()]},
        (x,),
    ).relu()  # FGL002


gm = make_fx(forward_fn, tracing_mode="symbolic")(torch.randn(3, 4))
print(gm.code)
""",
    ),
    fixed_example="""\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode() as fake_mode:
    w_fake = fake_mode.from_tensor(w)
    y = w_fake @ torch.randn(3, 5)
print(tuple(y.shape))
""",
    matches=lambda leak: leak.verdict is Verdict.CRASH,
    message=_message,
    fix="safe/unsafe",
    runtime_kind="crash",  # the AssertionError the watcher records
)
