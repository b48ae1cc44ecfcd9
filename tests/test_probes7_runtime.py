"""Runtime agreement of ``fixtures/probes7/*.py`` (an14): ``functools.lru_cache``'s
``cache_clear()`` (of the right function, through an alias), an optimizer's step pre and
post hooks (a removed handle; a fake backward into real ``.grad`` already there), a
forward's ``getattr(self, "name", None)`` of state set after the region, and a
``ModuleList`` built in a region whose child gets a real parameter later, each hazard
with a safe look-alike, labelled by running them (the checks of
``tests/test_unseen_runtime.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("probes7", min_files=9))
