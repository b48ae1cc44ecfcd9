"""Python's and torch's semantics, second batch (categories the blind corpus found):
boolean operators picking a mode by a known flag, ``match`` over a known value,
``argparse`` defaults, environment reads with a default, ``nullcontext(x)``
entering as ``x``, ``ExitStack.close()``, ``AveragedModel`` copies, weight tying,
buffers holding fakes, ``torch.func`` transforms as entry points, crashes caught
by ``except AssertionError``.

Same format as :mod:`test_semantics`: lines that must be flagged end with
``# FGLxxx``; each hazard has a safe look-alike.
"""

from __future__ import annotations

import textwrap

import pytest
from markers import markers_in_source
from test_semantics import HEAD

from fakegrad_lint.engine.lint import check_source

CASES = {
    # ------------------------------------------------------ boolean operators
    "and_or_known_flag_selects_mode": """
DRY = True
ctx = DRY and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "and_or_known_false_flag_selects_null": """
DRY = False
ctx = DRY and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    "and_or_unknown_flag_is_may": """
import sys
ctx = (len(sys.argv) > 3) and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------------------- argparse
    "argparse_store_false_default_true": """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--no-dry-run", dest="dry_run", action="store_false")
args = parser.parse_args([])
ctx = args.dry_run and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "argparse_store_true_default_false": """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--dry-run", action="store_true")
args = parser.parse_args([])
ctx = args.dry_run and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    # -------------------------------------------- issue 10, third pass (an6, probes3)
    "generator_exact_yields_unroll_consumer": """
def phases(names):
    with FakeTensorMode(allow_non_fake_inputs=True):
        for name in names:
            yield name

net = nn.Linear(2, 2)
state = {}
for phase in phases(["fwd", "bwd"]):
    if phase == "fwd":
        state["out"] = net(torch.ones(1, 2))  # FGL001
    else:
        state["out"].sum().backward()
""",
    "generator_yields_under_unknown_loop_not_exact": """
import sys
def phases(names):
    with FakeTensorMode(allow_non_fake_inputs=True):
        for name in names:
            yield name

net = nn.Linear(2, 2)
state = {}
for phase in phases(sys.modules):
    if phase == "fwd":
        state["out"] = net(torch.ones(1, 2))  # FGL004
    else:
        state["out"].sum().backward()
""",
    "json_loads_constant_specs": """
import importlib
import json
SPEC = json.loads('[{"cls": "torch.nn:Linear", "args": [2, 2]}]')
def resolve(path):
    mod, _, attr = path.partition(":")
    return getattr(importlib.import_module(mod), attr)
net = nn.Sequential(*(resolve(s["cls"])(*s["args"]) for s in SPEC))
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "json_loads_constant_specs_built_inside": """
import importlib
import json
SPEC = json.loads('[{"cls": "torch.nn:Linear", "args": [2, 2]}]')
def resolve(path):
    mod, _, attr = path.partition(":")
    return getattr(importlib.import_module(mod), attr)
with FakeTensorMode(allow_non_fake_inputs=True):
    net = nn.Sequential(*(resolve(s["cls"])(*s["args"]) for s in SPEC))
    net(torch.ones(1, 2)).sum().backward()
""",
    "raise_in_try_runs_its_handler_only": """
net = nn.Linear(2, 2)
loss = None
try:
    with FakeTensorMode(allow_non_fake_inputs=True):
        loss = net(torch.ones(1, 2)).sum()  # FGL004
        raise ValueError("over budget")
except KeyError:
    pass
except ValueError:
    loss = None
finally:
    if loss is not None:
        loss.backward()
""",
    "raise_in_try_not_caught_by_handler_keeps_loss": """
class Budget(RuntimeError):
    pass
net = nn.Linear(2, 2)
loss = None
try:
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            loss = net(torch.ones(1, 2)).sum()  # FGL001
            raise Budget("over budget")
    except KeyError:
        loss = None
except RuntimeError:
    loss.backward()
""",
    "constant_arithmetic_counter_selects_mode": """
calls = 0
calls += 1
WARMUP = 2 * 1
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) if calls <= WARMUP - 1 else contextlib.nullcontext():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "constant_arithmetic_counter_past_warmup": """
calls = 0
calls += 2
WARMUP = 2 * 1
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) if calls <= WARMUP - 1 else contextlib.nullcontext():
    net(torch.ones(1, 2)).sum().backward()
""",
    "tuple_key_cache_returns_stored_fake": """
CACHE = {}
def table(n, d):
    key = (n, d)
    if key not in CACHE:
        CACHE[key] = torch.ones(n, d) * 2
    return CACHE[key]
w = nn.Parameter(torch.ones(2, 3))
with FakeTensorMode(allow_non_fake_inputs=True):
    table(2, 3)
