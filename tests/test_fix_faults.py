"""Faults while writing fixed files: read-only folder, full disk, failing
fsync/rename, interrupts, and SIGKILL at random moments.

What is simulated and what is real:

* Simulated (always run): ``tempfile.mkstemp`` raising ``EROFS``/``EACCES``,
  ``os.write`` raising ``ENOSPC`` after a partial write, ``os.fsync`` raising
  ``EIO``, ``os.replace`` raising, ``KeyboardInterrupt`` in the middle of a write.
* Real, as root: a folder made immutable with ``chattr +i`` (root ignores mode
  bits, not the immutable flag); skipped where ``chattr`` is not supported.
* Real, in a user+mount namespace (``unshare -rm``): a 256 KiB tmpfs filled up
  (``ENOSPC``) and then remounted read-only (``EROFS``); skipped where user
  namespaces are not available.
* Real: a child process fixing and rewriting files in a loop, killed with
  SIGKILL at random moments, 20 times. Every file must be exactly the original
  or exactly the fixed text. A kill between ``mkstemp`` and ``os.replace`` can
  leave a ``.fakegrad-*.tmp`` file: the test allows that one name pattern only,
  and checks that discovery never picks such a file up.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from fakegrad_lint.sources import sourcefile
from fakegrad_lint.config.discover import discover
from fakegrad_lint.sources.sourcefile import SourceError, read_source, write_atomic

ORIGINAL = b"import torch\nx = BAD\n" * 200
NEW = ORIGINAL.replace(b"BAD", b"GOOD")


def entries(folder) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.fixture
def target(tmp_path):
    path = tmp_path / "victim.py"
    path.write_bytes(ORIGINAL)
    os.chmod(path, 0o640)
    return path


def assert_intact(path):
    assert path.read_bytes() == ORIGINAL
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert entries(path.parent) == [path.name], "a temporary file was left behind"


@pytest.mark.parametrize(
    "code,reason",
    [(errno.EROFS, "read-only file system"), (errno.EACCES, "permission denied"), (errno.ENOSPC, "no space left on device")],
)
def test_cannot_create_temp_file(target, monkeypatch, code, reason):
    def mkstemp(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(sourcefile.tempfile, "mkstemp", mkstemp)
    with pytest.raises(SourceError) as info:
        write_atomic(str(target), NEW)
    assert str(info.value) == f"cannot write fixed file: {reason}"
    assert_intact(target)


def test_disk_full_during_write(target, monkeypatch):
    real_write = os.write
    calls = []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:100]))  # a short write first
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sourcefile.os, "write", write)
    with pytest.raises(SourceError, match="^cannot write fixed file: no space left on device$"):
        write_atomic(str(target), NEW)
    monkeypatch.undo()
    assert len(calls) == 2  # the short write was continued, then failed
    assert_intact(target)


def test_fsync_fails(target, monkeypatch):
    def fsync(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(sourcefile.os, "fsync", fsync)
    with pytest.raises(SourceError, match="Input/output error"):
        write_atomic(str(target), NEW)
    monkeypatch.undo()
    assert_intact(target)


def test_rename_fails(target, monkeypatch):
    def replace(src, dst):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(sourcefile.os, "replace", replace)
    with pytest.raises(SourceError):
        write_atomic(str(target), NEW)
    monkeypatch.undo()
    assert_intact(target)


def test_interrupt_mid_write_cleans_up_and_propagates(target, monkeypatch):
    def write(fd, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(sourcefile.os, "write", write)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(target), NEW)
    monkeypatch.undo()
    assert_intact(target)


def test_success_leaves_no_temp(target):
    write_atomic(str(target), NEW, expected=ORIGINAL)
    assert target.read_bytes() == NEW
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert entries(target.parent) == [target.name]


# ---------------------------------------------------------------------------
# real faults


def _chattr(flag: str, path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_immutable_folder_real(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "victim.py"
    path.write_bytes(ORIGINAL)
    os.chmod(path, 0o640)
    if not _chattr("+i", folder):
        pytest.skip("chattr +i is not supported here (needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs)")
    try:
        with pytest.raises(SourceError) as info:
            write_atomic(str(path), NEW)
        assert str(info.value) == "cannot write fixed file: operation not permitted"
        assert_intact(path)
    finally:
        _chattr("-i", folder)


def _userns_available() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


NAMESPACE_SCRIPT = textwrap.dedent(
    """
    import errno, json, os, subprocess, sys
    from fakegrad_lint.sources.sourcefile import SourceError, read_source, write_atomic

    mnt = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], check=True)
    original = b"x = BAD\\n" * 1000  # 8 KB
    path = os.path.join(mnt, "victim.py")
    with open(path, "wb") as fh:
        fh.write(original)
    os.chmod(path, 0o640)
    # fill the file system
    fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    os.close(fd)
    result = {}
    src = read_source(path)
    try:
        write_atomic(path, src.encode(src.text.replace("BAD", "GOOD_BUT_LONGER") * 4), expected=src.raw)
        result["full"] = "written"
    except SourceError as exc:
        result["full"] = str(exc)
    result["full_intact"] = open(path, "rb").read() == original
    result["full_entries"] = sorted(os.listdir(mnt))
    os.unlink(os.path.join(mnt, "filler"))
    subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
    try:
        write_atomic(path, b"x = GOOD\\n", expected=src.raw)
        result["ro"] = "written"
    except SourceError as exc:
        result["ro"] = str(exc)
    result["ro_intact"] = open(path, "rb").read() == original
    result["ro_entries"] = sorted(os.listdir(mnt))
    result["mode"] = oct(os.stat(path).st_mode & 0o7777)
    print(json.dumps(result))
    """
)


def test_full_disk_and_read_only_mount_real(tmp_path):
    if not _userns_available():
        pytest.skip("user and mount namespaces (unshare -rm) are not available")
    script = tmp_path / "ns.py"
    script.write_text(NAMESPACE_SCRIPT)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(
        ["unshare", "-rm", sys.executable, str(script), str(mnt)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["full"] == "cannot write fixed file: no space left on device"
    assert result["full_intact"] and result["full_entries"] == ["filler", "victim.py"]
    assert result["ro"] == "cannot write fixed file: read-only file system"
    assert result["ro_intact"] and result["ro_entries"] == ["victim.py"]
    assert result["mode"] == "0o640"


# ---------------------------------------------------------------------------
# SIGKILL at random moments

CHILD = textwrap.dedent(
    """
    import os, re, sys
    from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location
    from fakegrad_lint.fix.apply import fix_text
    from fakegrad_lint.sources.sourcefile import read_source, write_atomic

    def lint(text):
        out = []
        for row, line in enumerate(re.split("\\r\\n|\\r|\\n", text), 1):
            for m in re.finditer(r"\\bBAD\\b", line):
                s, e = Location(row, m.start()), Location(row, m.end())
                out.append(Finding("T001", "m", "f", s, e, Fix("r", Applicability.SAFE, (Edit(s, e, "GOOD"),))))
        return out

    folder = sys.argv[1]
    names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
    print("ready", flush=True)
    states = {}
    # the real flow: read, fix, encode, write
    for name in names:
        path = os.path.join(folder, name)
        src = read_source(path)
        outcome = fix_text(src.text, lint, unsafe=False)
        fixed = src.encode(outcome.text)
        write_atomic(path, fixed, expected=src.raw)
        states[name] = (src.raw, fixed)
        print("fixed", name, flush=True)
    # then keep rewriting: each file flips between original and fixed
    print("flipping", flush=True)
    while True:
        for name in names:
            path = os.path.join(folder, name)
            original, fixed = states[name]
            with open(path, "rb") as fh:
                current = fh.read()
            write_atomic(path, original if current == fixed else fixed)
    """
)


def _corpus() -> dict[str, tuple[bytes, int]]:
    body = "".join(f"value_{i} = BAD + {i}  # é padding padding padding padding\n" for i in range(800))
    return {
        "a_lf.py": (body.encode(), 0o644),
        "b_crlf.py": (body.replace("\n", "\r\n").encode(), 0o755),
        "c_cr.py": (body.replace("\n", "\r").encode(), 0o600),
        "d_bom.py": (codecs.BOM_UTF8 + body.encode(), 0o640),
        "e_latin1.py": (("# -*- coding: latin-1 -*-\n" + body).encode("latin-1"), 0o644),
        "f_notrail.py": (body.rstrip("\n").encode(), 0o644),
    }


@pytest.mark.slow
def test_sigkill_at_random_moments(tmp_path):
    corpus = _corpus()
    expected = {name: raw.replace(b"BAD", b"GOOD") for name, (raw, _) in corpus.items()}
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    work = tmp_path / "work"
    rng = random.Random(20240229)
    seen = {"original": 0, "fixed": 0}
    leftovers = 0
    for round_ in range(20):
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        for name, (raw, mode) in corpus.items():
            (work / name).write_bytes(raw)
            os.chmod(work / name, mode)
        child = subprocess.Popen([sys.executable, str(script), str(work)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert child.stdout.readline() == b"ready\n", child.stderr.read().decode()
            # Kill after a random number of files were fixed (0 .. all, then
            # while flipping), a random moment later.
            for _ in range(rng.randint(0, len(corpus) + 1)):
                line = child.stdout.readline()
                assert line.startswith((b"fixed ", b"flipping")), line + child.stderr.read()
            try:
                child.wait(timeout=rng.uniform(0.0, 0.15))
            except subprocess.TimeoutExpired:
                pass
            assert child.poll() is None, f"child died on its own: {child.stderr.read().decode()}"
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
            child.stderr.close()
        names = entries(work)
        temps = [n for n in names if n.startswith(sourcefile.TEMP_PREFIX)]
        assert all(n.endswith(sourcefile.TEMP_SUFFIX) and not n.endswith(".py") for n in temps), temps
        leftovers += len(temps)
        assert sorted(set(names) - set(temps)) == sorted(corpus), f"round {round_}: unexpected files {names}"
        for name, (raw, mode) in corpus.items():
            data = (work / name).read_bytes()
            if data == raw:
                seen["original"] += 1
            elif data == expected[name]:
                seen["fixed"] += 1
            else:
                pytest.fail(f"round {round_}: {name} is neither the original nor the fixed text ({len(data)} bytes)")
            assert stat.S_IMODE(os.stat(work / name).st_mode) == mode, f"round {round_}: {name} lost its mode"
            read_source(str(work / name))  # still decodes
        # discovery never picks up a temporary file
        found = discover([str(work)]).files
        assert sorted(os.path.basename(f) for f in found) == sorted(corpus)
    # the kills landed at different stages
    assert seen["original"] > 0 and seen["fixed"] > 0, seen
    print(f"states over 20 kills: {seen}, temporary files left: {leftovers}")
