"""Runtime side of the fixture corpus: run every fixture with real torch and check
that what torch does agrees with the inline markers.

- FGL002 marker           -> ``crash`` (the strict-mode AssertionError)
- FGL001 / FGL003 markers -> ``hazard`` (a real tensor ends up with a FakeTensor grad)
- no marker / only FGL004 -> ``clean``
Anything else (another exception, a timeout) is a fixture bug.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow  # runs every fixture with real torch: about 20 s; `pytest -m slow` (.ci/run runs it)

import oracle  # noqa: E402
from markers import expected_markers, fixture_paths  # noqa: E402

FIXTURES = fixture_paths()


def expected_outcome(path) -> str:
    codes = {code for _, code in expected_markers(path)}
    if "FGL002" in codes:
        return "crash"
    if codes & {"FGL001", "FGL003"}:
        return "hazard"
    return "clean"


@pytest.fixture(scope="module")
def results():
    return oracle.run_fixtures(FIXTURES, jobs=2)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_runtime_outcome_matches_markers(results, path):
    res = results[str(path)]
    want = expected_outcome(path)
    assert res.outcome != "error", f"{path.name} failed to run:\n{res.detail}"
    assert res.outcome == want, f"{path.name}: expected {want}, torch says {res.outcome} ({res.detail})"


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_prints_shapes(results, path):
    # The autofix tests compare printed output before/after a fix: every fixture
    # that runs to the end must print something (crashes print up to the crash).
    res = results[str(path)]
    if res.outcome != "crash":
        assert res.stdout.strip(), f"{path.name} printed nothing"


def test_oracle_detects_each_outcome(tmp_path):
    """The oracle itself can fail: each verdict is reachable and an unrelated error is 'error'."""
    header = "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
    cases = {
        "crash": header + "x = torch.ones(2, requires_grad=True)\nwith FakeTensorMode():\n    x * 2\n",
        "hazard": header + "x = torch.ones(2, requires_grad=True)\n"
        "with FakeTensorMode(allow_non_fake_inputs=True):\n    (x * 2).sum().backward()\n",
        "clean": header + "x = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nprint('hi')\n",
        "error": "raise ValueError('boom')\n",
    }
    paths = {}
    for outcome, src in cases.items():
        p = tmp_path / f"{outcome}.py"
        p.write_text(src)
        paths[outcome] = p
    got = oracle.run_fixtures(paths.values())
    assert {k: got[str(p)].outcome for k, p in paths.items()} == {k: k for k in cases}
    assert oracle.run_fixture(paths["clean"]) == ("clean", "hi\n")