(w * table(2, 3)).sum().backward()  # FGL003
""",
    "tuple_key_cache_filled_outside_first": """
CACHE = {}
def table(n, d):
    key = (n, d)
    if key not in CACHE:
        CACHE[key] = torch.ones(n, d) * 2
    return CACHE[key]
w = nn.Parameter(torch.ones(2, 3))
table(2, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    table(2, 3)
(w * table(2, 3)).sum().backward()
""",
    "property_setter_installs_mode": """
class Prof:
    def __init__(self):
        self._ctx = contextlib.nullcontext()
    @property
    def fake(self):
        return self._ctx
    @fake.setter
    def fake(self, on):
        self._ctx = FakeTensorMode(allow_non_fake_inputs=True) if on else contextlib.nullcontext()
p = Prof()
p.fake = True
net = nn.Linear(2, 2)
with p._ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "property_setter_switched_back_off": """
class Prof:
    def __init__(self):
        self._ctx = contextlib.nullcontext()
    @property
    def fake(self):
        return self._ctx
    @fake.setter
    def fake(self, on):
        self._ctx = FakeTensorMode(allow_non_fake_inputs=True) if on else contextlib.nullcontext()
p = Prof()
p.fake = True
p.fake = False
net = nn.Linear(2, 2)
with p._ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    "descriptor_get_returns_mode": """
class Slot:
    def __init__(self, allow):
        self.allow = allow
    def __get__(self, obj, owner):
        return FakeTensorMode(allow_non_fake_inputs=self.allow) if self.allow else contextlib.nullcontext()
class Est:
    mode = Slot(True)
net = nn.Linear(2, 2)
with Est().mode:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "descriptor_get_returns_nullcontext": """
class Slot:
    def __init__(self, allow):
        self.allow = allow
    def __get__(self, obj, owner):
        return FakeTensorMode(allow_non_fake_inputs=self.allow) if self.allow else contextlib.nullcontext()
class Est:
    mode = Slot(False)
net = nn.Linear(2, 2)
with Est().mode:
    net(torch.ones(1, 2)).sum().backward()
""",
    "class_attribute_function_is_a_method": """
def probe(self):
    with FakeTensorMode(allow_non_fake_inputs=True):
        self(torch.ones(1, 2)).sum().backward()  # FGL001
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def forward(self, x):
        return self.fc(x)
Net.probe = probe
Net().probe()
""",
    "class_attribute_function_forward_only": """
def probe(self):
    with FakeTensorMode(allow_non_fake_inputs=True):
        return tuple(self(torch.ones(1, 2)).shape)  # FGL004
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def forward(self, x):
        return self.fc(x)
Net.probe = probe
Net().probe()
""",
    "namedtuple_replace_turns_fake_on": """
from typing import NamedTuple
class Cfg(NamedTuple):
    fake: bool = False
cfg = Cfg()._replace(fake=True)
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) if cfg.fake else contextlib.nullcontext():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "namedtuple_replace_keeps_fake_off": """
from typing import NamedTuple
class Cfg(NamedTuple):
    fake: bool = False
    batch: int = 1
cfg = Cfg()._replace(batch=3)
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) if cfg.fake else contextlib.nullcontext():
    net(torch.ones(1, 2)).sum().backward()
""",
    "match_class_pattern_picks_fake": """
@dataclass
class Backend:
    kind: str
def ctx_for(b):
    match b:
        case Backend(kind="fake"):
            return FakeTensorMode(allow_non_fake_inputs=True)
        case _:
            return contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx_for(Backend("fake")):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "match_class_pattern_falls_to_wildcard": """
@dataclass
class Backend:
    kind: str
def ctx_for(b):
    match b:
        case Backend(kind="fake"):
            return FakeTensorMode(allow_non_fake_inputs=True)
        case _:
            return contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx_for(Backend("eager")):
    net(torch.ones(1, 2)).sum().backward()
""",
    "namespace_vars_splat": """
import argparse
def run(net, fake=False):
    with FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext():
        net(torch.ones(1, 2)).sum().backward()  # FGL001
run(nn.Linear(2, 2), **vars(argparse.Namespace(fake=True)))
""",
    "namespace_vars_splat_off": """
import argparse
def run(net, fake=False):
    with FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext():
        net(torch.ones(1, 2)).sum().backward()
run(nn.Linear(2, 2), **vars(argparse.Namespace(fake=False)))
""",
    "async_exit_stack_and_async_context_class": """
import asyncio
class Session:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    async def __aenter__(self):
        self.mode.__enter__()
        return self
    async def __aexit__(self, *exc):
        self.mode.__exit__(*exc)
async def main(net):
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        net(torch.ones(1, 2)).sum().backward()  # FGL001
    async with Session():
        net(torch.ones(1, 2)).sum().backward()  # FGL001
asyncio.run(main(nn.Linear(2, 2)))
""",
    "async_exit_stack_closed_before_step": """
import asyncio
async def main(net):
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    net(torch.ones(1, 2)).sum().backward()
asyncio.run(main(nn.Linear(2, 2)))
""",
    "metaclass_registry_built_outside": """
REG = {}
class Meta(type):
    def __new__(mcls, name, bases, ns):
        cls = super().__new__(mcls, name, bases, ns)
        REG[name.lower()] = cls
        return cls
class Base(metaclass=Meta):
    pass
class Tiny(nn.Linear, Base):
    pass
net = REG["tiny"](2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "metaclass_registry_built_inside": """
REG = {}
class Meta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        REG[name.lower()] = cls
class Base(metaclass=Meta):
    pass
