"""One path per file: each file is read once, prefiltered once, hashed and looked up
in the cache once; notebooks are a source kind on the same path (and cached);
reporters print from the text the engine holds; every front end calls
``lint_source``."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from fakegrad_lint.engine import lint as engine_lint
from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.engine.cache import Cache
from fakegrad_lint.rules import DEFAULT_CODES
from fakegrad_lint.sources.kind import PythonSource, open_source
from fakegrad_lint.sources.notebook import NotebookSource
from fakegrad_lint.sources.notebook.format import _source_spans, load
from fakegrad_lint.sources.sourcefile import read_source

ROOT = Path(__file__).resolve().parents[1]
HAZARD_PY = ROOT / "fixtures" / "hazard_allow_set_later.py"
HAZARD_NB = ROOT / "fixtures" / "notebooks" / "hazard.ipynb"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(HAZARD_PY, root / "a.py")
    shutil.copy(HAZARD_NB, root / "nb.ipynb")
    (root / "plain.py").write_text("x = 1\n")
    return root


def _count(monkeypatch, module, name: str) -> list:
    calls: list = []
    real = getattr(module, name)

    def counted(*a, **k):
        calls.append(a[0] if a else None)
        return real(*a, **k)

    monkeypatch.setattr(module, name, counted)
    return calls


def _run(root, cache, jobs=1):
    files = sorted(str(p) for p in Path(root).iterdir())
    return pipeline.run(files, lambda p: DEFAULT_CODES, pipeline.Options(), jobs=jobs, cache=cache)


def test_each_file_is_read_prefiltered_hashed_and_looked_up_once(tree, tmp_path, monkeypatch):
    reads = _count(monkeypatch, pipeline, "read_source")
    prefilters = _count(monkeypatch, pipeline, "prefilter")
    keys = _count(monkeypatch, Cache, "key")
    gets = _count(monkeypatch, Cache, "get")
    cold = _run(tree, Cache(str(tmp_path / "c")))
    assert len(reads) == len(prefilters) == 3  # a.py, nb.ipynb, plain.py
    assert len(keys) == len(gets) == 2  # plain.py stops at the prefilter
    assert {r.path.rsplit("/", 1)[1] for r in cold.results if r.findings} == {"a.py", "nb.ipynb"}
    warm = _run(tree, Cache(str(tmp_path / "c")))
    assert all(r.cached for r in warm.results) and len(keys) == len(gets) == 4
    assert warm.findings == cold.findings


def test_notebooks_are_cached_and_keep_their_cells(tree, tmp_path):
    nb = str(tree / "nb.ipynb")
    first = pipeline.process_file(nb, DEFAULT_CODES, pipeline.Options(), cache=Cache(str(tmp_path / "c")))
    again = pipeline.process_file(nb, DEFAULT_CODES, pipeline.Options(), cache=Cache(str(tmp_path / "c")))
    assert not first.cached and again.cached
    assert again.findings == first.findings and [f.cell for f in first.findings] == [5]
    cells = {c.number: c.text for c in load(HAZARD_NB.read_bytes()).cells}
    assert first.source is None and first.cells == again.cells == cells


def test_reporters_print_from_the_engines_text(tree, monkeypatch):
    from fakegrad_lint import report
    from fakegrad_lint.sources import sourcefile

    results = [pipeline.process_file(str(tree / n), DEFAULT_CODES, pipeline.Options()) for n in ("a.py", "nb.ipynb")]
    (tree / "a.py").write_text("# changed on disk since\n")

    def no_read(path):
        raise AssertionError(f"{path} read again")

    monkeypatch.setattr(sourcefile, "read_source", no_read)
    provide = report.source_provider_for(results)
    py, nb = results
    assert provide(py.path, None) == HAZARD_PY.read_text().splitlines()
    cell = nb.findings[0].cell
    assert provide(nb.path, cell) == nb.cells[cell].splitlines()
    assert provide(nb.path, 99) == []


def test_open_source_picks_the_kind_by_name(tree):
    assert type(open_source(read_source(str(tree / "a.py")))) is PythonSource
    nb = open_source(read_source(str(tree / "nb.ipynb")))
    parts = [c.number for c in nb.notebook.cells if c.text.strip() and not c.text.lstrip().startswith("%%")]
    assert isinstance(nb, NotebookSource) and nb.program().count("notebook cell boundary") == len(parts) > 1


@pytest.mark.parametrize("indent", [None, 1, 2, 4, "\t"])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_source_spans_locate_each_cells_source(indent, ensure_ascii):
    data = {
        "metadata": {"cells": [{"source": "not a cell"}], "source": "x"},
        "cells": [
            {"cell_type": "markdown", "metadata": {"source": "meta"}, "source": ["# t\u00e9\n", "}]"]},
            {"cell_type": "code", "source": "x = {'a': [1, \"]\"]}\n", "outputs": [{"source": 1}]},
            {"cell_type": "code", "outputs": []},
            {"source": [], "cell_type": "code"},
        ],
        "nbformat": 4,
    }
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    spans = _source_spans(text)
    assert sorted(spans) == [0, 1, 3]
    for index, (start, end) in spans.items():
        assert json.loads(text[start:end]) == data["cells"][index]["source"]


def test_front_ends_call_lint_source(tmp_path, monkeypatch):
    """flake8 and the Fixit/codemod helper go through lint_source."""
    from fakegrad_lint.integrations.flake8_plugin import FakegradChecker

    calls = _count(monkeypatch, engine_lint, "lint_source")
    path = tmp_path / "t.py"
    shutil.copy(HAZARD_PY, path)
    text = path.read_text()
    import ast

    flake8 = list(FakegradChecker(ast.parse(text), str(path), text.splitlines(True)).run())
    findings, _outcome = engine_lint.lint_and_fix(text, str(path))
    assert len(calls) >= 2 and calls[0] == calls[1] == text
    assert [(row, col) for row, col, _m, _t in flake8] == [(f.location.row, f.location.column) for f in findings]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
@pytest.mark.slow  # real torch runs of a whole project: the slow tier (CI runs it)
def test_confirm_checks_through_the_settings_and_the_cache(tmp_path):
    """``confirm``'s static side is ``check``'s: ``--select`` takes prefixes as
    ``check --select`` does, and results go through the project's cache."""
    import os
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.fakegrad-lint]\n")
    shutil.copy(HAZARD_PY, tmp_path / "train.py")
    env = {k: v for k, v in os.environ.items() if k != "FAKEGRAD_LINT_CACHE_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "confirm", "--select", "FGL00", "--output-format", "json", "train.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    objs = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert {(o["code"], o["status"]) for o in objs} >= {("FGL001", "confirmed")}
    assert list((tmp_path / ".fakegrad_cache").rglob("*.json"))  # the check's cache, next to pyproject.toml
