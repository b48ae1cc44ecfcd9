"""Runtime agreement of the probes3 corpus (``fixtures/probes3/*.py``): for each Python
feature around a region, a hazard and its safe look-alike, labelled by running them.

The checks are those of the unseen corpus (``tests/test_unseen_runtime.py``): the oracle's
outcome equals the docstring's ``Runtime: ...`` line, and the ``hazard_``/``safe_`` prefix
and the marker codes agree with it. Every hazard has its safe look-alike (same suffix).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from test_unseen_runtime import assert_balanced, check_script, corpus_paths  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPTS, _ = corpus_paths("probes3")


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


def test_probes3_pairs():
    names = [p.name for p in SCRIPTS]
    assert len(names) >= 60, f"fixtures/probes3: {len(names)} programs"
    assert_balanced(names, "fixtures/probes3")
    hazards = {n.removeprefix("hazard_") for n in names if n.startswith("hazard_")}
    safes = {n.removeprefix("safe_") for n in names if n.startswith("safe_")}
    assert hazards == safes, f"unpaired: {sorted(hazards ^ safes)}"


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_probes3_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])
