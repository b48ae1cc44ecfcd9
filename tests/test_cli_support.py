"""A fake findings source for testing the CLI machinery without the analyzer.

``fake_check_source`` reports, on every line that contains a marker call:

- ``hazard(``  -> FGL001 with a SAFE fix (``hazard(`` -> ``safe(``)
- ``crash(``   -> FGL002 with an UNSAFE fix (``crash(`` -> ``ok(``)
- ``leak(``    -> FGL004 (opt-in rule) with no fix

Files must mention ``FakeTensorMode`` to pass the prefilter (``HEADER``).
"""

from __future__ import annotations

import ast

import pytest

from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location

HEADER = "FakeTensorMode = None\n"

_MARKERS = {
    "hazard(": ("FGL001", "safe(", Applicability.SAFE),
    "crash(": ("FGL002", "ok(", Applicability.UNSAFE),
    "leak(": ("FGL004", None, None),
}


def fake_check_source(source: str, filename: str = "<string>", *, tree=None, **options) -> list[Finding]:
    if tree is None:
        ast.parse(source)  # like the real one: raise on bad syntax
    out = []
    for row, line in enumerate(source.splitlines(), start=1):
        code_part = line.split("#", 1)[0]
        for marker, (code, repl, app) in _MARKERS.items():
            col = code_part.find(marker)
            if col < 0:
                continue
            fix = None
            if repl is not None:
                edit = Edit(Location(row, col), Location(row, col + len(marker)), repl)
                fix = Fix(f"use {repl}", app, (edit,))
            out.append(
                Finding(
                    code=code,
                    message=f"{marker[:-1]} found",
                    filename=filename,
                    location=Location(row, col),
                    end_location=Location(row, col + len(marker) - 1),
                    fix=fix,
                )
            )
    out.sort(key=lambda f: f.sort_key)
    return out


@pytest.fixture
def fake_checker(monkeypatch, tmp_path_factory):
    """The engine's rules stage replaced by :func:`fake_check_source`. Its
    results go to a cache of their own: the code fingerprint that keys the cache
    does not know about the replacement."""
    from fakegrad_lint.engine import lint as checker

    monkeypatch.setenv("FAKEGRAD_LINT_CACHE_DIR", str(tmp_path_factory.mktemp("fake-checker-cache")))
    monkeypatch.setattr(checker, "check_source", fake_check_source)
    return fake_check_source


def write(path, text: str, header: bool = True):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((HEADER if header else "") + text)
    return path


def test_fake_checker_reports_markers():
    found = fake_check_source(HEADER + "hazard(1)\nx = crash(2)  # hazard(\n")
    assert [(f.code, f.location.row, f.location.column) for f in found] == [("FGL001", 2, 0), ("FGL002", 3, 4)]