class Tiny(nn.Linear, Base):
    pass
with FakeTensorMode(allow_non_fake_inputs=True):
    net = REG["tiny"](2, 2)
    net(torch.ones(1, 2)).sum().backward()
""",
    "budget_raise_before_model_runs": """
def check(model, budget):
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.randn(64, 128)
        if x.numel() * x.element_size() > budget:
            raise RuntimeError("over budget")
        model(x).sum().backward()
try:
    check(nn.Linear(128, 2), 1024)
except RuntimeError:
    pass
""",
    "budget_raise_after_backward": """
def check(model, budget):
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.randn(64, 128, dtype=torch.float16)
        model(x.float()).sum().backward()  # FGL001
        if x.numel() * x.element_size() > budget:
            raise RuntimeError("over budget")
try:
    check(nn.Linear(128, 2), 1024)
except RuntimeError:
    pass
""",
    # the command line of the program run as it is: no arguments (as environment reads
    # with a default are taken as unset); unknown where the file sets sys.argv itself
    "argparse_command_line_as_run": """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--no-dry-run", dest="dry_run", action="store_false")
args = parser.parse_args()
ctx = args.dry_run and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "argparse_command_line_set_by_the_file_unknown": """
import argparse
import sys
sys.argv = ["prog", "--no-dry-run"]
parser = argparse.ArgumentParser()
parser.add_argument("--no-dry-run", dest="dry_run", action="store_false")
args = parser.parse_args()
ctx = args.dry_run and FakeTensorMode(allow_non_fake_inputs=True) or contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    "argparse_given_list_store_true_and_type": """
import argparse
def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--fake", action="store_true")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--width", type=int, default="8")
    return p.parse_args(argv)
args = parse(["--fake", "--batch", "3"])
net = nn.Linear(args.width, 2)
with FakeTensorMode(allow_non_fake_inputs=True) if args.fake and args.batch == 3 else contextlib.nullcontext():
    net(torch.ones(args.batch, 8)).sum().backward()  # FGL001
""",
    "argparse_given_list_flag_absent_real": """
import argparse
def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--fake", action="store_true")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true")
    p.add_argument("--batch", type=int, default=16)
    return p.parse_args(argv)
args = parse(["--batch", "3", "--fast"])
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) if args.fake else contextlib.nullcontext():
    net(torch.ones(args.batch, 2)).sum().backward()
""",
    # ---------------------------------------------------------------- match
    "match_known_value_picks_fake_arm": """
def make(kind):
    match kind:
        case "real":
            return contextlib.nullcontext()
        case "fake":
            return FakeTensorMode(allow_non_fake_inputs=True)
        case _:
            return contextlib.nullcontext()

net = nn.Linear(2, 2)
with make("fake"):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "match_known_value_picks_real_arm": """
def make(kind):
    match kind:
        case "fake":
            return FakeTensorMode(allow_non_fake_inputs=True)
        case "real" | "eager":
            return contextlib.nullcontext()
        case _:
            return FakeTensorMode(allow_non_fake_inputs=True)

net = nn.Linear(2, 2)
with make("eager"):
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------------- environment reads
    "environ_default_strict_mode": """
import os
ALLOW = os.environ.get("FGL_TEST_ALLOW_REAL_XYZ", "0") == "1"
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=ALLOW):
    net(torch.ones(1, 2))  # FGL002
""",
    "environ_default_allow_forward_only": """
import os
ALLOW = os.getenv("FGL_TEST_ALLOW_REAL_XYZ", "1") == "1"
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=ALLOW):
    net(torch.ones(1, 2))  # FGL004
""",
    "environ_subscript_unknown": """
import os
ALLOW = os.environ["FGL_TEST_ALLOW_REAL_XYZ"] == "1"
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=ALLOW):
    net(torch.ones(1, 2))
""",
    "match_guard_known_true": """
ALLOW = True
def make(kind):
    match kind:
        case "fake" if ALLOW:
            return FakeTensorMode(allow_non_fake_inputs=True)
        case _:
            return contextlib.nullcontext()

