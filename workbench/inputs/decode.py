"""Bytes to text: UTF-8 only, BOM or not; everything else is reported with its line."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from workbench.errors import WorkbenchError

# Bigger inputs are refused before they are read: a cases or traces file of this size is
# already far beyond what one audit run handles, and reading it whole would exhaust memory.
MAX_INPUT_BYTES = 512 * 1024 * 1024

_UTF8_BOM = b"\xef\xbb\xbf"
# UTF-32 first: its little-endian BOM starts with the UTF-16 one.
_OTHER_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
)
RESAVE = "re-save it as UTF-8 (in most editors: Save As, encoding UTF-8)"


class InputError(WorkbenchError, ValueError):
    """An input file cannot be used. ``str()`` reads ``origin:line: problem; fix``."""

    def __init__(self, origin: str, message: str, line: int | None = None, fix: str = "") -> None:
        self.origin, self.line, self.problem, self.fix = origin, line, message, fix
        where = f"{origin}:{line}" if line is not None else origin
        super().__init__(f"{where}: {message}", fix)


def line_of_offset(data: bytes | str, offset: int) -> int:
    """1-based line number of a byte/char offset."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    return data.count(newline, 0, offset) + 1  # type: ignore[arg-type]


def open_regular(path: str | Path, what: str = "file") -> BinaryIO:
    """``path`` opened for reading as bytes, if it is a regular file; InputError otherwise.

    A FIFO, a device or a socket is refused without blocking: the file is opened with
    ``O_NONBLOCK`` (so opening a FIFO that no one writes returns at once) and checked on the
    opened descriptor (so a path swapped after a check cannot slip through)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(str(p), f"no such {what}", fix="check the path") from None
    except IsADirectoryError:
        raise InputError(str(p), f"is a folder, not a {what}", fix="pass the file itself") from None
    except OSError as exc:
        raise InputError(str(p), f"cannot be read ({exc.strerror or exc})",
                         fix="check its permissions") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InputError(str(p), f"is a folder, not a {what}", fix="pass the file itself")
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device" if
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        raise InputError(str(p), f"is {kind}, not a {what}",
                         fix="save the data to a regular file and pass that")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_bounded(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> BinaryIO:
    """``path`` opened as :func:`open_regular` does, refused before a byte is read when it
    holds more than ``max_bytes``: the size guard of every reader of user files. A file that
    grows while it is read is caught by the reader (:func:`grew_past`)."""
    src = open_regular(path, what)
    size = os.fstat(src.fileno()).st_size
    if size > max_bytes:
        src.close()
        raise InputError(str(Path(path)), f"{size} bytes is more than a {what} may have ({max_bytes})",
                         fix="split it into smaller files")
    return src


def grew_past(origin: str, max_bytes: int) -> InputError:
    """The error for a file found over ``max_bytes`` while it was read (it grew)."""
    return InputError(origin, f"more than {max_bytes} bytes", fix="split it into smaller files")


def read_input_bytes(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path``; a missing file, a folder, a FIFO or device, or an oversized
    file is an InputError."""
    p = Path(path)
    with open_bounded(p, what, max_bytes) as src:
        try:
            data = src.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(str(p), f"cannot be read ({exc.strerror or exc})",
                             fix="check its permissions") from None
    if len(data) > max_bytes:  # grew while we looked
        raise grew_past(str(p), max_bytes)
    return data


def foreign_encoding(data: bytes) -> str | None:
    """The name of a UTF-16/32 byte-order mark at the start of ``data``, else None."""
    return next((name for bom, name in _OTHER_BOMS if data.startswith(bom)), None)


def decode_text(data: bytes, origin: str, *, lenient: bool = False) -> tuple[str, list[str]]:
    """UTF-8 text of ``data`` (a UTF-8 BOM is dropped), and warnings.

    Raises InputError for UTF-16/32 (BOM), NUL bytes (binary, or UTF-16/32 without a BOM)
    and, unless ``lenient``, for bytes that are not UTF-8 (Latin-1, cp1252, ...). With
    ``lenient`` such bytes become U+FFFD and a warning names the first bad line, so one
    stray byte does not make a whole policy unusable.
    """
    encoding = foreign_encoding(data)
    if encoding:
        raise InputError(origin, f"is encoded as {encoding}, not UTF-8", 1, RESAVE)
    data = data.removeprefix(_UTF8_BOM)
    nul = data.find(b"\x00")
    if nul != -1:
        raise InputError(origin, f"holds a NUL byte (byte {nul}): this is a binary file or "
                         "UTF-16/32 text", line_of_offset(data, nul),
                         "pass a UTF-8 text file (" + RESAVE + ")")
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = line_of_offset(data, exc.start)
        bad = data[exc.start:exc.start + 1].hex()
        problem = (f"byte 0x{bad} at offset {exc.start} is not UTF-8 (the file looks like "
                   "Latin-1 or Windows-1252 text)")
        if not lenient:
            raise InputError(origin, problem, line, RESAVE) from None
        return data.decode("utf-8", errors="replace"), [
            f"{origin}:{line}: {problem}; such bytes were replaced by U+FFFD. To keep the "
            f"original characters, {RESAVE}."
        ]


def read_input_text(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """Read, bound and decode a UTF-8 text file; every problem is an InputError."""
    text, _ = decode_text(read_input_bytes(path, what, max_bytes), str(path))
    return text


def split_jsonl_lines(text: str) -> list[str]:
    """JSONL lines split at ``\\n`` only: U+2028 and friends are legal inside JSON strings,
    so ``str.splitlines`` would cut records in half."""
    return [line.removesuffix("\r") for line in text.split("\n")]
