"""Runtime agreement of the probes_eco corpus (``fixtures/probes_eco/*.py``): modules
returned by calls the analyzer cannot follow (the autoparallel ``apply_placement`` +
``to_empty`` hazard of the ecosystem check) and their safe look-alikes.

The checks are those of the unseen corpus (``tests/test_unseen_runtime.py``): the
oracle's outcome equals the docstring's ``Runtime: ...`` line, the ``hazard_``/``safe_``
prefix agrees with it, and so do the marker codes.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import oracle  # noqa: E402
from test_unseen_runtime import assert_balanced, check_script, corpus_paths  # noqa: E402

pytestmark = pytest.mark.slow

SCRIPTS, _ = corpus_paths("probes_eco")


@pytest.fixture(scope="module")
def script_results():
    return oracle.run_fixtures(SCRIPTS, jobs=2)


def test_probes_eco_corpus_size():
    assert len(SCRIPTS) >= 14, f"fixtures/probes_eco: {len(SCRIPTS)} programs"
    assert_balanced([p.name for p in SCRIPTS], "fixtures/probes_eco")


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_probes_eco_script_outcome(script_results, path):
    check_script(path, script_results[str(path)])
