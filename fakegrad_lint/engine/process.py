"""Per file, one path: read once, open as its source kind, prefilter once, cache, mode dispatch.

:func:`process_file` is the unit of work: it reads the file (once) and opens it
as its kind (:mod:`fakegrad_lint.sources.kind`: a Python file or a notebook);
:func:`process_source` runs the prefilter (once), looks the file up in the
cache (one hash, one lookup) and, on a miss, runs the one mode dispatch
(check, fix, diff, fix-only, add-noqa) for every kind, linting each version of
the program with :func:`fakegrad_lint.engine.lint.lint_source`. A file's result
depends only on its bytes, the :class:`Options` and the codes enabled for it
(plus the tool's version and code), which is what the cache keys.
``FileResult.source``/``.cells`` keep the text reporters print from.

:func:`run` maps it over many files: the parent reads, prefilters and serves
cache hits; the files left go through a plain loop, or a process pool (largest
first) when there is enough work (see :data:`PARALLEL_THRESHOLD`), whose
workers read their files again; with very many files the workers do it all
(:data:`PARALLEL_SCAN_FILES`). Workers never start pools of their own.

Bad input never raises out of here: it becomes a :class:`ToolError`
(``path: error: reason``) and the run goes on.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Callable

from fakegrad_lint.engine.prefilter import may_contain_fake_region, needs_work, prefilter  # noqa: F401
from fakegrad_lint.engine.subprocs import FileTimeout, disarm_alarm, time_limit
from fakegrad_lint.findings import HELPER_OF, Finding, ToolError, hidden_unsafe
from fakegrad_lint.sources.kind import PythonSource, SourceKind, open_source
from fakegrad_lint.sources.sourcefile import SourceError, SourceFile, read_source, write_atomic
from fakegrad_lint.sources.text import ParserLimit
from fakegrad_lint.rules import UNUSED_NOQA_CODE

# A process pool only pays off with enough work: at least PARALLEL_THRESHOLD
# files past the prefilter and PARALLEL_MIN_BYTES of their source (analysis
# cost follows the bytes; measured on torch files, 2 workers: 28 KB loop 20 ms
# / pool 32 ms, 96 KB 58 / 56 ms, 377 KB 315 / 155 ms; many small files are
# cheap: the 199 fixture files, 86 KB, loop 130 ms / pool 163 ms). Smaller
# runs use a plain loop. (PARALLEL_MANY_FILES is no longer used; kept for
# callers that set it.)
PARALLEL_THRESHOLD = 8
PARALLEL_MIN_BYTES = 256 * 1024
PARALLEL_MANY_FILES = 64
# With at least this many files (and jobs > 1) the workers also read and
# prefilter: reading and decoding is most of the cost of a big tree whose
# files mostly fail the prefilter. On 2 cores with a warm page cache this is a
# wash (transformers, 2,860 files: 0.24 s parent / 0.21 s workers; torch:
# 2.88 / 2.98 s); it pays with more cores, a cold disk or a busy parent.
PARALLEL_SCAN_FILES = 1024
SCAN_CHUNK = 24  # files per task in a scanning pool
MODES = ("check", "fix", "diff", "fix-only", "add-noqa")


@dataclass(frozen=True)
class Options:
    """Everything besides the file and its codes that changes a file's result."""

    mode: str = "check"  # one of MODES
    unsafe_fixes: bool = False
    timeout: float | None = 20.0  # seconds per file; None or 0: no limit
    max_fix_iterations: int = 10


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)  # what is left to report
    errors: list[ToolError] = field(default_factory=list)
    fixed: int = 0  # fixes applied (or, with --diff, that would be)
    hidden_unsafe: int = 0  # unsafe fixes left out for lack of --unsafe-fixes
    diff: str = ""
    added_noqa: int = 0
    # What reporters print from, when there is something to show (set by the
    # engine from the text it holds, never read again): a Python file's final
    # text, or a notebook's cells by number.
    source: str | None = None
    cells: dict[int, str] | None = None
    # False when the result depends on the moment (timeout, memory, internal
    # error, unreadable file): such results are never cached.
    cacheable: bool = True
    cached: bool = False  # served from the cache
    fixed_text: str | None = None  # fix modes: the program after the fixes, when it changed
    # {path: sha256} of the other project modules the analysis read (whole-project
    # analysis): the cached result holds only while they are unchanged
    deps: dict = field(default_factory=dict)
    # check mode: findings the analysis made in other project modules, at a leak
    # line inside a helper (``engine.lint.helper_findings``); :func:`run` keeps
    # those whose file is one of the run's, after that file's ``# noqa``
    foreign: list[Finding] = field(default_factory=list)


