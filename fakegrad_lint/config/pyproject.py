"""The ``[tool.fakegrad-lint]`` table: where it is, which keys it has, what they hold.

A ``pyproject.toml`` configures fakegrad-lint when it has the table
(:func:`read_table`, which reads and parses a file once); :func:`find_config`
walks up from a file to the nearest one. :func:`read_table`, :func:`load_config`
and :func:`parse_override` (``--config KEY=VALUE``) return tables checked by
:func:`validate_table`: unknown keys, values of the wrong type
and unknown output formats are a :class:`ConfigError` (one line). Turning
tables into settings is :mod:`fakegrad_lint.config.settings`' job.
"""

from __future__ import annotations

import os

TABLE = "fakegrad-lint"

#: The output formats: each is a module ``fakegrad_lint/report/<name>.py``
#: (``-`` -> ``_``). The one list; ``output-format`` and ``--output-format`` are
#: checked against it by :func:`check_output_format`.
OUTPUT_FORMATS: tuple[str, ...] = ("text", "concise", "json", "json-lines", "sarif", "github")

KNOWN_KEYS = {
    "select": "list",
    "ignore": "list",
    "extend-select": "list",
    "per-file-ignores": "table",
    "exclude": "list",
    "extend-exclude": "list",
    "unsafe-fixes": "bool",
    "output-format": "str",
}


class ConfigError(Exception):
    """A bad configuration value or selector; ``str()`` is the one-line reason."""


def _tomllib():
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


def _load_toml(path: str, data: bytes | None = None) -> dict:
    """The parsed file (``data``: its bytes, when already read)."""
    tomllib = _tomllib()
    try:
        if data is None:
            with open(path, "rb") as fh:
                data = fh.read()
        return tomllib.loads(data.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _our_table(doc: dict, path: str) -> dict:
    tool = doc.get("tool", {})
    table = tool.get(TABLE, {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    return validate_table(table, path, f"[tool.{TABLE}]")


def read_table(path: str) -> dict | None:
    """The validated ``[tool.fakegrad-lint]`` table of a ``pyproject.toml``, or
    None when it has none (or cannot be read). The file is read once; one that
    never mentions ``fakegrad-lint`` (most of a tree's) is not even parsed."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if b"fakegrad-lint" not in data:
        return None
    doc = _load_toml(path, data)
    tool = doc.get("tool", {})
    if not isinstance(tool, dict) or TABLE not in tool:
        return None
    return _our_table(doc, path)


def has_table(path: str) -> bool:
    """Whether ``path`` configures fakegrad-lint (see :func:`read_table`)."""
    return read_table(path) is not None


def find_config(start: str) -> str | None:
    """The nearest ``pyproject.toml`` with a ``[tool.fakegrad-lint]`` table, walking
    up from ``start`` (a file or folder)."""
    cur = os.path.abspath(start)
    if not os.path.isdir(cur):
        cur = os.path.dirname(cur)
    while True:
        candidate = os.path.join(cur, "pyproject.toml")
        if os.path.isfile(candidate) and has_table(candidate):
            return candidate
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def load_config(path: str) -> dict:
    """The validated ``[tool.fakegrad-lint]`` table of ``path`` (``{}`` if absent;
    an empty file, ``/dev/null`` say, is an empty configuration)."""
    return _our_table(_load_toml(path), path)


def parse_override(text: str) -> dict:
    """``--config KEY=VALUE``: one TOML ``key = value`` pair (``select = ["FGL001"]``,
    ``unsafe-fixes = true``, ``per-file-ignores = {"tests/*" = ["FGL004"]}``),
    validated like the table. A ``tool.fakegrad-lint.`` prefix is allowed."""
    tomllib = _tomllib()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {text!r}: not a configuration file nor a valid `KEY = VALUE` override ({exc})") from None
    if set(data) == {"tool"} and isinstance(data["tool"], dict) and set(data["tool"]) == {TABLE}:
        data = data["tool"][TABLE]
        if not isinstance(data, dict):
            raise ConfigError(f"--config {text!r}: expected `KEY = VALUE`")
    return validate_table(data, "--config", repr(text))


def check_output_format(value: str, where: str) -> str:
    """``value`` when it names an output format, else a :class:`ConfigError`."""
    if value not in OUTPUT_FORMATS:
        raise ConfigError(f"{where}: expected one of {', '.join(OUTPUT_FORMATS)}, got {value!r}")
    return value


def validate_table(table: dict, path: str, what: str) -> dict:
    """Check the keys and value types of a configuration table; returns it."""
    for key, value in table.items():
        kind = KNOWN_KEYS.get(key)
        where = f"{path}: {what} {key}"
        if kind is None:
            known = ", ".join(sorted(KNOWN_KEYS))
            raise ConfigError(f"{path}: unknown key {key!r} in {what} (known: {known})")
        if kind == "list":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
        elif kind == "str":
            if not isinstance(value, str):
                raise ConfigError(f"{where}: expected a string, got {value!r}")
            if key == "output-format":
                check_output_format(value, where)
        elif kind == "table":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table of glob = [codes], got {value!r}")
            for glob, codes in value.items():
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(f"{where}: {glob!r}: expected a list of codes, got {codes!r}")
    return table
