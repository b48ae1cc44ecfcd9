"""settings: selectors, pyproject lookup and validation, per-file ignores, excludes, Settings.load."""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path

import pytest

import fakegrad_lint
from fakegrad_lint.config.pyproject import OUTPUT_FORMATS
from fakegrad_lint.config.settings import (
    ConfigError,
    Overrides,
    Settings,
    expand_selector,
    find_config,
    load_config,
    resolve,
)
from fakegrad_lint.rules import DEFAULT_CODES


def test_expand_selector():
    assert expand_selector("FGL001") == {"FGL001"}
    assert expand_selector("fgl00") >= {"FGL001", "FGL002", "FGL003", "FGL004"}
    assert "FGL100" in expand_selector("ALL")
    with pytest.raises(ConfigError, match="unknown rule selector 'E501'"):
        expand_selector("E501")


def test_resolution_order():
    assert resolve(None).enabled == DEFAULT_CODES
    assert "FGL004" not in DEFAULT_CODES
    s = resolve({"select": ["FGL001", "FGL002"], "ignore": ["FGL002"], "extend-select": ["FGL004"]})
    assert s.enabled == {"FGL001", "FGL004"}
    s = resolve({"select": ["FGL001"]}, select=["FGL003"], extend_select=["FGL002"], ignore=["FGL002"])
    assert s.enabled == {"FGL003"}


def _pyproject(path, body):
    path.mkdir(parents=True, exist_ok=True)
    (path / "pyproject.toml").write_text(body)
    return str(path / "pyproject.toml")


def test_find_config_nearest_with_table(tmp_path):
    top = _pyproject(tmp_path, '[tool.fakegrad-lint]\nselect = ["FGL001"]\n')
    _pyproject(tmp_path / "sub", '[project]\nname = "x"\n')  # no table: keep walking
    (tmp_path / "sub" / "deep").mkdir()
    assert find_config(str(tmp_path / "sub" / "deep")) == top
    inner = _pyproject(tmp_path / "sub" / "deep", "[tool.fakegrad-lint]\n")
    assert find_config(str(tmp_path / "sub" / "deep" / "x.py")) == inner


