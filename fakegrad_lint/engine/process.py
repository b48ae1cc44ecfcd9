"""Per file: read, prefilter, parse once, check, filter, ``# noqa``, fix.

:func:`process_file` is the unit of work. Its result depends only on the file's
bytes, the :class:`Options` and the codes enabled for the file (plus the tool's
version), so a content-hash cache can wrap it later without changing callers.

:func:`run` maps it over many files: the prefilter runs in the parent (cheap);
the files that pass go to a process pool, largest first, or through a plain loop
when there is little work (see :data:`PARALLEL_THRESHOLD`) or
``jobs == 1``. Workers never start pools of their own.

Bad input never raises out of here: it becomes a :class:`ToolError`
(``path: error: reason``) and the run goes on.
"""

from __future__ import annotations

import ast
import gc
import os
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from fakegrad_lint.findings import Finding, ToolError, hidden_unsafe
from fakegrad_lint.engine.prefilter import may_contain_fake_region, may_have_fgl_noqa
from fakegrad_lint.sources.sourcefile import SourceError, SourceFile, read_source

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
UNUSED_NOQA_CODE = "FGL100"
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
    source: str | None = None  # the final text, when there is something to show
    # False when the result depends on the moment (timeout, memory, internal
    # error, unreadable file): such results are never cached.
    cacheable: bool = True
    cached: bool = False  # served from the cache
    fixed_text: str | None = None  # fix modes, .py files: the text after the fixes, when it changed
    # {path: sha256} of the other project modules the analysis read (whole-project
    # analysis): the cached result holds only while they are unchanged
    deps: dict = field(default_factory=dict)


class FileTimeout(BaseException):
    """Raised by the per-file alarm (a BaseException so no ``except Exception``
    inside the analyzer swallows it)."""


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the body after ``seconds`` with :class:`FileTimeout`.

    Uses ``SIGALRM``, so it only works in the main thread on POSIX; elsewhere it
    does nothing. Yields a dict whose ``"fired"`` is True once the alarm went
    off: Python wraps an exception raised in some places (``__set_name__``,
    finalizers ...) in another one, and the caller must still see a timeout.
    """
    usable = (
        seconds
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    state = {"fired": False}
    if not usable:
        yield state
        return

    def on_alarm(signum, frame):
        state["fired"] = True
        raise FileTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield state
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def disarm_alarm() -> None:
    """Cancel the per-file alarm: called right before a fixed file is written,
    so a timeout can never cut a write short nor report a file that was
    written as skipped (the work is done; only the write is left)."""
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


def syntax_error_reason(exc: SyntaxError) -> str:
    where = []
    if exc.lineno:
        where.append(f"line {exc.lineno}")
    if exc.offset:
        where.append(f"column {exc.offset}")
    suffix = f" ({', '.join(where)})" if where else ""
    return f"{type(exc).__name__}: {exc.msg}{suffix}"


class ParserLimit(Exception):
    """CPython's parser gave up on the file (it stops with a bare
    ``MemoryError`` when expressions nest too deeply, e.g. 100,000 unary
    minus signs); ``str()`` says so as CPython would."""


def parse(text: str, path: str) -> ast.Module:
    """The module's AST, with function bodies parsed when the analysis first reads
    them (:mod:`fakegrad_lint.sources.lazyparse`; the same AST as ``ast.parse`` once read)."""
    from fakegrad_lint.sources import lazyparse

    try:
        return lazyparse.parse(text, path)
    except MemoryError as exc:
        raise _parser_limit(exc) from None


def _parser_limit(exc: MemoryError) -> ParserLimit:
    detail = f": {exc}" if str(exc) else ""
    return ParserLimit(
        f"too complex for Python's parser (CPython stops with MemoryError{detail}: nested too deeply or too large for it)"
    )


def lint_text(
    text: str,
    path: str,
    codes: frozenset[str],
    *,
    tree: ast.Module | None = None,
    deps: dict | None = None,
) -> list[Finding]:
    """The findings to report for ``text``: every rule's findings, restricted to
    ``codes``, minus those a ``# noqa`` silences, plus FGL100 (unused noqa) when
    enabled. Raises SyntaxError/ValueError when the text does not parse.
    ``deps`` receives the project modules the analysis read (see check_source)."""
    from fakegrad_lint.engine import lint as checker
    from fakegrad_lint.engine import noqa

    report_unused = UNUSED_NOQA_CODE in codes
    if may_contain_fake_region(text) or _reaches_region(text, path):
        if tree is None:
            tree = parse(text, path)
        if deps is not None:
            found = checker.check_source(text, path, tree=tree, deps=deps)
        else:
            found = checker.check_source(text, path, tree=tree)
        from fakegrad_lint.sources.lazyparse import raise_deferred

        try:
            raise_deferred(tree)  # a syntax error in a body the analysis read
        except MemoryError as exc:
            raise _parser_limit(exc) from None
        findings = [f for f in found if f.code in codes]
    else:
        findings = []
    if report_unused and not may_have_fgl_noqa(text):
        report_unused = False
    if not findings and not report_unused:
        return []
    kept, unused = noqa.apply(text, findings, report_unused=report_unused, filename=path)
    if unused:
        kept = sorted(kept + unused, key=lambda f: f.sort_key)
    return kept


def _reaches_region(text: str, path: str | None) -> bool:
    """The prefilter's project side: a file that names no fake mode but imports a
    module of its project that can reach one (see analysis/project.py)."""
    if not path or "import" not in text or path.startswith("<"):
        return False
    from fakegrad_lint.analysis.project import reaches_region

    try:
        return reaches_region(path, text)
    except (OSError, ValueError, RecursionError):
        return False


def needs_work(text: str, codes: frozenset[str], path: str | None = None) -> bool:
    """The parent's prefilter: can this file produce anything to report?"""
    if may_contain_fake_region(text):
        return True
    # FGL100 keeps the prefilter: it can only report a ``# noqa: FGL...``
    if UNUSED_NOQA_CODE in codes and may_have_fgl_noqa(text):
        return True
    return _reaches_region(text, path)


