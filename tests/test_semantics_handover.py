"""Python's and torch's semantics near vault4's misses (an8): where the real value is handed
over to the function that does the op, a dict's ``items()``/``keys()`` as known sequences,
``list``/``sorted``/``reversed`` of a dict's known keys, a metaclass's ``__new__`` given the
class body's namespace.

- A leak inside a called function is reported at the op and also at the call of the linted
  file that hands the real value over: a call made by the code that entered the region
  (``decay_penalty(weights)``, ``scorer.score(s.table, idx)``), or a call of an object whose
  ``__call__`` runs the op on what it holds (``teacher(x)``, anywhere in the region).
- ``d.items()`` / ``d.keys()`` of a dict with known keys are the known pairs / keys, in
  order: a loop or a comprehension over them runs once per entry (a table of
  ``functools.partial`` estimators by mode profile, ``FakeTensorMode(**{})`` strict).
- ``sorted(d)``, ``list(d)``, ``reversed(d)`` of such a dict are its keys in Python's order.
- ``class P(metaclass=M)`` runs ``M.__new__(mcs, name, bases, ns)`` with ``ns`` the dict of
  the names the class body bound (``ns.get("key", name.lower())``).

Same format as :mod:`test_semantics`: lines that must be flagged end with ``# FGLxxx``; each
hazard has a safe look-alike. Every program runs with real torch as labelled
(``python tests/test_semantics_handover.py --check`` runs them through ``tests/oracle.py``).
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
    # ------------------------------------------------------------ handover
    "helper_given_param_dict_in_region": """
def penalty(ws):
    return sum(w.pow(2).sum() for w in ws.values())  # FGL001
net = nn.Linear(2, 2)
ws = {n: p for n, p in net.named_parameters()}
with FakeTensorMode(allow_non_fake_inputs=True):
    pen = penalty(ws)  # FGL001
    pen.backward()
""",
    "helper_given_detached_dict_in_region": """
def penalty(ws):
    return sum(w.pow(2).sum() for w in ws.values())
net = nn.Linear(2, 2)
ws = {n: p.detach() for n, p in net.named_parameters()}
with FakeTensorMode(allow_non_fake_inputs=True):
    z = torch.ones(1, requires_grad=True)
    pen = penalty(ws) * z
    pen.sum().backward()
""",
    "method_given_real_attribute_in_region": """
class Scorer:
    def __init__(self):
        self.table = torch.randn(4, 2, requires_grad=True)
    def score(self, table):
        return table.pow(2).sum()  # FGL001
s = Scorer()
with FakeTensorMode(allow_non_fake_inputs=True):
    total = s.score(s.table)  # FGL001
    torch.autograd.grad(total, s.table)
""",
    "method_given_fake_copy_in_region": """
class Scorer:
    def __init__(self):
        self.table = torch.randn(4, 2, requires_grad=True)
    def score(self, table):
        return table.pow(2).sum()
s = Scorer()
with FakeTensorMode(allow_non_fake_inputs=True) as m:
    t = m.from_tensor(s.table)
    total = s.score(t)
    torch.autograd.grad(total, t)
""",
    "wrapper_called_like_a_model_in_helper": """
class Teacher:
    def __init__(self, model):
        self.model = copy.deepcopy(model)
    def __call__(self, x):
        return self.model(x)  # FGL001
def loss_of(teacher, x):
    return teacher(x).pow(2).mean()  # FGL001
