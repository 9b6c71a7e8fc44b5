"""Text files read a line at a time: the same decoding and checks as ``decode_text``, with
memory bounded by the longest line instead of the file.

A JSONL or CSV file of a million records is never held whole: ``iter_input_lines`` opens
the file as ``open_regular`` does (a FIFO or device refused without waiting), refuses a file
over the size cap before reading, and checks each line as it comes (a UTF-16/32 byte-order
mark on line 1, NUL bytes, bytes that are not UTF-8, a line longer than ``max_line_bytes``),
each problem an :class:`InputError` naming ``file:line``. Lines are split at ``\\n`` only
(U+2028 is legal inside a JSON string) and keep their line ending, as a text file's do.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from workbench.inputs.decode import (
    _UTF8_BOM,
    MAX_INPUT_BYTES,
    RESAVE,
    InputError,
    foreign_encoding,
    grew_past,
    open_bounded,
)

# One line (one JSONL record, one CSV row) may be this long: a record is one case or one
# conversation, and parsing it takes several times its size in memory.
MAX_LINE_BYTES = 32 * 1024 * 1024


def iter_input_lines(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES,
                     max_line_bytes: int | None = None) -> Iterator[str]:
    """The decoded lines of the text file ``path``, read as they are used (a line at most
    ``max_line_bytes``, default :data:`MAX_LINE_BYTES`)."""
    max_line_bytes = MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
    p = Path(path)
    with open_bounded(p, what, max_bytes) as src:
        yield from _lines(src, str(p), max_line_bytes, max_bytes)


def iter_bytes_lines(data: bytes, origin: str,
                     max_line_bytes: int | None = None) -> Iterator[str]:
    """The decoded lines of ``data`` (an upload), checked as ``iter_input_lines`` does."""
    max_line_bytes = MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
    yield from _lines(io.BytesIO(data), origin, max_line_bytes, len(data))


def _lines(src: BinaryIO, origin: str, max_line_bytes: int, max_bytes: int) -> Iterator[str]:
    offset = 0
    number = 0
    while True:
        try:
            raw = src.readline(max_line_bytes + 1)
        except OSError as exc:
            raise InputError(origin, f"cannot be read ({exc.strerror or exc})",
                             fix="check its permissions") from None
        if not raw:
            return
        number += 1
        if number == 1:
            encoding = foreign_encoding(raw)
            if encoding:
                raise InputError(origin, f"is encoded as {encoding}, not UTF-8", 1, RESAVE)
            if raw.startswith(_UTF8_BOM):
                raw, offset = raw[len(_UTF8_BOM):], len(_UTF8_BOM)
        if len(raw) > max_line_bytes:
            raise InputError(origin, f"line {number} is longer than {max_line_bytes:,} bytes, "
                             "more than one record may be", number,
                             "split the record (a long conversation: into several records) "
                             "or shorten what it holds")
        if offset + len(raw) > max_bytes:  # the file grew while it was read
            raise grew_past(origin, max_bytes)
        nul = raw.find(b"\x00")
        if nul != -1:
            raise InputError(origin, f"holds a NUL byte (byte {offset + nul}): this is a binary "
                             "file or UTF-16/32 text", number,
                             "pass a UTF-8 text file (" + RESAVE + ")")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start:exc.start + 1].hex()
            raise InputError(origin, f"byte 0x{bad} at offset {offset + exc.start} is not UTF-8 "
                             "(the file looks like Latin-1 or Windows-1252 text)", number,
                             RESAVE) from None
        offset += len(raw)
        yield line
