"""Settings: which codes apply to which file, from ``pyproject.toml`` and flags.

:meth:`Settings.load` is the one entry: ``Settings.load(paths, overrides)``
finds the configuration files (:mod:`fakegrad_lint.config.pyproject`), validates
them and the command line's :class:`Overrides`, and resolves each file's
settings; front ends only translate their arguments into ``Overrides``. The
result is immutable (frozen dataclasses).

Configuration lives in the ``[tool.fakegrad-lint]`` table of a
``pyproject.toml``. Each file gets the nearest ``pyproject.toml`` that has the
table, walking up from the file (:class:`ConfigTree`), unless ``--config`` names
one file for all; ``--config KEY=VALUE`` overrides apply on top of whichever
applies. ``--isolated`` ignores every configuration file. Relative globs in
``exclude`` and ``per-file-ignores`` are relative to the folder of that
``pyproject.toml``.

Code selectors are codes (``FGL001``), prefixes (``FGL00``, ``FGL``) or ``ALL``,
over the rule catalogue (``fakegrad_lint.rules``).
The enabled set is: ``select`` (the command line's replaces the file's; default:
the rules on by default), plus ``extend-select`` (both), minus ``ignore`` (both).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field, fields

from fakegrad_lint.config.pyproject import (  # noqa: F401  (ConfigError, find_config: part of this API)
    OUTPUT_FORMATS,
    ConfigError,
    check_output_format,
    find_config,
    load_config,
    parse_override,
    read_table,
)

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


def _all_codes() -> frozenset[str]:
    from fakegrad_lint.rules import ALL_CODES

    return ALL_CODES


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


@dataclass(frozen=True)
class Overrides:
    """The command line's configuration flags, as given: strings, each of which
    may hold several comma- or space-separated codes (``--select FGL001,FGL002``),
    globs (``--extend-exclude``) or ``PATTERN:CODES`` pairs. :meth:`Settings.load`
    parses and validates them; a front end only copies its arguments here.
    ``None`` (or empty): the flag was not given, the configuration decides."""

    config: tuple[str, ...] = ()  # --config PATH (one file for every file) | KEY=VALUE
    isolated: bool = False  # --isolated: no configuration file at all
    select: tuple[str, ...] | None = None  # replaces the configured `select`
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()  # --ignore and --extend-ignore
    per_file_ignores: tuple[str, ...] | None = None  # replaces the configured table
    extend_per_file_ignores: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    unsafe_fixes: bool | None = None
    output_format: str | None = None
    # The name of the text read from stdin (`-`): its configuration is looked up
    # from there.
    stdin_filename: str | None = None


@dataclass(frozen=True)
class Settings:
    """The settings of one configuration (a ``pyproject.toml`` table with the
    command line on top), immutable. :meth:`load` builds those of a run: the
    settings of its first path, whose :meth:`for_file` and :meth:`codes_for`
    give every other file its own configuration's (the nearest
    ``pyproject.toml``). The run-wide keys (``output_format``, ``unsafe_fixes``,
    the walk's excludes, ``config_path`` for the cache) are the first path's."""

    enabled: frozenset[str] = field(default_factory=_default_codes)
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    output_format: str = "text"
    root: str = field(default_factory=os.getcwd)  # base of relative globs
    config_path: str | None = None
    force_exclude: bool = False
    # Each file's own settings (None: these settings apply to every file).
    resolver: "ConfigTree | None" = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, paths, overrides: Overrides = Overrides()) -> "Settings":
        """Find, validate and resolve the configuration of a run over ``paths``
        (``["-"]``: standard input, named by ``overrides.stdin_filename``).
        Raises :class:`ConfigError` (one line) for a bad flag, file or value;
        the configuration of a file found later is loaded when first asked for
        (:meth:`for_file`), and raises there."""
        flags = _Flags.parse(overrides)
        if overrides.isolated:
            return flags.settings({}, None)
        if flags.config_file:
            return flags.settings(load_config(flags.config_file), flags.config_file)
        paths = list(paths) or ["."]
        first = overrides.stdin_filename if paths == ["-"] and overrides.stdin_filename else paths[0]
        return ConfigTree(flags.settings).settings_for(first)

    def for_file(self, path: str) -> "Settings":
        """The settings of ``path``'s own configuration (these, without a resolver)."""
        return self if self.resolver is None else self.resolver.settings_for(path)

    def codes_for(self, path: str) -> frozenset[str]:
        """The codes enabled for ``path``: its configuration's, after ``per-file-ignores``."""
        return self.for_file(path).own_codes_for(path)

    def own_codes_for(self, path: str) -> frozenset[str]:
        """The codes these settings enable for ``path`` after ``per-file-ignores``."""
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
        if ex is None:  # compiled once, on first use (a cache, not state)
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
    force_exclude: bool = False,
    resolver: "ConfigTree | None" = None,
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
        force_exclude=force_exclude,
        resolver=resolver,
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

    ``make(table, config_path, resolver)`` turns a validated table (``{}`` and
    ``None`` where no configuration applies) into :class:`Settings`. Lookups
    are memoised per folder and per configuration file: a cache of values that
    never change, so the settings it hands out stay immutable."""

    def __init__(self, make):
        self.make = make
        self._dir: dict[str, str | None] = {}
        self._tables: dict[str, dict | None] = {}  # each pyproject.toml, read once
        self._settings: dict[str | None, Settings] = {}

    def _table(self, pyproject: str) -> dict | None:
        if pyproject not in self._tables:
            self._tables[pyproject] = read_table(pyproject) if os.path.isfile(pyproject) else None
        return self._tables[pyproject]

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
            if self._table(candidate) is not None:
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
            table = self._table(config_path) if config_path else {}
            st = self._settings[config_path] = self.make(table, config_path, self)
        return st

    def codes_for(self, path: str) -> frozenset[str]:
        return self.settings_for(path).own_codes_for(path)


@dataclass(frozen=True)
class _Flags:
    """:class:`Overrides` parsed and validated, once per run; the fields after
    ``table`` are named as :func:`resolve`'s keywords."""

    config_file: str | None
    table: dict  # the --config KEY=VALUE overrides, merged over every file's table
    select: list[str] | None
    extend_select: list[str]
    ignore: list[str] | None
    per_file_ignores: list[tuple[str, list[str]]] | None
    extend_per_file_ignores: list[tuple[str, list[str]]] | None
    extend_exclude: list[str] | None
    force_exclude: bool
    unsafe_fixes: bool | None
    output_format: str | None

    @classmethod
    def parse(cls, o: Overrides) -> "_Flags":
        config_file = None
        table: dict = {}
        for value in o.config:
            if os.path.exists(value) and not os.path.isdir(value):
                if config_file is not None:
                    raise ConfigError(
                        f"--config {value}: only one configuration file may be given ({config_file} already is)"
                    )
                config_file = value
            elif "=" in value:
                table.update(parse_override(value))
            else:
                raise ConfigError(f"{value}: no such configuration file")
        extend_exclude = [g.strip() for v in o.extend_exclude for g in v.split(",") if g.strip()]
        return cls(
            config_file=config_file,
            table=table,
            select=_split_all(o.select),
            extend_select=_split_all(o.extend_select) or [],
            ignore=_split_all(o.ignore) if o.ignore else None,
            per_file_ignores=parse_per_file_ignores(
                list(o.per_file_ignores) if o.per_file_ignores is not None else None, "--per-file-ignores"
            ),
            extend_per_file_ignores=parse_per_file_ignores(
                list(o.extend_per_file_ignores) if o.extend_per_file_ignores else None, "--extend-per-file-ignores"
            ),
            extend_exclude=extend_exclude or None,
            force_exclude=o.force_exclude,
            unsafe_fixes=o.unsafe_fixes,
            output_format=(
                check_output_format(o.output_format, "--output-format") if o.output_format is not None else None
            ),
        )

    def settings(self, table: dict, config_path: str | None, resolver: ConfigTree | None = None) -> Settings:
        """The settings of one configuration table, with these flags on top (the
        fields after ``table`` are :func:`resolve`'s keywords)."""
        flags = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("config_file", "table")}
        return resolve({**table, **self.table}, config_path=config_path, resolver=resolver, **flags)


def _split_all(values) -> list[str] | None:
    if values is None:
        return None
    return [code for value in values for code in split_codes(value)]
