"""Python's and torch's semantics, fifth batch (sem5): generator objects run only as far
as they are consumed; ``dataclasses.asdict``/``astuple``/``replace``; the named-tuple
fields of torch ops (``x.max(-1).values``, ``.indices``); ``operator.attrgetter`` /
``itemgetter``; the parameters of a container filled by ``add_module``; ``get_submodule``;
inference mode apart from grad mode (``enable_grad`` inside ``inference_mode`` records
nothing, ``inference_mode(False)`` records again).

A generator function's call makes a generator object: nothing of its body runs at the
call. Its body runs where it is consumed (``for``, ``list()``, a comprehension, ``yield
from``, ``sum``...), in the consumer's context; ``next(g)`` / ``g.send(v)`` run it to its
next ``yield``, and the regions it is suspended inside stay active for the consumer until
it resumes or is closed (``g.close()``, a temporary generator collected at once). Where it
cannot be followed (resumed inside a loop, ``throw``) it is unknown: no finding.

Same format as :mod:`test_semantics`: lines that must be flagged end with ``# FGLxxx``;
each hazard has a safe look-alike. Every program runs with real torch as labelled
(``python tests/test_semantics_generators.py --check`` runs them through ``tests/oracle.py``).
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

CASES = {
    # ------------------------------------------------------------ generators
    "generator_next_once_stops_before_region": """
net = nn.Linear(2, 2)
def stages():
    yield "warmup"
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()
    yield "done"
g = stages()
next(g)
net(torch.ones(1, 2)).sum().backward()
""",
    "generator_next_twice_runs_region": """
net = nn.Linear(2, 2)
def stages():
    yield "warmup"
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()  # FGL001
    yield "done"
g = stages()
next(g)
next(g)
""",
    "generator_never_consumed": """
net = nn.Linear(2, 2)
def dry():
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()
        yield 1
pending = dry()
net(torch.ones(1, 2)).sum().backward()
""",
    "generator_for_loop_consumes": """
net = nn.Linear(2, 2)
def dry():
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()  # FGL001
        yield 1
for _ in dry():
    pass
""",
    "generator_suspended_in_region_after_next": """
net = nn.Linear(2, 2)
def plan():
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield torch.ones(1, 2)
        yield torch.ones(3, 2)
p = plan()
x = next(p)
net(x).sum().backward()  # FGL001
""",
    "generator_region_left_after_next_past_it": """
net = nn.Linear(2, 2)
def plan():
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield tuple(torch.ones(1, 2).shape)
    yield None
p = plan()
shape = next(p)
next(p)
net(torch.ones(*shape)).sum().backward()
""",
    "generator_temporary_next_closed_at_once": """
net = nn.Linear(2, 2)
def plan():
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield tuple(torch.ones(1, 2).shape)
shape = next(plan())
net(torch.ones(*shape)).sum().backward()
""",
    "generator_closed_never_reaches_region": """
net = nn.Linear(2, 2)
def phases():
    yield "real"
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()
    yield "fake"
g = phases()
next(g)
g.close()
for _ in g:
    pass
""",
    "generator_send_resumes_into_region": """
net = nn.Linear(2, 2)
def trainer():
    batch = yield "ready"
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(batch).sum().backward()  # FGL001
    yield "stepped"
t = trainer()
next(t)
t.send(torch.ones(1, 2))
""",
    "generator_made_outside_consumed_in_region": """
net = nn.Linear(2, 2)
def steps():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
    yield 1
g = steps()
with FakeTensorMode(allow_non_fake_inputs=True):
    done = list(g)
""",
    "generator_made_in_region_consumed_outside": """
net = nn.Linear(2, 2)
def steps():
    net(torch.ones(1, 2)).sum().backward()
    yield 1
with FakeTensorMode(allow_non_fake_inputs=True):
    g = steps()
done = list(g)
""",
    "generator_yield_from_runs_inner": """
net = nn.Linear(2, 2)
def inner(m):
    with FakeTensorMode(allow_non_fake_inputs=True):
        m(torch.ones(1, 2)).sum().backward()  # FGL001
    yield "inner"
def outer(m):
    yield "start"
    yield from inner(m)
tags = list(outer(net))
""",
    "generator_yield_from_only_first_item_taken": """
net = nn.Linear(2, 2)
def inner(m):
    with FakeTensorMode(allow_non_fake_inputs=True):
        m(torch.ones(1, 2)).sum().backward()
    yield "inner"
def outer(m):
    yield "start"
    yield from inner(m)
first = next(outer(net))
""",
    # ------------------------------------------------------------ dataclasses
    "dataclass_asdict_strict_options": """