@pytest.mark.parametrize(
    "body, message",
    [
        ('[tool.fakegrad-lint]\nfoo = 1\n', "unknown key 'foo'"),
        ('[tool.fakegrad-lint]\nselect = "FGL001"\n', "expected a list of strings"),
        ('[tool.fakegrad-lint]\nunsafe-fixes = "yes"\n', "expected true or false"),
        ('[tool.fakegrad-lint]\noutput-format = "xml"\n', "expected one of"),
        ('[tool.fakegrad-lint]\nper-file-ignores = ["x"]\n', "expected a table"),
        ('[tool.fakegrad-lint.per-file-ignores]\n"a.py" = "FGL001"\n', "expected a list of codes"),
        ('[tool.fakegrad-lint\n', "invalid TOML"),
    ],
)
def test_bad_config_values(tmp_path, body, message):
    path = str(tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").write_text(body)
    with pytest.raises(ConfigError, match=message) as exc:
        load_config(path)
    assert "\n" not in str(exc.value)


def test_unknown_code_in_config_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown rule selector 'FGL999'"):
        resolve({"ignore": ["FGL999"]}, config_path=str(tmp_path / "pyproject.toml"))


def test_per_file_ignores(tmp_path):
    s = resolve(
        {"per-file-ignores": {"tests/*.py": ["FGL001"], "conftest.py": ["FGL002"], "/abs/none/*": ["FGL003"]}},
        config_path=str(tmp_path / "pyproject.toml"),
    )
    assert s.codes_for(str(tmp_path / "tests" / "t.py")) == DEFAULT_CODES - {"FGL001"}
    assert s.codes_for(str(tmp_path / "pkg" / "conftest.py")) == DEFAULT_CODES - {"FGL002"}
    assert s.codes_for(str(tmp_path / "pkg" / "a.py")) == DEFAULT_CODES


def test_excludes(tmp_path):
    s = resolve({"extend-exclude": ["generated/", "*_pb2.py"]}, config_path=str(tmp_path / "pyproject.toml"))
    assert s.is_excluded(str(tmp_path / "build"))  # a default
    assert s.is_excluded(str(tmp_path / "generated"))
    assert s.is_excluded(str(tmp_path / "pkg" / "x_pb2.py"))
    assert not s.is_excluded(str(tmp_path / "pkg" / "x.py"))
    s = resolve({"exclude": ["only_this"]}, config_path=str(tmp_path / "pyproject.toml"))
    assert not s.is_excluded(str(tmp_path / "build"))  # exclude replaces the defaults
    assert s.is_excluded(str(tmp_path / "only_this"))


def test_unsafe_fixes_and_format_from_config_cli_wins():
    s = resolve({"unsafe-fixes": True, "output-format": "json"})
    assert s.unsafe_fixes is True and s.output_format == "json"
    s = resolve({"unsafe-fixes": True, "output-format": "json"}, unsafe_fixes=False, output_format="text")
    assert s.unsafe_fixes is False and s.output_format == "text"


# ---------------------------------------------------------------------------
# Settings.load: find, validate, resolve per file; immutable


def test_load_resolves_each_file_from_its_nearest_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    top = _pyproject(tmp_path, '[tool.fakegrad-lint]\noutput-format = "json"\nextend-select = ["FGL004"]\n')
    sub = _pyproject(tmp_path / "sub", '[tool.fakegrad-lint]\nselect = ["FGL001"]\n')
    st = Settings.load([str(tmp_path)], Overrides(ignore=("FGL003",)))
    assert st.config_path == top and st.output_format == "json"
    assert st.codes_for(str(tmp_path / "a.py")) == (DEFAULT_CODES | {"FGL004"}) - {"FGL003"}
    own = st.for_file(str(tmp_path / "sub" / "b.py"))
    assert own.config_path == sub and own is st.for_file(str(tmp_path / "sub" / "c.py"))
    assert st.codes_for(str(tmp_path / "sub" / "b.py")) == {"FGL001"}
    # --isolated ignores both files, --config PATH uses one for every file
    assert Settings.load([str(tmp_path)], Overrides(isolated=True)).codes_for(str(tmp_path / "sub" / "b.py")) == DEFAULT_CODES
    one = Settings.load([str(tmp_path)], Overrides(config=(sub, 'extend-select = ["FGL002"]')))
    assert one.codes_for(str(tmp_path / "a.py")) == {"FGL001", "FGL002"}


def test_load_validates_the_flags_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for overrides, message in (
        (Overrides(output_format="xml"), "--output-format: expected one of text, concise"),
        (Overrides(select=("FGL9",)), "unknown rule selector 'FGL9' in --select"),
        (Overrides(per_file_ignores=("nocolon",)), "expected PATTERN:CODES"),
        (Overrides(config=("nosuch",)), "nosuch: no such configuration file"),
        (Overrides(config=("foo = 1",)), "unknown key 'foo'"),
    ):
        with pytest.raises(ConfigError, match=message):
            Settings.load(["."], overrides)
    st = Settings.load(["."], Overrides(select=("FGL001,FGL002",), extend_exclude=("a, b",), output_format="sarif"))
    assert st.enabled == {"FGL001", "FGL002"} and st.extend_exclude == ("a", "b") and st.output_format == "sarif"


def test_settings_are_immutable(tmp_path):
    st = Settings.load([str(tmp_path)], Overrides(isolated=True))
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.unsafe_fixes = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Overrides().select = ("FGL001",)  # type: ignore[misc]


def test_output_formats_are_the_report_modules():
    report_dir = Path(fakegrad_lint.__file__).parent / "report"
    modules = {p.stem.replace("_", "-") for p in report_dir.glob("*.py") if p.stem != "__init__"}
    assert set(OUTPUT_FORMATS) == modules


def _imports(package: str) -> set[str]:
    out = set()
    for path in (Path(fakegrad_lint.__file__).parent / package).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                out.add(node.module)
            elif isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
    return out


def test_config_and_rules_import_no_reporter_and_no_front_end():
    for package in ("config", "rules"):
        wrong = {m for m in _imports(package) if m.startswith(("fakegrad_lint.report", "fakegrad_lint.cli", "fakegrad_lint.integrations"))}
        assert not wrong, (package, wrong)


def test_each_pyproject_is_read_and_parsed_once_per_run(tmp_path, monkeypatch):
    from fakegrad_lint.cli import main as cli
    from fakegrad_lint.config import pyproject

    monkeypatch.chdir(tmp_path)
    _pyproject(tmp_path, '[tool.fakegrad-lint]\nextend-select = ["FGL004"]\n')
    _pyproject(tmp_path / "sub", '[tool.fakegrad-lint]\nselect = ["FGL001"]\n')
    _pyproject(tmp_path / "other", '[project]\nname = "not-ours"\n')
    for folder in ("", "sub", "sub/deep", "other"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        for i in range(3):
            (tmp_path / folder / f"m{i}.py").write_text("x = 1\n")
    parsed = []
    real = pyproject._load_toml
    monkeypatch.setattr(pyproject, "_load_toml", lambda path, *data: parsed.append(path) or real(path, *data))
    assert cli.main(["--no-cache", "-q", "."]) == 0
    # ours once each; one that never names fakegrad-lint is not parsed at all
    assert sorted(os.path.relpath(p, tmp_path) for p in parsed) == ["pyproject.toml", os.path.join("sub", "pyproject.toml")]
