"""Semantics behind this session's vault7 single-file misses and false positive (an14):
``functools.lru_cache``'s ``cache_clear()`` (the next call runs the body again, so a
fake made in a region is not handed to a later real call; ``cache_info()`` keeps the
cache); an optimizer's step hooks (``register_step_pre_hook``/``register_step_post_hook``:
``step()`` runs them as ``fn(optimizer, args, kwargs)`` around the update, a removed
handle's never); a forward's attribute reads by a constant name
(``getattr(self, "name", None)`` reads what was set on the module); a container built
in a region holds the very modules it was given (``seq[0]``, ``seq.apply(fn)``,
``ModuleList[i]`` reach them, and real state set on them later is theirs).
Each hazard has a safe look-alike; the cases are labelled by tests/oracle.py
(``python tests/test_semantics_vault7.py --check`` runs them through it).
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
_HEAD = HEAD

_MEMO = """
@functools.lru_cache(maxsize=None)
def table(n):
    return torch.arange(n).float()
with FakeTensorMode(allow_non_fake_inputs=True):
    shape = table(4).shape
{between}
w = torch.randn(4, requires_grad=True)
(w * table(4)).sum().backward(){mark}
"""

_STEP_HOOK = """
model = nn.Linear(3, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def rehearse(optimizer, args, kwargs):
    optimizer.zero_grad()
    with FakeTensorMode(allow_non_fake_inputs=True):
        model(torch.randn(8, 3)).sum().backward(){mark}
handle = opt.{register}(rehearse)
{between}
model(torch.randn(2, 3)).sum().backward()
opt.step()
"""

_GETATTR = """
class Scaled(nn.Linear):
    def forward(self, x):
        scale = getattr(self, "scale", None)
        out = super().forward(x)
        return out if scale is None else out * scale
mode = FakeTensorMode(allow_non_fake_inputs=True)
with mode:
    layer = Scaled(3, 3)
{inside}
{outside}
with mode:
    layer(torch.randn(2, 3)).sum().backward(){mark}
"""

_CONTAINER = """
class Temp(nn.Linear):
    def forward(self, x):
        return super().forward(x) / self.temperature
def add_temperature(m):
    if isinstance(m, Temp):
        m.temperature = nn.Parameter(torch.ones(1))
mode = FakeTensorMode(allow_non_fake_inputs=True)
with mode:
    model = {container}
{inside}
{outside}
with mode:
    out = model(torch.randn(2, 3)){mark}
    out.sum().backward()
"""

_SEQ = "nn.Sequential(Temp(3, 3), nn.ReLU())"

CASES = {
    "lru_cache_fake_returned_to_real_call": _MEMO.format(between="", mark="  # FGL003"),
    "lru_cache_cleared_before_real_call": _MEMO.format(between="table.cache_clear()", mark=""),
    "lru_cache_cleared_through_alias": _MEMO.format(between="clear = table.cache_clear\nclear()", mark=""),
    "lru_cache_info_keeps_cache": _MEMO.format(between="print(table.cache_info().currsize)", mark="  # FGL003"),
    "step_post_hook_backward_in_region": _STEP_HOOK.format(register="register_step_post_hook", between="",
                                                           mark="  # FGL001"),
    "step_pre_hook_backward_in_region": _STEP_HOOK.format(register="register_step_pre_hook", between="",
                                                          mark="  # FGL001"),
    "step_hook_removed_before_step": _STEP_HOOK.format(register="register_step_post_hook", between="handle.remove()",
                                                       mark=""),
    "getattr_reads_real_scale_set_after_region": _GETATTR.format(
        inside="", outside="layer.scale = nn.Parameter(torch.ones(3))", mark="  # FGL001"),
    "getattr_reads_fake_scale_set_in_region": _GETATTR.format(
        inside="    layer.scale = nn.Parameter(torch.ones(3))", outside="", mark=""),
    "getattr_default_when_nothing_set": _GETATTR.format(inside="", outside="", mark=""),
    "sequential_in_region_apply_after": _CONTAINER.format(
        container=_SEQ, inside="    model[0].temperature = nn.Parameter(torch.ones(1))",
        outside="model.apply(add_temperature)", mark="  # FGL001"),
    "sequential_in_region_apply_inside": _CONTAINER.format(
        container=_SEQ, inside="    model.apply(add_temperature)", outside="", mark=""),
    "sequential_in_region_child_set_by_index_after": _CONTAINER.format(
        container=_SEQ, inside="    model[0].temperature = nn.Parameter(torch.ones(1))",
        outside="model[0].temperature = nn.Parameter(torch.ones(1))", mark="  # FGL001"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_vault7(name):
    source = _HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py") if f.code in DEFAULT_CODES}
    want = markers_in_source(source)
    assert got == want, (name, got, want)


if __name__ == "__main__" and sys.argv[1:] == ["--check"]:
    from test_semantics_protocols import _check_at_runtime

    sys.exit(1 if _check_at_runtime(CASES, _HEAD) else 0)
