"""Runtime agreement of the probes4 corpus: ``fixtures/probes4/*.py`` (single files, an8) and
``fixtures/probes4_projects/*/`` (project layouts no other corpus has, each hazard with a safe
look-alike, an9), labelled by running them (the checks of ``tests/test_unseen_runtime.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("probes4", min_files=40, min_projects=20))
