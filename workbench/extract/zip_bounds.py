"""Bounds on a zip of SKILLs, checked from its directory before any member is unpacked.

A member is capped at what a SKILL may have, but 100 members of 19 MB of repeated text fit
in a 6.5 MB zip and took 3.9 GB to read (issue 36). So, before anything is decompressed:

- the number of entries (counted from the end-of-central-directory record, before
  ``zipfile`` builds one object per entry),
- the total unpacked size of the ``SKILL.md`` members that would be read,
- each such member's compression ratio (unpacked / packed; markdown packs 3-5:1, a bomb
  of repeated text 1,000:1), for members over ``RATIO_FLOOR_BYTES``.

Unpacked sizes come from the directory; reading stops at the declared size (zipfile) and
the reader counts what it really got against the same total. Each limit is a setting
(``WORKBENCH_ZIP_MAX_MEMBERS``, ``WORKBENCH_ZIP_MAX_BYTES``, ``WORKBENCH_ZIP_MAX_RATIO``);
a refusal names the archive, the number found and the limit.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

from workbench.settings import ZIP_MAX_BYTES, ZIP_MAX_MEMBERS, ZIP_MAX_RATIO, env_number

DEFAULT_MAX_MEMBERS = 10_000
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
DEFAULT_MAX_RATIO = 100.0
RATIO_FLOOR_BYTES = 64 * 1024  # a small file of blank lines may pack 200:1 and is harmless

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_TAIL = 22 + 0xFFFF  # the end record plus the longest archive comment


@dataclass(frozen=True)
class ZipLimits:
    max_members: int = DEFAULT_MAX_MEMBERS
    max_bytes: int = DEFAULT_MAX_BYTES
    max_ratio: float = DEFAULT_MAX_RATIO

    @classmethod
    def from_env(cls) -> ZipLimits:
        return cls(
            int(env_number(ZIP_MAX_MEMBERS.name, DEFAULT_MAX_MEMBERS, minimum=1, integer=True)),
            int(env_number(ZIP_MAX_BYTES.name, DEFAULT_MAX_BYTES, minimum=1, integer=True)),
            env_number(ZIP_MAX_RATIO.name, DEFAULT_MAX_RATIO, minimum=1),
        )


@dataclass(frozen=True)
class Member:
    """What the directory says of one member to be read."""

    name: str
    file_size: int  # unpacked
    compress_size: int  # packed


def declared_entries(fp: BinaryIO) -> int | None:
    """The entry count the archive's end record declares (zip64 too); None when there is
    no end record (zipfile then reports the archive as unreadable)."""
    fp.seek(0, 2)
    size = fp.tell()
    start = max(0, size - _TAIL)
    fp.seek(start)
    tail = fp.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        return None
    (total,) = struct.unpack("<H", tail[at + 10: at + 12])
    locator = at - 20
    if total == 0xFFFF and locator >= 0 and tail[locator: locator + 4] == _EOCD64_LOCATOR:
        (offset,) = struct.unpack("<Q", tail[locator + 8: locator + 16])
        if offset + 56 <= size:
            fp.seek(offset)
            record = fp.read(56)
            if record[:4] == _EOCD64:
                (total,) = struct.unpack("<Q", record[32:40])
    fp.seek(0)
    return total


def entry_problem(origin: str, entries: int | None, limits: ZipLimits) -> str | None:
    if entries is not None and entries > limits.max_members:
        return (f"{origin}: the archive has {entries:,} entries, more than the {limits.max_members:,} "
                f"allowed ({ZIP_MAX_MEMBERS.name}); split it into smaller archives")
    return None


def members_problem(origin: str, members: Sequence[Member], limits: ZipLimits) -> str | None:
    """Why the SKILL members to be read are refused, or None."""
    for m in members:
        ratio = m.file_size / max(m.compress_size, 1)
        if m.file_size > RATIO_FLOOR_BYTES and ratio > limits.max_ratio:
            return (f"{origin}!{m.name}: packed {m.compress_size:,} bytes unpack to "
                    f"{m.file_size:,} (ratio {ratio:,.0f}:1), more than the {limits.max_ratio:g}:1 "
                    f"allowed ({ZIP_MAX_RATIO.name}); a SKILL is text, not repeated filler: "
                    "re-create the archive from the real documents")
    total = sum(m.file_size for m in members)
    if total > limits.max_bytes:
        return too_large(origin, len(members), total, limits)
    return None


def too_large(origin: str, count: int, total: int, limits: ZipLimits) -> str:
    return (f"{origin}: its {count:,} SKILL.md members unpack to {total:,} bytes, more than the "
            f"{limits.max_bytes:,} allowed in one archive ({ZIP_MAX_BYTES.name}); upload the SKILLs "
            "in smaller archives")