def syntax_error_reason(exc: SyntaxError) -> str:
    where = []
    if exc.lineno:
        where.append(f"line {exc.lineno}")
    if exc.offset:
        where.append(f"column {exc.offset}")
    suffix = f" ({', '.join(where)})" if where else ""
    return f"{type(exc).__name__}: {exc.msg}{suffix}"


def process_file(
    path: str, codes: frozenset[str], options: Options, sf: SourceFile | None = None, cache=None, *,
    missed: bool = False, verdict: tuple[bool, bool | None] | None = None,
) -> FileResult:
    """Check (and with a fix mode, fix) one file. Never raises for bad input.

    Reads the file unless ``sf`` holds it, opens it as its kind
    (:func:`fakegrad_lint.sources.kind.open_source`) and goes on as
    :func:`process_source`. ``missed``: the caller looked the file up in
    ``cache`` and missed (a pool worker), so it is only stored; ``verdict``:
    the caller's prefilter verdict."""
    try:
        src = open_source(sf if sf is not None else read_source(path))
    except SourceError as exc:
        return FileResult(path, errors=[ToolError(path, str(exc))], cacheable=False)
    key = cache.key(path, codes, src.raw) if missed and cache is not None and options.mode == "check" else None
    return process_source(src, codes, options, cache, verdict=verdict, key=key)


def process_source(src: SourceKind, codes: frozenset[str], options: Options, cache=None, *,
                   verdict: tuple[bool, bool | None] | None = None, key: str | None = None) -> FileResult:
    """The one path of one file: prefilter, cache, mode dispatch.

    ``verdict``: the prefilter's, when the caller ran it (:func:`prefilter`).
    With a :class:`fakegrad_lint.engine.cache.Cache` and ``mode == "check"`` the
    file's bytes are hashed once and looked up once (``key``: the caller did
    both and missed); a miss is stored under that key."""
    path = src.path
    work, region = verdict if verdict is not None else prefilter(src.prefilter_text(), codes, path)
    if not work:
        return FileResult(path)
    if key is None:
        hit, key = cache_lookup(src, codes, options, cache)
        if hit is not None:
            return hit
    result = FileResult(path)
    alarm = {"fired": False}
    try:
        with time_limit(options.timeout) as alarm:
            _dispatch(result, src, codes, options, region)
    except BaseException as exc:
        if not isinstance(exc, Exception) and not isinstance(exc, FileTimeout):
            raise  # KeyboardInterrupt, SystemExit
        _failed(result, path, options, exc, alarm["fired"])
    if key is not None and result.cacheable:
        cache.put(key, result.findings + result.foreign, result.errors, deps=result.deps)
    return result


def cache_lookup(src: SourceKind, codes: frozenset[str], options: Options, cache) -> tuple[FileResult | None, str | None]:
    """``(the cached result or None, the file's key)``; ``(None, None)`` when the
    run does not use the cache (no cache, or a mode that writes)."""
    if cache is None or options.mode != "check":
        return None, None
    key = cache.key(src.path, codes, src.raw)
    hit = cache.get(key)
    if hit is None:
        return None, key
    own = [f for f in hit[0] if HELPER_OF not in f.extra]
    result = FileResult(src.path, findings=own, errors=hit[1], cached=True,
                        foreign=[f for f in hit[0] if HELPER_OF in f.extra] if len(own) < len(hit[0]) else [])
    _finish(result, options, src, None)
    return result, key