def _is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def process_file(
    path: str, codes: frozenset[str], options: Options, sf: SourceFile | None = None, cache=None
) -> FileResult:
    """Check (and with a fix mode, fix) one file. Never raises for bad input.

    With a :class:`fakegrad_lint.engine.cache.Cache` and ``mode == "check"``, a file
    whose key is in the cache costs one hash and one small read."""
    if cache is not None and options.mode == "check" and not _is_notebook(path):
        return _process_cached(path, codes, options, sf, cache)
    return _process_file(path, codes, options, sf)


def _process_cached(path: str, codes: frozenset[str], options: Options, sf: SourceFile | None, cache) -> FileResult:
    if sf is None:
        try:
            sf = read_source(path)
        except SourceError as exc:
            return FileResult(path, errors=[ToolError(path, str(exc))], cacheable=False)
    if not _genuine_checker():
        return _process_file(path, codes, options, sf)
    key = cache.key(path, codes, sf.raw)
    hit = _cache_lookup(path, sf, key, options, cache)
    if hit is not None:
        return hit
    return _process_and_store(path, codes, options, sf, cache, key)


def _genuine_checker() -> bool:
    # Not loaded yet: nobody can have replaced check_source (and a warm run
    # that only reads the cache never imports the analyzer).
    if "fakegrad_lint.engine.lint" not in sys.modules:
        return True
    from fakegrad_lint.engine.cache import genuine_checker

    return genuine_checker()


def _cache_lookup(path: str, sf: SourceFile, key: str, options: Options, cache) -> FileResult | None:
    hit = cache.get(key)
    if hit is None:
        return None
    findings, errors = hit
    result = FileResult(path, findings=findings, errors=errors, cached=True)
    _finish_check(result, options, sf.text)
    return result


