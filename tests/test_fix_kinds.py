"""The fix kinds inside the region's block, tested like Fixit's rules (``fix/builders.py``,
``fix/grads.py``, ``fix/modules.py``, ``fix/containers.py``, ``analysis/fix_plans.py``).

Each INVALID example carries the code ``--fix --unsafe-fixes`` writes for it (its program
with the edits :func:`fixed` applies), checked through the real LibCST codemod test case and
the real CLI (a second ``--fix`` changes nothing); each VALID example is a safe look-alike
that gets no finding and is never touched. The slow half runs every example under the
runtime oracle: each INVALID one is a hazard (or a crash) before its fix and runs clean with
the same output after it; each VALID one runs clean. The machinery is ``tests/fix_examples.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from fix_examples import HEAD, example_tests, fixed  # noqa: E402

# (name, program, what --fix --unsafe-fixes writes)
INVALID = [
    # `torch.autograd.grad(loss, params)` with `params` the module's parameters: the inputs become the same fake copies
    (
        'autograd_grad_over_parameters',
        _autograd_grad_over_parameters := HEAD + """\

model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
names, params = zip(*model.named_parameters())
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = model(torch.randn(3, 2)).sum()
    grads = torch.autograd.grad(loss, params)
print({n: tuple(g.shape) for n, g in zip(names, grads)})
""",
        fixed(
            _autograd_grad_over_parameters,
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    loss = model(torch.randn(3, 2)).sum()
    grads = torch.autograd.grad(loss, params)
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    model_fake_state = {
        name: fake_mode.from_tensor(t)
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    loss = torch.func.functional_call(
        model, model_fake_state, (torch.randn(3, 2),),
    ).sum()
    grads = torch.autograd.grad(
        loss,
        [fake_mode.from_tensor(t) for t in params],
    )
"""),
        ),
    ),
    # a gradient penalty: a tensor made in the region stays, the starred parameters become their fake copies
    (
        'autograd_grad_penalty_inputs',
        _autograd_grad_penalty_inputs := HEAD + """\

critic = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
with FakeTensorMode(allow_non_fake_inputs=True):
    a, b = torch.randn(4, 2), torch.randn(4, 2)
    mixed = (0.5 * a + 0.5 * b).requires_grad_()
    score = critic(mixed).sum()
    grads = torch.autograd.grad(score, [mixed, *critic.parameters()], create_graph=True)
print(len(grads), tuple(grads[0].shape))
""",
        fixed(
            _autograd_grad_penalty_inputs,
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
"""),
            ("""\
    score = critic(mixed).sum()
    grads = torch.autograd.grad(score, [mixed, *critic.parameters()], create_graph=True)
""",
             """\
    critic_fake_state = {
        name: fake_mode.from_tensor(t)
        for name, t in [*critic.named_parameters(), *critic.named_buffers()]
    }
    score = torch.func.functional_call(critic, critic_fake_state, (mixed,)).sum()
    grads = torch.autograd.grad(
        score,
        [mixed, *[fake_mode.from_tensor(t) for t in critic.parameters()]],
        create_graph=True,
    )
"""),
        ),
    ),
    # `torch.func.grad` results written to `p.grad` go to the `from_tensor` copies
    (
        'func_grad_written_to_parameters',
        _func_grad_written_to_parameters := HEAD + """\
from torch.func import functional_call, grad

model = nn.Linear(3, 1)
params = dict(model.named_parameters())
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def loss_fn(p, x):
    return functional_call(model, p, (x,)).pow(2).mean()


with FakeTensorMode(allow_non_fake_inputs=True):
    grads = grad(loss_fn)(params, torch.randn(5, 3))
for name, p in model.named_parameters():
    p.grad = grads[name]
opt.step()
print(sorted(grads))
""",
        fixed(
            _func_grad_written_to_parameters,
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    grads = grad(loss_fn)(params, torch.randn(5, 3))
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    params_fake = {k: (fake_mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in params.items()}
    grads = grad(loss_fn)(params_fake, torch.randn(5, 3))
"""),
            ("""\
    p.grad = grads[name]
""",
             """\
    fake_mode.from_tensor(p).grad = grads[name]
"""),
        ),
    ),
    # a parameter converted in the region: its gradient read after the block is the copy's
    (
        'parameter_gradient_read_after_block',
        _parameter_gradient_read_after_block := HEAD + """\

layer = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    w = layer.weight * 2
    (torch.randn(2, 4) @ w.T).sum().backward()
print(type(layer.weight.grad).__name__)
""",
        fixed(
            _parameter_gradient_read_after_block,
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    w = layer.weight * 2
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    weight_fake = fake_mode.from_tensor(layer.weight)
    w = weight_fake * 2
"""),
            ("""\
print(type(layer.weight.grad).__name__)
""",
             """\
print(type(weight_fake.grad).__name__)
"""),
        ),
    ),
    # `clip_grad_norm_` after the block reads the gradients: the module runs as a fake copy, read there
    (
        'clip_grad_norm_after_block',
        _clip_grad_norm_after_block := HEAD + """\

model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.randn(2, 3)).sum().backward()
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
print(type(norm).__name__, type(model[0].weight.grad).__name__)
""",
        fixed(
            _clip_grad_norm_after_block,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    model(torch.randn(2, 3)).sum().backward()
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
print(type(norm).__name__, type(model[0].weight.grad).__name__)
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    model_fake = copy.deepcopy(
        model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
    )
    model_fake(torch.randn(2, 3)).sum().backward()
norm = torch.nn.utils.clip_grad_norm_(model_fake.parameters(), max_norm=1.0)
print(type(norm).__name__, type(model_fake[0].weight.grad).__name__)
"""),
        ),
    ),
    # every use of the module in the region (an optimizer over its parameters) is the copy's
    (
        'optimizer_made_in_region_over_the_module',
        _optimizer_made_in_region_over_the_module := HEAD + """\

model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 2))
with FakeTensorMode(allow_non_fake_inputs=True):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
print("grad", type(model[0].weight.grad).__name__)
""",
        fixed(
            _optimizer_made_in_region_over_the_module,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    model_fake = copy.deepcopy(
        model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
    )
    opt = torch.optim.SGD(model_fake.parameters(), lr=0.1)
    model_fake(torch.randn(4, 3)).sum().backward()
"""),
            ("""\
print("grad", type(model[0].weight.grad).__name__)
""",
             """\
print("grad", type(model_fake[0].weight.grad).__name__)
"""),
        ),
    ),
    # a module called and handed to a helper in the region: one fake copy serves both
    (
        'module_handed_to_helper_and_called',
        _module_handed_to_helper_and_called := HEAD + """\


def penalty(net, x):
    return net(x).pow(2).mean()


critic = nn.Linear(2, 1)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.randn(4, 2)
    loss = critic(x).mean() + penalty(critic, x)
    loss.backward()
print(tuple(loss.shape))
""",
        fixed(
            _module_handed_to_helper_and_called,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
"""),
            ("""\
    loss = critic(x).mean() + penalty(critic, x)
""",
             """\
    critic_fake = copy.deepcopy(
        critic,
        {
            **{id(v): v for sub in critic.modules() for k, v in vars(sub).items() if not k.startswith("_")},
            **{id(t): fake_mode.from_tensor(t) for t in [*critic.parameters(), *critic.buffers()]},
        },
    )
    loss = critic_fake(x).mean() + penalty(critic_fake, x)
"""),
        ),
    ),
    # a copy for the module's own method shares its public attributes: what the method records stays
    (
        'method_copy_keeps_python_state',
        _method_copy_keeps_python_state := HEAD + """\


class Lit(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 2)
        self.logged = {}

    def training_step(self, x):
        loss = self.net(x).sum()
        self.logged["loss"] = tuple(loss.shape)
        return loss


lit = Lit()
with FakeTensorMode(allow_non_fake_inputs=True):
    lit.training_step(torch.randn(4, 3)).backward()
print(lit.logged)
""",
        fixed(
            _method_copy_keeps_python_state,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
with FakeTensorMode(allow_non_fake_inputs=True):
    lit.training_step(torch.randn(4, 3)).backward()
""",
             """\
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    lit_fake = copy.deepcopy(
        lit,
        {
            **{id(v): v for sub in lit.modules() for k, v in vars(sub).items() if not k.startswith("_")},
            **{id(t): fake_mode.from_tensor(t) for t in [*lit.parameters(), *lit.buffers()]},
        },
    )
    lit_fake.training_step(torch.randn(4, 3)).backward()
"""),
        ),
    ),
    # a module fetched in the region from a cache of real modules, its gradients read there
    (
        'module_from_cache_in_region',
        _module_from_cache_in_region := HEAD + """\

CACHE = {"small": nn.Linear(5, 5), "wide": nn.Linear(5, 5)}


def size(name):
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = CACHE[name]
        model(torch.randn(2, 5)).sum().backward()
        return sum(p.grad.numel() for p in model.parameters())


print(size("small"))
""",
        fixed(
            _module_from_cache_in_region,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
    with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
"""),
            ("""\
        model(torch.randn(2, 5)).sum().backward()
        return sum(p.grad.numel() for p in model.parameters())
""",
             """\
        model_fake = copy.deepcopy(
            model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
        )
        model_fake(torch.randn(2, 5)).sum().backward()
        return sum(p.grad.numel() for p in model_fake.parameters())
"""),
        ),
    ),
    # one of several modules (a conditional `nn.DataParallel` wrap, which `functional_call` refuses): a fake copy
    (
        'conditionally_wrapped_module',
        _conditionally_wrapped_module := HEAD + """\


def size_step(model, n):
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = model(torch.randn(n, 3))
        out.sum().backward()
        return tuple(out.shape)


net = nn.Linear(3, 2)
model = nn.DataParallel(net) if torch.cuda.device_count() > 1 else net
print(size_step(model, 4), type(model).__name__)
""",
        fixed(
            _conditionally_wrapped_module,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = model(torch.randn(n, 3))
""",
             """\
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
        model_fake = copy.deepcopy(
            model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
        )
        out = model_fake(torch.randn(n, 3))
"""),
        ),
    ),
    # a module picked from a list of modules by a computed index: the list is copied as fakes
    (
        'modules_picked_by_a_computed_index',
        _modules_picked_by_a_computed_index := HEAD + """\


def simulate(stages, n):
    acts = []
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.randn(n, 4)
        for s in range(len(stages)):
            x = stages[s](x)
            acts.append(tuple(x.shape))
        x.sum().backward()
    return acts


print(simulate([nn.Linear(4, 4), nn.Linear(4, 2)], 3))
""",
        fixed(
            _modules_picked_by_a_computed_index,
            ("""\
from torch._subclasses.fake_tensor import FakeTensorMode
""",
             """\
from torch._subclasses.fake_tensor import FakeTensorMode
import copy
"""),
            ("""\
    with FakeTensorMode(allow_non_fake_inputs=True):
""",
             """\
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
"""),
            ("""\
        x = torch.randn(n, 4)
""",
             """\
        x = torch.randn(n, 4)
        stages_fake = copy.deepcopy(
            stages, {id(t): fake_mode.from_tensor(t) for m in stages for t in [*m.parameters(), *m.buffers()]}
        )
"""),
            ("""\
            x = stages[s](x)
""",
             """\
            x = stages_fake[s](x)
"""),
        ),
    ),
    # a meta module in a strict region computing on meta inputs (FGL002): its fake copies are meta too
    (
        'meta_module_on_meta_inputs',
        _meta_module_on_meta_inputs := HEAD + """\

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).to("meta")
print("counting")
with FakeTensorMode():
    n = model(torch.empty(3, 4, device="meta")).numel()
print(n)
""",
        fixed(
            _meta_module_on_meta_inputs,
            ("""\
with FakeTensorMode():
    n = model(torch.empty(3, 4, device="meta")).numel()
""",
             """\
with FakeTensorMode() as fake_mode:
    model_fake_state = {
        name: fake_mode.from_tensor(t)
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    n = torch.func.functional_call(
        model, model_fake_state, (torch.empty(3, 4, device="meta"),),
    ).numel()
"""),
        ),
    ),
    # a dict of parameters passed in (its type from the annotation, its contents proved by the analysis)
    (
        'annotated_dict_parameter',
        _annotated_dict_parameter := HEAD + """\
from typing import Dict

from torch.func import functional_call


def dry_step(model: nn.Module, params: Dict[str, torch.Tensor]) -> tuple:
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = functional_call(model, params, (torch.randn(2, 3),))
        out.sum().backward()
        return tuple(out.shape)


net = nn.Linear(3, 2)
print(dry_step(net, dict(net.named_parameters())))
""",
        fixed(
            _annotated_dict_parameter,
            ("""\
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = functional_call(model, params, (torch.randn(2, 3),))
""",
             """\
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
        params_fake = {k: fake_mode.from_tensor(v) for k, v in params.items()}
        out = functional_call(model, params_fake, (torch.randn(2, 3),))
"""),
        ),
    ),
]

# safe look-alikes: no finding, never touched
VALID = [
    # gradients with respect to fake copies
    (
        'autograd_grad_over_fake_copies',
        HEAD + """\

model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    state = {name: fake_mode.from_tensor(t) for name, t in model.named_parameters()}
    loss = torch.func.functional_call(model, state, (torch.randn(3, 2),)).sum()
    grads = torch.autograd.grad(loss, list(state.values()))
print([tuple(g.shape) for g in grads])
""",
    ),
    # `torch.func.grad` over fake copies, never written to the real parameters
    (
        'func_grad_kept_off_the_parameters',
        HEAD + """\
from torch.func import functional_call, grad

model = nn.Linear(3, 1)


def loss_fn(p, x):
    return functional_call(model, p, (x,)).pow(2).mean()


with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
    params = {k: fake_mode.from_tensor(v) for k, v in model.named_parameters()}
    grads = grad(loss_fn)(params, torch.randn(5, 3))
print(sorted(grads), model.weight.grad)
""",
    ),
    # the module handed to a helper under `torch.no_grad()`
    (
        'module_handed_to_helper_under_no_grad',
        HEAD + """\


def penalty(net, x):
    return net(x).pow(2).mean()


critic = nn.Linear(2, 1)
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
    x = torch.randn(4, 2)
    loss = critic(x).mean() + penalty(critic, x)
print(tuple(loss.shape))
""",
    ),
    # a module made in the region
    (
        'method_of_a_module_made_in_the_region',
        HEAD + """\


class Lit(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 2)
        self.logged = {}

    def training_step(self, x):
        loss = self.net(x).sum()
        self.logged["loss"] = tuple(loss.shape)
        return loss


with FakeTensorMode(allow_non_fake_inputs=True):
    lit = Lit()
    lit.training_step(torch.randn(4, 3)).backward()
print(lit.logged)
""",
    ),
]

globals().update(example_tests(INVALID, VALID, "kinds"))