net = nn.Linear(2, 2)
with make("fake"):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "match_guard_known_false": """
ALLOW = False
def make(kind):
    match kind:
        case "fake" if ALLOW:
            return FakeTensorMode(allow_non_fake_inputs=True)
        case _:
            return contextlib.nullcontext()

net = nn.Linear(2, 2)
with make("fake"):
    net(torch.ones(1, 2)).sum().backward()
""",
    "environ_get_without_default_unset": """
import os
ALLOW = os.environ.get("FGL_TEST_ALLOW_REAL_XYZ") == "1"
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=ALLOW):
    net(torch.ones(1, 2))  # FGL002
""",
    "environ_default_folded_through_int_and_str_methods": """
import os
A = bool(int(os.environ.get("FGL_TEST_A_XYZ", "0"))) or os.getenv("FGL_TEST_B_XYZ", "No").lower() in ("1", "yes")
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=A):
    net(torch.ones(1, 2))  # FGL002
""",
    "environ_default_folded_allowing": """
import os
A = os.getenv("FGL_TEST_B_XYZ", " YES ").strip().lower() in ("1", "yes")
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=A):
    net(torch.ones(1, 2))  # FGL004
""",
    # ------------------------------------------------------ keyword mappings
    "kwargs_setdefault_keeps_passed_value": """
def open_mode(**opts):
    opts.setdefault("allow_non_fake_inputs", False)
    return FakeTensorMode(**opts)

net = nn.Linear(2, 2)
with open_mode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "kwargs_setdefault_adds_default": """
def open_mode(**opts):
    opts.setdefault("allow_non_fake_inputs", False)
    return FakeTensorMode(**opts)

net = nn.Linear(2, 2)
with open_mode():
    net(torch.ones(1, 2))  # FGL002
""",
    "kwargs_of_unknown_keys_not_strict": """
import json
opts = json.loads(open("cfg.json").read())
net = nn.Linear(2, 2)
with FakeTensorMode(**opts):
    net(torch.ones(1, 2))
""",
    # ------------------------------------------------ functools.partial passed on
    "partial_of_step_run_by_runner_in_mode": """
def run_under(factory, fn, *args):
    with factory():
        return fn(*args)

def step(net, x):
    net(x).sum().backward()  # FGL001

run_under(lambda: FakeTensorMode(allow_non_fake_inputs=True), functools.partial(step, nn.Linear(2, 2)), torch.ones(1, 2))
""",
    "partial_of_step_run_by_runner_in_null": """
def run_under(factory, fn, *args):
    with factory():
        return fn(*args)

def step(net, x):
    net(x).sum().backward()

run_under(lambda: contextlib.nullcontext(), functools.partial(step, nn.Linear(2, 2)), torch.ones(1, 2))
""",
    # ----------------------------------------------------------- nullcontext
    "nullcontext_enter_result_entered": """
def ctx(on):
    mode = FakeTensorMode(allow_non_fake_inputs=True) if on else None
    return contextlib.nullcontext(mode)

net = nn.Linear(2, 2)
with ctx(True) as mode:
    if mode is not None:
        with mode:
            net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "nullcontext_enter_result_none": """
def ctx(on):
    mode = FakeTensorMode(allow_non_fake_inputs=True) if on else None
    return contextlib.nullcontext(mode)

net = nn.Linear(2, 2)
with ctx(False) as mode:
    if mode is not None:
        with mode:
            net(torch.ones(1, 2)).sum().backward()
""",
    # -------------------------------------------------------------- ExitStack
    "exitstack_closed_ends_region": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    n = torch.empty(3, 2).shape[0]
    stack.close()
    net(torch.ones(n, 2)).sum().backward()
""",
    "exitstack_still_open": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    n = torch.empty(3, 2).shape[0]
    net(torch.ones(n, 2)).sum().backward()  # FGL001
""",
    "exitstack_exit_called": """
net = nn.Linear(2, 2)
stack = contextlib.ExitStack()
stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
stack.__exit__(None, None, None)
net(torch.ones(1, 2)).sum().backward()
""",
    "exitstack_pop_all_moves_the_region": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    kept = stack.pop_all()
