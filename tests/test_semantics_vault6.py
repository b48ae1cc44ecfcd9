"""Semantics behind last session's vault6 single-file misses (an12): Python's descriptor
protocol for the file's classes (data descriptors before the instance dict, non-data
ones after it, ``__set_name__`` at class creation, ``@descriptor`` on a ``def``);
``threading.Thread`` subclasses and ``Timer`` (``start()`` runs ``run()``, the library's
``run()`` calls the target, in a thread of its own: modes are thread-local); a module's
``to_empty``/dtype cast inside a strict mode (a crash, HAZARD 12); per-parameter
provenance (``named_parameters()`` of known layers, ``p.requires_grad`` filters).
Each hazard has a safe look-alike; the cases are labelled by tests/oracle.py
(``python tests/test_semantics_vault6.py --check`` runs them through it).
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
_HEAD = HEAD + "import operator\nimport threading\nimport weakref\nfrom concurrent.futures import ThreadPoolExecutor\n"

_NONDATA = """
class lazy:
    def __init__(self, factory):
        self.factory = factory
    def __set_name__(self, owner, name):
        self.attr = name
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        value = self.factory(obj)
        obj.__dict__[self.attr] = value
        return value
class Exp:
    @lazy
    def model(self):
        return nn.Linear(4, 2)
    def size(self):
        return sum(p.numel() for p in self.model.parameters())
    def dry_run(self):
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = self.model(torch.randn(3, 4)){mark}
            out.sum().backward()
exp = Exp()
{first}
exp.dry_run()
"""

_DATA = """
class Slot:
    def __set_name__(self, owner, name):
        self.key = "_" + name
    def __get__(self, obj, objtype=None):
        return obj.__dict__[self.key]
    def __set__(self, obj, value):
        obj.__dict__[self.key] = {stored}
class Run:
    model = Slot()
    def __init__(self, model):
        self.model = model
run = Run({given})
with FakeTensorMode(allow_non_fake_inputs=True):
    w = torch.ones(2, requires_grad=True)
    out = run.model(torch.randn(3, 4)) * w{mark}
    out.sum().backward()
"""

_THREAD = """
class Probe(threading.Thread):
    def __init__(self, model):
        super().__init__(daemon=True)
        self.model = model
    def run(self):
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = self.model(torch.randn(2, 3)){mark}
            y.sum().backward()
p = Probe(nn.Linear(3, 3))
{go}
"""

_TARGET = """
def probe(model, steps=1):
    with FakeTensorMode(allow_non_fake_inputs=True):
        loss = model(torch.randn(2, 3)).sum(){mark}
        loss.backward()
net = nn.Linear(3, 3)
{make}
t.start()
t.join()
"""

_IN_THREAD = """
def step(model):
    model(torch.randn(2, 3)).sum().backward(){mark}
