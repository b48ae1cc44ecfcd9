"""Runtime agreement of ``fixtures/probes6/*.py`` (an12): descriptors of the file's
classes (data and non-data, ``__set_name__``, lazy builds before or inside the region),
``threading.Thread`` subclasses, ``Thread(target=..., args=..., kwargs=...)``, ``Timer``
and thread pools (a thread starts outside every region), ``to_empty`` and dtype casts of a
real or meta module inside a strict mode, per-parameter ``requires_grad`` filters, and
neighbours (``cached_property``, ``getattr``/``attrgetter`` on a ``SimpleNamespace``,
``NamedTuple`` bundles, an enum matched to a context, ``weakref.ref``, ``methodcaller``),
each hazard with a safe look-alike, labelled by running them (the checks of
``tests/test_unseen_runtime.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from test_unseen_runtime import corpus_runtime_tests  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(corpus_runtime_tests("probes6", min_files=29))
