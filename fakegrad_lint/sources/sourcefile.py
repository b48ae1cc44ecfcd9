"""Reading and writing source files without losing anything.

``read_source`` decodes a file the way Python does (BOM, PEP 263 cookie, UTF-8
default) and remembers what it needs to write the file back byte-for-byte:
the encoding, the BOM and the raw bytes; newlines are never translated, so the
text keeps ``\\r\\n``/``\\r``/``\\n`` exactly as in the file, and a missing
trailing newline stays missing.

``write_atomic`` writes through a temporary file in the same folder
(``.fakegrad-XXXXXXXX.tmp``), fsyncs it, gives it the original's permission
bits (and owner, where allowed) and renames it over the original with
``os.replace``. A reader, or a process killed at any moment, sees either the
old file or the new one, never a mix. A kill at the wrong moment can leave the
temporary file behind; its name never ends in ``.py`` so discovery never
checks it, and it can be deleted.

Every failure is a :class:`SourceError` whose ``str()`` is a one-line reason,
printed by the pipeline as ``path: error: reason``.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass

from fakegrad_lint.sources.text import NEWLINE_RE, dominant_newline

__all__ = ["SourceError", "SourceFile", "TEMP_PREFIX", "TEMP_SUFFIX", "decode_source", "read_source", "write_atomic"]

TEMP_PREFIX = ".fakegrad-"
TEMP_SUFFIX = ".tmp"

class SourceError(Exception):
    """A file that cannot be read as Python source, or written; ``str()`` is the one-line reason."""


@dataclass
class SourceFile:
    path: str
    text: str  # decoded, newlines as in the file (no translation)
    encoding: str  # codec name as used to decode (without the BOM)
    bom: bool
    raw: bytes

    def encode(self, text: str) -> bytes:
        """``text`` as bytes in this file's encoding, with its BOM if it had one."""
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise SourceError(f"cannot encode {bad!r} as {self.encoding} (the file's encoding)") from None
        return (codecs.BOM_UTF8 + data) if self.bom else data

    @property
    def lossless(self) -> bool:
        """Whether writing ``text`` back gives exactly the bytes that were read."""
        try:
            return self.encode(self.text) == self.raw
        except SourceError:
            return False

    @property
    def newline(self) -> str:
        """The file's dominant newline (``\\n`` when it has none)."""
        return dominant_newline(self.text)


def _decode_error(exc: UnicodeDecodeError, body: bytes, encoding: str) -> str:
    line = body.count(b"\n", 0, exc.start) + 1
    byte = body[exc.start : exc.start + 1]
    shown = f"byte 0x{byte[0]:02x}" if byte else "truncated sequence"
    return f"cannot decode as {encoding}: {shown} at line {line} ({exc.reason})"


def decode_source(raw: bytes, path: str = "<bytes>") -> SourceFile:
    """Decode ``raw`` as Python would; raise :class:`SourceError` if it cannot."""
    if b"\x00" in raw:
        line = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
        raise SourceError(f"file contains a NUL byte at line {line} (binary file?)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        reason = exc.msg if getattr(exc, "msg", None) else str(exc)
        if reason.startswith("invalid or missing encoding declaration"):
            # No cookie and the first two lines are not UTF-8: say which byte.
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as decode_exc:
                raise SourceError(_decode_error(decode_exc, raw, "utf-8")) from None
        raise SourceError(f"cannot detect encoding: {reason}") from None
    bom = False
    body = raw
    if encoding == "utf-8-sig":
        bom = raw.startswith(codecs.BOM_UTF8)
        encoding = "utf-8"
        if bom:
            body = raw[len(codecs.BOM_UTF8) :]
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(_decode_error(exc, body, encoding)) from None
    except LookupError as exc:
        raise SourceError(f"unknown encoding {encoding}: {exc}") from None
    if encoding != "utf-8" and not _declares_itself(text):
        # CPython decodes the whole file, its declaration included, with the
        # declared codec; a codec that is not ASCII-compatible (utf-16,
        # utf-32 ...) turns the source into something else, which CPython refuses.
        raise SourceError(
            f"encoding problem: {encoding} (the file does not decode to Python source with its declared encoding;"
            " CPython refuses it)"
        )
    return SourceFile(path=path, text=text, encoding=encoding, bom=bom, raw=raw)


_COOKIE_RE = re.compile(r"^[ \t\f]*#.*?coding[:=]", re.ASCII)


def _declares_itself(text: str) -> bool:
    """Whether the decoded text still holds its ``# coding:`` line in its first two lines."""
    for line in NEWLINE_RE.split(text, maxsplit=2)[:2]:
        if _COOKIE_RE.match(line):
            return True
    return False


def _os_reason(exc: OSError, path: str) -> str:
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return "broken symbolic link"
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    return exc.strerror or str(exc)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "not a regular file (FIFO)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (socket)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (device)"
    return "not a regular file"


def read_source(path: str) -> SourceFile:
    """Read and decode ``path``. Never blocks on a FIFO or device.

    Raises :class:`SourceError` for anything that is not a readable regular
    file of decodable Python source.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SourceError(_os_reason(exc, path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(_kind(st.st_mode))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read()
    except OSError as exc:
        raise SourceError(_os_reason(exc, path)) from None
    finally:
        os.close(fd)
    return decode_source(raw, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _write_reason(exc: OSError) -> str:
    reasons = {
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
    }
    return "cannot write fixed file: " + reasons.get(exc.errno, exc.strerror or str(exc))


def writable(path: str, st: os.stat_result | None = None) -> bool:
    """Whether the user may write ``path`` (as ruff decides: a file without a
    write permission bit is read-only even for root, who could write it)."""
    if st is None:
        st = os.stat(path)
    if not os.access(path, os.W_OK):
        return False
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return True


def _read_only_mount(directory: str) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & getattr(os, "ST_RDONLY", 1))
    except (OSError, AttributeError):
        return False


def _check_unchanged(target: str, expected: bytes | None) -> None:
    if expected is None:
        return
    try:
        with open(target, "rb") as fh:
            current = fh.read()
    except OSError as exc:
        raise SourceError(_write_reason(exc)) from None
    if current != expected:
        raise SourceError("file changed on disk while it was being fixed; left as it is (run again)")


def write_atomic(path: str, data: bytes, *, expected: bytes | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its permission bits.

    Writes through symbolic links (the link stays a link). ``expected``, when
    given, is what the file held when it was read: if it changed on disk since,
    nothing is written and :class:`SourceError` says so. On any failure the
    original file is untouched and the temporary file is removed.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise SourceError(_write_reason(exc)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise SourceError(f"cannot write fixed file: {_kind(st.st_mode)}")
    if st is not None and not writable(target, st):
        if _read_only_mount(directory):
            raise SourceError(_write_reason(OSError(errno.EROFS, os.strerror(errno.EROFS))))
        raise SourceError("cannot write fixed file: permission denied (the file is read-only)")
    _check_unchanged(target, expected)
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=directory)
    except OSError as exc:
        raise SourceError(_write_reason(exc)) from None
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(fd, st.st_uid, st.st_gid)
                    except OSError:
                        if st.st_uid != os.geteuid():
                            # the replacement would change the file's owner
                            raise SourceError(
                                f"cannot write fixed file: it belongs to another user (uid {st.st_uid}) "
                                "and replacing it would change its owner"
                            ) from None
                        # same owner, other group we are not in: keep going
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        # Once more just before the rename: the window in which another
        # writer's change can still be lost is this stat, read and rename.
        _check_unchanged(target, expected)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise SourceError(_write_reason(exc)) from None
        raise
    _fsync_dir(directory)