def _dispatch(result: FileResult, src: SourceKind, codes: frozenset[str], options: Options, region: bool | None) -> None:
    """The mode dispatch, the same for every source kind: lint the program (check),
    add ``# noqa`` (add-noqa) or run the fix loop (fix, diff, fix-only); write the
    changed file atomically, or show the diff."""
    text = src.program()
    if text is None:
        return
    path = src.path
    known = {text: region}  # the prefilter's verdict, for the program as read

    from fakegrad_lint.engine.lint import lint_source

    def lint(t: str, deps: dict | None = None, foreign: list | None = None) -> list[Finding]:
        return src.lint(lambda p: lint_source(p, path, codes, deps=deps, region=known.pop(p, None), foreign=foreign), t)

    mode = options.mode
    new = text
    fixed = added = 0  # what the mode did: counted once the file is written
    if mode == "check":
        # findings at a helper's line in another module: Python files only
        # (a notebook's positions are its cells')
        findings = lint(text, result.deps, result.foreign if type(src) is PythonSource else None)
    elif mode == "add-noqa":
        from fakegrad_lint.engine.noqa import add_noqa

        findings = [f for f in lint(text) if f.code != UNUSED_NOQA_CODE]
        new, added = add_noqa(text, findings)
        findings = []
    else:
        from fakegrad_lint.fix import apply as fixes

        last_foreign: list = []  # the helper-line findings of the last lint (of the text left)

        def lint_keeping_foreign(t: str) -> list[Finding]:
            if mode != "fix" or type(src) is not PythonSource:
                return lint(t)
            last_foreign[:] = []
            return lint(t, foreign=last_foreign)

        outcome = fixes.fix_text(text, lint_keeping_foreign, unsafe=options.unsafe_fixes,
                                 max_iterations=options.max_fix_iterations)
        findings = [] if mode == "fix-only" else list(outcome.remaining)
        # placed at the helpers' lines after the project pass, as `check` places them
        # (fix/projects.py, ``place_helper_findings``): one set of findings for both
        result.foreign = list(last_foreign)
        fixed = len(outcome.applied)
        new = outcome.text
        if outcome.changed:
            result.fixed_text = new
    shown = text
    if new != text:
        if mode == "diff":
            from fakegrad_lint.fix.apply import unified_diff

            result.diff = "".join(unified_diff(*piece) for piece in src.diffs(text, new))
        else:
            # expected: a file changed by someone else since it was read
            # is left alone (and reported), never overwritten.
            data = src.write(text, new)
            if data != src.raw:
                disarm_alarm()
                write_atomic(path, data, expected=src.raw)
            shown = new
    result.fixed, result.added_noqa = fixed, added
    result.findings = src.to_report(findings, new)
    _finish(result, options, src, shown)


def _finish(result: FileResult, options: Options, src: SourceKind, shown: str | None) -> None:
    """Count the hidden unsafe fixes; keep the text reporters print from."""
    if not options.unsafe_fixes:
        result.hidden_unsafe = sum(1 for f in result.findings if hidden_unsafe(f.fix))
    if result.findings:
        result.source, result.cells = src.shown(shown)


