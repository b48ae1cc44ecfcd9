"""Bad input through the real command line (``python -m fakegrad_lint check``).

A folder holds every kind of bad file next to good ones. For each bad file the
run prints exactly one line ``path: error: reason`` on stderr, never a
traceback; the good files are still checked (the hazard example is reported at
the same position as an in-process ``check_source`` finds it); the exit code is
2 only when something failed; and no file is modified, with ``--fix`` and
``--diff`` too (bytes and mtimes compared).

Every bad file names FakeTensorMode in code (the prefilter ignores comments)
so the prefilter does not skip it.

During a folder walk, entries that are not regular files (broken symlinks,
symlink loops, FIFOs) are skipped silently, as ruff does; named explicitly on
the command line each one gets its error line. A folder called ``x.py`` is a
folder: it is walked.

As root, a mode-000 file is readable. The unreadable-file test therefore runs
the CLI in a user namespace (``unshare -r``) on a file owned by an unmapped uid,
where root's override does not apply; it is skipped where user namespaces are
unavailable. The read-only-folder test uses ``chattr +i``.
"""

from __future__ import annotations

import ast
import codecs
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from fakegrad_lint.engine.lint import check_source
from fakegrad_lint.findings import Applicability
from fakegrad_lint.rules import RULES_BY_CODE

CLI = [sys.executable, "-m", "fakegrad_lint", "check", "--no-cache", "--timeout-per-file", "300"]
FAKE = "from torch._subclasses.fake_tensor import FakeTensorMode\n"  # in code: the prefilter ignores comments
HAZARD = RULES_BY_CODE["FGL002"].invalid[0]
CLEAN = RULES_BY_CODE["FGL002"].valid[0]


def _big_file() -> bytes:
    """About 5 MB: a large block of comments and strings around real code."""
    head = "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n\n"
    parts = [head]
    size = len(head)
    i = 0
    while size < 5 * 1024 * 1024:
        if i % 10 == 0:
            chunk = f"def f_{i}(a):\n    return torch.relu(a * {i})\n\n"
        else:
            chunk = f"# filler line {i}: " + "lorem ipsum dolor sit amet " * 8 + "\n"
        parts.append(chunk)
        size += len(chunk)
        i += 1
    return "".join(parts).encode()


# The hazard example in every format the file keeps when fixed: name -> text -> bytes.
HAZARD_FORMATS = {
    "hazard.py": lambda t: t.encode(),
    "hazard_crlf.py": lambda t: t.replace("\n", "\r\n").encode(),
    "hazard_cr.py": lambda t: t.replace("\n", "\r").encode(),
    "hazard_bom.py": lambda t: codecs.BOM_UTF8 + t.encode(),
    "hazard_latin1.py": lambda t: ("# -*- coding: latin-1 -*-\n# café\n" + t).encode("latin-1"),
}

# name -> bytes. Errors: name -> regex the reason must match.
GOOD = {
    **{name: fmt(HAZARD) for name, fmt in HAZARD_FORMATS.items()},
    "clean.py": CLEAN.encode(),
    "bom.py": codecs.BOM_UTF8 + (FAKE + "x = 'é'\n").encode(),
    "latin1.py": ("# -*- coding: latin-1 -*-\n" + FAKE + "s = 'café'\n").encode("latin-1"),
    "crlf.py": (FAKE + "x = 1\ny = 2\n").replace("\n", "\r\n").encode(),
    "cr.py": (FAKE + "x = 1\ny = 2").replace("\n", "\r").encode(),
    "formfeed.py": (FAKE + "x = 1  # \x0c\x1c\n\x0cy = 2\n").encode(),
    "empty.py": b"",
    "no_newline.py": (FAKE + "x = 1").encode(),
    "x.py/inner.py": (FAKE + "inner = 1\n").encode(),  # a folder named x.py
}
# position of the FGL002 finding inside HAZARD, per in-process check (row, 1-based col)
HAZARD_ROW_SHIFT = {"hazard_latin1.py": 2}