@dataclass
class Opts:
    allow_non_fake_inputs: bool = False
net = nn.Linear(2, 2)
with FakeTensorMode(**dataclasses.asdict(Opts())):
    net(torch.ones(1, 2))  # FGL002
""",
    "dataclass_asdict_allow_forward_only": """
@dataclass
class Opts:
    allow_non_fake_inputs: bool = True
net = nn.Linear(2, 2)
with FakeTensorMode(**dataclasses.asdict(Opts())):
    shape = net(torch.ones(1, 2)).shape
""",
    "dataclass_replace_keeps_fake_flag": """
@dataclass
class Run:
    fake: bool = True
    batch: int = 1
cfg = dataclasses.replace(Run(), batch=3)
net = nn.Linear(2, 2)
with (FakeTensorMode(allow_non_fake_inputs=True) if cfg.fake else contextlib.nullcontext()):
    net(torch.ones(cfg.batch, 2)).sum().backward()  # FGL001
""",
    "dataclass_replace_turns_fake_off": """
@dataclass
class Run:
    fake: bool = True
    batch: int = 1
cfg = dataclasses.replace(Run(), fake=False)
net = nn.Linear(2, 2)
with (FakeTensorMode(allow_non_fake_inputs=True) if cfg.fake else contextlib.nullcontext()):
    net(torch.ones(cfg.batch, 2)).sum().backward()
""",
    # ------------------------------------------------------ named-tuple fields
    "max_values_backward_in_region": """
net = nn.Linear(2, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = net(torch.ones(2, 2))  # FGL001
    out.max(-1).values.sum().backward()
""",
    "max_values_backward_of_fake_input_only": """
net = nn.Linear(2, 3).requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(2, 2, requires_grad=True)
    net(x).max(-1).values.sum().backward()
""",
    # ------------------------------------------------------------ getters
    "attrgetter_picks_real_submodule": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(2, 2)
    def forward(self, x):
        return self.head(x)
net = Net()
head = operator.attrgetter("head")(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    head(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "attrgetter_picks_frozen_submodule": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(2, 2)
    def forward(self, x):
        return self.head(x)
net = Net()
head = operator.attrgetter("head")(net).requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    head(x).sum().backward()
""",
    # ------------------------------------------------ add_module containers
    "add_module_container_frozen_by_parameters_loop": """
net = nn.Sequential()
net.add_module("body", nn.Linear(2, 2))
net.add_module("head", nn.Linear(2, 2))
for p in net.parameters():
    p.requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    net(x).sum().backward()
""",
    "add_module_container_trained_in_region": """
net = nn.Sequential()
net.add_module("body", nn.Linear(2, 2))
net.add_module("head", nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    # ------------------------------------------------------ inference mode
    "inference_mode_enable_grad_records_nothing": """
net = nn.Linear(2, 2)
with torch.inference_mode(), FakeTensorMode(allow_non_fake_inputs=True):
    with torch.enable_grad():
        y = net(torch.ones(1, 2))
        try:
            y.sum().backward()
        except RuntimeError:
            pass
""",
    "inference_mode_false_records_again": """
net = nn.Linear(2, 2)
with torch.inference_mode(), FakeTensorMode(allow_non_fake_inputs=True):
    with torch.inference_mode(False):
        net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    # ------------------------------------------------------ get_submodule
    "get_submodule_real_head_trained": """
net = nn.Sequential()
net.add_module("head", nn.Linear(2, 2))
head = net.get_submodule("head")
with FakeTensorMode(allow_non_fake_inputs=True):
    head(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "get_submodule_frozen_head": """
net = nn.Sequential()
net.add_module("head", nn.Linear(2, 2))
head = net.get_submodule("head").requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    head(x).sum().backward()
""",
}

_HEAD = HEAD + "import dataclasses\nimport operator\n"
DEFAULT_CODES = ("FGL001", "FGL002", "FGL003")  # (forward-only FGL004 is opt-in: not what these cases decide)


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_generators(name):
    source = _HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py") if f.code in DEFAULT_CODES}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


def test_every_mechanism_has_a_hazard_and_a_safe_case():
    marked = [n for n, src in CASES.items() if markers_in_source(_HEAD + textwrap.dedent(src))]
    assert len(marked) >= 10 and len(CASES) - len(marked) >= 10


if __name__ == "__main__" and sys.argv[1:] == ["--check"]:
    from test_semantics_protocols import _check_at_runtime

    sys.exit(1 if _check_at_runtime(CASES, _HEAD) else 0)
