"""Settings: which codes apply to which file, from ``pyproject.toml`` and flags.

Configuration lives in the ``[tool.fakegrad-lint]`` table of a
``pyproject.toml``. Each file gets the nearest ``pyproject.toml`` that has the
table, walking up from the file (:class:`ConfigTree`), unless ``--config`` names
one file for all; ``--config KEY=VALUE`` overrides apply on top of whichever
applies. ``--isolated`` ignores every configuration file. Relative globs in
``exclude`` and ``per-file-ignores`` are relative to the folder of that
``pyproject.toml``.

Code selectors are codes (``FGL001``), prefixes (``FGL00``, ``FGL``) or ``ALL``.
The enabled set is: ``select`` (the command line's replaces the file's; default:
the rules on by default), plus ``extend-select`` (both), minus ``ignore`` (both).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field

TABLE = "fakegrad-lint"
OUTPUT_FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github")

# Folders never walked into (explicitly named files are still checked).
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".fakegrad_cache",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

_KNOWN_KEYS = {
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


def _all_codes() -> frozenset[str]:
    from fakegrad_lint.report import UNUSED_NOQA_CODE
    from fakegrad_lint.rules import ALL_CODES

    return ALL_CODES | {UNUSED_NOQA_CODE}


def _default_codes() -> frozenset[str]:
    from fakegrad_lint.rules import DEFAULT_CODES

    return DEFAULT_CODES


def expand_selector(selector: str, where: str = "") -> frozenset[str]:
    """The codes a selector names; a selector that names none is an error."""
    sel = selector.strip().upper()
    codes = _all_codes()
    if sel == "ALL":
        return codes
    matched = frozenset(c for c in codes if c.startswith(sel)) if sel else frozenset()
    if not matched:
        suffix = f" in {where}" if where else ""
        raise ConfigError(f"unknown rule selector {selector!r}{suffix}")
    return matched


def _expand_all(selectors, where: str) -> frozenset[str]:
    out: set[str] = set()
    for s in selectors:
        out |= expand_selector(s, where)
    return frozenset(out)


def split_codes(value: str) -> list[str]:
    """``"FGL001,FGL002"`` or ``"FGL001 FGL002"`` -> list."""
    return [p for p in value.replace(",", " ").split() if p]


# ---------------------------------------------------------------------------
# pyproject.toml


def _load_toml(path: str) -> dict:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _has_table(path: str) -> bool:
    """Cheap text check before parsing: does the file mention our table?"""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    return b"fakegrad-lint" in data and "fakegrad-lint" in _load_toml(path).get("tool", {})


def find_config(start: str) -> str | None:
    """The nearest ``pyproject.toml`` with a ``[tool.fakegrad-lint]`` table, walking
    up from ``start`` (a file or folder)."""
    cur = os.path.abspath(start)
    if not os.path.isdir(cur):
        cur = os.path.dirname(cur)
    while True:
        candidate = os.path.join(cur, "pyproject.toml")
        if os.path.isfile(candidate) and _has_table(candidate):
            return candidate
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def load_config(path: str) -> dict:
    """The validated ``[tool.fakegrad-lint]`` table of ``path`` (``{}`` if absent;
    an empty file, ``/dev/null`` say, is an empty configuration)."""
    data = _load_toml(path)
    table = data.get("tool", {}).get(TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    return validate_table(table, path, f"[tool.{TABLE}]")


def parse_override(text: str) -> dict:
    """``--config KEY=VALUE``: one TOML ``key = value`` pair (``select = ["FGL001"]``,
    ``unsafe-fixes = true``, ``per-file-ignores = {"tests/*" = ["FGL004"]}``),
    validated like the table. A ``tool.fakegrad-lint.`` prefix is allowed."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {text!r}: not a configuration file nor a valid `KEY = VALUE` override ({exc})") from None
    if set(data) == {"tool"} and isinstance(data["tool"], dict) and set(data["tool"]) == {TABLE}:
        data = data["tool"][TABLE]
        if not isinstance(data, dict):
            raise ConfigError(f"--config {text!r}: expected `KEY = VALUE`")
    return validate_table(data, "--config", repr(text))


