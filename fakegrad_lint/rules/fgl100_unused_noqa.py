"""FGL100: a ``# noqa: FGL...`` code that silences nothing.

Reported by the engine's ``# noqa`` pass (:mod:`fakegrad_lint.engine.noqa`),
after the other rules ran on the file, so the rule has no predicate over leaks.
"""

from fakegrad_lint.rules.base import Rule

CODE = "FGL100"

RULE = Rule(
    code=CODE,
    name="unused-noqa",
    summary="Unused `# noqa` directive (opt-in)",
    what=(
        "A code in a `# noqa: FGL...` list (or a `# fakegrad-lint: noqa: FGL...` line) that "
        "silenced no finding: the code no longer finds anything there, or its rule is not "
        "selected. Bare `# noqa` and other tools' codes (`E501`) are never reported. Off by "
        "default: enable it with `--report-unused-noqa` or `--extend-select FGL100`."
    ),
    why=(
        "A stale directive hides the next real finding on its line: when the code changes "
        "back, the hazard it names is silenced before anyone sees it."
    ),
    fix_safety=(
        "Safe: the fix removes the unused codes from the list, or the whole directive when "
        "none is left (with the blanks before it, and the comment when nothing else is in "
        "it); the code itself is never touched."
    ),
    invalid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3)  # no longer requires grad
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (x * 2).sum()  # noqa: FGL001  # FGL100
print(tuple(y.shape))
""",
    ),
    valid=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(4, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (w * 2).sum()  # noqa: FGL001 (this one silences a finding)
    y.backward()
print(tuple(y.shape))
""",
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (x * 2).sum()  # noqa: E501 (other tools' codes are never reported)
    z = (x * 3).sum()  # noqa
print(tuple(y.shape), tuple(z.shape))
""",
    ),
    # What `--fix --unsafe-fixes` writes for each invalid example (None: no fix),
    # checked like Fixit's expected_replacement.
    invalid_fixed=(
        """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3)  # no longer requires grad
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (x * 2).sum()    # FGL100
print(tuple(y.shape))
""",
    ),
    fixed_example="""\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 3)  # no longer requires grad
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (x * 2).sum()
print(tuple(y.shape))
""",
    fix="safe",
    default=False,
    runtime_kind=None,  # a comment: nothing happens at run time
    reported_by="noqa",
    tags=(),
)
