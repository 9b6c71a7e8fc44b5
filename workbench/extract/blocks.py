"""What the extractor is asked about: heading blocks with stable keys, split to fit a token limit.

A block's *key* is a slug of its heading (``refunds``; ``refunds-2`` for a second heading of
the same name; ``refunds-p2`` for the second part of a long block; ``intro`` for text before
the first heading). Keys become rule-id prefixes (``refunds-R3``), so they must not depend on
the block's position: editing one section leaves every other section's ids unchanged.

Splitting goes from coarse to fine boundaries (blank lines, then line breaks, then sentence
ends, then spaces), so a verbatim quote is only ever cut where the text itself breaks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from workbench.llm.tokens import count_tokens, count_tokens_upto
from workbench.skill.document import Block, SkillDoc, pack_counted

SLUG_MAX = 32
MIN_SPLIT_TOKENS = 12  # below this a piece is not split again: it is a sentence or so

# Boundaries, coarse to fine; each pattern's match end is where the next piece starts.
_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n"),
    re.compile(r"\n"),
    re.compile(r"(?<=[.!?;:])[\"')\]]*[ \t]+"),
    re.compile(r"[ \t]+"),
)


@dataclass(frozen=True)
class PlannedBlock:
    """One block the extractor is asked about: ``text`` is ``source[start:end]`` of the SKILL."""

    key: str
    section: str  # heading path shown to the model, e.g. "Refunds > Gift cards (part 2)"
    heading: str | None
    start: int
    end: int
    text: str

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)

    @property
    def is_empty(self) -> bool:
        """True when the block holds nothing but its heading line (nothing to extract)."""
        lines = self.text.strip().splitlines()
        if lines and self.heading is not None and lines[0].lstrip().startswith("#"):
            lines = lines[1:]
        return not any(ch.isalnum() for ch in "".join(lines))

    def digest(self) -> str:
        """What the extractor sees of this block: section label and text."""
        return hashlib.sha256(f"{self.section}\0{self.text}".encode()).hexdigest()


def slugify(text: str | None, fallback: str) -> str:
    slug = re.sub(r"[\W_]+", "-", (text or "").lower()).strip("-")
    if len(slug) > SLUG_MAX:
        cut = slug[:SLUG_MAX]
        slug = cut[: cut.rfind("-")] if "-" in cut[SLUG_MAX // 2 :] else cut
    return slug or fallback


def heading_paths(blocks: list[Block]) -> list[str]:
    """For each block, its heading with the headings it sits under: ``A > B > C``."""
    stack: list[tuple[int, str]] = []
    paths: list[str] = []
    for b in blocks:
        if b.heading is None:
            paths.append("(introduction)")
            continue
        while stack and stack[-1][0] >= b.level:
            stack.pop()
        stack.append((b.level, b.heading or "(untitled)"))
        paths.append(" > ".join(h for _, h in stack))
    return paths


def plan_blocks(doc: SkillDoc, max_tokens: int) -> list[PlannedBlock]:
    """The SKILL's heading blocks, each split into parts of at most ``max_tokens`` tokens
    (a single unbreakable run of text may exceed it), with unique stable keys."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    planned: list[PlannedBlock] = []
    used = _Keys()
    for block, path in zip(doc.blocks, heading_paths(doc.blocks), strict=True):
        base = used.unique(slugify(block.heading, "intro" if block.heading is None else "section"))
        ranges = split_range(block.text, 0, len(block.text), max_tokens)
        for n, (a, b) in enumerate(ranges, 1):
            key = base if len(ranges) == 1 else used.unique(f"{base}-p{n}")
            label = path if len(ranges) == 1 else f"{path} (part {n} of {len(ranges)})"
            planned.append(
                PlannedBlock(key, label, block.heading, block.start + a, block.start + b, block.text[a:b])
            )
    return planned


class _Keys:
    """Keys handed out so far. ``unique(key)`` is ``key`` if free, else the first free of
    ``key-2``, ``key-3``, ...: where the search for ``key`` stopped is kept, so 20,000
    sections all named "Notes" cost 20,000 steps, not 200 million (taken keys stay taken,
    so resuming there finds the same key a search from 2 would)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.next: dict[str, int] = {}

    def unique(self, key: str) -> str:
        candidate, n = key, self.next.get(key, 1)
        if n > 1:
            candidate = f"{key}-{n}"
        while candidate in self.used:
            n += 1
            candidate = f"{key}-{n}"
        self.used.add(candidate)
        self.next[key] = n
        return candidate


def coarsest_cuts(text: str, start: int, end: int) -> list[int]:
    """The places strictly inside ``text[start:end]`` where the coarsest boundary kind that
    occurs there ends, in order; [] when none does (one unbreakable word)."""
    for pattern in _BOUNDARIES:
        cuts = [m.end() for m in pattern.finditer(text, start, end) if start < m.end() < end]
        if cuts:
            return cuts
    return []


def split_range(text: str, start: int, end: int, max_tokens: int,
                tokens: int | None = None) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into consecutive ranges of at most ``max_tokens`` tokens,
    preferring coarse boundaries. Ranges cover the whole span with no gaps. ``tokens``: the
    range's token count when the caller has it (or ``max_tokens + 1``: known to be over). A
    range is counted once, and one far over the limit not at all, so a 10 MB line costs
    about one pass of the tokenizer over its pieces."""
    if tokens is None:
        tokens = count_tokens_upto(text[start:end], max_tokens)
    if tokens <= max_tokens:
        return [(start, end)]
    cuts = coarsest_cuts(text, start, end)
    if not cuts:
        return [(start, end)]  # one unbreakable word: nothing sensible to cut
    out = pack_counted(text, list(zip([start, *cuts], [*cuts, end], strict=True)), max_tokens)
    # A piece still over the limit is one oversized paragraph/line: cut it at finer bounds.
    result: list[tuple[int, int]] = []
    for a, b, known in out:
        if (a, b) == (start, end):
            result.append((a, b))
            continue
        size = count_tokens_upto(text[a:b], max_tokens) if known is None else known
        if size > max_tokens:
            result.extend(split_range(text, a, b, max_tokens, size))
        else:
            result.append((a, b))
    return result


def halve(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """Two ranges splitting ``text[start:end]`` near its middle at the coarsest boundary
    available, or None when the range is too small to be worth splitting."""
    if count_tokens(text[start:end]) < MIN_SPLIT_TOKENS:
        return None
    middle = (start + end) // 2
    for pattern in _BOUNDARIES:
        cuts = [m.end() for m in pattern.finditer(text, start, end) if start < m.end() < end]
        # Only accept a cut that leaves real text on both sides.
        cuts = [c for c in cuts if text[start:c].strip() and text[c:end].strip()]
        if cuts:
            cut = min(cuts, key=lambda c: abs(c - middle))
            return [(start, cut), (cut, end)]
    return None
