from fakegrad_lint.analysis.leaks import Leak, Route, Verdict
from fakegrad_lint.rules.base import Rule, where


def _message(leak: Leak) -> str:
    return (
        f"a fake tensor that leaked out of {leak.mode} ({where(leak.mode_line, leak.mode_path)}) is mixed with "
        f"real requires-grad {leak.value_kind} `{leak.value}`; `{leak.sink}` on line "
        f"{leak.sink_line} will leave a FakeTensor in its .grad"
    )


# What `--fix --unsafe-fixes` writes for the invalid example.
_FIXED = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    f = torch.randn(3)
loss = (f * f.fake_mode.from_tensor(w)).sum()  # FGL003
loss.backward()
print(tuple(loss.shape))
"""

RULE = Rule(
    code="FGL003",
    name="leaked-fake-mixed-with-real-grad",
    summary="Fake tensor leaked out of an allow-mode region is mixed with a real requires-grad value",
    what=(
        "A tensor created inside `FakeTensorMode(allow_non_fake_inputs=True)` is used after "
        "the `with` block together with a real tensor that requires grad, and a backward "
        "follows."
    ),
    why=(
        "A FakeTensor keeps its mode after the block: the op still dispatches to the fake "
        "mode, the result is fake, and the backward leaves a FakeTensor in the real "
        "tensor's `.grad`, exactly as if the real tensor had been used inside the block."
    ),
    fix_safety=(
        "Unsafe: the real operand is replaced by a fake copy made by the leaked tensor's own "
        "mode (`f.fake_mode.from_tensor(w)`, or `torch.func.functional_call` over such copies "
        "for a module). A real operand the code computes at the op (`encoder(tokens) + table`) "
        "is converted whole, as a fake leaf of its own "
        "(`table.fake_mode.from_tensor(encoder(tokens)).detach().requires_grad_()`): it is "
        "computed as before and the backward stops at the fake leaf. Shapes are unchanged and the real value is never touched, but which "
        "side should be real is the author's decision, so it applies only with "
        "`--unsafe-fixes`."
    ),
    invalid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    f = torch.randn(3)
loss = (f * w).sum()  # FGL003
loss.backward()
print(tuple(loss.shape))
""",
    ),
    valid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3)
with FakeTensorMode(allow_non_fake_inputs=True):
    f = torch.randn(3)
y = f * w  # w does not require grad
print(tuple(y.shape))
""",
    ),
    # What `--fix --unsafe-fixes` writes for each invalid example (None: no fix),
    # checked like Fixit's expected_replacement.
    invalid_fixed=(_FIXED,),
    fixed_example=_FIXED,  # as written by --fix, which keeps the line's comment
    matches=lambda leak: leak.route is Route.LEAKED_MIX and leak.verdict is Verdict.HAZARD,
    message=_message,
    fix="unsafe",
    runtime_kind="hazard",  # as FGL001: the mixed op dispatches to the fake mode
)
