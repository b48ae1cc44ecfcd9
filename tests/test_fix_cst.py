"""The libcst fix engine (``fakegrad_lint/fix/cst.py``), one transformer at a time,
tested like Fixit's rules: ``assertCodemod(before, after)`` through the real LibCST
codemod test case (``libcst.codemod.CodemodTest``) on the project's codemod, which runs
the same analysis, builders and fix loop as ``fakegrad-lint --fix --unsafe-fixes``.
Plus the pieces under it: nodes found by position, names unique in their libcst
scope, edits diffed from the transformed module."""

from __future__ import annotations

import textwrap

import pytest
from libcst.codemod import CodemodTest

from fakegrad_lint.findings import Edit, Location
from fakegrad_lint.fix.apply import apply_edits
from fakegrad_lint.fix.cst import CstError, CstFile, Ops, diff_edits
from fakegrad_lint.integrations.codemod import FixFakeGrad

HEAD = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

"""


class TestTransformers(CodemodTest):
    TRANSFORM = FixFakeGrad

    def check(self, before: str, after: str) -> None:
        self.assertCodemod(HEAD + textwrap.dedent(before), HEAD + textwrap.dedent(after), unsafe_fixes=True)

    def test_as_name_and_hoist_at_the_start_of_the_with_body(self):
        self.check(
            """
            w = torch.randn(3, requires_grad=True)
            with FakeTensorMode(allow_non_fake_inputs=True):
                y = (w * 2).sum()
                y.backward()
            """,
            """
            w = torch.randn(3, requires_grad=True)
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                w_fake = fake_mode.from_tensor(w)
                y = (w_fake * 2).sum()
                y.backward()
            """,
        )

    def test_as_name_goes_to_the_right_with_item(self):
        self.check(
            """
            w = torch.randn(3, requires_grad=True)
            with torch.enable_grad(), FakeTensorMode(allow_non_fake_inputs=True):
                y = (w * 2).sum()
                y.backward()
            """,
            """
            w = torch.randn(3, requires_grad=True)
            with torch.enable_grad(), FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                w_fake = fake_mode.from_tensor(w)
                y = (w_fake * 2).sum()
                y.backward()
            """,
        )

    def test_bind_the_entered_mode_and_hoist_after_what_the_block_does_first(self):
        # the comments that lead into the statement stay with it
        self.check(
            """
            import contextlib
            w = torch.randn(3, requires_grad=True)
            with contextlib.ExitStack() as stack:
                stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
                h = torch.ones(3)

                # scale it
                y = (w * h).sum()
                y.backward()
            """,
            """
            import contextlib
            w = torch.randn(3, requires_grad=True)
            with contextlib.ExitStack() as stack:
                fake_mode = stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
                h = torch.ones(3)

                w_fake = fake_mode.from_tensor(w)
                # scale it
                y = (w_fake * h).sum()
                y.backward()
            """,
        )

    def test_one_line_with_becomes_a_block(self):
        self.check(
            """
            w = torch.randn(3, requires_grad=True)
            with FakeTensorMode(allow_non_fake_inputs=True): z = (w * 2).sum(); z.backward()  # one line
            """,
            """
            w = torch.randn(3, requires_grad=True)
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                w_fake = fake_mode.from_tensor(w)
                z = (w_fake * 2).sum(); z.backward()  # one line
            """,
        )

    def test_module_call_wrapped_keeps_the_comments_in_its_arguments(self):
        self.check(
            """
            model = torch.nn.Linear(3, 2)
            with FakeTensorMode(allow_non_fake_inputs=True):
                out = model(
                    # the input
                    torch.randn(4, 3),  # keep me
                )
                out.sum().backward()
            """,
            """
            model = torch.nn.Linear(3, 2)
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                model_fake_state = {
                    name: fake_mode.from_tensor(t)
                    for name, t in [*model.named_parameters(), *model.named_buffers()]
                }
                out = torch.func.functional_call(model, model_fake_state, (
                    # the input
                    torch.randn(4, 3),  # keep me
                ))
                out.sum().backward()
            """,
        )

    def test_module_copy_is_a_deepcopy_over_a_from_tensor_memo(self):
        # `import copy` through AddImportsVisitor, after the file's imports; no FakeCopyMode
        # (it raises under a strict mode): the memo hands deepcopy each fake parameter; the
        # line over the file's length gets its arguments on a line of their own
        self.assertCodemod(
            """
            import torch
            from torch._subclasses.fake_tensor import FakeTensorMode

            model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 3))
            with FakeTensorMode(allow_non_fake_inputs=True):
                h = torch.randn(2, 3)
                for layer in model.children():
                    h = layer(h)
                h.sum().backward()
            """,
            """
            import torch
            from torch._subclasses.fake_tensor import FakeTensorMode
            import copy

            model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 3))
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                h = torch.randn(2, 3)
                model_fake = copy.deepcopy(
                    model, {id(t): fake_mode.from_tensor(t) for t in [*model.parameters(), *model.buffers()]}
                )
                for layer in model_fake.children():
                    h = layer(h)
                h.sum().backward()
            """,
            unsafe_fixes=True,
        )

    def test_import_torch_after_docstring_and_future_above_the_region(self):
        self.assertCodemod(
            '''
            """Doc."""
            from __future__ import annotations
            from torch import nn
            from torch._subclasses.fake_tensor import FakeTensorMode
            model = nn.Linear(3, 2)
            with FakeTensorMode(allow_non_fake_inputs=True):
                out = model(model.weight.new_zeros(4, 3))
                out.sum().backward()
            import torch
            ''',
            '''
            """Doc."""
            from __future__ import annotations
            from torch import nn
            from torch._subclasses.fake_tensor import FakeTensorMode
            import torch

            model = nn.Linear(3, 2)
            with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                model_fake_state = {
                    name: fake_mode.from_tensor(t)
                    for name, t in [*model.named_parameters(), *model.named_buffers()]
                }
                out = torch.func.functional_call(
                    model, model_fake_state, (model.weight.new_zeros(4, 3),),
                )
                out.sum().backward()
            import torch
            ''',
            unsafe_fixes=True,
        )

    def test_names_unique_in_their_scope_not_in_the_text(self):
        # a word in a string, an attribute and another function's local are no bindings here
        self.check(
            """
            def other():
                fake_mode = 1
                return fake_mode

            def main(cfg):
                print("fake_mode", cfg.w_fake)
                w = torch.randn(3, requires_grad=True)
                with FakeTensorMode(allow_non_fake_inputs=True):
                    y = (w * 2).sum()
                    y.backward()
            """,
            """
            def other():
                fake_mode = 1
                return fake_mode

            def main(cfg):
                print("fake_mode", cfg.w_fake)
                w = torch.randn(3, requires_grad=True)
                with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
                    w_fake = fake_mode.from_tensor(w)
                    y = (w_fake * 2).sum()
                    y.backward()
            """,
        )

    def test_a_name_the_scope_reads_is_taken(self):
        # `fake_mode` is a global that `main` reads: the new local gets another name
        self.check(
            """
            fake_mode = "cpu"

            def main():
                w = torch.randn(3, requires_grad=True)
                with FakeTensorMode(allow_non_fake_inputs=True):
                    y = (w * 2).sum()
                    y.backward()
                return fake_mode
            """,
            """
            fake_mode = "cpu"

            def main():
                w = torch.randn(3, requires_grad=True)
                with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode2:
                    w_fake = fake_mode2.from_tensor(w)
                    y = (w_fake * 2).sum()
                    y.backward()
                return fake_mode
            """,
        )


# ---------------------------------------------------------------------------
# the pieces


def test_node_at_finds_the_expression_by_its_range():
    f = CstFile("y = (x) * foo.bar\n")
    assert f.node_at((1, 5), (1, 6)).value == "x"  # the Name, with its parentheses
    assert f.module.code_for_node(f.node_at((1, 10), (1, 17))) == "foo.bar"
    with pytest.raises(CstError):
        f.node_at((1, 0), (1, 3))


def test_statement_at_is_the_innermost_statement():
    f = CstFile("with m:\n    a = 1; b = 2\n    if c:\n        d()\n")
    assert f.module.code_for_node(f.statement_at((2, 11))).strip() == "a = 1; b = 2"
    assert f.module.code_for_node(f.statement_at((4, 8))).strip() == "d()"


def test_crlf_and_cr_files_edit_at_the_same_rows_and_columns():
    for nl in ("\r\n", "\r"):
        text = nl.join(["with m:", "    y = x + 1", ""])
        f = CstFile(text)
        ops = Ops(f)
        ops.replace(f.node_at((2, 8), (2, 9)), "x_fake")
        assert apply_edits(text, ops.edits()) == nl.join(["with m:", "    y = x_fake + 1", ""])


def test_diff_edits_are_minimal_and_never_cut_a_word():
    old = "with m:\n    y = x + 1\n"
    new = "with m as fake_mode:\n    y = x_fake + 1\n"
    edits = diff_edits(old, new)
    assert edits == [Edit(Location(1, 6), Location(1, 6), " as fake_mode"),
                     Edit(Location(2, 8), Location(2, 9), "x_fake")]
    assert apply_edits(old, edits) == new
    inserted = diff_edits("a\nb\n", "a\nc = 1\nb\n")
    assert inserted == [Edit(Location(2, 0), Location(2, 0), "c = 1\n")]


def test_the_parse_is_made_once_per_source():
    assert CstFile.of("x = 1\n") is CstFile.of("x = 1\n")


# ---------------------------------------------------------------------------
# the proof's names bound before use: libcst scopes of the fixed text


def _unbound(old: str, new_text: str):
    """Insert ``new_text`` where ``old`` has ``<>`` and ask the proof what is unbound."""
    import ast

    from fakegrad_lint.fix.proof import _unbound_inserted_names

    at = old.index("<>")
    text = old[:at] + new_text + old[at + 2:]
    return _unbound_inserted_names(text, ast.parse(text), [(at, at + 2, new_text)])


@pytest.mark.parametrize("old, new_text, want", [
    # a module binding made only after the read
    ("y = <>\nimport torch\n", "torch.ones(1)", ("torch", 1)),
    # made before it
    ("import torch\ny = <>\n", "torch.ones(1)", None),
    # a local bound later in the function: UnboundLocalError
    ("def f():\n    y = <>\n    w_fake = 1\n", "w_fake", ("w_fake", 2)),
    # an enclosing function's binding: the closure runs later
    ("def f():\n    def g():\n        return <>\n    m = 1\n    return g\n", "m", None),
    # a comprehension's own variable, read before its `for` is written
    ("import torch\ny = <>\n", "{n: t for n, t in []}", None),
    # a class body's name is not visible in its methods
    ("class C:\n    m = 1\n    def f(self):\n        return <>\n", "m", ("m", 4)),
    # `global`: the module binding before the read (one made only later is not counted)
    ("g = 1\ndef f():\n    global g\n    return <>\n", "g", None),
    ("def f():\n    global g\n    return <>\ng = 1\n", "g", ("g", 3)),
    # builtins
    ("y = <>\n", "dict(a=1)", None),
])
def test_inserted_names_are_bound_before_use(old, new_text, want):
    assert _unbound(old, new_text) == want