def _process_and_store(path: str, codes: frozenset[str], options: Options, sf: SourceFile, cache, key: str) -> FileResult:
    result = _process_file(path, codes, options, sf)
    if result.cacheable:
        cache.put(key, result.findings, result.errors, deps=result.deps)
    return result


def _finish_check(result: FileResult, options: Options, text: str) -> None:
    if not options.unsafe_fixes:
        result.hidden_unsafe = sum(
            1
            for f in result.findings
            if hidden_unsafe(f.fix)
        )
    if result.findings:
        result.source = text


def _process_file(path: str, codes: frozenset[str], options: Options, sf: SourceFile | None = None) -> FileResult:
    result = FileResult(path)
    alarm = {"fired": False}
    try:
        with time_limit(options.timeout) as alarm:
            _process(result, path, codes, options, sf)
    except BaseException as exc:
        if not isinstance(exc, Exception) and not isinstance(exc, FileTimeout):
            raise  # KeyboardInterrupt, SystemExit
        _failed(result, path, options, exc, alarm["fired"])
    return result


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


def _process(result: FileResult, path: str, codes: frozenset[str], options: Options, sf: SourceFile | None) -> None:
    if sf is None:
        sf = read_source(path)
    text = sf.text
    if _is_notebook(path):
        _process_notebook(result, path, codes, options, sf)
        return
    if not needs_work(text, codes, path):
        return

    def lint(t: str) -> list[Finding]:
        return lint_text(t, path, codes)

    mode = options.mode
    if mode == "check":
        findings = lint_text(text, path, codes, deps=result.deps if _genuine_checker() else None)
    elif mode == "add-noqa":
        from fakegrad_lint.engine.noqa import add_noqa

        findings = [f for f in lint(text) if f.code != UNUSED_NOQA_CODE]
        new_text, added = add_noqa(text, findings)
        if new_text != text:
            from fakegrad_lint.sources.sourcefile import write_atomic

            disarm_alarm()
            write_atomic(path, sf.encode(new_text), expected=sf.raw)
        result.added_noqa = added
        return
    else:
        from fakegrad_lint.fix import apply as fixes

        outcome = fixes.fix_text(text, lint, unsafe=options.unsafe_fixes, max_iterations=options.max_fix_iterations)
        findings = list(outcome.remaining)
        if outcome.changed:
            result.fixed_text = outcome.text
            if mode == "diff":
                result.diff = fixes.unified_diff(path, _as_written(sf, text), _as_written(sf, outcome.text))
            else:
                from fakegrad_lint.sources.sourcefile import write_atomic

                # expected: a file changed by someone else since it was read
                # is left alone (and reported), never overwritten.
                data = sf.encode(outcome.text)
                disarm_alarm()
                write_atomic(path, data, expected=sf.raw)
                text = outcome.text
        result.fixed = len(outcome.applied)
        if mode == "fix-only":
            findings = []
    result.findings = findings
    _finish_check(result, options, text)


def _as_written(sf: SourceFile, text: str) -> str:
    """``text`` as the bytes the file holds (its encoding, its BOM), seen as
    UTF-8 with surrogate escapes: a diff of a latin-1 file then carries the
    file's own bytes (the CLI writes them back with ``surrogateescape``), so
    ``patch`` gives exactly what ``--fix`` writes."""
    if sf.encoding == "utf-8" and not sf.bom:
        return text
    return sf.encode(text).decode("utf-8", "surrogateescape")


