from fakegrad_lint.analysis.leaks import Leak, Verdict
from fakegrad_lint.rules.base import Rule, where


def _message(leak: Leak) -> str:
    return (
        f"real requires-grad {leak.value_kind} `{leak.value}` enters {leak.mode} "
        f"({where(leak.mode_line, leak.mode_path)}); no backward follows today, but one added later will "
        f"leave a FakeTensor in its .grad"
    )


RULE = Rule(
    code="FGL004",
    name="real-grad-enters-fake-region",
    summary="(opt-in) Real requires-grad value enters an allow-mode fake region, forward only",
    what=(
        "A real requires-grad value is used inside `FakeTensorMode(allow_non_fake_inputs=True)` "
        "(or mixed with a leaked fake tensor) and no backward is reachable. Off by default: "
        "this is the most common safe shape (forward-only shape inference). Enable it with "
        "`--extend-select FGL004` (in addition to the default rules) for a strict policy."
    ),
    why=(
        "Today nothing goes wrong. The fake results still hold the real leaf in their "
        "autograd graph, so the first backward someone adds turns its `.grad` into a "
        "FakeTensor without any error."
    ),
    fix_safety=(
        "None: forward-only code computes the right shapes today, and rewriting it is a "
        "policy choice. Convert at the boundary by hand (`fake_mode.from_tensor(x)`) if "
        "your policy wants it."
    ),
    invalid=(
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Linear(3, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = model(torch.randn(4, 3))  # FGL004
print(tuple(out.shape))
""",
    ),
    valid=(
        """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

with FakeTensorMode(allow_non_fake_inputs=True):
    model = nn.Linear(3, 2)
    out = model(torch.randn(4, 3))
print(tuple(out.shape))
""",
    ),
    # What `--fix --unsafe-fixes` writes for each invalid example (None: no fix),
    # checked like Fixit's expected_replacement.
    invalid_fixed=(
        None,
    ),
    fixed_example=None,
    matches=lambda leak: leak.verdict is Verdict.FORWARD_ONLY,
    message=_message,
    fix="none",
    default=False,
    runtime_kind="entry",  # a real leaf entering the region; no hazard follows
)
