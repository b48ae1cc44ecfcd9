"""Every fix is proved before it is offered (``fakegrad_lint.fix.proof``), and the
ordered applicability decides, in one place, what applies.

The broken fixes here are made by hand and handed to the real checker in place of
the builder's, so each proof step is seen to reject its own kind of failure; the
finding then has no fix and says why, in the text and JSON output too.
"""

from __future__ import annotations

import pytest

from fakegrad_lint.engine import lint as checker
from fakegrad_lint.fix import builders as fix_builders
from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location, applies, hidden_unsafe
from fakegrad_lint.fix.proof import prove

SRC = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True) as m:
    y = (x * 2).sum()
    y.backward()
print(tuple(y.shape))
"""


def at(row, col):
    return Location(row, col)


GOOD = Fix("convert", Applicability.SAFE, (Edit(at(6, 9), at(6, 10), "m.from_tensor(x)"),))
BAD = {
    "the fixed text does not parse": Fix("broken", Applicability.SAFE, (Edit(at(6, 9), at(6, 10), "(x"),)),
    "`x_fake` would be read on line 6 before it is bound": Fix(
        "use before the hoist", Applicability.SAFE,
        (Edit(at(6, 9), at(6, 10), "x_fake"), Edit(at(7, 0), at(7, 0), "    x_fake = m.from_tensor(x)\n"))),
    "re-linted, the finding is still there": Fix("no-op", Applicability.SAFE, (Edit(at(6, 9), at(6, 10), "(x)"),)),
    "its edits do not apply": Fix("outside", Applicability.SAFE, (Edit(at(60, 0), at(60, 0), "x"),)),
}


@pytest.fixture
def with_fix(monkeypatch):
    def install(fix):
        monkeypatch.setattr(fix_builders, "build_fix", lambda leak, source: fix)

    return install


def test_a_proved_fix_is_offered(with_fix):
    with_fix(GOOD)
    [f] = checker.check_source(SRC)
    assert f.fix == GOOD and f.no_fix is None


@pytest.mark.parametrize("reason", sorted(BAD))
def test_a_fix_that_fails_its_proof_is_not_offered_and_says_why(with_fix, reason):
    with_fix(BAD[reason])
    [f] = checker.check_source(SRC)
    assert f.fix is None
    assert f.no_fix is not None and f.no_fix.startswith(reason), f.no_fix


def test_a_fix_that_adds_a_finding_is_not_offered():
    finding = checker.check_source(SRC, fixes=False)[0]
    # the fix converts x, but also makes a new real leaf leak into the region
    fix = Fix("adds", Applicability.SAFE, (
        Edit(at(6, 9), at(6, 10), "m.from_tensor(x) * z"),
        Edit(at(5, 0), at(5, 0), "z = torch.randn(3, requires_grad=True)\n"),
    ))
    reason = prove(SRC, finding, fix, lambda t: checker.check_source(t, fixes=False), [finding])
    assert reason == "re-linted, the fix adds a FGL001 finding"


def test_no_fix_reason_reaches_text_and_json(tmp_path, with_fix):
    from fakegrad_lint.report import ReportContext, load

    with_fix(BAD["re-linted, the finding is still there"])
    findings = checker.check_source(SRC, "t.py")
    ctx = ReportContext(findings=findings)
    text = load("text").render(ctx)
    assert "  no fix: re-linted, the finding is still there\n" in text and "[*]" not in text
    import json

    [d] = json.loads(load("json").render(ctx))
    assert d["no_fix"] == "re-linted, the finding is still there" and d["fix"] is None


def test_applicability_is_ordered_and_decided_once():
    S, U, D = Applicability.SAFE, Applicability.UNSAFE, Applicability.DISPLAY_ONLY
    assert D < U < S and sorted([S, D, U]) == [D, U, S] and max(D, S) is S
    edit = (Edit(at(1, 0), at(1, 0), "x"),)
    for app, safe_level, unsafe_level in ((S, True, True), (U, False, True), (D, False, False)):
        fix = Fix("m", app, edit)
        assert applies(fix, unsafe=False) is safe_level and applies(fix, unsafe=True) is unsafe_level
        assert hidden_unsafe(fix) is (unsafe_level and not safe_level)
    assert not applies(Fix("m", S, ()), unsafe=True)  # no edits: nothing to apply
    assert not applies(None, unsafe=True)
    finding = Finding("FGL001", "m", "t.py", at(1, 0), at(1, 1), fix=Fix("m", U, edit))
    assert finding.fixable