def validate_table(table: dict, path: str, what: str) -> dict:
    """Check the keys and value types of a configuration table; returns it."""
    for key, value in table.items():
        kind = _KNOWN_KEYS.get(key)
        where = f"{path}: {what} {key}"
        if kind is None:
            known = ", ".join(sorted(_KNOWN_KEYS))
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
            if key == "output-format" and value not in OUTPUT_FORMATS:
                raise ConfigError(f"{where}: expected one of {', '.join(OUTPUT_FORMATS)}, got {value!r}")
        elif kind == "table":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table of glob = [codes], got {value!r}")
            for glob, codes in value.items():
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(f"{where}: {glob!r}: expected a list of codes, got {codes!r}")
    return table


# ---------------------------------------------------------------------------
# resolved settings


def _glob_match(pattern: str, abs_path: str, root: str) -> bool:
    """ruff-like: a glob matches the path relative to ``root``, the absolute
    path, or (without a ``/``) the base name."""
    pattern = pattern.replace(os.sep, "/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    posix_abs = abs_path.replace(os.sep, "/")
    rel = os.path.relpath(abs_path, root).replace(os.sep, "/")
    if "/" not in pattern.rstrip("/"):
        if fnmatch.fnmatchcase(os.path.basename(abs_path), pattern.rstrip("/")):
            return True
    if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(posix_abs, pattern):
        return True
    # "dir/" or "dir" also matches everything below it
    stripped = pattern.rstrip("/")
    if fnmatch.fnmatchcase(rel, stripped + "/*") or fnmatch.fnmatchcase(posix_abs, stripped + "/*"):
        return True
    return False


@dataclass
class Settings:
    enabled: frozenset[str] = field(default_factory=_default_codes)
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    output_format: str = "text"
    root: str = field(default_factory=os.getcwd)  # base of relative globs
    config_path: str | None = None
    force_exclude: bool = False

    def codes_for(self, path: str) -> frozenset[str]:
        """The codes enabled for ``path`` after ``per-file-ignores``."""
        if not self.per_file_ignores:
            return self.enabled
        abs_path = os.path.abspath(path)
        codes = set(self.enabled)
        for pattern, ignored in self.per_file_ignores:
            if _glob_match(pattern, abs_path, self.root):
                codes -= ignored
        return frozenset(codes)

    def is_excluded(self, path: str) -> bool:
        """Whether ``path`` (a file or folder) is excluded by ``exclude``/``extend-exclude``."""
        return self.excluder().match(os.path.abspath(path))

    def excluder(self) -> "Excluder":
        ex = self.__dict__.get("_excluder")
        if ex is None:
            ex = self.__dict__["_excluder"] = Excluder(self.exclude + self.extend_exclude, self.root)
        return ex


class Excluder:
    """``exclude`` globs compiled once: plain names are a set lookup on the base
    name; other globs are matched like :func:`_glob_match`."""

    def __init__(self, patterns, root: str):
        self.root = root
        self.names: set[str] = set()
        self.globs: list[str] = []
        for p in patterns:
            bare = p.rstrip("/")
            if "/" not in bare and not any(ch in bare for ch in "*?["):
                self.names.add(bare)
            else:
                self.globs.append(p)

    def match(self, abs_path: str) -> bool:
        if os.path.basename(abs_path) in self.names:
            return True
        return any(_glob_match(p, abs_path, self.root) for p in self.globs)

    def match_with_parents(self, abs_path: str) -> bool:
        """``match`` for the path or any folder above it, up to the root (for
        ``--force-exclude`` on explicitly named paths)."""
        cur = abs_path
        root = os.path.abspath(self.root)
        while True:
            if self.match(cur):
                return True
            parent = os.path.dirname(cur)
            if parent == cur or not parent.startswith(root) or len(parent) <= len(root):
                return False
            cur = parent


def resolve(
    config: dict | None,
    *,
    config_path: str | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    extend_select: list[str] | None = None,
    unsafe_fixes: bool | None = None,
    output_format: str | None = None,
    extend_exclude: list[str] | None = None,
    root: str | None = None,
    per_file_ignores: list[tuple[str, list[str]]] | None = None,
    extend_per_file_ignores: list[tuple[str, list[str]]] | None = None,
) -> Settings:
    """Combine a config table with command-line values (which win).

    ``per_file_ignores`` (``--per-file-ignores``) replaces the table's;
    ``extend_per_file_ignores`` adds to it. Their globs are relative to the
    current folder."""
    config = config or {}
    where = config_path or "pyproject.toml"
    if select is not None:
        enabled = _expand_all(select, "--select")
    elif "select" in config:
        enabled = _expand_all(config["select"], f"{where} select")
    else:
        enabled = _default_codes()
    enabled = enabled | _expand_all(config.get("extend-select", []), f"{where} extend-select")
    enabled = enabled | _expand_all(extend_select or [], "--extend-select")
    enabled = enabled - _expand_all(config.get("ignore", []), f"{where} ignore")
    enabled = enabled - _expand_all(ignore or [], "--ignore")
    if root is None:
        root = os.path.dirname(os.path.abspath(config_path)) if config_path else os.getcwd()
    pfi = []
    if per_file_ignores is None:
        for pattern, codes in (config.get("per-file-ignores") or {}).items():
            pfi.append((pattern, _expand_all(codes, f"{where} per-file-ignores {pattern!r}")))
    for flag, pairs in (("--per-file-ignores", per_file_ignores), ("--extend-per-file-ignores", extend_per_file_ignores)):
        for pattern, codes in pairs or ():
            # command-line globs are relative to the current folder, like paths
            glob = pattern if os.path.isabs(pattern) else os.path.join(os.getcwd(), pattern)
            if "/" not in pattern.replace(os.sep, "/").rstrip("/"):
                glob = pattern  # a bare name matches anywhere
            pfi.append((glob, _expand_all(codes, f"{flag} {pattern!r}")))
    exclude = tuple(config["exclude"]) if "exclude" in config else DEFAULT_EXCLUDE
    return Settings(
        enabled=frozenset(enabled),
        per_file_ignores=tuple(pfi),
        exclude=exclude,
        extend_exclude=tuple(config.get("extend-exclude", ())) + tuple(extend_exclude or ()),
        unsafe_fixes=bool(config.get("unsafe-fixes", False)) if unsafe_fixes is None else unsafe_fixes,
        output_format=output_format or config.get("output-format", "text"),
        root=root,
        config_path=config_path,
    )


def parse_per_file_ignores(values: list[str] | None, flag: str) -> list[tuple[str, list[str]]] | None:
    """``--per-file-ignores 'tests/*:FGL004,FGL001'`` (repeatable; several
    ``PATTERN:CODES`` pairs may also be separated by spaces, as in flake8)."""
    if values is None:
        return None
    out = []
    for value in values:
        for pair in value.split():
            pattern, sep, codes = pair.rpartition(":")
            if not sep or not pattern or not codes:
                raise ConfigError(f"{flag} {pair!r}: expected PATTERN:CODES, e.g. 'tests/*:FGL004'")
            out.append((pattern, split_codes(codes)))
    return out


class ConfigTree:
    """The nearest configuration of each file, like ruff: a subfolder's
    ``pyproject.toml`` with ``[tool.fakegrad-lint]`` governs the files below it.

    ``make(table, config_path)`` turns a validated table (``{}`` and ``None``
    where no configuration applies) into :class:`Settings`; results are cached
    per folder and per configuration file."""

    def __init__(self, make):
        self.make = make
        self._dir: dict[str, str | None] = {}
        self._settings: dict[str | None, Settings] = {}

    def config_for(self, path: str) -> str | None:
        cur = os.path.abspath(path)
        if not os.path.isdir(cur):
            cur = os.path.dirname(cur)
        walked = []
        found: str | None = None
        while True:
            if cur in self._dir:
                found = self._dir[cur]
                break
            walked.append(cur)
            candidate = os.path.join(cur, "pyproject.toml")
            if os.path.isfile(candidate) and _has_table(candidate):
                found = candidate
                break
            parent = os.path.dirname(cur)
            if parent == cur:
                break
            cur = parent
        for d in walked:
            self._dir[d] = found
        return found

    def settings_for(self, path: str) -> Settings:
        config_path = self.config_for(path)
        st = self._settings.get(config_path)
        if st is None:
            table = load_config(config_path) if config_path else {}
            st = self._settings[config_path] = self.make(table, config_path)
        return st

    def codes_for(self, path: str) -> frozenset[str]:
        return self.settings_for(path).codes_for(path)
