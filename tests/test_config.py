"""settings: selectors, pyproject lookup and validation, per-file ignores, excludes."""

from __future__ import annotations

import os

import pytest

from fakegrad_lint.rules import DEFAULT_CODES
from fakegrad_lint.config.settings import ConfigError, expand_selector, find_config, load_config, resolve


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
