"""The facts the analysis hands to the rules: one Leak per place where a real
requires-grad value enters fake computation."""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, field


@dataclass(eq=False)
class FixPlan:
    """How a leak can be fixed at its region: a fact of the analysis, which the fix
    builders (``fakegrad_lint.fix``) turn into edits; the analysis never imports fix code."""

    # "tensor" | "container" | "module" | "module-copy" | "module-deepcopy" | "leaked-tensor" |
    # "leaked-module" (also: converted at the op with a fake operand's mode) | "traced-tensor" |
    # "traced-module" (in a function traced by make_fx)
    kind: str
    value: str  # "x", "self.w", "model"
    with_node: object  # ast.With or analysis.state.PseudoWith (None for leaked-*)
    item_index: int
    mode_name: str | None  # how the region's mode can be named inside it, if bound
    uses: list  # expressions to rewrite (calls, for modules); filled by the analysis
    module_tree: ast.Module
    derived: bool = False  # the real value is not a leaf (computed from one)
    conditional: bool = False  # the mode was picked by a conditional expression
    grad_reads: list = field(default_factory=list)
    # id(For node) -> expression of the real module the loop draws from (see the analysis)
    loop_modules: dict = field(default_factory=dict)
    # what a container holds, as the analysis proved it (see ``describe_container``)
    contents: object = None
    # "region": the edit lands in the block that opened the region (``with_node``);
    # "function": in ``func_node``, the function (or module) whose code leaks, which runs
    # inside a region opened elsewhere (a caller, a decorator's wrapper, a context-manager
    # class): the mode is found at run time (``torch._guards.detect_fake_mode()``)
    placement: str = "region"
    func_node: object = None
    helper: str | None = None  # the helper a module-copy is handed to (``train_step(model_fake, ...)``)
    grad_redirect: bool = False  # set by the fix builder: the code's gradient reads go to the copy
    # lines of `p.grad = g` statements that write gradients computed in the region (`torch.func.grad`)
    # to the real value: the fix writes them to its fake copy instead
    grad_writes: list = field(default_factory=list)
    # kind "none": no conversion is known for the leak's shape; the finding says why (``no fix: ...``)
    reason: str | None = None
    # the mode makes symbolic shapes (``make_fx(..., tracing_mode="symbolic")``): a fake copy made
    # there needs ``from_tensor(t, static_shapes=True)``, or its fresh SymInts are unknown to the
    # tracer (``RuntimeError: s0 is not tracked with proxy``, measured on torch 2.13)
    static_shapes: bool = False
    # the project module whose text the edit lands in, when it is not the linted file (the
    # project fix pass, ``fakegrad_lint.fix.projects``): ``module_tree`` is that module's tree
    path: str | None = None
    # kind "module": the attribute paths (``model.embed.weight``) the analysis proved to be
    # parameters of the module, which `fake_mode.from_tensor` maps to the fakes its fixed call
    # holds (``fix/grads.py``: ``torch.autograd.grad(loss, [model.embed.weight])``)
    param_paths: frozenset = frozenset()
    # ``mode_name`` is ``x.fake_mode`` of a name inside the fake operand (``protos`` of
    # ``protos.t()``), not of the fake operand itself: the fix finds the mode at run time
    # (``fix/operand_mode.py``)
    mode_from_root: bool = False


def describe_container(value, depth: int = 0):
    """What a container value holds, as plain data for the fix builders: ``"tensor"``
    (a leaf), ``"derived"`` (a tensor computed from a requires-grad one), ``("dict", x)``,
    ``("seq", x)`` (``x`` describing every element), ``"any"`` (not only tensors, or not
    known: converted behind an ``isinstance`` check) or None (no container)."""
    from fakegrad_lint.analysis.values import SeqVal, TVal

    if isinstance(value, TVal):
        return "derived" if value.derived else "tensor"
    if not isinstance(value, SeqVal) or depth > 3:
        return "any" if depth else None
    parts = {describe_container(v, depth + 1) for v in value.items} or {"any"}
    if len(parts) == 1:
        inner = parts.pop()
    elif parts <= {"tensor", "derived"}:
        inner = "derived"
    else:
        inner = "any"
    return ("dict" if value.is_dict else "seq", inner)


class Verdict(str, enum.Enum):
    HAZARD = "hazard"  # allow_non_fake_inputs=True and a backward/grad follows: silent fake grads
    CRASH = "crash"  # a strict (default) mode: AssertionError at run time
    FORWARD_ONLY = "forward-only"  # allowed, but no backward/grad reachable


class Route(str, enum.Enum):
    IN_REGION = "in-region"  # used inside an active fake mode
    LEAKED_MIX = "leaked-mix"  # mixed with a fake tensor that leaked out of its region


@dataclass(frozen=True)
class Step:
    """One link of a finding's chain: ``kind`` is "source" (where the real
    requires-grad value was made), "call" (where it enters a helper of another
    module), "region" (where the fake region was entered), "leak" (the op) or
    "sink" (the backward / grad). ``path`` is None for the linted file."""

    kind: str
    message: str
    path: str | None
    start: tuple[int, int]
    end: tuple[int, int]


@dataclass
class Leak:
    verdict: Verdict
    route: Route
    # range of the expression where the real value enters the fake op
    # (row 1-based, column 0-based characters)
    start: tuple[int, int]
    end: tuple[int, int]
    value: str  # how the code names the real value: "x", "model", "self.net"
    value_kind: str  # "tensor", "parameter", "module", "parameters"
    mode: str  # "FakeTensorMode(allow_non_fake_inputs=True)"
    mode_line: int
    sink: str | None = None  # ".backward()", "torch.autograd.grad"
    sink_line: int | None = None
    fix: object | None = field(default=None, compare=False)  # a fix plan, see fakegrad_lint.fix.builders
    trace: tuple = field(default=(), compare=False)  # Step, ...
    mode_path: str | None = None  # the region's module when it is not the linted file
    sink_path: str | None = None  # the sink's module when it is not the linted file
    # other values that leak at the same place (one finding stands for them all)
    also: list = field(default_factory=list, compare=False)
