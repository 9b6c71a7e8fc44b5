"""Where SKILLs come from: SKILL.md files, folders holding them, and zip archives.

A folder with a ``SKILL.md`` is one SKILL; a folder without one is searched for
``*/.../SKILL.md``. A zip is searched the same way (``__MACOSX`` and hidden entries are
skipped; the number of entries, the SKILLs' total unpacked size and their compression
ratio are bounded before anything is unpacked, see ``zip_bounds``, so a zip bomb cannot
fill memory). Two SKILLs with the
same name and different text are an error unless the caller asks for renaming; the same
SKILL given twice (identical text) is read once, with a warning.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from workbench.errors import WorkbenchError
from workbench.extract.zip_bounds import (
    Member,
    ZipLimits,
    declared_entries,
    entry_problem,
    members_problem,
    too_large,
)
from workbench.inputs import InputError, open_regular, read_input_bytes
from workbench.skill.document import (
    MAX_SKILL_BYTES,
    SkillDoc,
    SkillFormatError,
    decode_skill_bytes,
    parse_skill,
)
from workbench.skill.names import name_skeleton

MAX_MEMBER_BYTES = MAX_SKILL_BYTES
# What a damaged or unusual archive raises from zipfile/zlib: bad CRCs and headers, encrypted
# members (RuntimeError), unsupported compression (NotImplementedError), truncated streams.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError,
               OSError, ValueError, OverflowError)


class SkillSourceError(WorkbenchError, ValueError):
    """A path that is not a SKILL source; the message says what was expected."""


class DuplicateSkillName(SkillSourceError):
    def __init__(self, name: str, first: str, second: str) -> None:
        self.name, self.first, self.second = name, first, second
        super().__init__(
            f"two different SKILLs are named {name!r}: {first} and {second}. Give one a "
            "different 'name:' in its front matter, extract them separately, or rename "
            "duplicates automatically (--rename-duplicates)."
        )


class LookAlikeSkillName(DuplicateSkillName):
    def __init__(self, name: str, other: str, first: str, second: str) -> None:
        self.name, self.first, self.second = name, first, second
        SkillSourceError.__init__(
            self,
            f"two SKILLs have names that look the same: {other!r} ({first}) and {name!r} "
            f"({second}), which differ only in case or look-alike letters. Give one a "
            "different 'name:' in its front matter, extract them separately, or rename "
            "duplicates automatically (--rename-duplicates)."
        )


def _from_bytes(data: bytes, origin: str) -> SkillDoc:
    text, warnings = decode_skill_bytes(data, origin)
    doc = parse_skill(text, origin)
    doc.warnings[:0] = warnings
    return doc


def _read(path: Path) -> bytes:
    try:
        return read_input_bytes(path, "SKILL file", MAX_SKILL_BYTES)
    except InputError as exc:
        raise SkillSourceError(str(exc)) from None


def _is_skill_name(name: str) -> bool:
    return name.upper() == "SKILL.MD"


def _from_zip(path: Path | str, data: bytes | None = None) -> list[SkillDoc]:
    limits = ZipLimits.from_env()
    try:
        fp = io.BytesIO(data) if data is not None else open_regular(path, "zip archive")
    except InputError as exc:
        raise SkillSourceError(str(exc)) from None
    with fp:
        # Bounds first, from the archive's directory alone (see zip_bounds).
        try:
            problem = entry_problem(str(path), declared_entries(fp), limits)
        except OSError as exc:
            raise SkillSourceError(f"{path}: cannot be read ({exc})") from None
        if problem:
            raise SkillSourceError(problem)
        try:
            archive = zipfile.ZipFile(fp)
        except _ZIP_ERRORS as exc:
            raise SkillSourceError(f"{path}: not a readable zip file ({exc}); re-create the "
                                   "archive") from None
        with archive:
            return _read_members(path, archive, limits)


def _read_members(path: Path | str, archive: zipfile.ZipFile, limits: ZipLimits) -> list[SkillDoc]:
    members = []
    for info in sorted((i for i in archive.infolist() if not i.is_dir()), key=lambda i: i.filename):
        parts = PurePosixPath(info.filename).parts
        if not parts or not _is_skill_name(parts[-1]):
            continue
        if parts[0] == "__MACOSX" or any(p.startswith(".") for p in parts):
            continue
        if info.file_size > MAX_MEMBER_BYTES:
            raise SkillSourceError(
                f"{path}!{info.filename}: {info.file_size} bytes is more than a SKILL may "
                f"have ({MAX_MEMBER_BYTES}); split the document"
            )
        members.append(info)
    problem = members_problem(
        str(path), [Member(i.filename, i.file_size, i.compress_size) for i in members], limits)
    if problem:
        raise SkillSourceError(problem)
    docs: list[SkillDoc] = []
    total = 0
    for info in members:
        try:
            with archive.open(info) as member:
                data = member.read(MAX_MEMBER_BYTES + 1)
        except _ZIP_ERRORS as exc:
            raise SkillSourceError(
                f"{path}!{info.filename}: cannot be unpacked ({exc}); re-create the archive "
                "without encryption, with deflate or no compression"
            ) from None
        if len(data) > MAX_MEMBER_BYTES:
            raise SkillSourceError(f"{path}!{info.filename}: larger than it claims; refused")
        total += len(data)
        if total > limits.max_bytes:  # the directory understated the sizes
            raise SkillSourceError(too_large(str(path), len(members), total, limits))
        docs.append(_from_bytes(data, f"{path}!{info.filename}"))
    if not docs:
        raise SkillSourceError(f"{path}: the zip holds no SKILL.md; put each SKILL in <name>/SKILL.md")
    return docs


def _from_path(path: Path) -> list[SkillDoc]:
    if path.is_dir():
        direct = [p for p in path.iterdir() if p.is_file() and _is_skill_name(p.name)]
        if direct:
            return [_from_bytes(_read(direct[0]), str(direct[0]))]
        found = sorted(
            p for p in path.rglob("*") if p.is_file() and _is_skill_name(p.name)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not found:
            raise SkillSourceError(f"{path}: no SKILL.md in this folder or below it")
        return [_from_bytes(_read(p), str(p)) for p in found]
    if not path.exists():
        raise SkillSourceError(f"{path}: no such file or folder")
    try:  # a FIFO or device is refused here, before anything waits on it
        with open_regular(path, "SKILL file") as fp:
            is_zip = path.suffix.lower() == ".zip" or zipfile.is_zipfile(fp)
    except InputError as exc:
        raise SkillSourceError(str(exc)) from None
    if is_zip:
        return _from_zip(path)
    return [_from_bytes(_read(path), str(path))]


def _from_upload(name: str, data: bytes) -> list[SkillDoc]:
    if name.lower().endswith(".zip") or data[:4] == b"PK\x03\x04":
        return _from_zip(name, data)
    if len(data) > MAX_MEMBER_BYTES:
        raise SkillSourceError(
            f"{name}: {len(data)} bytes is more than a SKILL may have ({MAX_MEMBER_BYTES}); split it"
        )
    return [_from_bytes(data, name)]


def load_uploads(files: Iterable[tuple[str, bytes]], rename_duplicates: bool = False) -> list[SkillDoc]:
    """As :func:`load_sources` for uploaded ``(file name, bytes)`` pairs: SKILL.md files and
    zip archives (what the workbench's upload widget hands over)."""
    return _dedupe((doc for name, data in files for doc in _from_upload(name, data)), rename_duplicates)


def load_sources(paths: Iterable[str | Path], rename_duplicates: bool = False) -> list[SkillDoc]:
    """Read every SKILL the paths name, in order.

    Raises SkillSourceError for a missing path or an archive without SKILLs,
    SkillFormatError for unparseable front matter, and DuplicateSkillName when two different
    SKILLs share a name (unless ``rename_duplicates``: then the later ones become
    ``name-2``, ``name-3``... with a warning).
    """
    return _dedupe((doc for raw in paths for doc in _from_path(Path(raw))), rename_duplicates)


def _dedupe(found: Iterable[SkillDoc], rename_duplicates: bool) -> list[SkillDoc]:
    # Keyed by what a name looks like (name_skeleton): two SKILLs whose names differ only in
    # case or look-alike letters would show as one in every list.
    docs: list[SkillDoc] = []
    by_look: dict[str, SkillDoc] = {}
    for doc in found:
        first = by_look.get(name_skeleton(doc.name))
        if first is None:
            by_look[name_skeleton(doc.name)] = doc
            docs.append(doc)
            continue
        if first.source == doc.source and first.name == doc.name:
            first.warnings.append(f"{doc.path}: same text as {first.path}; read once")
            continue
        if not rename_duplicates:
            if first.name != doc.name:
                raise LookAlikeSkillName(doc.name, first.name, str(first.path), str(doc.path))
            raise DuplicateSkillName(doc.name, str(first.path), str(doc.path))
        n = 2
        while name_skeleton(f"{doc.name}-{n}") in by_look:
            n += 1
        new_name = f"{doc.name}-{n}"
        doc.warnings.append(
            f"{doc.path}: renamed {doc.name!r} to {new_name!r}: {first.path} already uses "
            + ("that name" if first.name == doc.name else f"the look-alike name {first.name!r}")
        )
        doc.name = new_name
        by_look[name_skeleton(new_name)] = doc
        docs.append(doc)
    return docs


__all__ = ["DuplicateSkillName", "LookAlikeSkillName", "SkillFormatError", "SkillSourceError",
           "load_sources", "load_uploads"]
