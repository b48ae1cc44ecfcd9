"""pipeline: per-file processing, prefilter skipping, errors, modes."""

from __future__ import annotations

from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.engine.process import Options, process_file, run
from fakegrad_lint.rules import DEFAULT_CODES
from test_cli_support import HEADER, fake_checker, write  # noqa: F401  (fixture)


def test_files_without_fake_words_are_never_parsed(tmp_path, monkeypatch):
    calls = []
    from fakegrad_lint.engine import lint as checker

    monkeypatch.setattr(checker, "check_source", lambda *a, **k: calls.append(a) or [])
    write(tmp_path / "plain.py", "def f(:\n", header=False)  # would not even parse
    write(tmp_path / "fake.py", "x = 1\n")
    res = run([str(tmp_path / "plain.py"), str(tmp_path / "fake.py")], lambda p: DEFAULT_CODES, Options())
    assert res.all_errors == [] and res.files_checked == 2
    assert len(calls) == 1 and calls[0][1].endswith("fake.py")


def test_codes_filter_per_file(tmp_path, fake_checker):
    p = write(tmp_path / "a.py", "hazard(1)\ncrash(1)\n")
    r = process_file(str(p), frozenset({"FGL002"}), Options())
    assert [f.code for f in r.findings] == ["FGL002"]
    assert r.source == HEADER + "hazard(1)\ncrash(1)\n"
    assert r.hidden_unsafe == 1


def test_syntax_error_reason(tmp_path, fake_checker):
    p = write(tmp_path / "a.py", "x = (\n")
    r = process_file(str(p), DEFAULT_CODES, Options())
    assert len(r.errors) == 1
    assert r.errors[0].reason.startswith("SyntaxError: ") and "(line 2" in r.errors[0].reason


def test_diff_mode_does_not_write(tmp_path, fake_checker):
    p = write(tmp_path / "a.py", "hazard(1)\n")
    r = process_file(str(p), DEFAULT_CODES, Options(mode="diff"))
    assert r.fixed == 1 and "+safe(1)" in r.diff
    assert p.read_text() == HEADER + "hazard(1)\n"


def test_fix_keeps_encoding_and_bom(tmp_path, fake_checker):
    p = tmp_path / "a.py"
    p.write_bytes(b"\xef\xbb\xbfFakeTensorMode = None\ns = '\xc3\xa9'\nhazard(1)\n")
    r = process_file(str(p), DEFAULT_CODES, Options(mode="fix"))
    assert r.fixed == 1 and r.findings == []
    assert p.read_bytes() == b"\xef\xbb\xbfFakeTensorMode = None\ns = '\xc3\xa9'\nsafe(1)\n"


def test_add_noqa_mode(tmp_path, fake_checker):
    p = write(tmp_path / "a.py", "hazard(1)\n")
    r = process_file(str(p), DEFAULT_CODES, Options(mode="add-noqa"))
    assert r.added_noqa == 1 and p.read_text() == HEADER + "hazard(1)  # noqa: FGL001\n"


def test_time_limit_interrupts():
    import time

    try:
        with pipeline.time_limit(0.05):
            time.sleep(5)
    except pipeline.FileTimeout:
        pass
    else:  # pragma: no cover
        raise AssertionError("not interrupted")


def test_time_limit_forgets_an_import_it_cut(tmp_path, monkeypatch):
    """An alarm during a package's ``__init__`` (libcst's, imported by the first fix of
    a worker) must not leave its submodules behind: the next import would run the
    ``__init__`` again without binding them (``module 'libcst' has no attribute
    '_maybe_sentinel'`` for every later file of the worker)."""
    import sys
    import time

    pkg = tmp_path / "slowpkg_fgl"
    pkg.mkdir()
    (pkg / "fast.py").write_text("X = 1\n")
    (pkg / "__init__.py").write_text(
        "from slowpkg_fgl.fast import X\nimport time\ntime.sleep(2)\nfrom slowpkg_fgl import fast as _f\nY = _f.X\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pipeline.time_limit(0.2):
            import slowpkg_fgl  # noqa: F401
        raise AssertionError("not interrupted")  # pragma: no cover
    except pipeline.FileTimeout:
        pass
    assert "slowpkg_fgl.fast" not in sys.modules
    started = time.monotonic()
    import slowpkg_fgl

    assert slowpkg_fgl.Y == 1 and slowpkg_fgl.fast.X == 1 and time.monotonic() - started >= 1.5
    for name in ("slowpkg_fgl", "slowpkg_fgl.fast"):
        sys.modules.pop(name, None)


def test_notebook_without_support_is_a_tool_error(tmp_path, monkeypatch):
    import sys

    import fakegrad_lint.sources

    monkeypatch.setitem(sys.modules, "fakegrad_lint.sources.notebook", None)
    monkeypatch.delattr(fakegrad_lint.sources, "notebook", raising=False)
    p = tmp_path / "n.ipynb"
    p.write_text('{"cells": []}')
    r = process_file(str(p), DEFAULT_CODES, Options())
    assert [e.reason for e in r.errors] == ["notebooks (.ipynb) are not supported by this build"]
