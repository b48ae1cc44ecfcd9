from fakegrad_lint.analysis.leaks import Leak, Route, Verdict
from fakegrad_lint.rules.base import Rule, where


def _message(leak: Leak) -> str:
    return (
        f"real requires-grad {leak.value_kind} `{leak.value}` enters {leak.mode} "
        f"({where(leak.mode_line, leak.mode_path)}) and `{leak.sink}` on {where(leak.sink_line, leak.sink_path)} "
        f"will leave a FakeTensor in its .grad"
    )


RULE = Rule(
    code="FGL001",
    name="fake-grad-hazard",
    summary="Real requires-grad value used under FakeTensorMode(allow_non_fake_inputs=True) before a backward",
    what=(
        "A real tensor that requires grad (a `requires_grad=True` leaf, an `nn.Parameter`, "
        "the parameters of a real `nn.Module`) is used inside a FakeTensorMode that allows "
        "non-fake inputs, and a backward (`.backward()`, `torch.autograd.backward`, "
        "`torch.autograd.grad`) runs on a result of that fake computation."
    ),
    why=(
        "Nothing fails. The real leaf's `.grad` becomes a FakeTensor with no data, "
        "`optimizer.step()` leaves the weights unchanged, later real backward passes keep "
        "adding into the fake grad, and `torch.autograd.grad` returns FakeTensors. The model "
        "silently stops training."
    ),
    fix_safety=(
        "Safe for a tensor: the fix binds the mode (`as fake_mode`) and uses "
        "`fake_mode.from_tensor(x)` inside the region, so every shape computed there is "
        "unchanged and the real tensor is never touched. A list, tuple or dict of them gets a "
        "comprehension of the same type (`[fake_mode.from_tensor(t) for t in params]`, "
        "`{k: fake_mode.from_tensor(v) for k, v in sd.items()}`; never the private "
        "`torch.utils._pytree`). For a module the fix picks one of two forms, measured on torch "
        "2.13 (shapes, hooks, buffers, tied weights, memory): a direct call `model(x)` becomes "
        "`torch.func.functional_call` over `from_tensor` copies of its parameters and buffers "
        "(the forward hooks run on the real module object); a method other than `forward`, a "
        "loop over the module or its parameters, and a region that reads the gradients it makes "
        "(`p.grad` for `p` in `model.parameters()`, in the block or right after it) run on a fake "
        "copy, `copy.deepcopy(model, {id(t): fake_mode.from_tensor(t) for t in "
        "[*model.parameters(), *model.buffers()]})` (the memo hands deepcopy each fake "
        "parameter: tied weights stay tied, hooks are copied, no real storage, and it works under "
        "a strict mode too, where `FakeCopyMode` raises; a plain `copy.deepcopy` in an allow "
        "region fails on `set_` of a meta storage). Both are unsafe: gradients and buffer "
        "updates land on the fake copies. In a function traced by `make_fx(f, "
        "tracing_mode=\"fake\")` the real module or tensor is converted at the op with the "
        "tracer's mode (`x.fake_mode.from_tensor`, `x` a traced input): the same graph, unsafe. "
        "When code outside the fixed region reads the module's real parameter gradients the module fix "
        "is display-only, unless every such read only asks `type(p.grad)` (how programs print the "
        "symptom): that read sees `NoneType` after the fix instead of the FakeTensor, so the fix "
        "stays unsafe and its message names the line."
    ),
    invalid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (x * 2).sum()  # FGL001
    y.backward()
print(tuple(y.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = model(torch.randn(4, 3))  # FGL001
    out.sum().backward()
print(tuple(out.shape))
""",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

params = [torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)]
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (params[0] * params[1]).sum()  # FGL001
    y.backward()
print(tuple(y.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.randn(4, 3)).sum().backward()  # FGL001
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
print(grad_bytes)
""",
        """\
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

net = nn.Linear(3, 3)


def train_step(x):
    loss = net(x).sum()  # FGL001
    loss.backward()
    return loss


gm = make_fx(train_step, tracing_mode="fake", _allow_non_fake_inputs=True)(torch.randn(2, 3))
print(len(gm.graph.nodes))
""",
    ),
    valid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

weight = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True) as mode:
    loss = mode.from_tensor(weight).pow(2).mean()  # converted at the boundary
    loss.backward()
print(loss.shape)
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

with FakeTensorMode(allow_non_fake_inputs=True):
    model = nn.Linear(3, 2)  # born fake: its parameters are FakeTensors
    out = model(torch.randn(4, 3))
    out.sum().backward()
print(tuple(out.shape))
""",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

params = [torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)]
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (params[0].detach() * params[1].detach()).sum()  # detached: no real leaf in the graph
print(tuple(y.shape))
""",
        """\
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

net = nn.Linear(3, 3)


def train_step(x):
    loss = net(x).sum()
    loss.backward()
    return loss


gm = make_fx(train_step, tracing_mode="real")(torch.randn(2, 3))  # real tracing: real gradients
print(len(gm.graph.nodes))
""",
    ),
    # What `--fix --unsafe-fixes` writes for each invalid example (None: no fix),
    # checked like Fixit's expected_replacement.
    invalid_fixed=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    x_fake = fake_mode.from_tensor(x)
    y = (x_fake * 2).sum()  # FGL001
    y.backward()
print(tuple(y.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    model_fake_state = {
        name: fake_mode.from_tensor(t)
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    out = torch.func.functional_call(
        model, model_fake_state, (torch.randn(4, 3),),
    )  # FGL001
    out.sum().backward()
print(tuple(out.shape))
""",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

params = [torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)]
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    params_fake = [fake_mode.from_tensor(t) for t in params]
    y = (params_fake[0] * params_fake[1]).sum()  # FGL001
    y.backward()
print(tuple(y.shape))
""",
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
import copy

model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    model_fake = copy.deepcopy(
        model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
    )
    model_fake(torch.randn(4, 3)).sum().backward()  # FGL001
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in model_fake.parameters())
print(grad_bytes)
""",
        """\
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

net = nn.Linear(3, 3)


def train_step(x):
    loss = torch.func.functional_call(
        net,
        {name: x.fake_mode.from_tensor(t) for name, t in [*net.named_parameters(), *net.named_buffers()]},
        (x,),
    ).sum()  # FGL001
    loss.backward()
    return loss


gm = make_fx(train_step, tracing_mode="fake", _allow_non_fake_inputs=True)(torch.randn(2, 3))
print(len(gm.graph.nodes))
""",
    ),
    fixed_example="""\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    x_fake = fake_mode.from_tensor(x)
    y = (x_fake * 2).sum()
    y.backward()
print(tuple(y.shape))
""",
    matches=lambda leak: leak.route is Route.IN_REGION and leak.verdict is Verdict.HAZARD,
    message=_message,
    fix="safe/unsafe",
    runtime_kind="hazard",  # the backward leaves a FakeTensor in a real .grad
)
