"""A per-file result cache keyed by content, so an unchanged file costs one hash.

Key: SHA-256 over the cache format, the tool's version, the Python version (the
``ast`` grammar and ``SyntaxError`` texts depend on it), a fingerprint of the
analysis code (every source file the findings depend on, so a development
change invalidates the cache without a version bump), the file's path, the
codes enabled for it and the file's raw bytes. Only ``check`` runs use it;
fix, diff and add-noqa runs bypass it.

Value: the file's findings (with their fixes and traces), its deterministic
errors (syntax errors) and, with whole-project analysis, the other project
modules its analysis read with their content hashes (an entry whose
dependencies changed is a miss), as JSON, one file per entry in
``<dir>/v1/<2 hex>/<62 hex>.json``. Entries are written to a temporary file in
the same folder and renamed over the target (``os.replace``), so concurrent
runs never see half an entry; a reader that finds anything it cannot decode,
or an entry whose stored key differs, treats it as a miss. Results that depend
on the moment (timeouts, memory, internal errors, worker deaths) are never
stored. Files the prefilter rejects never reach the cache.

Where: ``--cache-dir`` or ``FAKEGRAD_LINT_CACHE_DIR``; else ``.fakegrad_cache/``
next to the ``pyproject.toml`` that configures the project; else (no project
configuration) the platform cache folder (``$XDG_CACHE_HOME/fakegrad-lint``,
``~/.cache/fakegrad-lint``; ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%``
on Windows), so a plain check run never writes into the tree it checks. Any
OS error while reading or writing the cache turns caching off for that entry;
it never fails a run.
"""

from __future__ import annotations

import os
import sys

from fakegrad_lint import __version__
from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location, ToolError, TraceStep

FORMAT = "v2"
DIR_NAME = ".fakegrad_cache"
ENV_DIR = "FAKEGRAD_LINT_CACHE_DIR"

# The modules whose code decides a file's findings (relative to the package).
_FINGERPRINT_PARTS = (
    "analysis",
    "rules",
    "engine",
    "sources",
    "fix",
    "findings.py",
)
_fingerprint: str | None = None


def code_fingerprint() -> str:
    """SHA-256 of the analysis code's source files (computed once per process)."""
    global _fingerprint
    if _fingerprint is None:
        import hashlib

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for part in _FINGERPRINT_PARTS:
            full = os.path.join(root, part)
            if os.path.isdir(full):
                files = sorted(
                    os.path.join(d, f) for d, _, fs in os.walk(full) for f in fs if f.endswith(".py")
                )
            else:
                files = [full]
            for f in files:
                h.update(os.path.relpath(f, root).encode() + b"\0")
                try:
                    with open(f, "rb") as fh:
                        h.update(fh.read())
                except OSError:
                    h.update(b"<missing>")
                h.update(b"\0")
        _fingerprint = h.hexdigest()
    return _fingerprint


def platform_cache_dir() -> str:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "fakegrad-lint")


def default_dir(config_path: str | None) -> str:
    env = os.environ.get(ENV_DIR)
    if env:
        return env
    if config_path:
        return os.path.join(os.path.dirname(os.path.abspath(config_path)), DIR_NAME)
    return platform_cache_dir()


# ---------------------------------------------------------------------------
# (de)serialisation


def _loc(loc: Location) -> list[int]:
    return [loc.row, loc.column]


def _finding_to_json(f: Finding) -> list:
    fix = None
    if f.fix is not None:
        fix = [
            f.fix.message,
            f.fix.applicability.value,
            [[*_loc(e.start), *_loc(e.end), e.content] for e in f.fix.edits],
        ]
    trace = [[t.kind, t.message, t.filename, *_loc(t.location), *_loc(t.end_location), t.cell] for t in f.trace]
    return [f.code, f.message, f.filename, *_loc(f.location), *_loc(f.end_location), f.cell, fix, f.extra or {}, f.no_fix,
            trace]