def _failed(result: FileResult, path: str, options: Options, exc: BaseException, alarm_fired: bool) -> None:
    """Turn what stopped the work on one file into its one-line error."""

    def skip(reason: str) -> None:
        result.findings = []
        result.cacheable = False
        result.errors.append(ToolError(path, reason))

    if alarm_fired or _caused_by(exc, FileTimeout):
        skip(f"timed out after {options.timeout:g} s (see --timeout-per-file); file skipped")
        return
    try:
        raise exc
    except RecursionError:
        skip("too deeply nested to analyze (RecursionError); file skipped")
    except ParserLimit as limit:
        skip(f"{limit}; file skipped")
    except MemoryError:
        skip("out of memory while analyzing (MemoryError); file skipped")
    except SourceError as exc:
        result.cacheable = False
        result.errors.append(ToolError(path, str(exc)))
    except SyntaxError as exc:
        result.errors.append(ToolError(path, syntax_error_reason(exc)))
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        result.errors.append(ToolError(path, f"{type(exc).__name__}: {exc}"))
    except Exception as err:  # an analyzer bug must not take the run down
        if os.environ.get("FAKEGRAD_LINT_DEBUG"):
            import traceback

            traceback.print_exc()
        skip(f"internal error: {type(err).__name__}: {err}")


def _caused_by(exc: BaseException | None, kind: type) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


# ---------------------------------------------------------------------------
# many files


@dataclass
class RunResult:
    results: list[FileResult]
    errors: list[ToolError]  # read errors (per-file errors are in results)
    files_checked: int
    stats: dict | None = None  # with run(..., stats=True): files and lines per stage

    @property
    def findings(self) -> list[Finding]:
        out = [f for r in self.results for f in r.findings]
        out.sort(key=lambda f: f.sort_key)
        return out

    @property
    def all_errors(self) -> list[ToolError]:
        errs = list(self.errors) + [e for r in self.results for e in r.errors]
        return errs


def _worker(args) -> FileResult:
    path, codes, options, cache, verdict = args
    # the parent prefiltered the file and looked it up in the cache
    return process_file(path, codes, options, cache=cache, missed=True, verdict=verdict)


def _worker_init(parent_pid: int | None = None) -> None:
    # Workers leave Ctrl-C to the parent, and die with it: a parent killed by
    # ``kill -9`` must not leave workers holding stdout/stderr open.
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # pragma: no cover
        pass
    if parent_pid is not None:
        from fakegrad_lint.engine.subprocs import die_with_parent

        die_with_parent(parent_pid)


class _Stats:
    """Files and lines per stage: read, past the prefilter, parsed (no syntax
    or tool error), with findings; plus cache hits."""

    KEYS = ("files", "lines", "prefilter_files", "prefilter_lines", "parsed_files", "parsed_lines",
            "finding_files", "findings", "cache_hits", "errors")

    def __init__(self):
        self.d = dict.fromkeys(self.KEYS, 0)

    def read(self, sf: SourceFile) -> None:
        self.d["files"] += 1
        self.d["lines"] += _lines(sf.raw)

    def passed(self, sf: SourceFile, result: FileResult) -> None:
        self.passed_lines(_lines(sf.raw), result)

    def passed_lines(self, n: int, result: FileResult) -> None:
        self.d["prefilter_files"] += 1
        self.d["prefilter_lines"] += n
        if not result.errors:
            self.d["parsed_files"] += 1
            self.d["parsed_lines"] += n
        if result.findings:
            self.d["finding_files"] += 1
            self.d["findings"] += len(result.findings)
        self.d["cache_hits"] += result.cached

    def merge(self, other: dict) -> None:
        for k, v in other.items():
            self.d[k] += v


def _lines(raw: bytes) -> int:
    return raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)