kept.close()
net(torch.ones(1, 2)).sum().backward()
""",
    "exitstack_pop_all_keeps_it_open": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    kept = stack.pop_all()
net(torch.ones(1, 2)).sum().backward()  # FGL001
kept.close()
""",
    # ------------------------------------------------- crashes caught by contexts
    "strict_crash_in_suppress_assertion": """
net = nn.Linear(2, 2)
with contextlib.suppress(AssertionError):
    with FakeTensorMode():
        net(torch.ones(1, 2))
""",
    "strict_crash_in_suppress_value_error": """
net = nn.Linear(2, 2)
with contextlib.suppress(ValueError):
    with FakeTensorMode():
        net(torch.ones(1, 2))  # FGL002
""",
    "strict_crash_expected_by_pytest_raises": """
import pytest
net = nn.Linear(2, 2)
with pytest.raises(AssertionError):
    with FakeTensorMode():
        net(torch.ones(1, 2))
""",
    # ----------------------------------------------------- module copies, tying
    "shallow_copy_shares_real_parameters": """
net = nn.Linear(2, 2)
alias = copy.copy(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    alias(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "shallow_copy_of_fake_module": """
with FakeTensorMode(allow_non_fake_inputs=True):
    net = nn.Linear(2, 2)
    alias = copy.copy(net)
    alias(torch.ones(1, 2)).sum().backward()
""",
    "real_submodule_set_on_fake_wrapper": """
