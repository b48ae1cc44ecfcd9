"""The CLI's run, for the adapters that see one file at a time (the Fixit rule pack, the
LibCST codemod).

A finding can hold a fix whose edit lands in another module of the project, where the
region is opened (:mod:`fakegrad_lint.fix.projects`), and a helper's findings come from
the analysis of the files that call it. Neither can be seen from the file alone, so the
adapters take both from one run over the files the CLI would check together: the same
engine, the same ``check`` (findings, with the proved fixes of every file) and the same
``--fix`` loop in memory (``--diff`` mode: nothing is written by the run), followed by the
cross-module pass. Each file then gets exactly what ``fakegrad-lint check`` reports for it
and the text ``fakegrad-lint --fix`` writes for it.

The files of the run are the codemod's own (libcst hands every path of the run to a
metadata provider's ``gen_cache``), or, for Fixit, which hands over one file at a time,
the Python files of its configuration's root, found as ``fakegrad-lint check ROOT`` finds
them. The run is made once per process and kept for as long as the files are unchanged
(by size and modification time).

:class:`RunFiles` is that provider: ``(root, files)`` for each file of a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from libcst.metadata import BaseMetadataProvider

__all__ = ["FileOutcome", "RunFiles", "outcomes", "outcome_for", "project_files"]


@dataclass
class FileOutcome:
    findings: list = field(default_factory=list)  # what `check` reports for the file
    text: str | None = None  # the file as `--fix` writes it; None: unchanged
    fixed: int = 0  # fixes applied (counted at the file whose finding they fix)


class RunFiles(BaseMetadataProvider[object]):
    """``(root, files of the run)`` for the module (a libcst metadata provider whose cache
    libcst's ``FullRepoManager`` fills: Fixit with one path and its configuration's root,
    ``libcst.tool codemod`` with every path of the run and its repository root)."""

    @classmethod
    def gen_cache(cls, root_path, paths, timeout=None, **_kwargs):
        run = (os.path.abspath(str(root_path)), tuple(os.path.abspath(p) for p in paths))
        return {p: run for p in paths}

    def __init__(self, cache: object = None) -> None:
        # no full-repository manager (libcst's CodemodTest, a caller that runs the command
        # itself): no run is known and the file is fixed alone (libcst would refuse)
        super().__init__(_ALONE if cache is None else cache)

    def _gen_impl(self, module) -> None:
        if self.cache is not _ALONE:
            self.set_metadata(module, self.cache)


_ALONE = object()


_memo: dict = {}
_KEPT = 32  # runs kept per process


def _stamp(files) -> tuple:
    out = []
    for p in files:
        try:
            st = os.stat(p)
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def project_files(root: str) -> list[str] | None:
    """The Python files ``fakegrad-lint check ROOT`` checks (None: no usable root, e.g. the
    file system's root, when Fixit found no configuration)."""
    if not root or os.path.dirname(root) == root or not os.path.isdir(root):
        return None
    if root not in _found:
        _found[root] = _discover(root)
    return _found[root]


_found: dict = {}  # root -> its files (a process serves one run: found once)


def _discover(root: str) -> list[str] | None:
    from fakegrad_lint.config import discover
    from fakegrad_lint.config.settings import ConfigError, Settings

    try:
        found = discover.discover([root], Settings.load([root]))
    except ConfigError:
        return None
    return [os.path.abspath(p) for p in found.files if p.endswith(".py")]


def outcomes(root: str, files, codes: frozenset, unsafe: bool) -> dict:
    """``{absolute path: FileOutcome}`` of one run over ``files`` (import root ``root``)."""
    files = tuple(sorted(os.path.abspath(p) for p in files))
    key = (root, files, codes, unsafe)
    stamp = _stamp(files)
    hit = _memo.get(key)
    if hit is not None and (hit[0] == stamp or _only_fixed_since(files, hit[0], stamp, hit[1])):
        _memo[key] = (stamp, hit[1])
        return hit[1]
    out = _run(root, list(files), codes, unsafe)
    if len(_memo) >= _KEPT:  # a worker may serve the files of several roots, in any order
        _memo.pop(next(iter(_memo)))
    _memo[key] = (stamp, out)
    return out


def _only_fixed_since(files, old, new, out) -> bool:
    """Has every file that changed since the run only received the run's own fixed text
    (``fixit fix`` writing one file after another)? Then the run still holds: the CLI
    computes every file's fix from the texts before any was written. Without this each
    written file made the whole run again (the fixture corpus: 287 runs of 287 files)."""
    for path, a, b in zip(files, old, new):
        if a == b:
            continue
        o = out.get(path)
        if o is None or o.text is None:
            return False
        try:
            with open(path, "rb") as fh:
                now = fh.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if now != o.text:
            return False
    return True


def outcome_for(path: str, run, codes: frozenset, unsafe: bool) -> FileOutcome | None:
    """The outcome of ``path`` in the run ``(root, files)`` (None: not one of its files)."""
    root, files = run
    path = os.path.abspath(path)
    if path not in files:
        return None
    return outcomes(root, files, codes, unsafe).get(path, FileOutcome())


def _run(root: str, files: list[str], codes: frozenset, unsafe: bool) -> dict:
    from fakegrad_lint.analysis import roots
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.fix.projects import fix_across_modules, offer_across_modules

    def codes_for(_path: str) -> frozenset:
        return codes

    saved = roots._run_roots
    roots.set_run_roots([root])
    try:
        check_options = pipeline.Options(mode="check", unsafe_fixes=unsafe, timeout=None)
        checked = pipeline.run(files, codes_for, check_options, jobs=1, progress=False)
        offer_across_modules(checked, codes_for, check_options, files)
        fix_options = pipeline.Options(mode="diff", unsafe_fixes=unsafe, timeout=None)
        fixed = pipeline.run(files, codes_for, fix_options, jobs=1, progress=False)
        fix_across_modules(fixed, codes_for, fix_options, files)
    finally:
        roots._run_roots = saved
    out = {os.path.abspath(r.path): FileOutcome(findings=list(r.findings)) for r in checked.results}
    for r in fixed.results:
        o = out.setdefault(os.path.abspath(r.path), FileOutcome())
        o.fixed = r.fixed
        if r.fixed_text is not None:
            o.text = r.fixed_text
    return out