class Progress:
    """``checked i/n files`` on stderr, only when stderr is a terminal and ``CI``
    is not set."""

    def __init__(self, total: int, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stderr
        if enabled is None:
            try:
                enabled = self.stream.isatty() and not os.environ.get("CI") and total >= 100
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = enabled
        self.total = total
        self.done = 0

    def step(self, n: int = 1) -> None:
        self.done += n
        if self.enabled and (self.done % 25 == 0 or self.done == self.total):
            self.stream.write(f"\rfakegrad-lint: checked {self.done}/{self.total} files")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


# Cyclic-GC thresholds while checking (as mypy does): the analysis allocates
# millions of short-lived objects, and with the default (700, 10, 10) the full
# collections that follow cost 15-20 % of the CPU on files that name a fake mode
# (torch's 102: 1.5 s of 8.5 s in GC, 0.7 s with these; peak memory 54 -> 78 MB
# in one process; bench/README.md).
GC_THRESHOLD = (200_000, 30, 30)


def run(
    paths: list[str],
    codes_for: Callable[[str], frozenset[str]],
    options: Options,
    *,
    jobs: int | None = None,
    progress: bool | None = None,
    cache=None,
    stats: bool = False,
    final: bool = False,
) -> RunResult:
    """Check ``paths`` (files found by discovery).

    ``cache``: a :class:`fakegrad_lint.engine.cache.Cache` (used for ``check`` runs
    only). ``stats``: also count files and lines per stage (``RunResult.stats``).
    ``final``: the process exits after this run (the command line), so the garbage
    left is never collected (:func:`gc.freeze`).
    """
    jobs = jobs or os.cpu_count() or 1
    from fakegrad_lint.analysis.roots import set_summary_store

    # module summaries of the whole-project analysis are kept by content beside the findings
    set_summary_store(cache.directory if cache is not None and options.mode == "check" else None)
    bar = Progress(len(paths), progress)
    gc_was = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)  # forked workers inherit it
    try:
        if jobs > 1 and len(paths) >= PARALLEL_SCAN_FILES:
            out = _scan_parallel(paths, codes_for, options, jobs, bar, cache, stats)
        else:
            out = _run_here(paths, codes_for, options, jobs, bar, cache, stats)
    finally:
        if final:
            # the process exits after this run (the CLI): the cycles the analysis left
            # are frozen, not collected, so neither the thresholds put back nor the
            # interpreter's collection at exit traverse them (0.2-0.3 s on torch's
            # fake-mode files in one process)
            gc.freeze()
        gc.set_threshold(*gc_was)
        bar.close()
    if options.mode == "check":
        _place_foreign(out, paths, codes_for)
    out.results.sort(key=lambda r: r.path.replace(os.sep, "/"))
    return out


def _used_by(f: Finding, silenced: dict) -> bool:
    """Is ``f`` an unused-noqa finding (FGL100) whose every code silenced a
    finding at a helper's line on that row?"""
    if f.code != UNUSED_NOQA_CODE or f.location.row not in silenced:
        return False
    import re

    m = re.search(r"unused: ([^)]*)\)", f.message)
    dead = {c.strip() for c in m.group(1).split(",")} if m else set()
    return bool(dead) and dead <= silenced[f.location.row]


def _place_foreign(out: RunResult, paths: list[str], codes_for) -> None:
    """Whole-project analysis: a leak inside a helper of another module is also
    reported at its line there, when that module is one of the files checked
    (never otherwise: linting the helper alone sees no real value). Each goes
    through that file's enabled codes and ``# noqa`` and is kept once per
    (file, line, code), beside the file's own findings."""
    foreign = [f for r in out.results for f in r.foreign]
    for r in out.results:
        r.foreign = []
    if not foreign:
        return
    checked = {os.path.realpath(p): p for p in paths}
    by_file: dict = {}
    for f in foreign:
        p = checked.get(os.path.realpath(f.filename))
        if p is not None:
            by_file.setdefault(p, []).append(f)
    if not by_file:
        return
    from dataclasses import replace

    from fakegrad_lint.engine import noqa as noqa_mod

    results = {r.path: r for r in out.results}
    for p, found in sorted(by_file.items()):
        codes = codes_for(p)
        r = results.get(p)
        seen = {(f.location.row, f.code) for f in r.findings} if r is not None else set()
        mine = []
        for f in found:
            if f.code in codes and (f.location.row, f.code) not in seen:
                seen.add((f.location.row, f.code))
                mine.append(replace(f, filename=p))
        if not mine:
            continue
        try:
            sf = read_source(p)
        except SourceError:
            continue
        kept, _unused = noqa_mod.apply(sf.text, mine, filename=p)
        if r is not None and len(kept) < len(mine):
            # a directive that silences a finding at a helper's line is used
            silenced: dict = {}
            for f in mine:
                if not any(k is f or (k.location, k.code) == (f.location, f.code) for k in kept):
                    silenced.setdefault(f.location.row, set()).add(f.code)
            r.findings = [f for f in r.findings if not _used_by(f, silenced)]
        if not kept:
            continue
        if r is None:
            r = results[p] = FileResult(p)
            out.results.append(r)
        r.findings = sorted(r.findings + kept, key=lambda f: f.sort_key)
        if r.source is None and r.cells is None:
            r.source = sf.text