BAD = {
    "syntax_error.py": ((FAKE + "def f(:\n    pass\n").encode(), r"SyntaxError"),
    "python2.py": ((FAKE + 'print "x"\n').encode(), r"SyntaxError.*(print|parenthes)"),
    "nul.py": ((FAKE + "x = 1\x00\n").encode(), r"NUL"),
    "binary.py": (b"\x7fELF\x02\x01\x01\x00\x00\x00FakeTensorMode\xff\xfe\x00\x10\x80" * 50, r"NUL|binary"),
    "undecodable.py": ((FAKE + "x = '").encode() + b"\xff\xfe'\n", r"decode|utf-8|UTF-8"),
    "bad_cookie.py": (("# coding: klingon\n" + FAKE).encode(), r"encoding"),
    "taberror.py": ((FAKE + "if True:\n\tx = 1\n        y = 2\n").encode(), r"TabError|tabs"),
    "deep_parens.py": ((FAKE + "x = " + "(" * 100000 + "1" + ")" * 100000 + "\n").encode(), r"nested|parenthes"),
    "deep_plus.py": ((FAKE + "x = " + "1+" * 100000 + "1\n").encode(), r"nested|Recursion|recursion"),
    "deep_not.py": ((FAKE + "x = " + "not " * 100000 + "1\n").encode(), r"nested|Recursion|recursion|memory|Memory"),
}
# skipped silently in a walk; an error line when named explicitly
ODD = {
    "broken_link.py": r"No such file|broken",
    "loop_a.py": r"symbolic link|Too many levels",
    "fifo.py": r"not a regular file|FIFO",
}


def build(root) -> None:
    for name, data in GOOD.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "big.py").write_bytes(_big_file())
    for name, (data, _) in BAD.items():
        (root / name).write_bytes(data)
    (root / "broken_link.py").symlink_to(root / "does_not_exist.py")
    (root / "loop_a.py").symlink_to(root / "loop_b.py")
    (root / "loop_b.py").symlink_to(root / "loop_a.py")
    os.mkfifo(root / "fifo.py")