def _process_notebook(result: FileResult, path: str, codes, options: Options, sf: SourceFile) -> None:
    """Hook for Jupyter notebooks, implemented in ``fakegrad_lint.sources.notebook``:
    ``process(result, path, sf, lint, options)`` lints the code cells joined as
    one program with ``lint`` and fills ``result`` as :func:`_process` does
    (findings with ``cell`` set and rows relative to the cell; in fix modes only
    the changed cells' sources are rewritten, atomically). Raises
    ``SourceError`` for a file that is not a notebook."""
    try:
        from fakegrad_lint.sources import notebook  # type: ignore[attr-defined]
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.endswith("notebook"):
            raise SourceError("notebooks (.ipynb) are not supported by this build") from None
        raise

    def lint(t: str) -> list[Finding]:
        return lint_text(t, path, codes)

    notebook.process(result, path, sf, lint, options, prefilter=True)


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
    path, codes, options, cache = args
    return process_file(path, codes, options, cache=cache)


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
) -> RunResult:
    """Check ``paths`` (files found by discovery).

    ``cache``: a :class:`fakegrad_lint.engine.cache.Cache` (used for ``check`` runs
    only). ``stats``: also count files and lines per stage (``RunResult.stats``).
    """
    jobs = jobs or os.cpu_count() or 1
    bar = Progress(len(paths), progress)
    gc_was = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)  # forked workers inherit it
    try:
        if jobs > 1 and len(paths) >= PARALLEL_SCAN_FILES:
            out = _scan_parallel(paths, codes_for, options, jobs, bar, cache, stats)
        else:
            out = _run_here(paths, codes_for, options, jobs, bar, cache, stats)
    finally:
        gc.set_threshold(*gc_was)
        bar.close()
    out.results.sort(key=lambda r: r.path.replace(os.sep, "/"))
    return out


def _run_here(paths, codes_for, options: Options, jobs: int, bar: Progress, cache, stats: bool) -> RunResult:
    """Read and prefilter in this process; analyze here or, with enough work, in a pool.

    Memory stays flat whatever the tree: with one job each file is analyzed as
    soon as it is read; otherwise the text of the files waiting for analysis
    is kept only until the run is known to need a pool (whose workers read
    their files themselves), so at most PARALLEL_MIN_BYTES of source waits."""
    errors: list[ToolError] = []
    results: list[FileResult] = []
    # (path, codes, source or None once a pool is certain, bytes, lines)
    todo: list[list] = []
    lines_of: dict[str, int] = {}
    st = _Stats() if stats else None
    use_cache = cache is not None and options.mode == "check" and _genuine_checker()
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
        if not (_is_notebook(path) or needs_work(sf.text, codes, path)):
            bar.step()
            continue
        if st:
            lines_of[path] = _lines(sf.raw)
        if use_cache and not _is_notebook(path):
            # Cache hits cost a hash and a small read: serve them here, so a
            # warm run needs neither the analyzer's import nor a pool.
            hit = _cache_lookup(path, sf, cache.key(path, codes, sf.raw), options, cache)
            if hit is not None:
                results.append(hit)
                bar.step()
                continue
        if serial:
            results.append(process_file(path, codes, options, sf, cache))
            bar.step()
            continue
        todo.append([path, codes, sf, len(sf.raw)])
        pending += len(sf.raw)
        if pending >= PARALLEL_MIN_BYTES and len(todo) >= PARALLEL_THRESHOLD:
            for item in todo:
                item[2] = None  # a pool it is: its workers read the files
    big = pending >= PARALLEL_MIN_BYTES
    if serial or len(todo) < PARALLEL_THRESHOLD or not big:
        for path, codes, sf, _size in todo:
            results.append(process_file(path, codes, options, sf, cache))
            bar.step()
    else:
        results.extend(_parallel(todo, options, jobs, bar, cache))
    if st:
        for r in results:
            if r.path in lines_of:
                st.passed_lines(lines_of[r.path], r)
        st.d["errors"] = len(errors) + sum(len(r.errors) for r in results)
    return RunResult(results, errors, len(paths), st.d if st else None)


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
        futures = {pool.submit(_worker, (path, codes, options, cache)): path for path, codes, _sf, _size in todo}
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
        if _is_notebook(path) or needs_work(sf.text, codes, path):
            if failed is None:
                r = process_file(path, codes, options, sf, cache)
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

