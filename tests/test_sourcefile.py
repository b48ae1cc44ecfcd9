"""Reading and writing source without losing a byte: encodings, BOM, newlines,
trailing newline, file mode, symlinks; the one-line reasons for bad files."""

from __future__ import annotations

import ast
import codecs
import os
import re
import stat

import pytest

from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location
from fakegrad_lint.fix.apply import fix_text
from fakegrad_lint.sources.sourcefile import SourceError, decode_source, read_source, write_atomic


def bad_lint(text: str) -> list[Finding]:
    """Every Name ``BAD`` -> ``GOOD``, plus one inserted line before line 2 (which
    the builders write with ``\\n``)."""
    out = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name) and node.id == "BAD":
            col = len(lines[node.lineno - 1].encode()[: node.col_offset].decode())
            s, e = Location(node.lineno, col), Location(node.lineno, col + 3)
            out.append(Finding("T001", "m", "f.py", s, e, Fix("r", Applicability.SAFE, (Edit(s, e, "GOOD"),))))
    if "inserted = 1" not in text:
        at = Location(2, 0)
        out.append(Finding("T002", "m", "f.py", at, at, Fix("i", Applicability.SAFE, (Edit(at, at, "inserted = 1\n"),))))
    return out


def fix_file(path) -> bytes:
    """read -> fix -> encode -> write_atomic, as the pipeline does; returns the new bytes."""
    src = read_source(str(path))
    out = fix_text(src.text, bad_lint, unsafe=False)
    assert out.changed
    data = src.encode(out.text)
    write_atomic(str(path), data, expected=src.raw)
    return data


def no_temp_files(folder) -> bool:
    return not [n for n in os.listdir(folder) if n.startswith(".fakegrad-")]


