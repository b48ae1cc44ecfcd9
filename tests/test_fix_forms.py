"""The fix forms of ``fix/containers.py``, ``fix/modules.py`` and ``fix/traced.py``,
tested like Fixit rules: each INVALID example carries the code ``--fix --unsafe-fixes``
writes for it (``assertCodemod`` through the real LibCST ``CodemodTest`` on the
project's codemod, the same analysis, builders, proof and fix loop as the CLI), and each
fix has a look-alike VALID example the fix leaves byte for byte as it is. The slow tier
runs every INVALID example and its fixed code with real torch (``tests/oracle.py``): the
original is hazardous or crashes, the fixed one runs clean and prints what the original
printed (or, for a crash, goes on past it)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from libcst.codemod import CodemodTest

from fakegrad_lint.integrations.codemod import FixFakeGrad

TESTS_DIR = Path(__file__).resolve().parent

HEAD = """\
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
"""

# name -> (before, after): the INVALID examples and their expected fixed code
INVALID = {
    "list_of_leaves": (
        """
        params = [torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)]
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = (params[0] * params[1]).sum()
            y.backward()
        print(tuple(y.shape))
        """,
        """
        params = [torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)]
        with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
            params_fake = [fake_mode.from_tensor(t) for t in params]
            y = (params_fake[0] * params_fake[1]).sum()
            y.backward()
        print(tuple(y.shape))
        """,
    ),
    "dict_with_other_values": (
        """
        cfg = {"w": torch.randn(2, 2, requires_grad=True), "scale": 3}
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = (cfg["w"] * cfg["scale"]).sum()  # only the leaking read is rewritten
            y.backward()
        print(tuple(y.shape))
        """,
        """
        cfg = {"w": torch.randn(2, 2, requires_grad=True), "scale": 3}
        with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
            cfg_fake = {k: (fake_mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in cfg.items()}
            y = (cfg_fake["w"] * cfg["scale"]).sum()  # only the leaking read is rewritten
            y.backward()
        print(tuple(y.shape))
        """,
    ),
    "deepcopy_in_strict_region": (
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
        with FakeTensorMode():
            twin = copy.deepcopy(model)
            out = twin(torch.empty(2, 4))
        print(tuple(out.shape))
        """,
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
        with FakeTensorMode() as fake_mode:
            twin = copy.deepcopy(
                model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
            )
            out = twin(torch.empty(2, 4))
        print(tuple(out.shape))
        """,
    ),
    "parameters_loop_in_strict_region": (
        """
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
        total = 0
        with FakeTensorMode():
            for p in model.parameters():
                total += torch.zeros_like(p).numel()
        print(total)
        """,
        """
        import copy
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
        total = 0
        with FakeTensorMode() as fake_mode:
            model_fake = copy.deepcopy(
                model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
            )
            for p in model_fake.parameters():
                total += torch.zeros_like(p).numel()
        print(total)
        """,
    ),
    "region_reads_its_gradients": (
        """
        def grad_bytes(model, batch):
            with FakeTensorMode(allow_non_fake_inputs=True):
                model(batch).sum().backward()
            return sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())


        print(grad_bytes(nn.Linear(3, 2), torch.randn(4, 3)))
        """,
        """
        import copy
        def grad_bytes(model, batch):
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                model_fake = copy.deepcopy(
                    model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
                )
                model_fake(batch).sum().backward()
            return sum(p.grad.numel() * p.grad.element_size() for p in model_fake.parameters())


        print(grad_bytes(nn.Linear(3, 2), torch.randn(4, 3)))
        """,
    ),
    "make_fx_closure": (
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def step(x):
            loss = net(x).sum()
            loss.backward()
            return loss


        gm = make_fx(step, tracing_mode="fake", _allow_non_fake_inputs=True)(torch.randn(2, 3))
        print(len(gm.graph.nodes))
        """,
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def step(x):
            loss = torch.func.functional_call(
                net,
                {name: x.fake_mode.from_tensor(t) for name, t in [*net.named_parameters(), *net.named_buffers()]},
                (x,),
            ).sum()
            loss.backward()
            return loss


        gm = make_fx(step, tracing_mode="fake", _allow_non_fake_inputs=True)(torch.randn(2, 3))
        print(len(gm.graph.nodes))
        """,
    ),
    "make_fx_symbolic_tensor": (
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        w = torch.randn(4, 4, requires_grad=True)


        def f(x):
            return (x @ w).relu()


        print("tracing")
        print(make_fx(f, tracing_mode="symbolic")(torch.randn(3, 4)).code.strip().splitlines()[0])
        """,
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        w = torch.randn(4, 4, requires_grad=True)


        def f(x):
            return (x @ x.fake_mode.from_tensor(w)).relu()


        print("tracing")
        print(make_fx(f, tracing_mode="symbolic")(torch.randn(3, 4)).code.strip().splitlines()[0])
        """,
    ),
    # a mode taken from an operand the file does not prove fake at every execution
    # (fix/operand_mode.py): found at run time right above the statement, real value where
    # the operand is real (with `x.fake_mode` both raised AttributeError on the real call)
    "make_fx_closure_also_called_eagerly": (
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def build(model):
            def f(x):
                return model(x).relu()

            return f


        print(tuple(build(net)(torch.randn(2, 3)).shape))
        gm = make_fx(build(net), tracing_mode="symbolic")(torch.randn(2, 3))
        print(len(list(gm.graph.nodes)))
        """,
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def build(model):
            def f(x):
                fake_mode = torch._guards.detect_fake_mode()
                model_fake_state = {} if fake_mode is None else {
                    name: fake_mode.from_tensor(t, static_shapes=True)
                    for name, t in [*model.named_parameters(), *model.named_buffers()]
                }
                return torch.func.functional_call(model, model_fake_state, (x,)).relu()

            return f


        print(tuple(build(net)(torch.randn(2, 3)).shape))
        gm = make_fx(build(net), tracing_mode="symbolic")(torch.randn(2, 3))
        print(len(list(gm.graph.nodes)))
        """,
    ),
    "make_fx_function_also_called_directly": (
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def f(x):
            return net(x).relu()


        print(tuple(f(torch.randn(2, 3)).shape))
        gm = make_fx(f, tracing_mode="fake")(torch.randn(2, 3))
        print(len(list(gm.graph.nodes)))
        """,
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def f(x):
            fake_mode = torch._guards.detect_fake_mode()
            net_fake_state = {} if fake_mode is None else {
                name: fake_mode.from_tensor(t)
                for name, t in [*net.named_parameters(), *net.named_buffers()]
            }
            return torch.func.functional_call(net, net_fake_state, (x,)).relu()


        print(tuple(f(torch.randn(2, 3)).shape))
        gm = make_fx(f, tracing_mode="fake")(torch.randn(2, 3))
        print(len(list(gm.graph.nodes)))
        """,
    ),
    "leaked_fake_attribute_into_a_module_called_with_real_data": (
        """
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 1)

            def forward(self, x):
                return self.net(x).squeeze(-1)


        class Trainer:
            def __init__(self):
                self.head = Head()
                self.samples = None

            def warmup(self):
                with FakeTensorMode(allow_non_fake_inputs=True):
                    self.samples = torch.randn(3, 4)

            def fake_score(self):
                return self.head(self.samples)


        tr = Trainer()
        tr.warmup()
        print(tuple(tr.head(torch.randn(3, 4)).shape))
        score = tr.fake_score()
        score.sum().backward()
        print(tuple(score.shape))
        """,
        """
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 1)

            def forward(self, x):
                fake_mode = torch._guards.detect_fake_mode([x])
                net_fake_state = {} if fake_mode is None else {
                    name: fake_mode.from_tensor(t)
                    for name, t in [*self.net.named_parameters(), *self.net.named_buffers()]
                }
                return torch.func.functional_call(
                    self.net, net_fake_state, (x,),
                ).squeeze(-1)


        class Trainer:
            def __init__(self):
                self.head = Head()
                self.samples = None

            def warmup(self):
                with FakeTensorMode(allow_non_fake_inputs=True):
                    self.samples = torch.randn(3, 4)

            def fake_score(self):
                fake_mode = torch._guards.detect_fake_mode([self.samples])
                head_fake_state = {} if fake_mode is None else {
                    name: fake_mode.from_tensor(t)
                    for name, t in [*self.head.named_parameters(), *self.head.named_buffers()]
                }
                return torch.func.functional_call(
                    self.head, head_fake_state, (self.samples,),
                )


        tr = Trainer()
        tr.warmup()
        print(tuple(tr.head(torch.randn(3, 4)).shape))
        score = tr.fake_score()
        score.sum().backward()
        print(tuple(score.shape))
        """,
    ),
    # `functional_call` swaps the fakes into the shared module object, where the other thread
    # sees them (it raised there and lost its result): a fake copy per run of the region
    "module_called_in_threads": (
        """
        import threading

        barrier = threading.Barrier(2, timeout=20)
        RESULTS = {}


        def meet(module, args):
            barrier.wait()  # both threads are inside their region's call of the model


        def probe(model, batch):
            with FakeTensorMode(allow_non_fake_inputs=True):
                x = torch.randn(batch, 4)
                y = model(x)
                y.sum().backward()
                RESULTS[batch] = tuple(y.shape)


        def main():
            model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
            model[1].register_forward_pre_hook(meet)
            threads = [threading.Thread(target=probe, args=(model, b)) for b in (1, 3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(sorted(RESULTS.items()))


        main()
        """,
        """
        import threading
        import copy

        barrier = threading.Barrier(2, timeout=20)
        RESULTS = {}


        def meet(module, args):
            barrier.wait()  # both threads are inside their region's call of the model


        def probe(model, batch):
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                x = torch.randn(batch, 4)
                model_fake = copy.deepcopy(
                    model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
                )
                y = model_fake(x)
                y.sum().backward()
                RESULTS[batch] = tuple(y.shape)


        def main():
            model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
            model[1].register_forward_pre_hook(meet)
            threads = [threading.Thread(target=probe, args=(model, b)) for b in (1, 3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(sorted(RESULTS.items()))


        main()
        """,
    ),
    # the leaked fake is computed at the op (`protos.t()`) in a function also called with
    # real data: the real operand is converted with the mode found at run time from `protos`
    "leaked_fake_computed_at_the_op_in_a_function_called_twice": (
        """
        def build_prototypes(n, dim):
            with FakeTensorMode(allow_non_fake_inputs=True):
                protos = torch.randn(n, dim)
            return protos


        def score(net, protos, query):
            z = net(query)
            return z @ protos.t()


        net = nn.Linear(6, 4)
        print(tuple(score(net, torch.randn(3, 4), torch.randn(5, 6)).shape))
        protos = build_prototypes(3, 4)
        logits = score(net, protos, torch.randn(5, 6))
        logits.sum().backward()
        print(tuple(logits.shape))
        """,
        """
        def build_prototypes(n, dim):
            with FakeTensorMode(allow_non_fake_inputs=True):
                protos = torch.randn(n, dim)
            return protos


        def score(net, protos, query):
            z = net(query)
            fake_mode = torch._guards.detect_fake_mode([protos])
            z_fake = z if fake_mode is None else fake_mode.from_tensor(z).detach().requires_grad_()
            return z_fake @ protos.t()


        net = nn.Linear(6, 4)
        print(tuple(score(net, torch.randn(3, 4), torch.randn(5, 6)).shape))
        protos = build_prototypes(3, 4)
        logits = score(net, protos, torch.randn(5, 6))
        logits.sum().backward()
        print(tuple(logits.shape))
        """,
    ),
    # `torch.func.grad` gradients written to `p.grad` by a helper called right after the
    # region: the call gets a fake copy of the module (the memoized fakes the region used)
    "func_grad_written_by_a_helper_after_the_region": (
        """
        from torch.func import functional_call, grad


        def loss_fn(params, model, x):
            return functional_call(model, params, (x,)).pow(2).mean()


        def apply_grads(model, grads):
            for name, p in model.named_parameters():
                p.grad = grads[name]


        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        params = dict(model.named_parameters())
        with FakeTensorMode(allow_non_fake_inputs=True):
            grads = grad(loss_fn)(params, model, torch.randn(8, 4))
            print(sorted((k, tuple(v.shape)) for k, v in grads.items()))
        apply_grads(model, grads)
        opt.step()
        """,
        """
        from torch.func import functional_call, grad
        import copy


        def loss_fn(params, model, x):
            return functional_call(model, params, (x,)).pow(2).mean()


        def apply_grads(model, grads):
            for name, p in model.named_parameters():
                p.grad = grads[name]


        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        params = dict(model.named_parameters())
        with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
            params_fake = {k: (fake_mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in params.items()}
            grads = grad(loss_fn)(params_fake, model, torch.randn(8, 4))
            print(sorted((k, tuple(v.shape)) for k, v in grads.items()))
        model_fake = copy.deepcopy(
            model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
        )
        apply_grads(model_fake, grads)
        opt.step()
        """,
    ),
}

# name -> (look-alike left untouched, the no-fix reason it reports or None when no finding)
VALID = {
    "container_of_unknown_type": (
        """
        def make(as_tuple=False):
            t = torch.randn(3, requires_grad=True)
            if as_tuple:
                return (t,)
            return [t]


        params = make()
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = params[0].sum()
            y.backward()
        """,
        "the type of `params` is not known",
    ),
    "deepcopy_under_fake_copy_mode_in_allow_region": (
        """
        import copy
        from torch._subclasses.fake_tensor import FakeCopyMode

        model = nn.Linear(4, 4)
        with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
            with FakeCopyMode(fake_mode):
                twin = copy.deepcopy(model)
            out = twin(torch.empty(2, 4))
        """,
        None,
    ),
    "gradients_read_after_a_real_step": (
        """
        model = nn.Linear(3, 2)
        with FakeTensorMode(allow_non_fake_inputs=True):
            model(torch.randn(4, 3)).sum().backward()
        model(torch.randn(4, 3)).sum().backward()
        print([p.grad.shape for p in model.parameters()])
        """,
        "reads the gradients of `model`'s parameters",
    ),
    "make_fx_real_tracing": (
        """
        from torch.fx.experimental.proxy_tensor import make_fx

        net = nn.Linear(3, 3)


        def f(x):
            loss = net(x).sum()
            loss.backward()
            return loss


        gm = make_fx(f, tracing_mode="real")(torch.randn(2, 3))
        """,
        None,
    ),
}


def _code(body: str) -> str:
    return HEAD + textwrap.dedent(body).lstrip("\n")


def _fixed(body: str) -> str:
    # an import the fix adds goes after the file's imports, then a blank line
    # (AddImportsVisitor): the example writes it first
    text = textwrap.dedent(body).lstrip("\n")
    if text.startswith("import copy\n") and not text.startswith("import copy\n\n"):
        return HEAD + "import copy\n\n" + text[len("import copy\n"):]
    return HEAD + text


class TestForms(CodemodTest):
    TRANSFORM = FixFakeGrad
    maxDiff = None


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_example_gets_its_fixed_code(name):
    before, after = INVALID[name]
    case = TestForms()
    case.assertCodemod(_code(before), _fixed(after), unsafe_fixes=True)


@pytest.mark.parametrize("name", sorted(INVALID))
def test_fixed_code_is_clean_and_a_second_fix_changes_nothing(name):
    _, after = INVALID[name]
    case = TestForms()
    case.assertCodemod(_fixed(after), _fixed(after), unsafe_fixes=True, expected_skip=True)


def _lint(tmp_path, text):
    path = tmp_path / "case.py"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "fakegrad_lint", "--isolated", "--no-cache", "--unsafe-fixes",
                           "--output-format", "json", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(VALID))
def test_look_alike_is_left_as_it_is(name, tmp_path):
    body, reason = VALID[name]
    case = TestForms()
    case.assertCodemod(_code(body), _code(body), unsafe_fixes=True, expected_skip=True)
    findings = _lint(tmp_path, _code(body))
    if reason is None:
        assert findings == [], findings
    else:
        assert findings and all(not f["fix"] or f["fix"]["applicability"] == "display-only" for f in findings)
        said = " ".join((f["no_fix"] or "") + " " + ((f["fix"] or {}).get("message") or "") for f in findings)
        assert reason in said, said


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(INVALID))
def test_fixed_code_runs_clean_with_the_same_output(name, tmp_path):
    pytest.importorskip("torch")
    sys.path.insert(0, str(TESTS_DIR))
    import oracle
    from test_fix_runtime import judge

    before, after = INVALID[name]
    a, b = tmp_path / "before.py", tmp_path / "after.py"
    a.write_text(_code(before), encoding="utf-8")
    b.write_text(_fixed(after), encoding="utf-8")
    res = oracle.run_fixtures([a, b], jobs=2)
    assert res[str(a)].outcome in ("hazard", "crash"), res[str(a)]
    assert judge(res[str(a)], res[str(b)]) == "ok", res[str(b)]