def snapshot(root) -> dict:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            data = open(path, "rb").read() if stat.S_ISREG(st.st_mode) else os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
            out[os.path.relpath(path, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_mtime_ns if not stat.S_ISDIR(st.st_mode) else None, data)
    return out


def run_cli(*args, cwd, timeout=600):
    proc = subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout
    return proc


def error_lines(stderr: str) -> dict[str, list[str]]:
    """stderr lines ``path: error: reason`` by path; any other line fails."""
    out: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        if not line.strip():
            continue
        match = re.match(r"^(.*?): error: (.+)$", line)
        assert match, f"stderr line not of the form 'path: error: reason': {line!r}"
        out.setdefault(os.path.normpath(match.group(1)), []).append(match.group(2))
    return out


def hazard_position(name: str) -> tuple[int, int]:
    findings = [f for f in check_source(HAZARD, "h.py") if f.code == "FGL002"]
    if not findings:
        pytest.skip("the analyzer reports nothing for the FGL002 example yet")
    f = findings[0]
    return f.location.row + HAZARD_ROW_SHIFT.get(name, 0), f.location.column + 1


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    build(root)
    return root


def test_walk_reports_each_bad_file_once_and_checks_the_good(tree):
    before = snapshot(tree)
    proc = run_cli(".", cwd=tree)
    errors = error_lines(proc.stderr)
    for name, (_, reason) in BAD.items():
        assert name in errors, f"no error line for {name}:\n{proc.stderr}"
        assert len(errors[name]) == 1, errors[name]
        assert re.search(reason, errors[name][0]), (name, errors[name])
    unexpected = set(errors) - set(BAD)
    assert not unexpected, f"error lines for good or skipped files: { {k: errors[k] for k in unexpected} }"
    for name in [n for n in GOOD if n.startswith("hazard")]:
        row, col = hazard_position(name)
        assert re.search(rf"^{re.escape(name)}:{row}:{col}: FGL002 ", proc.stdout, re.M), (name, proc.stdout)
    assert "clean.py:" not in proc.stdout and "big.py:" not in proc.stdout
    assert proc.returncode == 2
    assert snapshot(tree) == before


def test_explicit_paths_each_get_one_line(tree):
    names = list(BAD) + list(ODD) + ["missing.py", "hazard.py", "clean.py", "x.py"]
    proc = run_cli(*names, cwd=tree, timeout=600)
    errors = error_lines(proc.stderr)
    expected = {**{n: r for n, (_, r) in BAD.items()}, **ODD, "missing.py": r"No such file"}
    for name, reason in expected.items():
        assert len(errors.get(name, [])) == 1, f"{name}: {errors.get(name)}\n{proc.stderr}"
        assert re.search(reason, errors[name][0]), (name, errors[name])
    assert set(errors) == set(expected), set(errors) ^ set(expected)
    row, col = hazard_position("hazard.py")
    assert re.search(rf"^hazard.py:{row}:{col}: FGL002 ", proc.stdout, re.M), proc.stdout
    assert proc.returncode == 2


def test_exit_codes_without_bad_input(tree):
    clean = run_cli("clean.py", "bom.py", "latin1.py", "crlf.py", "cr.py", "empty.py", "x.py", "formfeed.py", cwd=tree)
    assert (clean.returncode, clean.stderr.strip()) == (0, "")
    hazard_position("hazard.py")  # skips while the analyzer is not there
    dirty = run_cli("clean.py", "hazard.py", cwd=tree)
    assert (dirty.returncode, dirty.stderr.strip()) == (1, "")
    # one bad file turns it into 2
    both = run_cli("hazard.py", "nul.py", cwd=tree)
    assert both.returncode == 2 and list(error_lines(both.stderr)) == ["nul.py"]


@pytest.mark.parametrize("mode", [["--fix"], ["--diff"], ["--fix", "--unsafe-fixes"]])
def test_fix_modes_touch_nothing_unfixable(tree, mode):
    before = snapshot(tree)
    proc = run_cli(*mode, ".", cwd=tree)
    errors = error_lines(proc.stderr)
    assert set(errors) == set(BAD), set(errors) ^ set(BAD)
    assert proc.returncode == 2
    after = snapshot(tree)
    assert set(after) == set(before), "files appeared or vanished (temporary files left?)"
    for name in before:
        if mode != ["--diff"] and name.startswith("hazard"):
            continue  # may legitimately be fixed: checked below
        assert after[name] == before[name], f"{name} was modified by {mode}"
    if mode == ["--diff"]:
        return
    fixable = any(f.fix is not None and f.fix.applicability is Applicability.SAFE for f in check_source(HAZARD, "h.py"))
    fixed = (tree / "hazard.py").read_bytes()
    assert (fixed != GOOD["hazard.py"]) == fixable
    fixed_text = fixed.decode()
    ast.parse(fixed_text)
    for name, fmt in HAZARD_FORMATS.items():
        # the same fix, in the file's own BOM, encoding and newlines
        assert (tree / name).read_bytes() == fmt(fixed_text), name


def _userns_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-r", "true"], capture_output=True).returncode == 0


def test_unreadable_file(tree):
    target = tree / "unreadable.py"
    target.write_bytes(HAZARD.encode())
    os.chmod(target, 0)
    command = [*CLI, "unreadable.py", "hazard.py", "clean.py"]
    if os.geteuid() == 0:
        if not _userns_available():
            pytest.skip("running as root and user namespaces (unshare -r) are unavailable: mode 000 does not deny root")
        # In a user namespace where only uid 0 is mapped, a file owned by an
        # unmapped uid is not covered by root's permission override.
        os.chown(target, 12345, 12345)
        command = ["unshare", "-r", *command]
    proc = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr
    errors = error_lines(proc.stderr)
    assert list(errors) == ["unreadable.py"], proc.stderr
    assert re.search(r"[Pp]ermission denied", errors["unreadable.py"][0])
    assert proc.returncode == 2
    row, col = hazard_position("hazard.py")
    assert re.search(rf"^hazard.py:{row}:{col}: FGL002 ", proc.stdout, re.M), proc.stdout


@pytest.mark.parametrize("mode", ["--fix", "--add-noqa"])
def test_write_into_read_only_folder(tmp_path, mode):
    hazard_position("hazard.py")  # skips while the analyzer is not there
    if mode == "--fix":
        findings = [f for f in check_source(HAZARD, "h.py") if f.fix is not None and f.fix.applicability is Applicability.SAFE]
        if not findings:
            pytest.skip("the FGL002 example has no safe fix yet")
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "hazard.py").write_bytes(HAZARD.encode())
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("chattr +i is not supported here")
    try:
        before = snapshot(folder)
        proc = run_cli(mode, ".", cwd=folder)
        errors = error_lines(proc.stderr)
        assert list(errors) == ["hazard.py"], proc.stderr
        assert re.search(r"cannot write|not permitted|read-only", errors["hazard.py"][0])
        assert proc.returncode == 2
        assert snapshot(folder) == before
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)


def test_cr_only_file_with_leading_comment_is_checked(tmp_path):
    # Old-Mac line endings: the file has no \n at all. A comment on the first
    # line must not hide the FakeTensorMode on a later line (the prefilter must
    # split lines at \r too).
    lf = "# a comment first\n" + HAZARD
    (tmp_path / "lf.py").write_bytes(lf.encode())
    (tmp_path / "cr.py").write_bytes(lf.replace("\n", "\r").encode())
    row, col = hazard_position("hazard.py")
    proc = run_cli("lf.py", "cr.py", cwd=tmp_path)
    assert re.search(rf"^lf.py:{row + 1}:{col}: FGL002 ", proc.stdout, re.M), proc.stdout
    assert re.search(rf"^cr.py:{row + 1}:{col}: FGL002 ", proc.stdout, re.M), proc.stdout
