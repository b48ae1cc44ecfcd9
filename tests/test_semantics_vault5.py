"""Semantics behind last session's vault5 misses (an10): ``functools.cached_property``
stores its first value in the instance; ``checkpoint_sequential`` runs each segment's
forward under the current modes; a parameter named ``argv`` does not write ``sys.argv``
(argparse defaults still known); a real graph backpropagated inside an allow-mode region
(a loss computed under ``unset_fake_temporarily()``) leaks; ``load_state_dict(assign=True)``
of real (``torch.load``) tensors makes a module built in the region real. Each hazard has
a safe look-alike; the cases are reductions of vault5 programs labelled by tests/oracle.py
(``python tests/test_semantics_vault5.py --check`` runs them through it).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from markers import markers_in_source  # noqa: E402
from test_semantics import HEAD  # noqa: E402

from fakegrad_lint.engine.lint import check_source  # noqa: E402

DEFAULT_CODES = {"FGL001", "FGL002", "FGL003"}
_HEAD = HEAD + "import argparse\nimport io\nfrom torch.utils.checkpoint import checkpoint_sequential\n"

_CACHED = """
class Exp:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    @functools.cached_property
    def model(self):
        return nn.Linear(4, 2)
    def describe(self):
        return sum(p.numel() for p in self.model.parameters())
    def dry_run(self):
        with self.mode:
            out = self.model(torch.randn(3, 4)){mark}
            out.sum().backward()
            return tuple(out.shape)
exp = Exp()
{first}
{second}
"""

_UNSET = """
model = nn.Linear(5, 3)
x_real = torch.randn(4, 5)
with FakeTensorMode(allow_non_fake_inputs=True):
    with unset_fake_temporarily():
        loss = model(x_real).pow(2).mean()
{inner}    loss.backward(){mark}
"""

_ASSIGN = """
class C(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 2)
    def forward(self, x):
        return self.fc(x)
buf = io.BytesIO()
torch.save({{"model": C().state_dict()}}, buf)
ckpt = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    model = C()
    model.load_state_dict(ckpt["model"]{assign})
    loss = model(torch.randn(3, 6)).sum(){mark}
    loss.backward()
"""

_ARGV = """
def make(profile):
    match profile:
        case "strict":
            return FakeTensorMode()
        case _:
            return contextlib.nullcontext()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default={default!r})
    args = ap.parse_args(argv)
    model = nn.Linear(4, 4)
    with make(args.profile):
        y = model(torch.randn(2, 4)){mark}
    print(tuple(y.shape))
main()
"""

_CHAIN = """
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
{copy}with mode:
    x = torch.randn(2, 8, requires_grad=True)
    y = checkpoint_sequential({net}, 2, x, use_reentrant=False){mark}
"""

CASES = {
    "cached_property_built_before_region": _CACHED.format(mark="  # FGL001", first="print(exp.describe())", second="print(exp.dry_run())"),
    "cached_property_built_inside_region": _CACHED.format(mark="", first="out = exp.dry_run()", second="print(exp.describe(), out)"),
    "unset_loss_backward_after_unset_block": _UNSET.format(inner="", mark="  # FGL001"),
    "unset_loss_backward_inside_unset_block": _UNSET.format(inner="        loss.backward()\n", mark="").replace(
        "    loss.backward()\n", "", 1).replace("        loss.backward()\n", "        loss.backward()\n", 1),
    "load_state_dict_assign_real_checkpoint": _ASSIGN.format(assign=", assign=True", mark="  # FGL001"),
    "load_state_dict_copy_real_checkpoint": _ASSIGN.format(assign="", mark=""),
    "argv_parameter_default_profile_strict": _ARGV.format(default="strict", mark="  # FGL002"),
    "argv_parameter_default_profile_off": _ARGV.format(default="off", mark=""),
    "checkpoint_sequential_real_model_strict": _CHAIN.format(copy="mode = FakeTensorMode()\n", net="model", mark="  # FGL002"),
    "checkpoint_sequential_fake_copy_strict": _CHAIN.format(
        copy="mode = FakeTensorMode()\nwith FakeCopyMode(mode):\n    fake = copy.deepcopy(model)\n", net="fake", mark=""),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_vault5(name):
    source = _HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py") if f.code in DEFAULT_CODES}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


if __name__ == "__main__" and sys.argv[1:] == ["--check"]:
    from test_semantics_protocols import _check_at_runtime

    sys.exit(1 if _check_at_runtime(CASES, _HEAD) else 0)
