"""Python's and torch's semantics, third batch: general mechanisms rather than
shapes. ``nonlocal`` writes; functions over iterables as one table
(``functools.reduce``, ``itertools.chain``/``starmap``/..., ``operator.*``);
user dunder protocols (``__getitem__``, ``__iter__``, ``__getattr__``,
``obj.__dict__`` writes); context managers as decorators (torch's grad modes and
``@contextmanager`` helpers are ContextDecorators, also called as ``cm()(fn)``);
``set_grad_enabled`` switching grad mode when called; ``nn.ModuleDict`` views;
``load_state_dict(..., assign=True)`` with fake tensors; lambda keyword-only
defaults; tensor shapes as known values (``lru_cache`` keyed by ``x.shape[-2]``);
a module's ``forward`` run outside any region (a fake it reads from a global or a
cache mixes with its real parameters there).

Fourth batch (sem4): loops and comprehensions over known elements run once per
element; enums (members, lookups, identity); ``functools.singledispatch``; the
library classes unittest (its runner), ``torch.fx.Interpreter`` and subclasses of
FakeTensorMode; ``detect_fake_mode``; ``torch.func.vjp``; ``torch.distributions``;
``.grad`` written with a fake; a real ``.grad`` staying real under a later fake
backward; object state joined at branch merges (may values); the known children of
torch containers (``net[0]``, ``modules()``, ``apply``); forward pre hooks;
``nn.Sequential`` running its children; ``super().forward`` of a torch layer.

Same format as :mod:`test_semantics`: lines that must be flagged end with
``# FGLxxx``; each hazard has a safe look-alike. Every program runs with real
torch as labelled (``python tests/test_semantics_protocols.py --check`` runs them
through ``tests/oracle.py``).
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
    # ------------------------------------------------------------- nonlocal
    "nonlocal_write_sets_enclosing_mode": """
def outer():
    mode = contextlib.nullcontext()
    def setup():
        nonlocal mode
        mode = FakeTensorMode(allow_non_fake_inputs=True)
    setup()
    net = nn.Linear(2, 2)
    with mode:
        net(torch.ones(1, 2)).sum().backward()  # FGL001
outer()
""",
    "local_write_without_nonlocal_leaves_enclosing": """
def outer():
    mode = contextlib.nullcontext()
    def setup():
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        return mode
    setup()
    net = nn.Linear(2, 2)
    with mode:
        net(torch.ones(1, 2)).sum().backward()
outer()
""",
    # ------------------------------------------------- functions over iterables
    "functools_reduce_sums_real_outputs": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    outs = [net(torch.ones(1, 2)) for _ in range(2)]  # FGL001
    loss = functools.reduce(lambda a, b: a + b, outs)
    loss.sum().backward()
""",
    "functools_reduce_sums_fake_outputs": """
with FakeTensorMode(allow_non_fake_inputs=True):
    net = nn.Linear(2, 2)
    outs = [net(torch.ones(1, 2)) for _ in range(2)]
    loss = functools.reduce(lambda a, b: a + b, outs)
    loss.sum().backward()
""",
    "itertools_chain_of_real_parameters": """
import itertools
a = nn.Linear(2, 2)
b = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    s = sum(p.sum() for p in itertools.chain(a.parameters(), b.parameters()))  # FGL001
    s.backward()
""",
    "itertools_chain_of_fake_copies": """
import itertools
a = nn.Linear(2, 2)
b = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True) as m:
    params = [m.from_tensor(p) for p in itertools.chain(a.parameters(), b.parameters())]
    s = sum(p.sum() for p in params)
""",
    "itertools_starmap_calls_real_module": """
import itertools
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    outs = list(itertools.starmap(lambda n, x: n(x), [(net, torch.ones(1, 2))]))  # FGL001
    outs[0].sum().backward()
""",
    "itertools_starmap_calls_fake_module": """
import itertools
with FakeTensorMode(allow_non_fake_inputs=True):
    net = nn.Linear(2, 2)
    outs = list(itertools.starmap(lambda n, x: n(x), [(net, torch.ones(1, 2))]))
    outs[0].sum().backward()
""",
    "operator_add_on_real_parameter": """
import operator
w = nn.Parameter(torch.ones(2))
with FakeTensorMode(allow_non_fake_inputs=True):
    functools.reduce(operator.add, [torch.ones(2), w]).sum().backward()  # FGL001
""",
    "operator_add_on_detached_parameter": """
import operator
w = nn.Parameter(torch.ones(2))
with FakeTensorMode(allow_non_fake_inputs=True):
    y = functools.reduce(operator.add, [torch.ones(2, requires_grad=True), w.detach()]).sum()
    y.backward()
""",
    # ---------------------------------------------------- user dunder protocols
    "dunder_getitem_returns_real_module": """
class Bank:
    def __init__(self):
        self.nets = {"a": nn.Linear(2, 2)}
    def __getitem__(self, k):
        return self.nets[k]
bank = Bank()
with FakeTensorMode(allow_non_fake_inputs=True):
    bank["a"](torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "dunder_getitem_builds_module_in_region": """
class Bank:
    def __getitem__(self, k):
        return nn.Linear(2, 2)
bank = Bank()
with FakeTensorMode(allow_non_fake_inputs=True):
    bank["a"](torch.ones(1, 2)).sum().backward()
""",
    "dunder_getattr_forwards_to_real_module": """
class Proxy:
    def __init__(self, m):
        self._m = m
    def __getattr__(self, name):
        return getattr(self._m, name)