net = nn.Linear(3, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    {run}
"""

_TO_EMPTY = """
proj = nn.Linear(8, 4, device="meta")
with FakeTensorMode({allow}):
    proj = proj.{call}{mark}
    y = proj(torch.empty(2, 8))
print(tuple(y.shape))
"""

_FILTER = """
model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
for name, p in model.named_parameters():
    if name.endswith({frozen!r}):
        p.requires_grad_(False)
chosen = {chosen}
with FakeTensorMode(allow_non_fake_inputs=True):
    z = torch.ones(1, requires_grad=True)
    pen = z.sum() + sum((p * z).pow(2).sum() for p in chosen){mark}
    pen.backward()
"""

_CALLERS = """
model = nn.Linear(3, 2)
ref = weakref.ref(model)
with FakeTensorMode(allow_non_fake_inputs=True){grad}:
    batch = torch.randn(5, 3)
    out = {call}{mark}
    {backward}
"""

CASES = {
    "nondata_descriptor_built_before_region": _NONDATA.format(mark="  # FGL001", first="print(exp.size())"),
    "nondata_descriptor_built_inside_region": _NONDATA.format(mark="", first=""),
    # (a slot that builds the module from the class it is given: the instance dict never holds it)
    "data_descriptor_builds_model": _DATA.format(stored="value(4, 2)", given="nn.Linear", mark="  # FGL001"),
    "data_descriptor_builds_frozen_model": _DATA.format(stored="value(4, 2).requires_grad_(False)",
                                                         given="nn.Linear", mark=""),
    # (it wins over the instance dict: the model read back is the frozen one)
    "data_descriptor_freezes_model": _DATA.format(stored="value.requires_grad_(False)", given="nn.Linear(4, 2)",
                                                  mark=""),
    "thread_subclass_started": _THREAD.format(mark="  # FGL001", go="p.start()\np.join()"),
    "thread_subclass_never_started": _THREAD.format(mark="", go="print(p.daemon)"),
    "thread_subclass_super_target": _TARGET.format(
        mark="  # FGL001", make=(
            "class T(threading.Thread):\n    def __init__(self, m):\n"
            '        super().__init__(target=probe, args=(m,), kwargs={"steps": 2})\nt = T(net)')),
    "timer_function_args": _TARGET.format(mark="  # FGL001", make="t = threading.Timer(0.0, probe, args=(net,))"),
    "thread_target_not_the_model": _TARGET.format(
        mark="", make="t = threading.Thread(target=probe, args=(nn.Linear(3, 3).requires_grad_(False),))"),
    # (``run()`` called directly runs the target in the caller's thread, inside the region)
    "thread_subclass_run_called_in_region": _IN_THREAD.format(
        mark="  # FGL001", run=("class T(threading.Thread):\n        pass\n"
                               "    T(target=step, args=(net,)).run()")),
    "thread_started_in_region": _IN_THREAD.format(
        mark="", run="t = threading.Thread(target=step, args=(net,))\n    t.start()\n    t.join()"),
    "executor_submit_in_region": _IN_THREAD.format(
        mark="", run="with ThreadPoolExecutor(1) as ex:\n        ex.submit(step, net).result()"),
    "to_empty_meta_module_strict": _TO_EMPTY.format(allow="", call='to_empty(device="cpu")', mark="  # FGL002"),
    "to_empty_meta_module_allow": _TO_EMPTY.format(allow="allow_non_fake_inputs=True", call='to_empty(device="cpu")',
                                                   mark=""),
    "half_cast_strict": _TO_EMPTY.replace('device="meta"', "").format(allow="", call="half()", mark="  # FGL002"),
    "float_cast_strict_no_forward": _TO_EMPTY.replace('device="meta"', "").replace(
        "    y = proj(torch.empty(2, 8))\n", "    y = torch.empty(2, 8)\n").format(allow="", call="float()", mark=""),
    "requires_grad_filter_keeps_weights": _FILTER.format(
        frozen="bias", chosen="[p for p in model.parameters() if p.requires_grad]", mark="  # FGL001"),
    "requires_grad_filter_lambda_keeps_weights": _FILTER.format(
        frozen="bias", chosen="list(filter(lambda p: p.requires_grad, model.parameters()))", mark="  # FGL001"),
    "requires_grad_filter_all_frozen": _FILTER.format(
        frozen=("weight", "bias"), chosen="[p for p in model.parameters() if p.requires_grad]", mark=""),
    "requires_grad_filter_takes_frozen": _FILTER.format(
        frozen="bias", chosen="[p for _, p in model.named_parameters() if not p.requires_grad]", mark=""),
    "methodcaller_forward": _CALLERS.format(grad="", call='operator.methodcaller("forward", batch)(model)',
                                            mark="  # FGL001", backward="out.sum().backward()"),
    "methodcaller_size_only": _CALLERS.format(grad="", call='operator.methodcaller("size", 0)(model.weight)',
                                              mark="", backward="print(out)"),
    # (a module-level name holds the model: the reference gives it back)
    "weakref_dereferenced_in_region": _CALLERS.format(grad="", call="ref()(batch)", mark="  # FGL001",
                                                      backward="out.sum().backward()"),
    "weakref_dereferenced_forward_only": _CALLERS.format(grad=", torch.no_grad()", call="ref()(batch)", mark="",
                                                         backward="print(out.shape)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_vault6(name):
    source = _HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py") if f.code in DEFAULT_CODES}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


def test_frozen_children_by_parameter_freeze_the_container():
    """Freezing every parameter of every child one by one (``p.requires_grad = False``
    over ``child.parameters()``) switches the container off: its forward in an allow-mode
    region leaks nothing (``nn.ReLU`` has no parameters to freeze)."""
    source = _HEAD + textwrap.dedent("""
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        for child in net.children():
            for p in child.parameters():
                p.requires_grad = False
        with FakeTensorMode(allow_non_fake_inputs=True):
            x = torch.empty(3, 4, requires_grad=True)
            net(x).sum().backward()
    """)
    assert not [f for f in check_source(source, "frozen.py") if f.code in DEFAULT_CODES]


if __name__ == "__main__" and sys.argv[1:] == ["--check"]:
    from test_semantics_protocols import _check_at_runtime

    sys.exit(1 if _check_at_runtime(CASES, _HEAD) else 0)
