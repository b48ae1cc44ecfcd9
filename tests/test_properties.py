"""Property-based tests (hypothesis) of the analyzer and the fix loop.

Two kinds of input:

- **generated programs**: small scripts built from the shapes of
  ``/work/shared/HAZARD.md``: a source of a real requires-grad value (factory,
  ``requires_grad_()``, ``.requires_grad = True``, ``nn.Parameter``, a derived
  value, an ``nn.Module``) x an import spelling x a way into the fake region
  (``with``, ``with ... as``, a mode variable, several items, nested, ``__enter__``)
  x allow/strict x a route (direct, helper argument, container, closure over a
  global) x a sink (backward inside/after, ``torch.autograd.backward``, none);
  and safe look-alikes (``from_tensor``, detach, created inside, metadata only,
  ``no_grad``, no requires-grad, name traps, the meta device, a mode never
  entered). The expected verdict is known by construction: strict -> FGL002 on
  the line of the op, allow + sink -> FGL001 there, allow without sink -> none
  of FGL001-3, look-alikes -> none of FGL001-3.
- **mutated fixtures**: ``fixtures/*.py`` with random token or line deletions,
  duplications and swaps.

Properties: ``check_source`` raises nothing but SyntaxError/ValueError; the
fix loop leaves a parsable program, is idempotent, and the fixed findings are
not reported again; a program without findings is byte-identical after fixing.

Fast: modest ``max_examples``, ``deadline=None``; a few seconds in all.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fakegrad_lint.fix import apply as fixes
from fakegrad_lint.engine.lint import check_source

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures").glob("*.py"))
HAZARD_CODES = {"FGL001", "FGL002", "FGL003"}
MARK = "# <-- op"
# the call that hands the real value to the function doing the op (reported there too)
HANDOVER = "# <-- handed over"

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def lint(text: str):
    return check_source(text, "x.py")


def parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------
# the program generator

IMPORTS = {
    "fake_tensor": ("from torch._subclasses.fake_tensor import FakeTensorMode", "FakeTensorMode"),
    "subclasses": ("from torch._subclasses import FakeTensorMode", "FakeTensorMode"),
    "alias": ("from torch._subclasses.fake_tensor import FakeTensorMode as FTM", "FTM"),
    "module_alias": ("import torch._subclasses.fake_tensor as ft", "ft.FakeTensorMode"),
    "full_chain": ("import torch._subclasses.fake_tensor", "torch._subclasses.fake_tensor.FakeTensorMode"),
}

# name -> (lines defining the value, the expression naming it, is a module)
SOURCES = {
    "factory": (["x = torch.randn(4, 3, requires_grad=True)"], "x", False),
    "method": (["x = torch.ones(4, 3).requires_grad_()"], "x", False),
    "attr": (["x = torch.ones(4, 3)", "x.requires_grad = True"], "x", False),
    "parameter": (["x = nn.Parameter(torch.ones(4, 3))"], "x", False),
    "derived": (["leaf = torch.randn(4, 3, requires_grad=True)", "x = leaf * 2"], "x", False),
    "module": (["model = nn.Linear(3, 3)"], "model", True),
    "params_list": (["lin = nn.Linear(3, 4)", "params = list(lin.parameters())"], "params[0]", False),
    "state_dict": (["lin = nn.Linear(3, 4)", "sd = lin.state_dict(keep_vars=True)"], 'sd["weight"]', False),
    "comprehension": (["xs = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]"], "xs[0]", False),
}
# what torch.autograd.grad asks gradients for, per source
GRAD_INPUTS = {
    "factory": "[x]", "method": "[x]", "attr": "[x]", "parameter": "[x]", "derived": "[leaf]",
    "module": "list(model.parameters())", "params_list": "params", "state_dict": '[sd["weight"]]', "comprehension": "xs",
}

ENTRIES = ("with", "with_as", "variable", "multi_item", "nested", "enter_exit", "exit_stack", "contextmanager", "conditional")
ROUTES = ("direct", "helper", "container", "closure", "method_self", "leaked_mix")
SINKS = ("backward_inside", "backward_after", "autograd_backward", "autograd_grad", "none")


def use(expr: str, module: bool) -> str:
    """An op on the value: dispatches on it."""
    return f"{expr}(torch.randn(4, 3))" if module else f"({expr} * 2)"


def region(mode_cls: str, allow: bool, entry: str, body: list[str], after: list[str]) -> list[str]:
    """Lines that run ``body`` inside the fake region, then ``after``."""
    args = "allow_non_fake_inputs=True" if allow else ""
    mode = f"{mode_cls}({args})"
    ind = "    "
    if entry == "with":
        return [f"with {mode}:"] + [ind + b for b in body] + after
    if entry == "with_as":
        return [f"with {mode} as fm:"] + [ind + b for b in body] + after
    if entry == "variable":
        return [f"fm = {mode}", "with fm:"] + [ind + b for b in body] + after
    if entry == "multi_item":
        return [f"with contextlib.nullcontext(), {mode}:"] + [ind + b for b in body] + after
    if entry == "nested":
        return [f"with {mode}:", ind + "with contextlib.nullcontext():"] + [ind * 2 + b for b in body] + after
    if entry == "enter_exit":
        return [f"fm = {mode}", "fm.__enter__()"] + body + ["fm.__exit__(None, None, None)"] + after
    if entry == "exit_stack":
        return ["with contextlib.ExitStack() as stack:", ind + f"stack.enter_context({mode})"] + [ind + b for b in body] + after
    if entry == "contextmanager":
        return (
            ["@contextlib.contextmanager", "def fake_region():", ind + f"with {mode}:", ind * 2 + "yield", "", "with fake_region():"]
            + [ind + b for b in body]
            + after
        )
    if entry == "conditional":
        return ["use_fake = True", f"ctx = {mode} if use_fake else contextlib.nullcontext()", "with ctx:"] + [ind + b for b in body] + after
    raise AssertionError(entry)


def hazard_program(imp: str, source: str, entry: str, allow: bool, route: str, sink: str) -> str:
    import_line, mode_cls = IMPORTS[imp]
    src_lines, name, module = SOURCES[source]
    head = ["import contextlib", "import torch", "from torch import nn", import_line, ""]
    defs: list[str] = []
    if route == "direct":
        body = [f"y = {use(name, module)}.sum()  {MARK}"]
    elif route == "helper":
        defs = ["def helper(t):", f"    return {use('t', module)}.sum()  {MARK}", ""]
        body = [f"y = helper({name})  {HANDOVER}"]
    elif route == "container":
        body = [f"y = {use('box[0]', module)}.sum()  {MARK}"]
        src_lines = src_lines + [f"box = [{name}]"]
    elif route == "closure":
        defs = ["def compute():", f"    return {use(name, module)}.sum()  {MARK}", ""]
        body = ["y = compute()"]
    elif route == "method_self":
        defs = [
            "class Holder:",
            "    def __init__(self, v):",
            "        self.v = v",
            "",
            "    def run(self):",
            f"        return {use('self.v', module)}.sum()  {MARK}",
            "",
        ]
        src_lines = src_lines + [f"holder = Holder({name})"]
        body = [f"y = holder.run()  {HANDOVER}"]
    elif route == "leaked_mix":
        # a fake made in the region meets the real value after it (FGL003)
        body = ["f = torch.randn(4, 3)"]
        mix = f"{name}(f)" if module else f"(f * {name})"
        after = [f"y = {mix}.sum()  {MARK}"] + _sink_lines(sink, source, inside=None) + ["print(tuple(y.shape))"]
        return "\n".join(head + defs + src_lines + region(mode_cls, allow, entry, body, after)) + "\n"
    else:
        raise AssertionError(route)
    after: list[str] = []
    body.extend(_sink_lines(sink, source, inside=True))
    after.extend(_sink_lines(sink, source, inside=False))
    after.append("print(tuple(y.shape))")
    return "\n".join(head + defs + src_lines + region(mode_cls, allow, entry, body, after)) + "\n"


def _sink_lines(sink: str, source: str, inside: bool | None) -> list[str]:
    """The sink's lines for the region body (inside=True), after it (False), or
    all of them after a mix outside the region (None)."""
    where = {"backward_inside": True, "autograd_backward": True, "autograd_grad": True, "backward_after": False}.get(sink)
    if where is None or (inside is not None and where != inside):
        return []
    if sink in ("backward_inside", "backward_after"):
        return ["y.backward()"]
    if sink == "autograd_backward":
        return ["torch.autograd.backward(y)"]
    return [f"grads = torch.autograd.grad(y, {GRAD_INPUTS[source]})"]


def expected_hazard(text: str, allow: bool, sink: str, route: str = "") -> set[tuple[str, int]]:
    row = next(i for i, line in enumerate(text.splitlines(), start=1) if MARK in line)
    handed = [i for i, line in enumerate(text.splitlines(), start=1) if HANDOVER in line]
    if handed:
        return {(code, r) for code, _ in expected_hazard(text.replace(HANDOVER, ""), allow, sink, route) for r in (row, *handed)}
    if route == "leaked_mix":
        # a fake leaked from a strict mode raises when it meets the real value
        if not allow:
            return {("FGL002", row)}
        return set() if sink == "none" else {("FGL003", row)}
    if not allow:
        return {("FGL002", row)}
    if sink == "none":
        return set()
    return {("FGL001", row)}


SAFE_SHAPES = (
    "from_tensor",
    "detach_before",
    "detach_inside",
    "created_inside",
    "metadata",
    "no_grad",
    "inference_mode",
    "nongrad_source",
    "name_trap",
    "requires_grad_after",
    "meta_device",
    "mode_never_entered",
    "unset_fake",
    "conditional_false",
)


def safe_program(shape: str, imp: str, source: str, entry: str, sink: str) -> str:
    """A look-alike: the same scaffolding as a hazard, made safe by ``shape``."""
    import_line, mode_cls = IMPORTS[imp]
    src_lines, name, module = SOURCES[source]
    if module and shape in ("from_tensor", "detach_before", "detach_inside"):
        source, (src_lines, name, module) = "factory", SOURCES["factory"]
    head = ["import contextlib", "import torch", "from torch import nn", import_line, ""]
    pre: list[str] = list(src_lines)
    sink_lines = _sink_lines(sink, source, inside=True)
    after_sink = ["y.backward()"] if sink == "backward_after" else []
    tail = ["print(tuple(y.shape))"]
    allow_mode = f"{mode_cls}(allow_non_fake_inputs=True)"
    if shape == "from_tensor":
        body = [f"xf = fm.from_tensor({name})", f"y = {use('xf', module)}.sum()"] + sink_lines
        return "\n".join(head + pre + [f"with {allow_mode} as fm:"] + ["    " + b for b in body] + after_sink + tail) + "\n"
    if shape == "detach_before":
        pre.append(f"xd = {name}.detach()")
        body = [f"y = {use('xd', module)}.sum()"] + sink_lines
    elif shape == "detach_inside":
        body = [f"y = {use(name + '.detach()', module)}.sum()"] + sink_lines
    elif shape == "created_inside":
        body = list(src_lines) + [f"y = {use(name, module)}.sum()"] + sink_lines
        pre = []
    elif shape == "metadata":
        shape_of = f"{name}.weight.shape" if module else f"{name}.shape"
        body = [f"buf = torch.zeros({shape_of}, requires_grad=True)", "y = (buf * 2).sum()"] + sink_lines
    elif shape in ("no_grad", "inference_mode"):
        guard = "torch.no_grad()" if shape == "no_grad" else "torch.inference_mode()"
        body = [f"with {guard}:", f"    y = {use(name, module)}.sum()"]
        after_sink = []
    elif shape == "nongrad_source":
        pre = ["x = torch.randn(4, 3)"]
        body = [f"y = {use('x', False)}.sum()"] + sink_lines
    elif shape == "name_trap":
        body = [f"y = {use(name, module)}.sum()"] + sink_lines
        return "\n".join(
            head + pre + ["fake_mode = contextlib.nullcontext()", "with fake_mode:"] + ["    " + b for b in body] + after_sink + tail
        ) + "\n"
    elif shape == "requires_grad_after":
        pre = ["x = torch.ones(4, 3)"]
        body = [f"y = {use('x', False)}.sum()"]
        after_sink = ["x.requires_grad_()"]
    elif shape == "meta_device":
        body = [f"y = {use(name, module)}.sum()"] + sink_lines
        return "\n".join(head + pre + ['with torch.device("meta"):'] + ["    " + b for b in body] + after_sink + tail) + "\n"
    elif shape == "unset_fake":
        head.append("from torch._subclasses.fake_tensor import unset_fake_temporarily")
        body = ["with unset_fake_temporarily():", f"    y = {use(name, module)}.sum()"] + ["    " + b for b in sink_lines]
    elif shape == "conditional_false":
        body = [f"y = {use(name, module)}.sum()"] + sink_lines
        return "\n".join(
            head + pre
            + ["use_fake = False", f"ctx = {allow_mode} if use_fake else contextlib.nullcontext()", "with ctx:"]
            + ["    " + b for b in body] + after_sink + tail
        ) + "\n"
    elif shape == "mode_never_entered":
        body = [f"y = {use(name, module)}.sum()"] + sink_lines
        return "\n".join(head + pre + [f"fm = {allow_mode}"] + body + after_sink + tail) + "\n"
    else:
        raise AssertionError(shape)
    return "\n".join(head + pre + region(mode_cls, True, entry, body, after_sink + tail)) + "\n"


def verdict(text: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in lint(text) if f.code in HAZARD_CODES}


# Regression cases: generated programs that were once misclassified (a mode class
# imported under an alias and entered in a @contextmanager helper).
REGRESSION_CASES = [
    ("alias", "factory", "contextmanager", True, "direct", "backward_inside"),
    ("alias", "module", "contextmanager", True, "helper", "backward_after"),
    ("alias", "parameter", "contextmanager", False, "direct", "none"),
    ("alias", "factory", "contextmanager", True, "leaked_mix", "backward_after"),
]


hazard_args = st.tuples(
    st.sampled_from(sorted(IMPORTS)),
    st.sampled_from(sorted(SOURCES)),
    st.sampled_from(ENTRIES),
    st.booleans(),
    st.sampled_from(ROUTES),
    st.sampled_from(SINKS),
)
safe_args = st.tuples(
    st.sampled_from(SAFE_SHAPES),
    st.sampled_from(sorted(IMPORTS)),
    st.sampled_from(sorted(SOURCES)),
    st.sampled_from(ENTRIES),
    st.sampled_from(SINKS),
)


@pytest.mark.slow  # 200 generated programs: slow tier (CI runs it)
@settings(PROPS, max_examples=200)
@given(hazard_args)
def test_generated_hazards_get_the_right_verdict(args):
    _imp, _source, _entry, allow, route, sink = args
    text = hazard_program(*args)
    assert verdict(text) == expected_hazard(text, allow, sink, route), text


@settings(PROPS, max_examples=200)
@given(safe_args)
def test_generated_lookalikes_are_not_flagged(args):
    text = safe_program(*args)
    assert verdict(text) == set(), text


@pytest.mark.parametrize("args", REGRESSION_CASES, ids=["-".join(map(str, a)) for a in REGRESSION_CASES])
def test_regression_cases(args):
    text = hazard_program(*args)
    assert verdict(text) == expected_hazard(text, args[3], args[5], args[4]), text


def test_generator_covers_every_dimension():
    """The generator itself: each hazard program parses and marks exactly one op line."""
    for source in SOURCES:
        for entry in ENTRIES:
            for route in ROUTES:
                text = hazard_program("fake_tensor", source, entry, True, route, "backward_inside")
                assert parses(text) and text.count(MARK) == 1, text
    for shape in SAFE_SHAPES:
        for source in SOURCES:
            assert parses(safe_program(shape, "alias", source, "with", "backward_after"))


# ---------------------------------------------------------------------------
# fix properties (shared by generated and mutated programs)


def _key(f) -> tuple[str, str]:
    return f.code, re.sub(r"\d+", "N", f.message)


def check_fix_properties(text: str) -> None:
    try:
        found = lint(text)
    except (SyntaxError, ValueError):
        assert not parses(text)
        return
    outcome = fixes.fix_text(text, lint, unsafe=True)
    # a fixed program parses (text the prefilter never parses may be broken already,
    # and is then returned untouched)
    assert parses(outcome.text) or (not outcome.changed and not parses(text)), outcome.text
    assert outcome.stop_reason == "converged", (outcome.stop_reason, outcome.error, text)
    assert outcome.rejected == [], text
    if not found:
        assert outcome.text == text and not outcome.changed
        return
    # idempotent
    again = fixes.fix_text(outcome.text, lint, unsafe=True)
    assert again.text == outcome.text and not again.changed, outcome.text
    # the fixed findings are gone (findings that had no applicable fix may stay)
    unfixable = Counter(_key(f) for f in found if not fixes.is_applicable(f.fix, unsafe=True))
    remaining = Counter(_key(f) for f in lint(outcome.text))
    for f in outcome.applied:
        assert remaining[_key(f)] <= unfixable[_key(f)], (f, outcome.text)


@pytest.mark.slow  # generated programs fixed and re-linted: slow tier (CI runs it)
@PROPS
@given(hazard_args)
def test_fix_properties_on_generated_hazards(args):
    check_fix_properties(hazard_program(*args))


@PROPS
@given(safe_args)
def test_fix_properties_on_generated_lookalikes(args):
    check_fix_properties(safe_program(*args))


# ---------------------------------------------------------------------------
# mutations of the fixtures


def _token_spans(text: str) -> list[tuple[int, int]]:
    starts = fixes.line_starts(text)
    spans = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT, tokenize.INDENT, tokenize.NL, tokenize.NEWLINE):
                continue
            (sr, sc), (er, ec) = tok.start, tok.end
            spans.append((starts[sr - 1] + sc, starts[er - 1] + ec))
    except (tokenize.TokenError, SyntaxError):
        pass
    return spans


@st.composite
def mutated_fixture(draw):
    path = draw(st.sampled_from(FIXTURES))
    assume(path.exists())  # the corpus may change under a long run
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["del_tok", "dup_tok", "swap_tok", "del_line", "dup_line", "swap_line"]))
        if op.endswith("tok"):
            spans = _token_spans(text)
            if len(spans) < 2:
                continue
            i = draw(st.integers(0, len(spans) - 2))
            (a0, a1), (b0, b1) = spans[i], spans[i + 1]
            if op == "del_tok":
                text = text[:a0] + text[a1:]
            elif op == "dup_tok":
                text = text[:a1] + " " + text[a0:a1] + text[a1:]
            else:
                text = text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]
        else:
            lines = text.splitlines(keepends=True)
            if len(lines) < 2:
                continue
            i = draw(st.integers(0, len(lines) - 2))
            if op == "del_line":
                del lines[i]
            elif op == "dup_line":
                lines.insert(i, lines[i])
            else:
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
            text = "".join(lines)
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(mutated_fixture())
def test_mutated_fixtures_never_crash_the_analyzer(text):
    try:
        lint(text)
    except (SyntaxError, ValueError):
        assert not parses(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(mutated_fixture())
def test_fix_properties_on_mutated_fixtures(text):
    check_fix_properties(text)


# every fixture in the slow tier; every eighth in the default tier (a whole-corpus run)
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.name, marks=() if i % 8 == 0 else pytest.mark.slow) for i, p in enumerate(FIXTURES)],
)
def test_fix_properties_on_fixtures(path):
    check_fix_properties(path.read_text(encoding="utf-8"))


def test_absurd_nesting_is_a_recursion_error_at_worst():
    text = "from torch._subclasses import FakeTensorMode\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    try:
        lint(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
