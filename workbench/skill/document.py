"""SKILL documents: front matter, name/description, and heading blocks with source offsets.

A SKILL is Markdown with YAML front matter (``name``, ``description``), as in the Agent Skills
specification. Every block keeps ``start``/``end`` character offsets into the *original* text
(front matter included), so rule spans found inside a block map straight back to the source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.inputs import InputError, decode_text, load_yaml, read_input_bytes
from workbench.llm.tokens import count_tokens, count_tokens_upto
from workbench.skill.names import inferred_skill_name, skill_name_problem

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


# A SKILL longer than this is not a policy document a judge could read (and zip members
# are held to the same bound in ``workbench.extract.sources``).
MAX_SKILL_BYTES = 20 * 1024 * 1024


class SkillFormatError(WorkbenchError, ValueError):
    """The SKILL text cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Block:
    """A heading-delimited section of a SKILL. ``text`` is ``source[start:end]``."""

    index: int
    heading: str | None  # None for the preamble before the first heading
    level: int  # 0 for the preamble
    start: int
    end: int
    text: str

    @property
    def title(self) -> str:
        return self.heading or "(preamble)"


@dataclass
class SkillDoc:
    name: str
    description: str
    source: str
    body_start: int
    blocks: list[Block]
    warnings: list[str] = field(default_factory=list)
    path: str | None = None

    @property
    def tokens(self) -> int:
        return count_tokens(self.source)


def decode_skill_bytes(data: bytes, origin: str = "<bytes>") -> tuple[str, list[str]]:
    """Decode SKILL bytes as UTF-8 (BOM or not). Undecodable bytes become U+FFFD with a
    warning naming the first bad line, so one stray byte does not make a whole policy
    unusable; UTF-16/32 and binary data (NUL bytes) raise SkillFormatError."""
    try:
        return decode_text(data, origin, lenient=True)
    except InputError as exc:
        raise SkillFormatError(str(exc)) from None


def parse_skill(text: str, path: str | Path | None = None) -> SkillDoc:
    """Parse SKILL.md text.

    Raises ``SkillFormatError`` when the front matter is not valid YAML or not a mapping, or when
    name/description have the wrong type. Without front matter (or without ``name``) the name
    comes from the first ``#`` heading, else from the file name, and a warning says so.
    """
    origin = str(path) if path else "<text>"
    warnings: list[str] = []
    meta: dict = {}
    body_start = 0
    m = _FRONT_MATTER.match(text)
    if m:
        try:
            # The front matter starts on line 2, after the opening '---'.
            loaded = load_yaml(m.group(1), origin, first_line=2)
        except InputError as exc:
            where = f"{origin}:{exc.line}" if exc.line else origin
            raise SkillFormatError(
                f"{where}: the YAML front matter does not parse ({exc.problem}). Fix the block "
                "between the '---' lines; values with ':' need quotes."
            ) from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise SkillFormatError(
                f"{origin}: the front matter must be a YAML mapping with 'name' and "
                f"'description', not a {type(loaded).__name__}."
            )
        meta = loaded
        body_start = m.end()
    else:
        warnings.append(f"{origin}: no YAML front matter; name and description were inferred.")

    for key in ("name", "description"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], str):
            raise SkillFormatError(f"{origin}: front matter '{key}' must be a string.")

    blocks = split_blocks(text, body_start)
    name = (meta.get("name") or "").strip()
    if not name:
        first = next((b.heading for b in blocks if b.heading and b.level == 1), None)
        if first:
            # A heading is prose, not a chosen name: make it a usable one rather than fail.
            name = inferred_skill_name(first)
            warnings.append(f"{origin}: no 'name' in front matter; using the first heading {name!r}.")
        elif path:
            p = Path(path)
            name = p.parent.name if p.name.upper() == "SKILL.MD" and p.parent.name else p.stem
            warnings.append(f"{origin}: no 'name' and no '#' heading; using the file name {name!r}.")
        else:
            raise SkillFormatError(
                f"{origin}: cannot name this SKILL: add front matter with 'name:' or a '# Title'."
            )
    if bad := skill_name_problem(name):
        raise SkillFormatError(f"{origin}: {bad}")
    description = (meta.get("description") or "").strip()
    if not description:
        warnings.append(f"{origin}: no 'description'; routing by description will not find it.")
    if not text[body_start:].strip():
        warnings.append(f"{origin}: the SKILL has no body text; it yields no rules.")
    return SkillDoc(name, description, text, body_start, blocks, warnings, str(path) if path else None)


