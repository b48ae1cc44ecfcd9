"""Reliability under hostile input and faults (issue 15): each test is the
regression test of one row of the issue, and each names the promise of the
README section "Under faults" it backs.

The long tiers (the full mutation fuzzer, the whole hostile-script suite for
``confirm``) are in ``test_faults_slow.py`` behind the ``slow`` marker.
"""

from __future__ import annotations

import ast
import io
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import tracemalloc
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fakegrad_lint.cli import main as cli
from fakegrad_lint.config import discover
from fakegrad_lint.fix import apply as fixes
from fakegrad_lint.engine import noqa
from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.sources import sourcefile
from fakegrad_lint.findings import ToolError, display_path
from fakegrad_lint.sources.sourcefile import SourceError, read_source

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

HAZARD = textwrap.dedent(
    """\
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(2, 3, requires_grad=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = (x * 2).sum()
        y.backward()
    """
)


def run_cli(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(["--no-cache", *args])
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


def run_proc(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "--no-cache", *args],
        cwd=cwd, capture_output=True, timeout=timeout,
    )


# ---------------------------------------------------------------------------
# lost update: a file changed while --fix works on it is left alone


@pytest.mark.parametrize("moment", ["while fixing", "just before the rename"])
def test_concurrent_edit_is_never_overwritten(tmp_path, monkeypatch, moment):
    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    appended = "# appended by another process\n"

    def edit():
        with open(path, "a") as fh:
            fh.write(appended)

    if moment == "while fixing":
        real = fixes.fix_text

        def slow_fix(*a, **k):
            out = real(*a, **k)
            edit()
            return out

        monkeypatch.setattr(fixes, "fix_text", slow_fix)
    else:
        real_write = sourcefile._write_all

        def write_then_edit(fd, data):
            real_write(fd, data)
            edit()

        monkeypatch.setattr(sourcefile, "_write_all", write_then_edit)
    rc, out, err = run_cli("--fix", str(path))
    assert path.read_text() == HAZARD + appended  # nothing lost
    assert rc == 2
    assert err.splitlines() == [f"{path}: error: file changed on disk while it was being fixed; left as it is (run again)"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fakegrad-")]


def test_concurrent_edit_add_noqa_and_notebook(tmp_path, monkeypatch):
    py = tmp_path / "a.py"
    py.write_text(HAZARD)
    nb = tmp_path / "n.ipynb"
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": HAZARD}]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    real_write = sourcefile._write_all
    victim = []

    def write_then_touch(fd, data):
        real_write(fd, data)
        victim[0].write_bytes(victim[0].read_bytes() + b" ")

    monkeypatch.setattr(sourcefile, "_write_all", write_then_touch)
    before = {p: p.read_bytes() for p in (py, nb)}
    victim.append(py)
    rc, _, err = run_cli("--add-noqa", str(py))
    assert rc == 2 and "changed on disk" in err and py.read_bytes() == before[py] + b" "
    victim[0] = nb
    rc, _, err = run_cli("--fix", "--unsafe-fixes", str(nb))
    assert rc == 2 and "changed on disk" in err and nb.read_bytes() == before[nb] + b" "


# ---------------------------------------------------------------------------
# read-only files, owners


def test_read_only_file_is_not_fixed(tmp_path):
    path = tmp_path / "ro.py"
    path.write_text(HAZARD)
    os.chmod(path, 0o444)
    before = os.stat(path)
    rc, _, err = run_cli("--fix", str(path))
    assert rc == 2
    assert err.splitlines() == [f"{path}: error: cannot write fixed file: permission denied (the file is read-only)"]
    after = os.stat(path)
    assert path.read_text() == HAZARD
    assert (after.st_ino, after.st_mode, after.st_uid, after.st_mtime_ns) == (
        before.st_ino, before.st_mode, before.st_uid, before.st_mtime_ns)
    # add-noqa refuses the same way
    rc, _, err = run_cli("--add-noqa", str(path))
    assert rc == 2 and "permission denied" in err and path.read_text() == HAZARD


def test_owner_that_cannot_be_kept_refuses(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file another owner")
    path = tmp_path / "other.py"
    path.write_text(HAZARD)
    os.chown(path, 12345, 12345)

    def no_chown(*a):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", no_chown)
    rc, _, err = run_cli("--fix", str(path))
    assert rc == 2 and "belongs to another user (uid 12345)" in err
    assert path.read_text() == HAZARD and os.stat(path).st_uid == 12345


# ---------------------------------------------------------------------------
# CR-only newlines: noqa, add-noqa, unused noqa, --diff


def _cr(text: str) -> str:
    return text.replace("\n", "\r")


def test_cr_only_noqa_is_honoured(tmp_path):
    lines = HAZARD.splitlines(keepends=True)
    lines[5] = lines[5].rstrip("\n") + "  # noqa: FGL001\n"
    path = tmp_path / "cr.py"
    path.write_bytes(_cr("".join(lines)).encode())
    rc, out, err = run_cli("--output-format", "concise", str(path))
    assert (rc, out, err) == (0, "", "")
    for flags in (["--select", "ALL"], ["--report-unused-noqa"]):
        rc, out, err = run_cli("--output-format", "concise", *flags, str(path))
        assert "internal error" not in err and "Traceback" not in err
        assert (rc, out) == (0, "")


def test_cr_only_add_noqa_is_idempotent(tmp_path):
    path = tmp_path / "cr.py"
    path.write_bytes(_cr(HAZARD).encode())
    rc, _, err = run_cli("--add-noqa", str(path))
    assert rc == 0 and err == ""
    once = path.read_bytes()
    assert once.count(b"# noqa: FGL001") == 1 and b"\n" not in once
    rc, _, _ = run_cli("--add-noqa", str(path))
    assert path.read_bytes() == once
    assert run_cli(str(path))[0] == 0


def test_cr_only_unused_noqa_is_reported_and_fixed(tmp_path):
    path = tmp_path / "cr.py"
    path.write_bytes(_cr("from torch._subclasses import FakeTensorMode\nx = 1  # noqa: FGL001\ny = 2\n").encode())
    rc, out, err = run_cli("--output-format", "concise", "--report-unused-noqa", str(path))
    assert err == "" and rc == 1 and out == f"{path}:2:8: FGL100 [*] Unused `noqa` directive (unused: FGL001)\n"
    rc, _, err = run_cli("--fix", "--report-unused-noqa", str(path))
    assert rc == 0 and path.read_bytes() == b"from torch._subclasses import FakeTensorMode\rx = 1\ry = 2\r"


def test_diff_of_cr_only_files_applies_with_patch(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    for p in (a, b):
        p.write_bytes(_cr(HAZARD).encode())
    proc = run_proc("--diff", "a.py", "b.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    diff = proc.stdout.decode()
    assert "\n--- b.py\n" in diff  # the next header starts a line
    work = tmp_path / "patched"
    work.mkdir()
    for p in (a, b):
        (work / p.name).write_bytes(p.read_bytes())
    applied = subprocess.run(["patch", "-p0", "--quiet"], input=proc.stdout, cwd=work, capture_output=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert run_proc("--fix", "a.py", "b.py", cwd=tmp_path).returncode == 0
    for p in (a, b):
        assert (work / p.name).read_bytes() == p.read_bytes()
        assert b"\n" not in p.read_bytes() and b"fake_mode.from_tensor(x)" in p.read_bytes()


def test_cr_only_notebook_cells(tmp_path):
    def notebook(source: str) -> str:
        cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
        return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    silenced = tmp_path / "silenced.ipynb"
    silenced.write_text(notebook(_cr(HAZARD.replace("(x * 2).sum()", "(x * 2).sum()  # noqa: FGL001"))))
    for flags in ([], ["--select", "ALL"], ["--report-unused-noqa"]):
        assert run_cli("--output-format", "concise", *flags, str(silenced)) == (0, "", "")
    added = tmp_path / "added.ipynb"
    added.write_text(notebook(_cr(HAZARD)))
    assert run_cli("--add-noqa", str(added))[0] == 0
    once = added.read_bytes()
    assert run_cli("--add-noqa", str(added))[0] == 0 and added.read_bytes() == once
    source = json.loads(once)["cells"][0]["source"]
    assert source.count("# noqa: FGL001") == 1 and "\n" not in source


def test_noqa_scan_rows_match_for_every_newline():
    text = "a = 1  # noqa\nb = '''x\ny'''  # noqa: FGL002\nc = 1 + \\\n    2\nd = 4  # noqa: FGL001\n"
    want = noqa.scan(text)
    for nl in ("\r\n", "\r"):
        got = noqa.scan(text.replace("\n", nl))
        assert got.directives == want.directives and got.redirect == want.redirect


@pytest.mark.slow
def test_noqa_scan_memory_is_flat():
    text = "x = [1, 2, 3]  # noqa: FGL001\n" * 40000
    tracemalloc.start()
    try:
        noqa.scan(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the directives themselves (40,000 of them) are most of it; a token
    # list would add ~500,000 tokens (> 60 MB)
    assert peak < 40 * 2**20


# ---------------------------------------------------------------------------
# hostile file names in every output format


HOSTILE_NAMES = [
    b"new\nline.py",
    b"carriage\rreturn.py",
    b"bad\xffbyte.py",
    b"tab\tand%25,colon:.py",
    b"caf\xc3\xa9 espace.py",
]


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "json-lines", "sarif", "github"])
def test_hostile_names_in_every_format(tmp_path, fmt):
    for raw in HOSTILE_NAMES:
        with open(os.path.join(os.fsencode(tmp_path), raw), "wb") as fh:
            fh.write(HAZARD.encode())
    broken = os.path.join(os.fsencode(tmp_path), b"broken\n\xfe.py")
    with open(broken, "wb") as fh:
        fh.write(b"from torch._subclasses import FakeTensorMode\ndef f(:\n")
    proc = run_proc("--output-format", fmt, ".", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr  # the broken file: an error wins over findings
    assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout
    # one line per error, the name quoted
    assert proc.stderr.decode("utf-8").splitlines() == ["'broken\\n\\udcfe.py': error: SyntaxError: invalid syntax (line 2, column 7)"]
    out = proc.stdout.decode("utf-8")  # valid UTF-8 whatever the names
    n = len(HOSTILE_NAMES)
    if fmt == "json":
        names = sorted(os.fsencode(os.path.basename(d["filename"])) for d in json.loads(out))
        assert names == sorted(HOSTILE_NAMES)
    elif fmt == "json-lines":
        rows = [json.loads(line) for line in out.splitlines()]
        assert sorted(os.fsencode(os.path.basename(d["filename"])) for d in rows) == sorted(HOSTILE_NAMES)
    elif fmt == "sarif":
        from urllib.parse import unquote_to_bytes

        log = json.loads(out)
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]
        assert sorted(unquote_to_bytes(u) for u in uris) == sorted(HOSTILE_NAMES)
        assert all(u.isascii() and " " not in u for u in uris)
        notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        assert [unquote_to_bytes(n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for n in notes] == [b"broken\n\xfe.py"]
    elif fmt == "github":
        lines = out.splitlines()
        assert len(lines) == n + 1 and all(line.startswith("::") for line in lines)
    else:
        lines = out.splitlines()
        findings = [line for line in lines if " FGL001 " in line]
        assert len(findings) == n  # no name split a line
        rest = [line for line in lines if line not in findings]
        assert all(line == "" or line.startswith(("Found ", "[*] ", "All checks")) for line in rest), rest
        assert sum(line.startswith("'") for line in findings) == 4  # newline, CR, bad byte, tab: quoted


def test_display_path_quotes_only_what_must_be():
    assert display_path("src/train.py") == "src/train.py"
    assert display_path("café espace.py") == "café espace.py"
    assert display_path("a\nb.py") == "'a\\nb.py'"
    assert str(ToolError("a\rb.py", "x")) == "'a\\rb.py': error: x"


# ---------------------------------------------------------------------------
# encodings as CPython reads them


@pytest.mark.parametrize(
    "encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "latin-1", "cp1252", "utf-7", "euc-jp", "rot13", "hex"]
)
def test_declared_encoding_is_refused_exactly_when_cpython_refuses(encoding):
    raw = f"# coding: {encoding}\nfrom torch._subclasses import FakeTensorMode\nx = 1\n".encode("ascii")
    try:
        compile(raw, "f.py", "exec", dont_inherit=True)
        cpython_ok = True
    except SyntaxError:
        cpython_ok = False
    try:
        sourcefile.decode_source(raw, "f.py")
        ours = True
    except SourceError:
        ours = False
    assert ours == cpython_ok


def test_utf16_declaration_is_an_error_not_a_pass(tmp_path):
    path = tmp_path / "u.py"
    path.write_bytes(b"# coding: utf-16\n" + HAZARD.encode())
    rc, out, err = run_cli(str(path))
    assert rc == 2 and "All checks passed" not in out
    assert err.startswith(f"{path}: error: encoding problem: utf-16")


# ---------------------------------------------------------------------------
# silent skips


def test_unreadable_subdirectory_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.py").write_text("x = 1\n")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "b.py").write_text("x = 1\n")
    locked = str(tmp_path / "locked")
    real = os.scandir

    def scandir(path="."):
        if os.path.abspath(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(discover.os, "scandir", scandir)
    found = discover.discover([str(tmp_path)])
    assert [os.path.basename(f) for f in found.files] == ["a.py"]
    assert [str(e) for e in found.errors] == [f"{locked}: error: cannot read directory: Permission denied"]


def test_unreadable_subdirectory_real(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every folder")
    (tmp_path / "locked").mkdir()
    os.chmod(tmp_path / "locked", 0)
    try:
        rc, _, err = run_cli(str(tmp_path))
    finally:
        os.chmod(tmp_path / "locked", 0o755)
    assert rc == 2 and "locked: error: cannot read directory" in err


# ---------------------------------------------------------------------------
# .gitignore globs in linear time


def test_gitignore_many_stars_does_not_hang(tmp_path):
    pattern = "*a" * 20 + "b"
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(pattern + "\n")
    (tmp_path / ("a" * 40 + ".py")).write_text("x = 1\n")
    code = f"from fakegrad_lint.config.discover import discover; print(len(discover([{str(tmp_path)!r}]).files))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.stdout.strip() == "1", proc.stderr
    m = discover.GlobMatcher("*" * 20 + "x", anchored=True)
    assert not m.match("a" * 40) and m.match("a" * 40 + "x")


def test_gitignore_regex_and_automaton_agree():
    # few wildcards: a regex (fast); many: the automaton (linear); same answers
    import random

    assert discover.GlobMatcher("*a" * 20 + "b", anchored=True)._regex is None
    assert discover.GlobMatcher("*.py", anchored=False)._regex is not None
    rng = random.Random(15)
    alphabet = "ab/*?[]!-\\."
    for _ in range(3000):
        pattern = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 8)))
        for anchored in (True, False):
            m = discover.GlobMatcher(pattern, anchored)
            if m._regex is None:
                continue
            for _ in range(4):
                path = "".join(rng.choice("ab/.-*?[]") for _ in range(rng.randrange(0, 8)))
                assert m._regex_match(path) == m._automaton_match(path), (pattern, anchored, path)


GIT_CASES = [
    ("*.py", ["a.py", "d/a.py", "a.pyc", "d/e/x.py"]),
    ("/top.py", ["top.py", "d/top.py"]),
    ("d/*.py", ["d/a.py", "d/e/a.py", "x/d/a.py"]),
    ("**/cache", ["cache", "a/cache", "a/b/cache", "xcache"]),
    ("a/**/b", ["a/b", "a/x/b", "a/x/y/b", "ab"]),
    ("a/**", ["a/x", "a/x/y", "b/a/x"]),
    ("[a-c]?.py", ["ax.py", "dx.py", "b/.py", "c1.py"]),
    ("[!a]*.py", ["a.py", "b.py", "ba.py"]),
    ("\\*.py", ["*.py", "a.py"]),
    ("*a*a*a*b", ["aaab", "aaaa", "xaxaxab", "aa/ab"]),
    ("**foo", ["foo", "xfoo", "d/xfoo"]),
    ("[]a]x", ["]x", "ax", "bx"]),
]


def test_gitignore_matcher_agrees_with_git(tmp_path):
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for pattern, paths in GIT_CASES:
        (tmp_path / ".gitignore").write_text(pattern + "\n")
        proc = subprocess.run(
            ["git", "-C", str(tmp_path), "check-ignore", "--no-index", "--stdin"],
            input="\n".join(paths) + "\n", capture_output=True, text=True,
        )
        git_says = set(proc.stdout.splitlines())
        ignore = discover.GitIgnore(str(tmp_path), [pattern])
        ours = {p for p in paths if discover._is_ignored([ignore], os.path.join(str(tmp_path), p), False)}
        assert ours == git_says, pattern


# ---------------------------------------------------------------------------
# process hygiene: pool workers die with their parent


WORKER_SCRIPT = """\
import os, sys, time
from fakegrad_lint.engine import process as pipeline

marks = sys.argv[1]

def stuck(path, codes, options, sf=None, cache=None, **kwargs):
    open(os.path.join(marks, str(os.getpid())), "w").close()
    time.sleep(600)

pipeline.process_file = stuck
paths = sys.argv[2:]
print("started", flush=True)
pipeline.run(paths, lambda p: frozenset({"FGL001"}), pipeline.Options(), jobs=2)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_die_with_their_parent(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    body = "from torch._subclasses import FakeTensorMode\n" + "x = 1\n" * 8000
    paths = []
    for i in range(pipeline.PARALLEL_THRESHOLD):
        p = tmp_path / f"f{i}.py"
        p.write_text(body)
        paths.append(str(p))
    script = tmp_path / "run.py"
    script.write_text(WORKER_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(marks), *paths], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(os.listdir(marks)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(n) for n in os.listdir(marks)]
        assert len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers)
        # nobody holds the pipes any more: a reader sees the end
        assert proc.stdout.read() == b"started\n"
    finally:
        for w in [int(n) for n in os.listdir(marks)]:
            try:
                os.kill(w, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------------------
# flake8: an internal error fails the run


def test_flake8_internal_error_fails_the_run(tmp_path, monkeypatch):
    from flake8.main.application import Application

    import fakegrad_lint.engine.lint as checker

    def boom(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(checker, "check_source", boom)
    path = tmp_path / "t.py"
    path.write_text(HAZARD)
    report = tmp_path / "report.txt"
    app = Application()
    with redirect_stderr(io.StringIO()):
        app.run(["-j", "1", "--isolated", "--select", "FGL", "--output-file", str(report), str(path)])
    assert app.exit_code() == 1
    assert "FGL999 fakegrad-lint could not check this file: internal error: RecursionError" in report.read_text()


# ---------------------------------------------------------------------------
# messages


def test_parser_limit_is_named(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text("from torch._subclasses import FakeTensorMode\nx = " + "-" * 100000 + "1\n")
    rc, _, err = run_cli(str(path))
    assert rc == 2
    assert err == f"{path}: error: too complex for Python's parser (CPython stops with MemoryError: nested too deeply or too large for it); file skipped\n"


def test_timeout_inside_set_name_is_a_timeout(tmp_path, monkeypatch):
    path = tmp_path / "slow.py"
    path.write_text(HAZARD)

    def lint(text, path, codes, tree=None, **kwargs):
        class Slow:
            def __set_name__(self, owner, name):
                while True:
                    pass

        type("Owner", (), {"attr": Slow()})  # Python wraps what __set_name__ raises
        return []

    from fakegrad_lint.engine import lint as engine_lint

    monkeypatch.setattr(engine_lint, "lint_source", lint)
    result = pipeline.process_file(str(path), frozenset({"FGL001"}), pipeline.Options(timeout=0.2))
    assert [e.reason for e in result.errors] == ["timed out after 0.2 s (see --timeout-per-file); file skipped"]


# ---------------------------------------------------------------------------
# python -m in a tree that shadows the standard library


def test_python_m_ignores_the_current_folder(tmp_path):
    for name in ("argparse", "json", "difflib", "tokenize", "ast"):
        (tmp_path / f"{name}.py").write_text("import sys\nprint('HIJACKED')\nsys.exit(7)\n")
    (tmp_path / "t.py").write_text(HAZARD)
    proc = run_proc("--output-format", "json", "t.py", cwd=tmp_path)
    assert b"HIJACKED" not in proc.stdout + proc.stderr
    assert proc.returncode == 1 and json.loads(proc.stdout)[0]["code"] == "FGL001"


# ---------------------------------------------------------------------------
# confirm: the fast tier of the hostile-script suite (the rest is slow)


def confirm(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", "confirm", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )


def test_confirm_module_lookup_runs_no_user_code_in_the_tool(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import os, time\nopen('ran-%d' % os.getpid(), 'w').close()\ntime.sleep(120)\n")
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakegrad_lint", "confirm", "-m", "pkg.missing", "--timeout", "3"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - start < 30
    assert proc.returncode == 2
    assert "looking up the module timed out after 3 s" in err
    # pkg/__init__ ran in the lookup child, under the timeout, never in the tool
    ran = [int(p.name.split("-")[1]) for p in tmp_path.iterdir() if p.name.startswith("ran-")]
    assert ran and proc.pid not in ran


def test_confirm_crash_is_never_exit_0(tmp_path):
    (tmp_path / "seg.py").write_text("import ctypes\nctypes.string_at(0)\n")
    proc = confirm("seg.py", "--timeout", "60", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "seg.py ended without reporting (killed by SIGSEGV, exit status -11); the results are incomplete" in proc.stderr