class Wrap(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Identity()

    def forward(self, x):
        return self.body(x)

backbone = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    w = Wrap()
    w.body = backbone
    w(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "meta_module_materialised_in_region_with_submodules": """
class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(2))
        self.scale = nn.Parameter(torch.ones(2))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x) * self.scale
        return x

with torch.device("meta"):
    big = Big()
with FakeTensorMode(allow_non_fake_inputs=True):
    big.to_empty(device="cpu")
    big(torch.ones(1, 2)).sum().backward()
""",
    "fake_built_module_materialised_outside_region": """
class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)
        self.register_buffer("pos", torch.zeros(2))

    def forward(self, x):
        return self.proj(x) + self.pos

with FakeTensorMode(allow_non_fake_inputs=True):
    enc = Enc()
enc.to_empty(device="cpu")
enc(torch.ones(1, 2)).sum().backward()
""",
    "fake_submodule_set_on_fake_wrapper": """
class Wrap(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Identity()

    def forward(self, x):
        return self.body(x)

with FakeTensorMode(allow_non_fake_inputs=True):
    w = Wrap()
    w.body = nn.Linear(2, 2)
    w(torch.ones(1, 2)).sum().backward()
""",
    "averaged_model_copy_is_real": """
from torch.optim.swa_utils import AveragedModel
net = nn.Linear(2, 2)
swa = AveragedModel(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    swa(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "averaged_model_made_inside_region": """
from torch.optim.swa_utils import AveragedModel
with FakeTensorMode(allow_non_fake_inputs=True):
    swa = AveragedModel(nn.Linear(2, 2))
    swa(torch.ones(1, 2)).sum().backward()
""",
    "weight_tied_to_real_parameter": """
emb = nn.Embedding(5, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    head = nn.Linear(2, 5, bias=False)
    head.weight = emb.weight
    head(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "weight_tied_to_fake_parameter": """
with FakeTensorMode(allow_non_fake_inputs=True):
    emb = nn.Embedding(5, 2)
    head = nn.Linear(2, 5, bias=False)
    head.weight = emb.weight
    head(torch.ones(1, 2)).sum().backward()
""",
    "buffer_assigned_fake_mixed_after_region": """
class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)
        self.register_buffer("pos", torch.zeros(2))

    def forward(self, x):
        return self.proj(x) + self.pos  # FGL003

enc = Enc()
with FakeTensorMode(allow_non_fake_inputs=True):
    table = torch.ones(2) * 3
enc.pos = table
enc(torch.ones(1, 2)).sum().backward()  # FGL003
""",
    "buffer_assigned_fake_unused_by_forward": """
class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)
        self.register_buffer("pos", torch.zeros(2))

    def forward(self, x):
        return self.proj(x)

enc = Enc()
with FakeTensorMode(allow_non_fake_inputs=True):
    table = torch.ones(2) * 3
enc.pos = table
enc(torch.ones(1, 2)).sum().backward()
""",
    "buffer_registered_from_fake": """
class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)

    def forward(self, x):
        return self.proj(x) * self.scale  # FGL003

enc = Enc()
with FakeTensorMode(allow_non_fake_inputs=True):
    s = torch.ones(2)
enc.register_buffer("scale", s)
enc(torch.ones(1, 2)).sum().backward()  # FGL003
""",
    # -------------------------------------------------- torch.func as entry
    "vmap_grad_real_params_made_in_region": """
from torch.func import functional_call, grad, vmap
net = nn.Linear(2, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)

def loss(p, x):
    return functional_call(net, p, (x,)).sum()  # FGL001

with FakeTensorMode(allow_non_fake_inputs=True):
    params = dict(net.named_parameters())
    g = vmap(grad(loss), in_dims=(None, 0))(params, torch.ones(3, 2))  # FGL001
    for k, p in net.named_parameters():
        p.grad = g[k].mean(0)
    opt.step()
""",
    "vmap_grad_fake_params_made_in_region": """
from torch.func import functional_call, grad, vmap
net = nn.Linear(2, 1)

def loss(p, x):
    return functional_call(net, p, (x,)).sum()

with FakeTensorMode(allow_non_fake_inputs=True) as mode:
    params = {k: mode.from_tensor(v) for k, v in net.named_parameters()}
    g = vmap(grad(loss), in_dims=(None, 0))(params, torch.ones(3, 2))
""",
    # ------------------------------------------------- caught strict crashes
    "strict_crash_caught_by_assertion_handler": """
net = nn.Linear(2, 2)
try:
    with FakeTensorMode():
        net(torch.ones(1, 2)).sum().backward()
except AssertionError:
    net(torch.ones(1, 2)).sum().backward()
""",
    "strict_crash_caught_by_exception_tuple": """
net = nn.Linear(2, 2)
try:
    with FakeTensorMode():
        net(torch.ones(1, 2)).sum().backward()
except (RuntimeError, Exception) as err:
    print(err)
""",
    "strict_crash_not_caught_by_value_error": """
net = nn.Linear(2, 2)
try:
    with FakeTensorMode():
        net(torch.ones(1, 2)).sum().backward()  # FGL002
except ValueError:
    pass
""",
    "strict_crash_handler_reraises": """
net = nn.Linear(2, 2)
try:
    with FakeTensorMode():
        net(torch.ones(1, 2)).sum().backward()  # FGL002
except AssertionError:
    print("fake run failed")
    raise
""",
    "weight_tied_on_submodule_of_fake_model": """
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(2, 5, bias=False)

    def forward(self, h):
        return self.head(h)

emb = nn.Embedding(5, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    lm = LM()
    lm.head.weight = emb.weight
    lm(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "allow_hazard_inside_try_still_reported": """
net = nn.Linear(2, 2)
try:
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()  # FGL001
except AssertionError:
    pass
""",
    # ------------------------------------------------- setattr with a known name
    "setattr_allow_flag_after_construction": """
mode = FakeTensorMode()
setattr(mode, "allow_non_fake_inputs", True)
net = nn.Linear(2, 2)
with mode:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "setattr_allow_flag_false_stays_strict": """
mode = FakeTensorMode(allow_non_fake_inputs=True)
setattr(mode, "allow_non_fake_inputs", False)
net = nn.Linear(2, 2)
with mode:
    net(torch.ones(1, 2)).sum().backward()  # FGL002
""",
    "setattr_overrides_loop_sets_flag": """
def configured(**overrides):
    mode = FakeTensorMode()
    for key, value in overrides.items():
        setattr(mode, key, value)
    return mode
net = nn.Linear(2, 2)
with configured(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "setattr_unknown_name_is_may": """
import sys
mode = FakeTensorMode()
setattr(mode, sys.argv[1], True)
net = nn.Linear(2, 2)
with mode:
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------------------ map / filter
    "map_lambda_over_real_params": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    norms = list(map(lambda p: p.norm(), net.parameters()))  # FGL001
    torch.stack(norms).sum().backward()
""",
    "map_def_consumed_by_sum": """
def sq(p):
    return (p * p).sum()  # FGL001
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    sum(map(sq, net.parameters())).backward()
""",
    "map_lambda_metadata_only_is_safe": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    sizes = list(map(lambda p: p.numel(), net.parameters()))
    torch.zeros(sum(sizes), requires_grad=True).sum().backward()
""",
    "map_lambda_over_fake_copies_is_safe": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as m:
    fakes = [m.from_tensor(p) for p in net.parameters()]
    torch.stack(list(map(lambda p: p.norm(), fakes))).sum().backward()
""",
    # --------------------------------------------------- functools.lru_cache
    "lru_cache_returns_fake_made_in_region": """
@functools.lru_cache(maxsize=None)
def mask(n):
    return torch.ones(n, n)
net = nn.Linear(3, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    mask(3)
(net(torch.ones(3, 3)) + mask(3)).sum().backward()  # FGL003
""",
    "cache_bare_returns_fake_made_in_region": """
@functools.cache
def mask(n):
    return torch.ones(n, n)
net = nn.Linear(3, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    mask(3)
# (forward only: a real backward first would give net real grads, which the fake one
# then accumulates into in place, leaving them real)
(net(torch.ones(3, 3)) + mask(n=3)).sum()
(net(torch.ones(3, 3)) + mask(3)).sum().backward()  # FGL003
""",
    "lru_cache_other_argument_is_fresh": """
@functools.lru_cache(maxsize=None)
def mask(n):
    return torch.ones(n, n)
net = nn.Linear(3, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    mask(4)
(net(torch.ones(3, 3)) + mask(3)).sum().backward()
""",
    # ------------------------------------------- torch.autograd.Function.apply
    "autograd_function_apply_on_real_param": """
class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo):
        return x.clamp(lo)

    @staticmethod
    def backward(ctx, g):
        return g, None
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    w = Clamp.apply(net.weight, 0.0)  # FGL001
    (torch.ones(1, 2) @ w).sum().backward()
""",
    "autograd_function_apply_on_fake_copy_is_safe": """
class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo):
        return x.clamp(lo)

    @staticmethod
    def backward(ctx, g):
        return g, None
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as m:
    w = Clamp.apply(m.from_tensor(net.weight), 0.0)
    (torch.ones(1, 2) @ w).sum().backward()
""",
    # ------------------------------------- weight_norm & co. return the module
    "weight_norm_returns_the_real_module": """
from torch.nn.utils.parametrizations import weight_norm
layer = weight_norm(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    layer(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "old_weight_norm_returns_the_real_module": """
layer = torch.nn.utils.weight_norm(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    layer(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "weight_norm_module_built_in_region_is_safe": """
from torch.nn.utils.parametrizations import weight_norm
with FakeTensorMode(allow_non_fake_inputs=True):
    layer = weight_norm(nn.Linear(2, 2))
    layer(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------- module casts inside a region
    "module_double_in_allow_region_is_fake": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    net.double()
    net(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
""",
    "module_to_float64_in_allow_region_is_fake": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    net = net.to(torch.float64)
    net(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
""",
    "module_float_in_allow_region_stays_real": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    net.float()
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "module_double_before_region_stays_real": """
net = nn.Linear(2, 2)
net.double()
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2, dtype=torch.float64)).sum().backward()  # FGL001
""",
    # ----------------------------------- ExitStack over a known list of names
    "exitstack_enters_each_named_context": """
FACTORIES = {"grad": lambda: torch.enable_grad(), "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
def run_context(names):
    stack = contextlib.ExitStack()
    for name in names:
        stack.enter_context(FACTORIES[name]())
    return stack
net = nn.Linear(2, 2)
with run_context(["grad", "fake"]):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "exitstack_names_without_fake_are_safe": """
FACTORIES = {"grad": lambda: torch.enable_grad(), "fake": lambda: FakeTensorMode(allow_non_fake_inputs=True)}
def run_context(names):
    stack = contextlib.ExitStack()
    for name in names:
        stack.enter_context(FACTORIES[name]())
    return stack
net = nn.Linear(2, 2)
with run_context(["grad"]):
    net(torch.ones(1, 2)).sum().backward()
""",
    "dict_lookup_of_each_known_key": """
PICK = {"a": nn.Linear(2, 2), "b": nn.Linear(2, 2)}
with FakeTensorMode(allow_non_fake_inputs=True):
    for k in ["a", "b"]:
        PICK[k](torch.ones(1, 2)).sum().backward()  # FGL001
""",
    # --------------------------- a generator suspended inside its own region
    "generator_yielding_in_region_runs_consumer_there": """
def batches(n):
    with FakeTensorMode(allow_non_fake_inputs=True):
        for _ in range(n):
            yield torch.ones(1, 2)
net = nn.Linear(2, 2)
for x in batches(2):
    net(x).sum().backward()  # FGL001
""",
    "generator_yielding_in_strict_region_crashes_consumer": """
def batches(n):
    with FakeTensorMode():
        for _ in range(n):
            yield torch.ones(1, 2)
net = nn.Linear(2, 2)
for x in batches(2):
    net(x).sum().backward()  # FGL002
""",
    "generator_yielding_after_region_is_not_inside": """
def batches(n):
    with FakeTensorMode(allow_non_fake_inputs=True):
        xs = [torch.ones(1, 2) for _ in range(n)]
    for x in xs:
        yield x.shape
net = nn.Linear(2, 2)
for shape in batches(2):
    net(torch.ones(shape)).sum().backward()
""",
    # ---------------------------- staticmethod(...) called in a class body
    "staticmethod_call_of_lambda_class_attribute": """
class Dry:
    mode_factory = staticmethod(lambda: FakeTensorMode(allow_non_fake_inputs=True))

    def step(self, net):
        with self.mode_factory():
            net(torch.ones(1, 2)).sum().backward()  # FGL001
Dry().step(nn.Linear(2, 2))
""",
    "staticmethod_call_of_lambda_null_context_is_safe": """
class Eager:
    mode_factory = staticmethod(lambda: contextlib.nullcontext())

    def step(self, net):
        with self.mode_factory():
            net(torch.ones(1, 2)).sum().backward()
Eager().step(nn.Linear(2, 2))
""",
    # ------------------------------------------- a registry of plain classes
    "registry_of_classes_looked_up_by_helper": """
BACKENDS = {}
def register(name):
    def deco(cls):
        BACKENDS[name] = cls
        return cls
    return deco
def get_backend(name):
    return BACKENDS[name]()
@register("fake")
class FakeBackend:
    def run(self, fn, *args):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return fn(*args)
@register("eager")
class EagerBackend:
    def run(self, fn, *args):
        return fn(*args)
def step(net):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
get_backend("fake").run(step, nn.Linear(2, 2))
""",
    "registry_of_classes_eager_pick_is_safe": """
BACKENDS = {}
def register(name):
    def deco(cls):
        BACKENDS[name] = cls
        return cls
    return deco
def get_backend(name):
    return BACKENDS[name]()
@register("fake")
class FakeBackend:
    def run(self, fn, *args):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return fn(*args)
@register("eager")
class EagerBackend:
    def run(self, fn, *args):
        return fn(*args)
def step(net):
    net(torch.ones(1, 2)).sum().backward()
get_backend("eager").run(step, nn.Linear(2, 2))
""",
    # match over an enum member: a value pattern compares by ==, identity for a plain enum
    "match_enum_member_value_pattern_picks_fake_case": """
import enum
class Phase(enum.Enum):
    INFER = "infer"
    TRAIN = "train"
def run(phase, net):
    match phase:
        case Phase.INFER:
            return tuple(net(torch.ones(1, 2)).shape)
        case Phase.TRAIN:
            with FakeTensorMode(allow_non_fake_inputs=True):
                net(torch.ones(1, 2)).sum().backward()  # FGL001
run(Phase("train"), nn.Linear(2, 2))
""",
    "match_enum_member_value_pattern_picks_real_case": """
import enum
class Phase(enum.Enum):
    INFER = "infer"
    TRAIN = "train"
def run(phase, net):
    match phase:
        case Phase.INFER | Phase.TRAIN if False:
            pass
        case Phase.INFER:
            return tuple(net(torch.ones(1, 2)).shape)
        case Phase.TRAIN:
            with FakeTensorMode(allow_non_fake_inputs=True):
                net(torch.ones(1, 2)).sum().backward()
print(run(Phase("infer"), nn.Linear(2, 2)))
""",
    # the command line is the user's input: a function the program calls with a flag's
    # default still has the flag's other path (autoparallel's --fake-evaluate). Labels
    # by running with `--fake` (the weight's .grad is a FakeTensor; the look-alike's is
    # not); the --check tool runs without arguments, so it reports the first one clean
    "argparse_flag_path_of_a_called_function": """
import argparse
def run(fake):
    net = nn.Linear(2, 2)
    if fake:
        with FakeTensorMode(allow_non_fake_inputs=True):
            net(torch.ones(1, 2)).sum().backward()  # FGL001
    else:
        net(torch.ones(1, 2)).sum().backward()
p = argparse.ArgumentParser()
p.add_argument("--fake", action="store_true")
run(p.parse_args().fake)
""",
    "argparse_flag_path_of_a_called_function_forward_only": """
import argparse
def run(fake):
    net = nn.Linear(2, 2)
    if fake:
        with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
            net(torch.ones(1, 2))
    else:
        net(torch.ones(1, 2)).sum().backward()
p = argparse.ArgumentParser()
p.add_argument("--fake", action="store_true")
run(p.parse_args().fake)
""",
    # ------------------------------------------ containers of frozen children
    # (labels: run with tests/oracle.py; the frozen backbone's parameters do not require grad)
    "container_in_region_of_frozen_backbone_and_fake_head": """
def plan(backbone):
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = nn.Sequential(backbone, nn.Linear(4, 2))
        model(torch.randn(2, 3)).sum().backward()
plan(nn.Sequential(nn.Linear(3, 4), nn.ReLU()).requires_grad_(False))
""",
    "module_frozen_in_its_init_held_by_a_module_built_in_region": """
class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.requires_grad_(False)
class Tuner(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.prompt = nn.Parameter(torch.randn(2, 4))
    def forward(self, x):
        return self.encoder.lin(x + self.prompt)
def check(encoder):
    with FakeTensorMode(allow_non_fake_inputs=True):
        tuner = Tuner(encoder)
        tuner(torch.randn(2, 4)).sum().backward()
check(Enc())
""",
    "module_frozen_in_its_init_then_a_part_unfrozen": """
class Enc(nn.Module):
    def forward(self, x):
        return self.lin(x)
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.requires_grad_(False)
enc = Enc()
enc.lin.requires_grad_(True)
with FakeTensorMode(allow_non_fake_inputs=True):
    enc(torch.randn(2, 4)).sum().backward()  # FGL001
""",
    "container_of_frozen_backbone_and_real_head": """
bb = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).requires_grad_(False)
model = nn.Sequential(bb, nn.Linear(4, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.randn(2, 3)).sum().backward()  # FGL001
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_python(name):
    source = HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py")}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"
