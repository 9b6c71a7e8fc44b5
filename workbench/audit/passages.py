"""SKILL passages for the retrieval baselines (BM25-RAG, Dense-RAG).

A passage is a heading block of the SKILL source, split at blank lines when longer than
``max_tokens``; it keeps its character offsets, so a retrieved passage can be highlighted in
the source like a rule span. Passages carry ids (``<skill>#p<n>``) so the judge can cite
them the way it cites rule ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.graph import SkillGraph
from workbench.llm.tokens import count_tokens
from workbench.skill.document import SkillFormatError, parse_skill, split_blocks, split_long_blocks


@dataclass(frozen=True)
class Passage:
    id: str
    skill: str
    heading: str
    start: int
    end: int
    text: str
    tokens: int


def split_passages(skill: SkillGraph, max_tokens: int = 200) -> list[Passage]:
    try:
        blocks = parse_skill(skill.source).blocks
    except SkillFormatError:  # a stored source with odd front matter: split the whole text
        blocks = split_blocks(skill.source)
    out: list[Passage] = []
    for block in split_long_blocks(blocks, max_tokens):
        text = block.text.strip()
        if not text:
            continue
        out.append(
            Passage(
                id=f"{skill.name}#p{len(out) + 1}",
                skill=skill.name,
                heading=block.heading or "(preamble)",
                start=block.start,
                end=block.end,
                text=text,
                tokens=count_tokens(text),
            )
        )
    return out


def render_passages(passages: list[Passage]) -> str:
    """Passages as blocks the judge reads: id, where it comes from, the verbatim text."""
    return "\n\n".join(
        f"[{p.id}] (SKILL {p.skill}, section {p.heading!r})\n{p.text}" for p in passages
    )