p = Proxy(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    (torch.ones(1, 2) @ p.weight).sum().backward()  # FGL001
    p.forward(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "dunder_getattr_forwards_to_fake_module": """
class Proxy:
    def __init__(self, m):
        self._m = m
    def __getattr__(self, name):
        return getattr(self._m, name)
with FakeTensorMode(allow_non_fake_inputs=True):
    p = Proxy(nn.Linear(2, 2))
    (torch.ones(1, 2) @ p.weight).sum().backward()
""",
    "dunder_iter_yields_real_layers": """
class Stack:
    def __init__(self):
        self.layers = [nn.Linear(2, 2), nn.Linear(2, 2)]
    def __iter__(self):
        return iter(self.layers)
s = Stack()
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2)
    for layer in s:
        x = layer(x)  # FGL001
    x.sum().backward()
""",
    "dunder_iter_generator_of_fake_layers": """
class Stack:
    def __iter__(self):
        for _ in range(2):
            yield nn.Linear(2, 2)
s = Stack()
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2)
    for layer in s:
        x = layer(x)
    x.sum().backward()
""",
    "instance_dict_write_holds_real_module": """
class Holder:
    pass
h = Holder()
h.__dict__["net"] = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    h.net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "instance_dict_update_in_region_holds_fake_module": """
class Holder:
    pass
h = Holder()
with FakeTensorMode(allow_non_fake_inputs=True):
    h.__dict__.update({"net": nn.Linear(2, 2)})
    h.net(torch.ones(1, 2)).sum().backward()
""",
    # ----------------------------------------- context managers as decorators
    "contextmanager_helper_as_decorator_opens_region": """
@contextlib.contextmanager
def fake_region():
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield
@fake_region()
def step(net):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
step(nn.Linear(2, 2))
""",
    "contextmanager_helper_as_decorator_unsets_mode": """
@contextlib.contextmanager
def real_region():
    with unset_fake_temporarily():
        yield
@real_region()
def step(net):
    net(torch.ones(1, 2)).sum().backward()
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    step(net)
""",
    "enable_grad_called_on_function": """
def step(net):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
step = torch.enable_grad()(step)
net = nn.Linear(2, 2)
with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True):
    step(net)  # FGL001
""",
    "no_grad_called_on_function": """
def step(net):
    return net(torch.ones(1, 2)).sum()
step = torch.no_grad()(step)
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    step(net)
""",
    # --------------------------------------------- set_grad_enabled when called
    "set_grad_enabled_true_again_before_region": """
net = nn.Linear(2, 2)
torch.set_grad_enabled(False)
torch.set_grad_enabled(True)
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "set_grad_enabled_false_called_before_region": """
net = nn.Linear(2, 2)
torch.set_grad_enabled(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = net(torch.ones(1, 2)).sum()
""",
    "set_grad_enabled_block_restores_grad": """
net = nn.Linear(2, 2)
with torch.set_grad_enabled(False):
    pass
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    # ------------------------------------------------------ nn.ModuleDict views
    "module_dict_items_real": """
md = nn.ModuleDict({"a": nn.Linear(2, 2)})
with FakeTensorMode(allow_non_fake_inputs=True):
    for k, blk in md.items():
        blk(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "module_dict_items_built_in_region": """
with FakeTensorMode(allow_non_fake_inputs=True):
    md = nn.ModuleDict({"a": nn.Linear(2, 2)})
    for blk in md.values():
        blk(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------- load_state_dict(assign=True)
    "load_state_dict_copy_keeps_real_parameters": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    sd = {k: torch.zeros_like(v) for k, v in nn.Linear(2, 2).state_dict().items()}
    net.load_state_dict(sd)
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "load_state_dict_assign_fake_tensors": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    sd = {k: torch.zeros_like(v) for k, v in nn.Linear(2, 2).state_dict().items()}
    net.load_state_dict(sd, assign=True)
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------------------ lambdas
    "lambda_keyword_only_default_real_module": """
net = nn.Linear(2, 2)
run = lambda x, *, m=net: m(x)  # FGL001
with FakeTensorMode(allow_non_fake_inputs=True):
    run(torch.ones(1, 2)).sum().backward()
""",
    "lambda_keyword_only_default_fake_copy": """
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    run = lambda x, *, m=copy.deepcopy(net): m(x)
    run(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------------ shapes as values
    "lru_cache_keyed_by_shape_returns_fake": """
@functools.lru_cache(maxsize=None)
def causal_mask(n):
    return torch.full((n, n), float("-inf")).triu(1)
w = nn.Parameter(torch.ones(3, 3))
with FakeTensorMode(allow_non_fake_inputs=True):
    causal_mask(3)
x = torch.randn(2, 3, 4)
(w + causal_mask(x.shape[-2])).sum().backward()  # FGL003
""",
    "lru_cache_keyed_by_other_shape_is_real": """
@functools.lru_cache(maxsize=None)
def causal_mask(n):
    return torch.full((n, n), float("-inf")).triu(1)
w = nn.Parameter(torch.ones(4, 4))
with FakeTensorMode(allow_non_fake_inputs=True):
    causal_mask(3)
x = torch.randn(2, 4, 4)
(w + causal_mask(x.size(1))).sum().backward()
""",
    "dict_cache_keyed_by_sequence_length": """
class Rope:
    def __init__(self):
        self.cache = {}
    def table(self, seq_len):
        if seq_len not in self.cache:
            self.cache[seq_len] = torch.arange(seq_len).float().unsqueeze(1)
        return self.cache[seq_len]
rope = Rope()
w = nn.Parameter(torch.ones(5, 1))
with FakeTensorMode(allow_non_fake_inputs=True):
    rope.table(5)
tokens = torch.zeros(1, 5).view(5, 1)
(w * rope.table(tokens.shape[0])).sum().backward()  # FGL003
""",
    "dict_cache_keyed_by_other_sequence_length": """
class Rope:
    def __init__(self):
        self.cache = {}
    def table(self, seq_len):
        if seq_len not in self.cache:
            self.cache[seq_len] = torch.arange(seq_len).float().unsqueeze(1)
        return self.cache[seq_len]
rope = Rope()
w = nn.Parameter(torch.ones(6, 1))
with FakeTensorMode(allow_non_fake_inputs=True):
    rope.table(5)
tokens = torch.zeros(2, 3).reshape(-1, 1)
(w * rope.table(len(tokens))).sum().backward()
""",
    "branch_on_known_rank_enters_region": """
net = nn.Linear(4, 4)
x = torch.zeros(2, 4)
ctx = FakeTensorMode(allow_non_fake_inputs=True) if x.dim() == 2 else contextlib.nullcontext()
with ctx:
    net(x).sum().backward()  # FGL001
""",
    "branch_on_known_rank_picks_null": """
net = nn.Linear(4, 4)
x = torch.zeros(2, 3, 4)
ctx = FakeTensorMode(allow_non_fake_inputs=True) if x.dim() == 2 else contextlib.nullcontext()
with ctx:
    net(x).sum().backward()
""",
    # --------------------------------- a module's forward outside any region
    "forward_reads_global_fake_outside_region": """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        return self.lin(x) * BIAS  # FGL003
with FakeTensorMode(allow_non_fake_inputs=True):
    BIAS = torch.ones(2)
net = Scale()
net(torch.ones(1, 2)).sum().backward()
""",
    "forward_reads_global_real_outside_region": """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        return self.lin(x) * BIAS
with FakeTensorMode(allow_non_fake_inputs=True):
    shape = torch.ones(2).shape
BIAS = torch.ones(shape)
net = Scale()
net(torch.ones(1, 2)).sum().backward()
""",
    # --------------------------------------------------------- try / except
    "import_error_fallback_never_runs": """
try:
    from torch._subclasses.fake_tensor import FakeTensorMode as FTM
except ImportError:
    FTM = None
net = nn.Linear(2, 2)
with FTM(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "handler_that_may_run_picks_the_mode": """
import json
net = nn.Linear(2, 2)
ctx = contextlib.nullcontext()
try:
    cfg = json.loads("{}")
except ValueError:
    ctx = FakeTensorMode(allow_non_fake_inputs=True)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    "handler_after_strict_crash_runs": """
net = nn.Linear(2, 2)
try:
    with FakeTensorMode():
        net(torch.ones(1, 2))
except AssertionError:
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "handler_of_unknown_error_in_region_is_may": """
import json
net = nn.Linear(2, 2)
try:
    cfg = json.loads("{}")
except ValueError:
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------- constants of the platform
    "type_checking_is_false_at_run_time": """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    ctx = contextlib.nullcontext()
else:
    ctx = FakeTensorMode(allow_non_fake_inputs=True)
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "type_checking_branch_only_for_checkers": """
import typing
if typing.TYPE_CHECKING:
    ctx = FakeTensorMode(allow_non_fake_inputs=True)
else:
    ctx = contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    "version_info_known_for_every_supported_python": """
import sys
ctx = FakeTensorMode(allow_non_fake_inputs=True) if sys.version_info >= (3, 8) else contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "version_info_not_known_across_pythons": """
import sys
ctx = FakeTensorMode(allow_non_fake_inputs=True) if sys.version_info >= (3, 12) else contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    # ----------------------------------------------------------- yield from
    "yield_from_generator_suspended_in_region": """
def inner(net):
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield net(torch.ones(1, 2))  # FGL001
def outer(net):
    yield from inner(net)
net = nn.Linear(2, 2)
for y in outer(net):
    y.sum().backward()
""",
    "yield_from_generator_of_fake_module": """
def inner():
    with FakeTensorMode(allow_non_fake_inputs=True):
        net = nn.Linear(2, 2)
        yield net(torch.ones(1, 2))
def outer():
    yield from inner()
for y in outer():
    y.sum().backward()
""",
    "enumerate_with_start_of_real_modules": """
nets = [nn.Linear(2, 2)]
with FakeTensorMode(allow_non_fake_inputs=True):
    for i, n in enumerate(nets, start=1):
        n(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "enumerate_with_start_of_fake_modules": """
with FakeTensorMode(allow_non_fake_inputs=True):
    nets = [nn.Linear(2, 2)]
    for i, n in enumerate(nets, start=1):
        n(torch.ones(1, 2)).sum().backward()
""",
    # --------------------------------------------------------- module hooks
    "forward_hook_closes_over_real_parameter": """
temperature = nn.Parameter(torch.tensor(2.0))
store = {}
def hook(module, inputs, output):
    store["aux"] = (output / temperature).sum()  # FGL001
net = nn.Linear(2, 2)
net.register_forward_hook(hook)
with FakeTensorMode(allow_non_fake_inputs=True):
    shadow = copy.deepcopy(net)
    (shadow(torch.ones(1, 2)).sum() + store["aux"]).backward()
""",
    "forward_hook_removed_before_region": """
temperature = nn.Parameter(torch.tensor(2.0))
store = {}
def hook(module, inputs, output):
    store["aux"] = (output / temperature).sum()
net = nn.Linear(2, 2)
handle = net.register_forward_hook(hook)
handle.remove()
with FakeTensorMode(allow_non_fake_inputs=True):
    shadow = copy.deepcopy(net)
    shadow(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------- a list or dict object is shared
    "dict_filled_through_an_alias": """
def fill(registry):
    registry["net"] = nn.Linear(2, 2)
models = {}
fill(models)
with FakeTensorMode(allow_non_fake_inputs=True):
    models["net"](torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "dict_copy_filled_leaves_the_original": """
models = {"net": None}
staged = dict(models)
staged["net"] = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    if models["net"] is not None:
        models["net"](torch.ones(1, 2)).sum().backward()
""",
    # ------------------- a fake given to a module of the file, outside regions
    "leaked_fake_given_to_forward_mixes_inside": """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x, bias):
        return self.lin(x) + bias  # FGL003
with FakeTensorMode(allow_non_fake_inputs=True):
    bias = torch.zeros(2)
net = Scale()
net(torch.ones(1, 2), bias).sum().backward()  # FGL003
""",
    "leaked_fake_given_to_forward_unused": """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x, bias):
        return self.lin(x) + torch.zeros(bias.shape)
with FakeTensorMode(allow_non_fake_inputs=True):
    bias = torch.zeros(2)
net = Scale()
net(torch.ones(1, 2), bias).sum().backward()
""",
    # --------------------------------------------------- stack_module_state
    "stack_module_state_of_real_models": """
from torch.func import functional_call, stack_module_state, vmap
models = [nn.Linear(2, 2) for _ in range(3)]
params, buffers = stack_module_state(models)
base = copy.deepcopy(models[0]).to("meta")
def one(p, b, x):
    return functional_call(base, (p, b), (x,))  # FGL001
with FakeTensorMode(allow_non_fake_inputs=True):
    vmap(one, in_dims=(0, 0, None))(params, buffers, torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "stack_module_state_of_frozen_models": """
from torch.func import functional_call, stack_module_state, vmap
models = [nn.Linear(2, 2).requires_grad_(False) for _ in range(3)]
params, buffers = stack_module_state(models)
base = copy.deepcopy(models[0]).to("meta")
def one(p, b, x):
    return functional_call(base, (p, b), (x,))
with FakeTensorMode(allow_non_fake_inputs=True):
    y = vmap(one, in_dims=(0, 0, None))(params, buffers, torch.ones(1, 2)).sum()
""",
    # ------------------------------------------------------ threads and pools
    "thread_pool_worker_opens_region": """
from concurrent.futures import ThreadPoolExecutor
def profile(model):
    with FakeTensorMode(allow_non_fake_inputs=True):
        model(torch.ones(1, 2)).sum().backward()  # FGL001
net = nn.Linear(2, 2)
with ThreadPoolExecutor(max_workers=1) as pool:
    pool.submit(profile, net).result()
""",
    "thread_pool_worker_outside_callers_region": """
from concurrent.futures import ThreadPoolExecutor
def step(model):
    model(torch.ones(1, 2)).sum().backward()
net = nn.Linear(2, 2)
with ThreadPoolExecutor(max_workers=1) as pool:
    with FakeTensorMode(allow_non_fake_inputs=True):
        pool.submit(step, net).result()
""",
    "thread_target_opens_region": """
import threading
def profile(model):
    with FakeTensorMode(allow_non_fake_inputs=True):
        model(torch.ones(1, 2)).sum().backward()  # FGL001
net = nn.Linear(2, 2)
t = threading.Thread(target=profile, args=(net,))
t.start()
t.join()
""",
    "thread_target_outside_callers_region": """
import threading
def step(model):
    model(torch.ones(1, 2)).sum().backward()
net = nn.Linear(2, 2)
with FakeTensorMode(allow_non_fake_inputs=True):
    t = threading.Thread(target=step, args=(net,))
    t.start()
    t.join()
""",
    # ------------------------------------ children replaced by setattr
    "lora_children_injected_into_frozen_model": """
class Adapter(nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.zeros(2, 2))
    def forward(self, x):
        return self.base(x) + x @ self.a
def inject(model):
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, Adapter(child))
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
net.requires_grad_(False)
inject(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "lora_children_injected_frozen_too": """
class Adapter(nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.zeros(2, 2))
    def forward(self, x):
        return self.base(x) + x @ self.a
def inject(model):
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, Adapter(child))
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
inject(net)
net.requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = net(torch.ones(1, 2)).sum()
""",
    # ------------- objects whose class can open a region are followed into calls
    "callback_in_a_list_opens_region_through_getattr": """
class Sizing:
    def __init__(self):
        self.stack = None
    def on_start(self):
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    def on_end(self):
        self.stack.close()
class Trainer:
    def __init__(self, callbacks):
        self.callbacks = list(callbacks)
    def call(self, hook):
        for cb in self.callbacks:
            getattr(cb, hook)()
    def fit(self, model):
        self.call("on_start")
        model(torch.ones(1, 2)).sum().backward()  # FGL001
        self.call("on_end")
Trainer([Sizing()]).fit(nn.Linear(2, 2))
""",
    "callback_in_a_list_closes_region_before_step": """
class Sizing:
    def __init__(self):
        self.stack = None
    def on_start(self):
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    def on_end(self):
        self.stack.close()
class Trainer:
    def __init__(self, callbacks):
        self.callbacks = list(callbacks)
    def call(self, hook):
        for cb in self.callbacks:
            getattr(cb, hook)()
    def fit(self, model):
        self.call("on_start")
        self.call("on_end")
        model(torch.ones(1, 2)).sum().backward()
Trainer([Sizing()]).fit(nn.Linear(2, 2))
""",
    # ---------------------------------------------- unfreezing parameter by parameter
    "frozen_model_unfrozen_by_a_parameter_loop": """
net = nn.Sequential(nn.Linear(2, 2), nn.Tanh()).requires_grad_(False)
for p in net.parameters():
    p.requires_grad_(True)
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "frozen_model_unfrozen_after_region": """
net = nn.Sequential(nn.Linear(2, 2), nn.Tanh()).requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = net(torch.ones(1, 2, requires_grad=True)).sum()
for p in net.parameters():
    p.requires_grad_(True)
""",
    # ------------------- isinstance / hasattr / callable, __init_subclass__, __name__
    "init_subclass_registry": """
class Base(nn.Module):
    registry = {}
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Base.registry[cls.__name__] = cls
class Tiny(Base):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def forward(self, x):
        return self.fc(x)
net = Base.registry["Tiny"]()
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "isinstance_guard_module": """
def maybe_copy(m):
    if isinstance(m, nn.Module):
        return m
    return None
net = maybe_copy(nn.Linear(2, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "isinstance_user_class_false": """
class A:
    pass
class B:
    pass
def pick(o):
    if isinstance(o, A):
        return FakeTensorMode(allow_non_fake_inputs=True)
    return contextlib.nullcontext()
net = nn.Linear(2, 2)
with pick(B()):
    net(torch.ones(1, 2)).sum().backward()
""",
    "isinstance_user_class_true": """
class A:
    pass
def pick(o):
    if isinstance(o, A):
        return FakeTensorMode(allow_non_fake_inputs=True)
    return contextlib.nullcontext()
net = nn.Linear(2, 2)
with pick(A()):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "hasattr_known_attr": """
class Cfg:
    def __init__(self):
        self.dry_run = True
cfg = Cfg()
ctx = FakeTensorMode(allow_non_fake_inputs=True) if hasattr(cfg, "dry_run") else contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "callable_check": """
def build():
    return FakeTensorMode(allow_non_fake_inputs=True)
factory = build
ctx = factory() if callable(factory) else factory
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "init_subclass_registry_of_paramless_class": """
class Base(nn.Module):
    registry = {}
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Base.registry[cls.__name__] = cls
class Tiny(Base):
    def forward(self, x):
        return x * 2
net = Base.registry["Tiny"]()
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2, requires_grad=True)).sum().backward()
""",
    "isinstance_guard_rejects_plain_value": """
def maybe_module(m):
    if isinstance(m, nn.Module):
        return FakeTensorMode(allow_non_fake_inputs=True)
    return contextlib.nullcontext()
net = nn.Linear(2, 2)
with maybe_module(3):
    net(torch.ones(1, 2)).sum().backward()
""",
    "callable_false_for_constant": """
factory = None
ctx = factory() if callable(factory) else contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    "hasattr_unknown_attr_is_may": """
class Cfg:
    pass
cfg = Cfg()
ctx = FakeTensorMode(allow_non_fake_inputs=True) if hasattr(cfg, "dry_run") else contextlib.nullcontext()
net = nn.Linear(2, 2)
with ctx:
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------- a function the program calls is analysed through its calls only
    "function_called_with_simulate_on": """
def pick_mode(simulate):
    return FakeTensorMode(allow_non_fake_inputs=True) if simulate else None
def main(simulate):
    net = nn.Linear(2, 2)
    if (mode := pick_mode(simulate)) is not None:
        with mode:
            net(torch.ones(1, 2)).sum().backward()  # FGL001
main(True)
""",
    "function_called_with_simulate_off": """
def pick_mode(simulate):
    return FakeTensorMode(allow_non_fake_inputs=True) if simulate else None
def main(simulate):
    net = nn.Linear(2, 2)
    if (mode := pick_mode(simulate)) is not None:
        with mode:
            net(torch.ones(1, 2)).sum().backward()
main(False)
""",
    # ------------------------------------- a generator paused inside try/finally
    "contextmanager_freeze_restores_in_finally_after_block": """
@contextlib.contextmanager
def frozen(module):
    saved = [(p, p.requires_grad) for p in module.parameters()]
    for p, _ in saved:
        p.requires_grad_(False)
    try:
        yield module
    finally:
        for p, flag in saved:
            p.requires_grad_(flag)
net = nn.Linear(3, 2)
with frozen(net), FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.randn(2, 3, requires_grad=True)
    net(x).sum().backward()
""",
    "contextmanager_finally_unfreezes_after_block": """
@contextlib.contextmanager
def no_param_grads(module):
    for p in module.parameters():
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in module.parameters():
            p.requires_grad_(True)
net = nn.Linear(3, 2)
with no_param_grads(net), FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.randn(2, 3, requires_grad=True)
    net(x).sum().backward()
""",
    "contextmanager_try_finally_freezes_another_module": """
@contextlib.contextmanager
def frozen(module):
    saved = [(p, p.requires_grad) for p in module.parameters()]
    for p, _ in saved:
        p.requires_grad_(False)
    try:
        yield module
    finally:
        for p, flag in saved:
            p.requires_grad_(flag)
net = nn.Linear(3, 2)
teacher = nn.Linear(3, 2)
with frozen(teacher), FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.randn(2, 3, requires_grad=True)
    net(x).sum().backward()  # FGL001
""",

    # ------------------------------------------- loops over known elements (sem4)
    "loop_over_known_flags_runs_each": """
net = nn.Linear(2, 2)
for dry in (True, False):
    cm = FakeTensorMode(allow_non_fake_inputs=True) if dry else contextlib.nullcontext()
    with cm:
        net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    # a real backward first: the fake one accumulates into the real .grad in place
    "real_backward_first_keeps_grads_real": """
net = nn.Linear(2, 2)
for dry in (False, True):
    cm = FakeTensorMode(allow_non_fake_inputs=True) if dry else contextlib.nullcontext()
    with cm:
        net(torch.ones(1, 2)).sum().backward()  # FGL004
""",
    "zero_grad_between_real_and_fake_backward": """
net = nn.Linear(2, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
net(torch.ones(1, 2)).sum().backward()
opt.step()
opt.zero_grad()
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "loop_over_known_flags_breaks_first": """
net = nn.Linear(2, 2)
for dry in (False, True):
    if not dry:
        break
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()
""",
    "comprehension_enters_each_context": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    [stack.enter_context(c) for c in (contextlib.nullcontext(), FakeTensorMode(allow_non_fake_inputs=True))]
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "generator_expression_never_consumed_enters_nothing": """
net = nn.Linear(2, 2)
with contextlib.ExitStack() as stack:
    pending = (stack.enter_context(c) for c in (contextlib.nullcontext(), FakeTensorMode(allow_non_fake_inputs=True)))
    net(torch.ones(1, 2)).sum().backward()
""",
    "each_request_known_false_never_trains": """
net = nn.Linear(2, 2)
jobs = [{"train": False}, {"train": False}]
with FakeTensorMode(allow_non_fake_inputs=True):
    for job in jobs:
        out = net(torch.ones(1, 2))  # FGL004
        if job["train"]:
            out.sum().backward()
""",
    "each_request_known_true_trains": """
net = nn.Linear(2, 2)
jobs = [{"train": False}, {"train": True}]
with FakeTensorMode(allow_non_fake_inputs=True):
    for job in jobs:
        out = net(torch.ones(1, 2))  # FGL001
        if job["train"]:
            out.sum().backward()
""",
    # ---------------------------------------------------------- detect_fake_mode
    "detect_fake_mode_of_allowing_inputs": """
from torch._guards import detect_fake_mode
net = nn.Linear(2, 2)
mode = FakeTensorMode(allow_non_fake_inputs=True)
inputs = [mode.from_tensor(torch.ones(1, 2))]
with detect_fake_mode(inputs):
    net(inputs[0]).sum().backward()  # FGL001
""",
    "detect_fake_mode_of_real_inputs_is_none": """
from torch._guards import detect_fake_mode
net = nn.Linear(2, 2)
inputs = [torch.ones(1, 2)]
with (detect_fake_mode(inputs) or contextlib.nullcontext()):
    net(inputs[0]).sum().backward()
""",
    # ------------------------------------------------- .grad written with a fake
    "fake_written_to_real_grad": """
w = nn.Parameter(torch.ones(3))
with FakeTensorMode() as m:
    g = torch.zeros(3)
w.grad = g  # FGL003
""",
    "fake_written_to_real_grad_then_reset": """
w = nn.Parameter(torch.ones(3))
with FakeTensorMode() as m:
    g = torch.zeros(3)
w.grad = g
print(tuple(w.grad.shape))
w.grad = None
""",
    "fake_written_to_fake_copy_grad": """
w = nn.Parameter(torch.ones(3))
with FakeTensorMode() as m:
    fw = m.from_tensor(w)
    fw.grad = torch.zeros(3)
""",
    # ------------------------------------------------------------ torch.func.vjp
    "vjp_over_real_parameter_grads_written": """
lin = nn.Linear(2, 1)
with FakeTensorMode(allow_non_fake_inputs=True):
    out, back = torch.func.vjp(lambda w: (torch.ones(4, 2) @ w.t()).sum(), lin.weight)  # FGL001
    (g,) = back(torch.ones(()))
lin.weight.grad = g
""",
    # (the pullback is never called: nothing is written to the real weight)
    "vjp_pullback_never_called": """
lin = nn.Linear(2, 1)
with FakeTensorMode(allow_non_fake_inputs=True):
    out, back = torch.func.vjp(lambda w: (torch.ones(4, 2) @ w.t()).sum(), lin.weight)  # FGL004
    shape = out.shape
""",
    # ------------------------------------------------------- torch.distributions
    "distribution_of_real_logits_backpropagated": """
head = nn.Linear(3, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    d = torch.distributions.Categorical(logits=head(torch.ones(2, 3)), validate_args=False)  # FGL001
    d.log_prob(torch.zeros(2, dtype=torch.long)).sum().backward()
""",
    "distribution_of_fake_logits_backpropagated": """
head = nn.Linear(3, 4)
with FakeTensorMode(allow_non_fake_inputs=True) as m:
    logits = torch.randn(2, 4, requires_grad=True)
    d = torch.distributions.Categorical(logits=logits, validate_args=False)
    d.log_prob(torch.zeros(2, dtype=torch.long)).sum().backward()
""",
    # ------------------------------------------- autograd.grad over a part of it
    "autograd_grad_of_a_submodule_weight": """
class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 1)
    def forward(self, x):
        return self.b(self.a(x))
net = Two()
with FakeTensorMode(allow_non_fake_inputs=True):
    out = net(torch.ones(1, 2)).sum()  # FGL001
    torch.autograd.grad(out, [net.a.weight])
""",
    "autograd_grad_of_an_unrelated_tensor": """
class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 1)
    def forward(self, x):
        return self.b(self.a(x))
net = Two()
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    out = net(x).sum()  # FGL004
    torch.autograd.grad(out, [x])
""",
    # ------------------------------------- a strict fake meeting a real module
    "strict_fake_into_real_module_call": """
class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        return self.lin(x)  # FGL002
def example():
    with FakeTensorMode():
        return torch.ones(1, 2)
Tiny()(example())  # FGL002
""",
    "strict_fake_into_module_made_in_its_mode": """
class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        return self.lin(x)
with FakeTensorMode():
    x = torch.ones(1, 2)
    Tiny()(x)
""",
    # ---------------------------------------------------------------- enums
    "enum_member_selects_fake_mode": """
import enum
class Phase(enum.Enum):
    DRY = "dry"
    REAL = "real"
def context_for(phase):
    return FakeTensorMode(allow_non_fake_inputs=True) if phase is Phase.DRY else contextlib.nullcontext()
net = nn.Linear(2, 2)
with context_for(Phase["DRY"]):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "enum_member_selects_nullcontext": """
import enum
class Phase(enum.Enum):
    DRY = "dry"
    REAL = "real"
def context_for(phase):
    return FakeTensorMode(allow_non_fake_inputs=True) if phase is Phase.DRY else contextlib.nullcontext()
net = nn.Linear(2, 2)
with context_for(Phase("real")):
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------- functools.singledispatch
    "singledispatch_module_overload_keeps_it_real": """
@functools.singledispatch
def prepare(obj, mode):
    return mode.from_tensor(obj)
@prepare.register(nn.Module)
def _(obj, mode):
    return obj
net = nn.Linear(2, 2)
mode = FakeTensorMode(allow_non_fake_inputs=True)
with mode:
    prepare(net, mode)(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "singledispatch_tensor_goes_to_default": """
@functools.singledispatch
def prepare(obj, mode):
    return mode.from_tensor(obj)
@prepare.register(nn.Module)
def _(obj, mode):
    return obj
w = torch.ones(2, requires_grad=True)
mode = FakeTensorMode(allow_non_fake_inputs=True)
with mode:
    (prepare(w, mode) * 2).sum().backward()
""",
    # ------------------------------------------------------------- unittest
    "unittest_test_runs_in_entered_context": """
import unittest
NET = nn.Linear(2, 2)
class T(unittest.TestCase):
    def setUp(self):
        self.enterContext(FakeTensorMode(allow_non_fake_inputs=True))
    def test_step(self):
        NET(torch.ones(1, 2)).sum().backward()  # FGL001
unittest.main(argv=["t"], exit=False)
""",
    "unittest_strict_crash_caught_by_runner": """
import unittest
NET = nn.Linear(2, 2)
class T(unittest.TestCase):
    def setUp(self):
        self.enterContext(FakeTensorMode())
    def test_step(self):
        NET(torch.ones(1, 2)).sum().backward()
unittest.main(argv=["t"], exit=False)
""",
    # ------------------------------------------------------- torch.fx.Interpreter
    "fx_interpreter_runs_real_graph_module": """
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
gm = torch.fx.symbolic_trace(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = torch.fx.Interpreter(gm).run(torch.ones(1, 2))  # FGL001
    out.sum().backward()
""",
    "fx_interpreter_forward_only": """
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
gm = torch.fx.symbolic_trace(net)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = torch.fx.Interpreter(gm).run(torch.ones(1, 2))  # FGL004
    shape = out.shape
""",
    # ------------------------------------------------- FakeTensorMode subclasses
    "mode_subclass_default_is_strict": """
class Counting(FakeTensorMode):
    def __init__(self):
        super().__init__()
        self.count = 0
net = nn.Linear(2, 2)
with Counting():
    net(torch.ones(1, 2))  # FGL002
""",
    "mode_subclass_used_for_copies_only": """
class Counting(FakeTensorMode):
    def __init__(self):
        super().__init__(allow_non_fake_inputs=True)
        self.count = 0
net = nn.Linear(2, 2)
mode = Counting()
w = mode.from_tensor(net.weight)
with mode:
    (w * 2).sum().backward()
""",
    # ------------------------------------- generators yielding with dispatch off
    "generator_yields_inside_region": """
def batches():
    with FakeTensorMode(allow_non_fake_inputs=True):
        for _ in range(2):
            yield torch.ones(1, 2)
net = nn.Linear(2, 2)
for b in batches():
    net(b).sum().backward()  # FGL001
""",
    "generator_yields_with_dispatch_off": """
def batches():
    with FakeTensorMode(allow_non_fake_inputs=True):
        for _ in range(2):
            with unset_fake_temporarily():
                yield torch.ones(1, 2)
net = nn.Linear(2, 2)
for b in batches():
    net(b).sum().backward()
""",
    # ----------------------------------------- entry points named by strings
    "mode_class_resolved_from_a_string": """
import importlib
SPEC = "torch._subclasses.fake_tensor:FakeTensorMode"
def resolve(spec):
    mod, _, name = spec.partition(":")
    return getattr(importlib.import_module(mod), name)
net = nn.Linear(2, 2)
with resolve(SPEC)(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "null_context_resolved_from_a_string": """
import importlib
SPEC = "contextlib:nullcontext"
def resolve(spec):
    mod, _, name = spec.partition(":")
    return getattr(importlib.import_module(mod), name)
net = nn.Linear(2, 2)
with resolve(SPEC)():
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------ object state at a merge
    "attribute_set_in_one_branch_is_a_may_value": """
import sys
class Cfg:
    def __init__(self):
        self.mode = contextlib.nullcontext()
cfg = Cfg()
if len(sys.argv) > 5:
    cfg.mode = FakeTensorMode(allow_non_fake_inputs=True)
net = nn.Linear(2, 2)
with cfg.mode:
    net(torch.ones(1, 2)).sum().backward()
""",
    "attribute_set_in_both_branches_is_certain": """
import sys
class Cfg:
    def __init__(self):
        self.mode = contextlib.nullcontext()
cfg = Cfg()
if len(sys.argv) > 5:
    cfg.mode = FakeTensorMode(allow_non_fake_inputs=True)
else:
    cfg.mode = FakeTensorMode(allow_non_fake_inputs=True)
net = nn.Linear(2, 2)
with cfg.mode:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "unfrozen_in_one_branch_stays_a_may_value": """
import sys
net = nn.Linear(2, 2)
net.requires_grad_(False)
if len(sys.argv) > 5:
    net.requires_grad_(True)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    net(x).sum().backward()
""",
    "unfrozen_in_both_branches_is_certain": """
import sys
net = nn.Linear(2, 2)
net.requires_grad_(False)
if len(sys.argv) > 5:
    net.requires_grad_(True)
else:
    net.train().requires_grad_(True)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    net(x).sum().backward()  # FGL001
""",
    # ------------------------------------------------- children of containers
    "freezing_one_child_leaves_the_other": """
net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
net[0].requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "freezing_every_child_freezes_the_container": """
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
net[0].requires_grad_(False)
net[-1].requires_grad_(False)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(1, 2, requires_grad=True)
    net(x).sum().backward()
""",

    # ----------------------------------------- Module.__call__: pre hooks first
    "forward_pre_hook_enters_mode": """
class Hooks:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    def pre(self, module, args):
        self.mode.__enter__()
    def post(self, module, args, out):
        self.mode.__exit__(None, None, None)
net = nn.Linear(2, 2)
h = Hooks()
net.register_forward_pre_hook(h.pre)
net.register_forward_hook(h.post)
out = net(torch.ones(1, 2))  # FGL001
out.sum().backward()
""",
    "forward_pre_hook_removed_before_the_call": """
class Hooks:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    def pre(self, module, args):
        self.mode.__enter__()
    def post(self, module, args, out):
        self.mode.__exit__(None, None, None)
net = nn.Linear(2, 2)
h = Hooks()
handles = [net.register_forward_pre_hook(h.pre), net.register_forward_hook(h.post)]
for handle in handles:
    handle.remove()
out = net(torch.ones(1, 2))
out.sum().backward()
""",
    # --------------------------------- nn.Sequential runs its children in turn
    "sequential_runs_a_child_that_opens_a_region": """
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            return self.lin(x)  # FGL001
net = nn.Sequential(Probe(), nn.ReLU())
net(torch.ones(1, 2)).sum().backward()
""",
    "sequential_child_region_reads_shapes_only": """
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            self.shape = torch.empty(3, 2).shape
        return self.lin(x)
net = nn.Sequential(Probe(), nn.ReLU())
net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------ super().forward of a torch layer subclass
    "torch_layer_subclass_super_forward_in_region": """
class Scaled(nn.Linear):
    def forward(self, x):
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = super().forward(x)  # FGL001
        return y * 2
lin = Scaled(2, 2)
lin(torch.ones(1, 2)).sum().backward()
""",
    "torch_layer_subclass_super_forward_outside": """
class Scaled(nn.Linear):
    def forward(self, x):
        y = super().forward(x)
        with FakeTensorMode(allow_non_fake_inputs=True):
            self.probe = torch.zeros(y.shape)
        return y * 2
lin = Scaled(2, 2)
lin(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------------ make_fx with **options
    "make_fx_options_spread_fake": """
from torch.fx.experimental.proxy_tensor import make_fx
OPTS = {"tracing_mode": "fake", "_allow_non_fake_inputs": True}
net = nn.Linear(2, 2)
def step(x):
    loss = net(x).sum()  # FGL001
    loss.backward()
    return loss
make_fx(step, **OPTS)(torch.ones(1, 2))
""",
    "make_fx_options_spread_real": """
from torch.fx.experimental.proxy_tensor import make_fx
OPTS = {"tracing_mode": "real"}
net = nn.Linear(2, 2)
def step(x):
    loss = net(x).sum()
    loss.backward()
    return loss
make_fx(step, **OPTS)(torch.ones(1, 2))
""",
    # ------------------------------- small helpers run: a config's defaults
    "config_helper_default_selects_fake_mode": """
import argparse
def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--dry", default="yes")
    return p.parse_args(argv)
args = parse([])
net = nn.Linear(2, 2)
cm = FakeTensorMode(allow_non_fake_inputs=True) if args.dry == "yes" else contextlib.nullcontext()
with cm:
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "config_helper_default_selects_nullcontext": """
import argparse
def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--dry", default="no")
    return p.parse_args(argv)
args = parse([])
net = nn.Linear(2, 2)
cm = FakeTensorMode(allow_non_fake_inputs=True) if args.dry == "yes" else contextlib.nullcontext()
with cm:
    net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------ a container's modules() and apply()
    "modules_walk_finds_the_linear": """
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
with FakeTensorMode(allow_non_fake_inputs=True):
    total = 0
    for m in net.modules():
        if isinstance(m, nn.Linear):
            total = total + m.weight.sum()  # FGL001
    total.backward()
""",
    "modules_walk_finds_no_conv": """
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
with FakeTensorMode(allow_non_fake_inputs=True):
    total = 0
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            total = total + m.weight.sum()
print(total)
""",
    "apply_reaches_the_linear_child": """
def init(m):
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.bias)  # FGL002
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
with FakeTensorMode():
    net.apply(init)
""",
    "apply_finds_no_conv_child": """
def init(m):
    if isinstance(m, nn.Conv2d):
        nn.init.zeros_(m.bias)
net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
with FakeTensorMode():
    net.apply(init)
""",
    # ------------------------------------------ an empty container holds nothing
    "memo_fills_empty_cache_with_a_fake": """
_CACHE = {}
def example(n):
    if n not in _CACHE:
        with FakeTensorMode(allow_non_fake_inputs=True):
            _CACHE[n] = torch.ones(n, 2)
    return _CACHE[n]
net = nn.Linear(2, 2)
net(example(3)).sum().backward()  # FGL003
""",
    "memo_fills_empty_cache_with_a_real_tensor": """
_CACHE = {}
def example(n):
    if n not in _CACHE:
        with FakeTensorMode(allow_non_fake_inputs=True):
            with unset_fake_temporarily():
                _CACHE[n] = torch.ones(n, 2)
    return _CACHE[n]
net = nn.Linear(2, 2)
net(example(3)).sum().backward()
""",
    # ------------------- leaving a @contextmanager block resumes it after its yield
    "contextmanager_leaves_hooks_registered": """
class Hooks:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    def pre(self, module, args):
        self.mode.__enter__()
    def post(self, module, args, out):
        self.mode.__exit__(None, None, None)
@contextlib.contextmanager
def fake_forward(model):
    h = Hooks()
    model.register_forward_pre_hook(h.pre)
    model.register_forward_hook(h.post)
    yield h
net = nn.Linear(2, 2)
with fake_forward(net):
    net(torch.ones(1, 2))  # FGL004
loss = net(torch.ones(1, 2)).sum()  # FGL001
loss.backward()
""",
    "contextmanager_finally_removes_hooks": """
class Hooks:
    def __init__(self):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
    def pre(self, module, args):
        self.mode.__enter__()
    def post(self, module, args, out):
        self.mode.__exit__(None, None, None)
@contextlib.contextmanager
def fake_forward(model):
    h = Hooks()
    handles = [model.register_forward_pre_hook(h.pre), model.register_forward_hook(h.post)]
    try:
        yield h
    finally:
        for handle in handles:
            handle.remove()
net = nn.Linear(2, 2)
with fake_forward(net):
    net(torch.ones(1, 2))  # FGL004
loss = net(torch.ones(1, 2)).sum()
loss.backward()
""",
    # ------------------ break / continue inside try, in a loop over known elements
    "continue_inside_try_goes_on_with_the_next": """
net = nn.Linear(2, 2)
for dry in (False, True):
    try:
        if not dry:
            continue
    finally:
        pass
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "break_inside_try_ends_the_loop": """
net = nn.Linear(2, 2)
for dry in (False, True):
    try:
        if not dry:
            break
    finally:
        pass
    with FakeTensorMode(allow_non_fake_inputs=True):
        net(torch.ones(1, 2)).sum().backward()
""",
    # ------------------------------------------- dict keys: enum members, unknown keys
    "enum_keyed_dict_picks_the_fake_context": """
import enum
class Backend(enum.Enum):
    REAL = "real"
    FAKE = "fake"
CONTEXTS = {Backend.REAL: contextlib.nullcontext, Backend.FAKE: functools.partial(FakeTensorMode, allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with CONTEXTS[Backend("fake")]():
    net(torch.ones(1, 2)).sum().backward()  # FGL001
""",
    "enum_keyed_dict_picks_the_real_context": """
import enum
class Backend(enum.Enum):
    REAL = "real"
    FAKE = "fake"
CONTEXTS = {Backend.REAL: contextlib.nullcontext, Backend.FAKE: functools.partial(FakeTensorMode, allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with CONTEXTS[Backend.REAL]():
    net(torch.ones(1, 2)).sum().backward()
print(type(net.weight.grad).__name__)
""",
    "lookup_by_a_key_not_known_is_one_of_the_values": """
import sys
class Key:
    pass
REAL, FAKE = Key(), Key()
CONTEXTS = {REAL: contextlib.nullcontext, FAKE: functools.partial(FakeTensorMode, allow_non_fake_inputs=True)}
net = nn.Linear(2, 2)
with CONTEXTS[REAL if len(sys.argv) < 5 else FAKE]():
    net(torch.ones(1, 2)).sum().backward()
print(type(net.weight.grad).__name__)
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_semantics_protocols(name):
    source = HEAD + textwrap.dedent(CASES[name])
    got = {(f.location.row, f.code) for f in check_source(source, f"{name}.py")}
    want = markers_in_source(source)
    assert got == want, f"{name}: got {sorted(got)}, want {sorted(want)}"


def test_every_mechanism_has_a_hazard_and_a_safe_case():
    marked = [n for n, src in CASES.items() if markers_in_source(HEAD + textwrap.dedent(src))]
    assert len(marked) >= 10 and len(CASES) - len(marked) >= 10


def _check_at_runtime(cases=None, head=None):  # pragma: no cover - a manual tool (imports torch through the oracle)
    """Run every case with real torch (``cases`` with ``head`` prepended, by default this
    file's) and print whether the oracle's outcome is what its markers say; the count of
    disagreements."""
    import tempfile

    cases = CASES if cases is None else cases
    head = HEAD if head is None else head

    from oracle import run_fixtures

    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, src in cases.items():
            p = Path(tmp) / f"{name}.py"
            p.write_text(head + textwrap.dedent(src))
            paths[str(p)] = name
        results = run_fixtures(list(paths), jobs=2)
        bad = 0
        for path, res in sorted(results.items()):
            src = Path(path).read_text()
            codes = {c for _, c in markers_in_source(src)}
            want = "crash" if "FGL002" in codes else "hazard" if codes & {"FGL001", "FGL003"} else "clean"
            outcome = getattr(res, "outcome", res[0] if isinstance(res, tuple) else res)
            if outcome != want:
                bad += 1
            print(f"{'ok ' if outcome == want else 'BAD'} {paths[path]}: {outcome} (want {want})")
        return bad


if __name__ == "__main__" and sys.argv[1:] == ["--check"]:
    sys.exit(1 if _check_at_runtime() else 0)