def _run_here(paths, codes_for, options: Options, jobs: int, bar: Progress, cache, stats: bool) -> RunResult:
    """Read and prefilter in this process; analyze here or, with enough work, in a pool.

    Memory stays flat whatever the tree: with one job each file is analyzed as
    soon as it is read; otherwise the text of the files waiting for analysis
    is kept only until the run is known to need a pool (whose workers read
    their files themselves), so at most PARALLEL_MIN_BYTES of source waits."""
    errors: list[ToolError] = []
    results: list[FileResult] = []
    # [path, codes, source kind (None once a pool is certain), bytes, prefilter verdict, cache key]
    todo: list[list] = []
    lines_of: dict[str, int] = {}
    st = _Stats() if stats else None
    serial = jobs <= 1
    pending = 0  # bytes waiting for analysis
    for path in paths:
        try:
            sf = read_source(path)
        except SourceError as exc:
            errors.append(ToolError(path, str(exc)))
            bar.step()
            continue
        if st:
            st.read(sf)
        codes = codes_for(path)
        opened, verdict = _admit(sf, codes)
        if not verdict[0]:
            bar.step()
            continue
        if st:
            lines_of[path] = _lines(sf.raw)
        if not isinstance(opened, SourceKind):  # not what its name says (an invalid notebook)
            results.append(opened)
            bar.step()
            continue
        if serial:
            results.append(process_source(opened, codes, options, cache, verdict=verdict))
            bar.step()
            continue
        # Cache hits cost a hash and a small read: serve them here, so a
        # warm run needs neither the analyzer's import nor a pool.
        hit, key = cache_lookup(opened, codes, options, cache)
        if hit is not None:
            results.append(hit)
            bar.step()
            continue
        todo.append([path, codes, opened, len(sf.raw), verdict, key])
        pending += len(sf.raw)
        if pending >= PARALLEL_MIN_BYTES and len(todo) >= PARALLEL_THRESHOLD:
            for item in todo:
                item[2] = None  # a pool it is: its workers read the files
    big = pending >= PARALLEL_MIN_BYTES
    if serial or len(todo) < PARALLEL_THRESHOLD or not big:
        for path, codes, src, _size, verdict, key in todo:
            results.append(process_source(src, codes, options, cache, verdict=verdict, key=key))
            bar.step()
    else:
        results.extend(_parallel(todo, options, jobs, bar, cache))
    if st:
        for r in results:
            if r.path in lines_of:
                st.passed_lines(lines_of[r.path], r)
        st.d["errors"] = len(errors) + sum(len(r.errors) for r in results)
    return RunResult(results, errors, len(paths), st.d if st else None)


def _admit(sf: SourceFile, codes: frozenset[str]) -> tuple[SourceKind | FileResult, tuple[bool, bool | None]]:
    """``sf`` opened as its kind, and the prefilter's verdict on it; a file that
    is not what its name says (an invalid notebook) is the result that says so."""
    try:
        src = open_source(sf)
    except SourceError as exc:
        return FileResult(sf.path, errors=[ToolError(sf.path, str(exc))], cacheable=False), (True, None)
    return src, prefilter(src.prefilter_text(), codes, sf.path)


