"""Reading and writing source files without losing anything.

``read_source`` decodes a file the way Python does (BOM, PEP 263 cookie, UTF-8
default) and remembers what it needs to write the file back byte-for-byte:
the encoding, the BOM and the newline style. ``write_atomic`` writes through a
temporary file in the same folder and ``os.replace``, keeping the file's mode.
"""

from __future__ import annotations

import codecs
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass


class SourceError(Exception):
    """A file that cannot be read as Python source; ``str()`` is the one-line reason."""


@dataclass
class SourceFile:
    path: str
    text: str  # decoded, newlines as in the file (no translation)
    encoding: str  # codec name as used to decode (without the BOM)
    bom: bool
    raw: bytes

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return (codecs.BOM_UTF8 + data) if self.bom else data


def decode_source(raw: bytes, path: str = "<bytes>") -> SourceFile:
    if b"\x00" in raw:
        raise SourceError("file contains a NUL byte (binary file?)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot detect encoding: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    bom = False
    body = raw
    if encoding == "utf-8-sig":
        bom = raw.startswith(codecs.BOM_UTF8)
        encoding = "utf-8"
        if bom:
            body = raw[len(codecs.BOM_UTF8):]
    try:
        text = body.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from None
    return SourceFile(path=path, text=text, encoding=encoding, bom=bom, raw=raw)


def read_source(path: str) -> SourceFile:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    return decode_source(raw, path)


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its permission bits."""
    directory = os.path.dirname(os.path.abspath(path))
    st = os.stat(path)
    fd, tmp = tempfile.mkstemp(prefix=".fakegrad-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
