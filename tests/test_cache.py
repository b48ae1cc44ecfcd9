"""The per-file result cache: warm == cold, invalidation, concurrency, damage.

Uses the real analyzer on a copy of fixture files (so findings carry real
fixes), through :func:`pipeline.run` and through the real CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakegrad_lint.engine import cache as cache_mod
from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.engine.cache import Cache
from fakegrad_lint.engine.process import Options
from fakegrad_lint.rules import DEFAULT_CODES, RULES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
ALL_CODES = frozenset(r.code for r in RULES)
SYNTAX_ERROR = "from torch._subclasses import FakeTensorMode\ndef f(:\n    pass\n"
PLAIN = "x = 1\n"  # never passes the prefilter


def _pick_fixtures(n=4):
    """Fixtures with findings that carry fixes: the first with a golden fixed file
    (picked by name, not by running the analysis over the corpus), checked here."""
    from fakegrad_lint.engine.lint import check_source

    picked = [p for p in sorted(FIXTURES.glob("hazard_*.py"))
              if not p.name.endswith(".fixed.py") and p.with_name(p.stem + ".fixed.py").exists()][:n]
    assert len(picked) == n
    assert all(any(f.fix for f in check_source(p.read_text(), str(p))) for p in picked)
    return picked


@pytest.fixture(scope="module")
def sources():
    return {p.name: p.read_bytes() for p in _pick_fixtures()}


@pytest.fixture
def tree(tmp_path, sources):
    root = tmp_path / "proj"
    root.mkdir()
    for name, data in sources.items():
        (root / name).write_bytes(data)
    (root / "broken.py").write_text(SYNTAX_ERROR)
    (root / "plain.py").write_text(PLAIN)
    return root


def files(root) -> list[str]:
    return sorted(str(p) for p in Path(root).glob("*.py"))


def run(root, cache, codes=DEFAULT_CODES, jobs=1, **opts):
    return pipeline.run(files(root), lambda p: codes, Options(**opts), jobs=jobs, cache=cache)


def shape(res):
    """Everything a reporter sees, in a comparable form."""
    return (
        [(f.filename, f.code, f.message, f.location, f.end_location, f.fix, f.cell) for f in res.findings],
        [str(e) for e in res.all_errors],
        [(r.path, r.hidden_unsafe, r.source) for r in res.results],
    )


def entries(cache_dir) -> list[Path]:
    return sorted(Path(cache_dir).glob(f"{cache_mod.FORMAT}/*/*.json"))


def test_warm_equals_cold_and_is_served_from_the_cache(tree, tmp_path):
    cold_nocache = run(tree, None)
    c = Cache(str(tmp_path / "c"))
    cold = run(tree, c)
    assert cold.findings and any(f.fix for f in cold.findings)
    assert [str(e) for e in cold.all_errors] == [f"{tree / 'broken.py'}: error: SyntaxError: invalid syntax (line 2, column 7)"]
    assert not any(r.cached for r in cold.results)
    # one entry per file past the prefilter (findings, clean or syntax error); none for plain.py
    passed = [r.path for r in cold.results]
    assert str(tree / "plain.py") not in passed
    assert len(entries(c.directory)) == len(passed)

    warm = run(tree, Cache(str(tmp_path / "c")))
    assert all(r.cached for r in warm.results)
    assert shape(warm) == shape(cold) == shape(cold_nocache)


def test_warm_run_does_not_import_the_analyzer(tree, tmp_path):
    cdir = tmp_path / "c"
    run(tree, Cache(str(cdir)))
    code = (
        "import sys, json; from fakegrad_lint.engine import process as pipeline; from fakegrad_lint.engine.cache import Cache;"
        "from fakegrad_lint.rules import DEFAULT_CODES;"
        f"fs = sorted(str(p) for p in __import__('pathlib').Path({str(tree)!r}).glob('*.py'));"
        f"r = pipeline.run(fs, lambda p: DEFAULT_CODES, pipeline.Options(), jobs=1, cache=Cache({str(cdir)!r}));"
        "print(json.dumps([len(r.findings), all(x.cached for x in r.results),"
        " [m for m in sys.modules if m.startswith('fakegrad_lint.analysis.interpreter') or m == 'fakegrad_lint.engine.lint']]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, all_cached, loaded = json.loads(proc.stdout)
    assert n > 0 and all_cached and loaded == []


def test_content_change_invalidates(tree, tmp_path, sources):
    c = Cache(str(tmp_path / "c"))
    first = run(tree, c)
    name = next(iter(sources))
    target = tree / name
    # comment out every line: no findings any more
    target.write_text("".join("# " + line for line in target.read_text().splitlines(True)) + "\nFakeTensorMode = 1\n")
    second = run(tree, Cache(str(tmp_path / "c")))
    by = {r.path: r for r in second.results}
    assert not by[str(target)].cached and by[str(target)].findings == []
    assert all(r.cached for p, r in by.items() if p != str(target))
    assert len(second.findings) < len(first.findings)
    assert shape(second) == shape(run(tree, None))


def test_settings_change_invalidates(tree, tmp_path, monkeypatch):
    cdir = str(tmp_path / "c")
    run(tree, Cache(cdir))
    # other codes: a different key
    narrow = run(tree, Cache(cdir), codes=frozenset({"FGL002"}))
    assert not any(r.cached for r in narrow.results)
    assert shape(narrow) == shape(run(tree, None, codes=frozenset({"FGL002"})))
    # --unsafe-fixes only changes what is computed after the cache: served from it, and right
    unsafe = run(tree, Cache(cdir), unsafe_fixes=True)
    assert all(r.cached for r in unsafe.results)
    assert shape(unsafe) == shape(run(tree, None, unsafe_fixes=True))
    # another tool version or another analyzer: all misses
    monkeypatch.setattr(cache_mod, "__version__", "999.0")
    assert not any(r.cached for r in run(tree, Cache(cdir)).results)
    monkeypatch.undo()
    monkeypatch.setattr(cache_mod, "_fingerprint", "0" * 64)
    assert not any(r.cached for r in run(tree, Cache(cdir)).results)
    monkeypatch.undo()
    monkeypatch.setattr(cache_mod, "_fingerprint", None)  # recomputed from the sources: hits again
    assert all(r.cached for r in run(tree, Cache(cdir)).results)


def test_fingerprint_covers_the_analyzer_sources():
    cache_mod._fingerprint = None
    fp = cache_mod.code_fingerprint()
    assert len(fp) == 64 and cache_mod.code_fingerprint() is fp
    import hashlib

    interp = Path(cache_mod.__file__).parent.parent / "analysis" / "interpreter.py"
    assert interp.is_file()
    # the fingerprint is a function of the file contents: feed a changed copy through the same code
    real_open = open

    def fake_open(path, mode="r", *a, **k):
        fh = real_open(path, mode, *a, **k)
        if os.path.abspath(path) == str(interp):
            data = fh.read() + b"\n# changed\n"
            fh.close()
            import io

            return io.BytesIO(data)
        return fh

    cache_mod._fingerprint = None
    try:
        cache_mod.open = fake_open  # module-level name lookup inside code_fingerprint
        changed = cache_mod.code_fingerprint()
    finally:
        del cache_mod.open
        cache_mod._fingerprint = None
    assert changed != fp and hashlib.sha256().hexdigest() not in (fp, changed)
    assert cache_mod.code_fingerprint() == fp


def test_corrupt_entries_are_ignored_and_replaced(tree, tmp_path):
    cdir = str(tmp_path / "c")
    cold = run(tree, Cache(cdir))
    ents = entries(cdir)
    assert len(ents) >= 4
    other_key = json.loads(ents[-1].read_text())["key"]
    damage = [
        b"",  # empty
        ents[1].read_bytes()[:-7],  # truncated
        b"\x00\xff garbage \x80",  # not JSON
        json.dumps({"key": other_key, "findings": [], "errors": []}).encode(),  # another file's entry
        b'{"key": "%s", "findings": [["FGL001"]], "errors": []}' % json.loads(ents[4 % len(ents)].read_text())["key"].encode(),
    ]
    for ent, data in zip(ents, damage):
        ent.write_bytes(data)
    warm = run(tree, Cache(cdir))
    assert shape(warm) == shape(cold)
    assert sum(not r.cached for r in warm.results) == min(len(damage), len(ents))
    # the damaged entries were rewritten: everything is a hit now
    again = run(tree, Cache(cdir))
    assert all(r.cached for r in again.results) and shape(again) == shape(cold)


def test_unwritable_cache_folder_does_not_fail_the_run(tree, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    res = run(tree, Cache(str(blocker / "c")))
    assert shape(res) == shape(run(tree, None))


def test_moment_dependent_results_are_not_cached(tree, tmp_path, monkeypatch):
    cdir = str(tmp_path / "c")
    from fakegrad_lint.engine import lint as checker

    real = checker.check_source

    def slow(*a, **k):
        raise pipeline.FileTimeout()

    monkeypatch.setattr(checker, "check_source", slow)
    res = run(tree, Cache(cdir))
    assert any("timed out" in e.reason for e in res.all_errors)
    monkeypatch.setattr(checker, "check_source", real)
    later = run(tree, Cache(cdir))
    # only the syntax error (decided before the analyzer) was cached
    assert [r.path for r in later.results if r.cached] == [str(tree / "broken.py")]
    assert shape(later) == shape(run(tree, None))


def test_fix_modes_bypass_the_cache(tree, tmp_path):
    cdir = tmp_path / "c"
    run(tree, Cache(str(cdir)), mode="diff")
    assert not cdir.exists()


def test_parallel_runs_use_the_cache_too(tree, tmp_path, monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("fork start method only on Linux")
    for i in range(3):  # enough files for the pool
        for src in list(tree.glob("hazard_*.py"))[:4]:
            shutil.copy(src, tree / f"copy{i}_{src.name}")
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_BYTES", 0)
    cdir = str(tmp_path / "c")
    cold = run(tree, Cache(cdir), jobs=2)
    monkeypatch.setattr(pipeline, "PARALLEL_SCAN_FILES", 4)  # the scanning pool this time
    warm = run(tree, Cache(cdir), jobs=2)
    assert all(r.cached for r in warm.results)
    assert shape(warm) == shape(cold) == shape(run(tree, None))


# ---------------------------------------------------------------------------
# through the CLI


def cli(*args, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow  # a whole-corpus run: slow tier (CI runs it)
def test_concurrent_cli_runs_do_not_corrupt(tree, tmp_path):
    cdir = tmp_path / "shared-cache"
    args = ["--isolated", "--output-format", "json", "--cache-dir", str(cdir), "-j", "1", "."]
    reference = cli("--isolated", "--output-format", "json", "--no-cache", ".", cwd=tree)
    assert reference.returncode == 2 and json.loads(reference.stdout)
    procs = [
        subprocess.Popen([sys.executable, "-m", "fakegrad_lint", *args], cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for (out, err), p in zip(outs, procs):
        assert (p.returncode, out, err) == (reference.returncode, reference.stdout, reference.stderr)
    ents = entries(cdir)
    assert ents
    for ent in ents:  # every entry whole and filed under its own key
        data = json.loads(ent.read_bytes())
        assert data["key"] == ent.parent.name + ent.stem
    assert not [p for p in cdir.rglob("*") if p.name.startswith(".tmp-")], "temporary files left behind"
    warm = cli(*args, cwd=tree)
    assert (warm.returncode, warm.stdout, warm.stderr) == (reference.returncode, reference.stdout, reference.stderr)


def test_concurrent_writers_of_one_entry(tmp_path):
    # many processes hammer the same keys; readers only ever see whole entries
    cdir = str(tmp_path / "c")
    code = (
        "import sys; from fakegrad_lint.engine.cache import Cache; from fakegrad_lint.findings import *;"
        "c = Cache(sys.argv[1]); bad = 0\n"
        "for i in range(300):\n"
        "    k = 'ab' + str(i % 3) * 62\n"
        "    f = Finding('FGL001', 'm' * (i % 50), 'x.py', Location(1, i), Location(1, i + 1))\n"
        "    c.put(k, [f], [])\n"
        "    got = c.get(k)\n"
        "    bad += got is None or got[0][0].code != 'FGL001'\n"
        "print(bad)"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, cdir], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    assert [p.communicate(timeout=120)[0].strip() for p in procs] == ["0"] * 4
    assert len(entries(cdir)) == 3


def test_cli_cache_location_and_no_cache(tree, tmp_path):
    env = dict(os.environ)
    env.pop(cache_mod.ENV_DIR, None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    # no project configuration: the platform cache folder, nothing written into the tree
    before = sorted(p.name for p in tree.iterdir())
    proc = cli("--isolated", ".", cwd=tree, env=env)
    assert proc.returncode == 2
    assert sorted(p.name for p in tree.iterdir()) == before
    assert entries(tmp_path / "xdg" / "fakegrad-lint")
    # a configured project: .fakegrad_cache next to its pyproject.toml, marked as a cache
    (tree / "pyproject.toml").write_text("[tool.fakegrad-lint]\n")
    proc = cli(".", cwd=tree, env=env)
    assert proc.returncode == 2
    assert entries(tree / cache_mod.DIR_NAME)
    assert (tree / cache_mod.DIR_NAME / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (tree / cache_mod.DIR_NAME / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    # --no-cache writes nothing; --cache-dir wins
    shutil.rmtree(tree / cache_mod.DIR_NAME)
    cli("--no-cache", ".", cwd=tree, env=env)
    assert not (tree / cache_mod.DIR_NAME).exists()
    cli("--cache-dir", str(tmp_path / "elsewhere"), ".", cwd=tree, env=env)
    assert not (tree / cache_mod.DIR_NAME).exists() and entries(tmp_path / "elsewhere")
    # the environment variable too
    env[cache_mod.ENV_DIR] = str(tmp_path / "from-env")
    cli(".", cwd=tree, env=env)
    assert entries(tmp_path / "from-env")