def _finding_from_json(d: list) -> Finding:
    code, message, filename, r, c, er, ec, cell, fix, extra, no_fix, trace = d
    fx = None
    if fix is not None:
        msg, app, edits = fix
        fx = Fix(
            msg,
            Applicability(app),
            tuple(Edit(Location(a, b), Location(c2, d2), content) for a, b, c2, d2, content in edits),
        )
    return Finding(
        code=code,
        message=message,
        filename=filename,
        location=Location(r, c),
        end_location=Location(er, ec),
        fix=fx,
        cell=cell,
        extra=dict(extra),
        no_fix=no_fix,
        trace=tuple(
            TraceStep(kind, msg, fn, Location(a, b), Location(c2, d2), tc) for kind, msg, fn, a, b, c2, d2, tc in trace
        ),
    )


class Cache:
    """A content-keyed store of per-file check results (picklable, so pool
    workers use it directly)."""

    def __init__(self, directory: str):
        self.directory = os.path.abspath(directory)
        self._prefix: bytes | None = None
        self._ready = False
        self.hits = 0
        self.misses = 0

    # -- keys
    def _key_prefix(self) -> bytes:
        if self._prefix is None:
            head = "\0".join(
                [FORMAT, __version__, "%d.%d" % sys.version_info[:2], sys.implementation.name, code_fingerprint()]
            )
            self._prefix = head.encode() + b"\0"
        return self._prefix

    def key(self, path: str, codes: frozenset[str], raw: bytes) -> str:
        import hashlib

        h = hashlib.sha256(self._key_prefix())
        h.update(os.path.abspath(path).encode("utf-8", "surrogatepass") + b"\0")
        h.update(",".join(sorted(codes)).encode() + b"\0")
        h.update(raw)
        return h.hexdigest()

    def _entry(self, key: str) -> str:
        return os.path.join(self.directory, FORMAT, key[:2], key[2:] + ".json")

    # -- read
    def get(self, key: str) -> tuple[list[Finding], list[ToolError]] | None:
        import json

        try:
            with open(self._entry(key), "rb") as fh:
                data = json.loads(fh.read())
            if not isinstance(data, dict) or data.get("key") != key:
                raise ValueError("foreign or damaged entry")
            findings = [_finding_from_json(d) for d in data["findings"]]
            errors = [ToolError(str(a), str(b)) for a, b in data["errors"]]
            deps = data.get("deps") or {}
            if deps:
                from fakegrad_lint.analysis.project import file_sha

                if any(file_sha(p) != sha for p, sha in deps.items()):
                    raise ValueError("a project module it depends on changed")
        except Exception:  # missing, unreadable, truncated, garbage: a miss
            self.misses += 1
            return None
        self.hits += 1
        return findings, errors

    # -- write
    def _prepare(self) -> None:
        if self._ready:
            return
        os.makedirs(self.directory, exist_ok=True)
        marker = os.path.join(self.directory, "CACHEDIR.TAG")
        if not os.path.exists(marker):
            for name, text in (
                ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# fakegrad-lint cache\n"),
                (".gitignore", "# created by fakegrad-lint\n*\n"),
            ):
                self._write(os.path.join(self.directory, name), text.encode())
        self._ready = True

    @staticmethod
    def _write(target: str, data: bytes) -> None:
        import tempfile

        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def put(self, key: str, findings: list[Finding], errors: list[ToolError], deps: dict | None = None) -> bool:
        """Store an entry; False (and nothing stored) when the folder is not writable.
        ``deps``: {path: sha256} of the project modules the result depends on."""
        import json

        data = {
            "key": key,
            "findings": [_finding_to_json(f) for f in findings],
            "errors": [[e.filename, e.reason] for e in errors],
        }
        if deps:
            data["deps"] = dict(deps)
        try:
            payload = json.dumps(data, separators=(",", ":")).encode()
        except (TypeError, ValueError):  # an ``extra`` that JSON cannot hold: do not cache
            return False
        try:
            self._prepare()
            self._write(self._entry(key), payload)
        except OSError:
            return False
        return True


def open_cache(enabled: bool, config_path: str | None, cache_dir: str | None = None) -> Cache | None:
    """The cache for a run, or None when disabled. Creates nothing on disk yet."""
    if not enabled:
        return None
    return Cache(cache_dir or default_dir(config_path))