def read_skill(path: str | Path) -> SkillDoc:
    """Read a SKILL.md file (or a folder holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "SKILL.md"
    if not p.is_file():
        raise SkillFormatError(f"{p}: no such file. Point at a SKILL.md or a folder containing one.")
    try:
        data = read_input_bytes(p, "SKILL file", MAX_SKILL_BYTES)
    except InputError as exc:
        raise SkillFormatError(str(exc)) from None
    text, warnings = decode_skill_bytes(data, str(p))
    doc = parse_skill(text, p)
    doc.warnings[:0] = warnings
    return doc


def split_blocks(text: str, body_start: int = 0) -> list[Block]:
    """Split ``text[body_start:]`` at ATX heading lines outside fenced code.

    Each block runs from its heading line to the next heading (any level); text before the first
    heading is a preamble block when it holds more than whitespace.
    """
    starts: list[tuple[int, str | None, int]] = []  # (offset, heading, level)
    fence: str | None = None
    pos = body_start
    for line in text[body_start:].splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        fm = _FENCE.match(stripped)
        if fence is None and fm:
            fence = fm.group(1)[0] * len(fm.group(1))
        elif fence is not None:
            if fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= len(fence) \
                    and not stripped.strip()[len(fm.group(1)):].strip():
                fence = None
        else:
            hm = _HEADING.match(stripped)
            if hm:
                starts.append((pos, (hm.group(2) or "").strip(), len(hm.group(1))))
        pos += len(line)

    blocks: list[Block] = []
    first = starts[0][0] if starts else len(text)
    if text[body_start:first].strip():
        blocks.append(Block(0, None, 0, body_start, first, text[body_start:first]))
    for i, (start, heading, level) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        blocks.append(Block(len(blocks), heading, level, start, end, text[start:end]))
    return blocks


def split_long_blocks(blocks: list[Block], max_tokens: int) -> list[Block]:
    """Split blocks over ``max_tokens`` at paragraph boundaries (blank lines), keeping offsets.

    A single paragraph longer than the limit stays whole: cutting inside a sentence would
    break the verbatim spans extraction depends on.
    """
    out: list[Block] = []
    for block in blocks:
        if count_tokens(block.text) <= max_tokens:
            out.append(block)
            continue
        for a, b in pack_ranges(block.text, _paragraph_offsets(block.text), max_tokens):
            out.append(Block(block.index, block.heading, block.level, block.start + a, block.start + b,
                             block.text[a:b]))
    return [Block(i, b.heading, b.level, b.start, b.end, b.text) for i, b in enumerate(out)]


def pack_ranges(text: str, pieces: list[tuple[int, int]], max_tokens: int) -> list[tuple[int, int]]:
    """Consecutive ``pieces`` (``(start, end)`` into ``text``, at least one) joined into ranges
    of at most ``max_tokens`` tokens, in order and without gaps; a piece over the limit is a
    range of its own."""
    return [(a, b) for a, b, _ in pack_counted(text, pieces, max_tokens)]


def pack_counted(text: str, pieces: list[tuple[int, int]],
                 max_tokens: int) -> list[tuple[int, int, int | None]]:
    """:func:`pack_ranges`, each range with its token count when it is one piece (counted
    already; ``max_tokens + 1`` when only known to be over), else None (a sum of pieces is
    not the count of their join)."""
    out: list[tuple[int, int, int | None]] = []
    cur_start, cur_tokens, cur_pieces = pieces[0][0], 0, 0
    for a, b in pieces:
        # A piece surely over the limit is a range of its own whatever its exact count.
        t = count_tokens_upto(text[a:b], max_tokens)
        if cur_tokens and cur_tokens + t > max_tokens:
            out.append((cur_start, a, cur_tokens if cur_pieces == 1 else None))
            cur_start, cur_tokens, cur_pieces = a, 0, 0
        cur_tokens += t
        cur_pieces += 1
    out.append((cur_start, pieces[-1][1], cur_tokens if cur_pieces == 1 else None))
    return out


def _paragraph_offsets(text: str) -> list[tuple[int, int]]:
    bounds = [m.end() for m in re.finditer(r"\n[ \t]*\n", text)]
    edges = [0, *bounds, len(text)]
    return [(a, b) for a, b in zip(edges, edges[1:], strict=False) if b > a]