def _prepare_fork() -> object:
    """Import the analyzer once in the parent so forked workers inherit it;
    the fork context on Linux (None elsewhere: the platform default)."""
    import multiprocessing

    import fakegrad_lint.engine.lint  # noqa: F401
    import fakegrad_lint.engine.noqa  # noqa: F401

    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return None


def _parallel(todo, options: Options, jobs: int, bar: Progress, cache=None) -> list[FileResult]:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    todo = sorted(todo, key=lambda t: t[3], reverse=True)  # largest first
    ctx = _prepare_fork()
    out = []
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)) as pool:
        futures = {
            pool.submit(_worker, (path, codes, options, cache, verdict)): path for path, codes, _src, _size, verdict, _key in todo
        }
        for fut in as_completed(futures):
            path = futures[fut]
            try:
                out.append(fut.result())
            except Exception as exc:  # a worker died (killed, out of memory ...)
                out.append(FileResult(path, errors=[ToolError(path, f"worker failed: {type(exc).__name__}: {exc}")]))
            bar.step()
    return out


def _scan_chunk(items, options: Options | None, cache, stats: bool, failed: str | None = None):
    """Worker side of :func:`_scan_parallel`: read, prefilter and process a chunk.
    With ``failed`` (the chunk's worker died), read and prefilter here, no parsing:
    the files that needed analysis get ``failed`` as their error.
    Returns (read errors with their index, results, stats)."""
    read_errors: list[tuple[int, ToolError]] = []
    results: list[FileResult] = []
    st = _Stats() if stats else None
    for i, path, codes in items:
        try:
            sf = read_source(path)
        except SourceError as exc:
            read_errors.append((i, ToolError(path, str(exc))))
            continue
        if st:
            st.read(sf)
        opened, verdict = _admit(sf, codes)
        if verdict[0]:
            if not isinstance(opened, SourceKind):
                r = opened
            elif failed is None:
                r = process_source(opened, codes, options, cache, verdict=verdict)
            else:
                r = FileResult(path, errors=[ToolError(path, failed)], cacheable=False)
            if st:
                st.passed(sf, r)
                st.d["errors"] += len(r.errors)
            results.append(r)
    return read_errors, results, (st.d if st else None)


def _scan_parallel(paths, codes_for, options: Options, jobs: int, bar: Progress, cache, stats: bool) -> RunResult:
    """Many files: workers read, prefilter and process strided chunks (a chunk
    takes every n-th file, so the heavy files of one folder spread over many
    chunks and the pool stays balanced to the end)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    items = [(i, p, codes_for(p)) for i, p in enumerate(paths)]
    n_chunks = max(jobs * 4, -(-len(items) // SCAN_CHUNK))
    chunks = [items[k::n_chunks] for k in range(n_chunks)]
    chunks = [c for c in chunks if c]
    ctx = _prepare_fork()
    read_errors: list[tuple[int, ToolError]] = []
    results: list[FileResult] = []
    st = _Stats() if stats else None
    with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(_scan_chunk, chunk, options, cache, stats): chunk for chunk in chunks}
        for fut in as_completed(futures):
            chunk = futures[fut]
            try:
                errs, res, d = fut.result()
            except Exception as exc:  # a worker died: the chunk's files that pass the prefilter get the error
                errs, res, d = _scan_chunk(chunk, None, None, stats, failed=f"worker failed: {type(exc).__name__}: {exc}")
            read_errors.extend(errs)
            results.extend(res)
            if st and d:
                st.merge(d)
            bar.step(len(chunk))
    read_errors.sort(key=lambda t: t[0])
    return RunResult(results, [e for _, e in read_errors], len(paths), st.d if st else None)