teacher = Teacher(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    loss_of(teacher, torch.ones(1, 2)).backward()
""",
    "wrapper_of_frozen_copy_called_in_helper": """
class Teacher:
    def __init__(self, model):
        self.model = copy.deepcopy(model).requires_grad_(False)
    def __call__(self, x):
        return self.model(x)
def loss_of(teacher, x):
    return teacher(x).pow(2).mean()
teacher = Teacher(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    loss_of(teacher, torch.ones(1, 2, requires_grad=True)).backward()
""",
    # ------------------------------------------------------ dict views
    "partial_table_by_items_picks_strict": """
PROFILES = {"strict": {}, "lenient": {"allow_non_fake_inputs": True}}
def estimate(model, *, kw):
    with FakeTensorMode(**kw):
        return model(torch.ones(1, 2)).shape  # FGL002
net = nn.Linear(2, 2)
table = {name: functools.partial(estimate, net, kw=kw) for name, kw in PROFILES.items()}
table["strict"]()
""",
    "partial_table_by_items_picks_lenient_forward_only": """
PROFILES = {"strict": {}, "lenient": {"allow_non_fake_inputs": True}}
def estimate(model, *, kw):
    with FakeTensorMode(**kw):
        return model(torch.ones(1, 2)).shape
net = nn.Linear(2, 2)
table = {name: functools.partial(estimate, net, kw=kw) for name, kw in PROFILES.items()}
table["lenient"]()
""",
    "loop_over_keys_enters_fake_profile": """
MODES = {"fake": lambda: FakeTensorMode(allow_non_fake_inputs=True), "real": contextlib.nullcontext}
net = nn.Linear(2, 2)
for name in MODES.keys():
    if name == "fake":
        with MODES[name]():
            net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "loop_over_keys_enters_real_profile": """
MODES = {"fake": lambda: FakeTensorMode(allow_non_fake_inputs=True), "real": contextlib.nullcontext}
net = nn.Linear(2, 2)
for name in MODES.keys():
    if name == "real":
        with MODES[name]():
            net(torch.ones(1, 2)).sum().backward()
""",
    # ---------------------------------------------- sorted / list of a dict
    "sorted_dict_keys_first_is_fake": """
MODES = {"real": contextlib.nullcontext, "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with MODES[sorted(MODES)[0]]():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "sorted_dict_keys_second_is_real": """
MODES = {"real": contextlib.nullcontext, "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with MODES[sorted(MODES)[1]]():
    net(torch.ones(1, 2)).sum().backward()
""",
    "reversed_list_of_dict_last_key_is_fake": """
MODES = {"real": contextlib.nullcontext, "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with MODES[list(reversed(list(MODES)))[0]]():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "reversed_list_of_dict_first_key_is_real": """
MODES = {"real": contextlib.nullcontext, "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with MODES[list(reversed(list(MODES)))[1]]():
    net(torch.ones(1, 2)).sum().backward()
""",
    "next_iter_of_dict_first_key_is_fake": """
MODES = {"fake": lambda: FakeTensorMode(allow_non_fake_inputs=True), "real": contextlib.nullcontext}
net = nn.Linear(2, 2)
with MODES[next(iter(MODES))]():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "next_iter_of_dict_first_key_is_real": """
MODES = {"real": contextlib.nullcontext, "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with MODES[next(iter(MODES))]():
    net(torch.ones(1, 2)).sum().backward()
""",
    # a key picked from keys the analysis cannot order is ONE of them (a may context), never
    # each of them in turn as a loop over them would be (no finding; Python picks "real")
    "sorted_by_key_function_pick_is_one_of": """
MODES = {"real": contextlib.nullcontext, "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with MODES[sorted(MODES, key=len)[0]]():
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------ metaclass namespace
    "metaclass_registers_by_namespace_key_train": """
PLUGINS = {}
class Meta(type):
    def __new__(mcs, name, bases, ns):
        cls = super().__new__(mcs, name, bases, ns)
        if bases:
            PLUGINS[ns.get("key", name.lower())] = cls
        return cls
class Plugin(metaclass=Meta):
    pass
class Train(Plugin):
    key = "train"
    def run(self, net):
        with FakeTensorMode(allow_non_fake_inputs=True):
            net(torch.ones(1, 2)).sum().backward()  # FGL001
class Shape(Plugin):
    key = "shape"
    def run(self, net):
        return [p.shape for p in net.parameters()]
PLUGINS["train"]().run(nn.Linear(2, 2))
""",
    "metaclass_registers_by_namespace_key_shape": """
PLUGINS = {}
class Meta(type):
    def __new__(mcs, name, bases, ns):
        cls = super().__new__(mcs, name, bases, ns)
        if bases:
            PLUGINS[ns.get("key", name.lower())] = cls
        return cls
class Plugin(metaclass=Meta):
    pass
class Train(Plugin):
    key = "train"
    def run(self, net):
        with FakeTensorMode(allow_non_fake_inputs=True):
            net(torch.ones(1, 2)).sum().backward()
class Shape(Plugin):
    key = "shape"
    def run(self, net):
        return [p.shape for p in net.parameters()]
PLUGINS["shape"]().run(nn.Linear(2, 2))
""",
}

DEFAULT_CODES = ("FGL001", "FGL002", "FGL003")  # (forward-only FGL004 is opt-in: not what these cases decide)


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_handover(name):
    source = HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py") if f.code in DEFAULT_CODES}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


def test_every_mechanism_has_a_hazard_and_a_safe_case():
    marked = [n for n, src in CASES.items() if markers_in_source(HEAD + textwrap.dedent(src))]
    assert len(marked) >= 8 and len(CASES) - len(marked) >= 8


if __name__ == "__main__" and sys.argv[1:] == ["--check"]:
    from test_semantics_protocols import _check_at_runtime

    sys.exit(1 if _check_at_runtime(CASES, HEAD) else 0)
