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
        "unchanged and the real tensor is never touched. For a module the fix runs it with "
        "`torch.func.functional_call` over `from_tensor` copies of its parameters and "
        "buffers; it is marked unsafe because gradients then land on the fake copies, "
        "which changes what the code computes for anything that reads them. A method other "
        "than `forward` (`ae.encode(x)`) or a loop over a real module (`for layer in "
        "model.children()`) runs on a fake copy made in the region with "
        "`with FakeCopyMode(fake_mode): ae_fake = copy.deepcopy(ae)` (unsafe for the same "
        "reason). Both forms were measured on torch 2.13: the real shapes, forward hooks run, "
        "buffer updates go to fake tensors, no real storage; `functional_call` also works "
        "under a strict mode, the deep copy needs `allow_non_fake_inputs=True`. When the code "
        "reads the module's parameter gradients the module fix is display-only."
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