CASES = {
    # name: (original bytes, expected bytes after fixing)
    "lf": (b"x = BAD\ny = BAD\n", b"x = GOOD\ninserted = 1\ny = GOOD\n"),
    "crlf": (b"x = BAD\r\ny = BAD\r\n", b"x = GOOD\r\ninserted = 1\r\ny = GOOD\r\n"),
    "cr": (b"x = BAD\ry = BAD\r", b"x = GOOD\rinserted = 1\ry = GOOD\r"),
    "no-trailing-newline": (b"x = BAD\ny = BAD", b"x = GOOD\ninserted = 1\ny = GOOD"),
    "crlf-no-trailing": (b"x = BAD\r\ny = BAD", b"x = GOOD\r\ninserted = 1\r\ny = GOOD"),
    "bom": (codecs.BOM_UTF8 + "x = BAD  # é\ny = BAD\n".encode(), codecs.BOM_UTF8 + "x = GOOD  # é\ninserted = 1\ny = GOOD\n".encode()),
    "bom-crlf": (codecs.BOM_UTF8 + b"x = BAD\r\ny = BAD\r\n", codecs.BOM_UTF8 + b"x = GOOD\r\ninserted = 1\r\ny = GOOD\r\n"),
    "latin-1": (
        "# -*- coding: latin-1 -*-\ns = 'café'; x = BAD\n".encode("latin-1"),
        "# -*- coding: latin-1 -*-\ninserted = 1\ns = 'café'; x = GOOD\n".encode("latin-1"),
    ),
    "cp1252-crlf": (
        "# coding: cp1252\r\ns = '€'; x = BAD\r\n".encode("cp1252"),
        "# coding: cp1252\r\ninserted = 1\r\ns = '€'; x = GOOD\r\n".encode("cp1252"),
    ),
    "utf8-wide": ("s = '日本語'; x = BAD\ny = 1\n".encode(), "s = '日本語'; x = GOOD\ninserted = 1\ny = 1\n".encode()),
    "form-feed": (b"\x0cx = BAD  # \x0c\x1c\ny = BAD\n", b"\x0cx = GOOD  # \x0c\x1c\ninserted = 1\ny = GOOD\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_and_fix_keep_format(tmp_path, name):
    original, expected = CASES[name]
    path = tmp_path / "f.py"
    path.write_bytes(original)
    src = read_source(str(path))
    assert src.lossless and src.encode(src.text) == original
    assert fix_file(path) == expected
    assert path.read_bytes() == expected
    assert no_temp_files(tmp_path)
    # and it is a fixed point
    again = read_source(str(path))
    assert not fix_text(again.text, bad_lint, unsafe=False).changed


def test_bom_and_encoding_detected():
    src = decode_source(codecs.BOM_UTF8 + b"x = 1\n")
    assert src.bom and src.encoding == "utf-8" and src.text == "x = 1\n"
    src = decode_source("# vim: set fileencoding=latin-1 :\nx = 'é'\n".encode("latin-1"))
    assert not src.bom and codecs.lookup(src.encoding).name == "iso8859-1"
    assert src.text.endswith("x = 'é'\n")
    assert decode_source(b"a\r\nb\r\nc\n").newline == "\r\n"
    assert decode_source(b"a\rb").newline == "\r"
    assert decode_source(b"a").newline == "\n"


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o640, 0o644, 0o2775])
def test_write_keeps_mode(tmp_path, mode):
    path = tmp_path / "m.py"
    path.write_bytes(b"x = BAD\ny = 2\n")
    os.chmod(path, mode)
    fix_file(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert path.read_bytes() == b"x = GOOD\ninserted = 1\ny = 2\n"


def test_write_keeps_owner_when_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    path = tmp_path / "o.py"
    path.write_bytes(b"x = BAD\n")
    os.chown(path, 12345, 54321)
    fix_file(path)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (12345, 54321)


def test_write_through_symlink_keeps_link(tmp_path):
    real = tmp_path / "real.py"
    real.write_bytes(b"x = BAD\n")
    (tmp_path / "sub").mkdir()
    link = tmp_path / "sub" / "link.py"
    link.symlink_to(real)
    fix_file(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"x = GOOD\ninserted = 1\n"
    assert no_temp_files(tmp_path) and no_temp_files(tmp_path / "sub")


def test_write_refuses_when_file_changed_on_disk(tmp_path):
    path = tmp_path / "c.py"
    path.write_bytes(b"x = BAD\n")
    src = read_source(str(path))
    path.write_bytes(b"x = BAD  # edited meanwhile\n")
    with pytest.raises(SourceError, match="changed on disk"):
        write_atomic(str(path), src.encode("x = GOOD\n"), expected=src.raw)
    assert path.read_bytes() == b"x = BAD  # edited meanwhile\n"
    assert no_temp_files(tmp_path)


def test_write_new_file_gets_umask_mode(tmp_path):
    path = tmp_path / "new.py"
    old = os.umask(0o022)
    try:
        write_atomic(str(path), b"x = 1\n")
    finally:
        os.umask(old)
    assert path.read_bytes() == b"x = 1\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_encode_failure_is_a_source_error(tmp_path):
    path = tmp_path / "l.py"
    path.write_bytes("# coding: latin-1\nx = 'é'\n".encode("latin-1"))
    src = read_source(str(path))
    with pytest.raises(SourceError, match="latin|8859"):
        src.encode(src.text + "y = '日'\n")


# ---------------------------------------------------------------------------
# bad input: one-line reasons


def one_line(exc: SourceError) -> str:
    msg = str(exc)
    assert msg and "\n" not in msg and "Traceback" not in msg
    return msg


@pytest.mark.parametrize(
    "raw,pattern",
    [
        (b"x = 1\n\x00\n", r"NUL byte at line 2"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"NUL byte"),
        (b"x = 1\ny = '\xff\xfe'\n", r"cannot decode as utf-8: byte 0xff at line 2"),
        (b"# coding: klingon\nx = 1\n", r"encoding"),
        (codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n", r"encoding"),
        (b"x = '\xe9'\n", r"byte 0xe9 at line 1"),
    ],
)
def test_decode_errors_are_one_line(raw, pattern):
    with pytest.raises(SourceError) as info:
        decode_source(raw)
    assert re.search(pattern, one_line(info.value))


def test_read_errors_are_one_line(tmp_path):
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "broken.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "loop1.py").symlink_to(tmp_path / "loop2.py")
    (tmp_path / "loop2.py").symlink_to(tmp_path / "loop1.py")
    os.mkfifo(tmp_path / "fifo.py")
    expected = {
        "dir.py": "is a directory",
        "broken.py": "broken symbolic link",
        "loop1.py": "symbolic link loop",
        "fifo.py": "not a regular file (FIFO)",  # and it does not block
        "missing.py": "No such file or directory",
    }
    for name, reason in expected.items():
        with pytest.raises(SourceError) as info:
            read_source(str(tmp_path / name))
        assert one_line(info.value) == reason
    with pytest.raises(SourceError, match="device"):
        read_source("/dev/null")


def test_write_refuses_non_regular_target(tmp_path):
    os.mkfifo(tmp_path / "fifo.py")
    with pytest.raises(SourceError, match="FIFO"):
        write_atomic(str(tmp_path / "fifo.py"), b"x = 1\n")
    assert no_temp_files(tmp_path)
