"""The LightRAG baseline's two settings: the project's defaults and the first paper's B.5.

- ``default``: LightRAG's own chunking (1,200-token chunks, 100 overlap) and query limits,
  queried in keyword ("hybrid") mode with the case's audit keywords as its high- and
  low-level keywords, so querying makes no model call; the query text is the last user
  message and the reply (``retrieval_query``). Chosen for small local models: their
  keyword answers are unreliable and slow, and small chunks keep extraction prompts short.
- ``paper``: the first paper's appendix B.5: 12,000-token chunks with 100 overlap,
  ``top_k`` 20, ``chunk_top_k`` 8, a 6,000-token context cap (``max_total_tokens``), and the
  query built from the routed SKILL names + state O + history H + reply A, whose keywords
  LightRAG's own keyword step extracts (one model call per SKILL queried, cached by
  LightRAG in the index folder).

Chunking changes the index, so the two presets never share one: the index folder's key
includes the chunking of a preset that sets it (``index_variant``); the default preset's
key is the one indexes had before presets existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.vocabulary import LightragPresetName, values


@dataclass(frozen=True)
class LightragPreset:
    name: str
    chunk_tokens: int | None  # None: the library's default chunking (1,200 / 100)
    chunk_overlap: int | None
    top_k: int | None  # None: LightRAG's QueryParam default
    chunk_top_k: int | None
    max_total_tokens: int | None
    library_keywords: bool  # LightRAG extracts the query's keywords itself (a model call)
    query_with_case: bool  # query = SKILL names + O + H + A (else last user message + reply)

    @property
    def index_variant(self) -> str:
        """What of this preset changes the index (its folder key); "" for the library's
        default chunking."""
        if self.chunk_tokens is None and self.chunk_overlap is None:
            return ""
        return f"chunks={self.chunk_tokens}/{self.chunk_overlap}"

    def lightrag_args(self) -> dict[str, Any]:
        """Constructor arguments of ``LightRAG`` this preset sets."""
        out: dict[str, Any] = {}
        if self.chunk_tokens is not None:
            out["chunk_token_size"] = self.chunk_tokens
        if self.chunk_overlap is not None:
            out["chunk_overlap_token_size"] = self.chunk_overlap
        return out

    def query_args(self, keywords: Sequence[str]) -> dict[str, Any]:
        """``QueryParam`` arguments besides the mode: limits, and the keywords unless
        LightRAG is to extract them."""
        out: dict[str, Any] = {k: v for k, v in (
            ("top_k", self.top_k), ("chunk_top_k", self.chunk_top_k),
            ("max_total_tokens", self.max_total_tokens)) if v is not None}
        if not self.library_keywords:
            out["hl_keywords"] = list(keywords)
            out["ll_keywords"] = list(keywords)
        return out


PRESETS: dict[str, LightragPreset] = {
    LightragPresetName.DEFAULT: LightragPreset(
        LightragPresetName.DEFAULT, None, None, None, None, None, False, False),
    LightragPresetName.PAPER: LightragPreset(
        LightragPresetName.PAPER, 12_000, 100, 20, 8, 6_000, True, True),
}
PRESET_NAMES = values(LightragPresetName)


def get_preset(name: str | LightragPreset | None) -> LightragPreset:
    """The preset called ``name`` (None: the default); ValueError names the choices."""
    if isinstance(name, LightragPreset):
        return name
    try:
        return PRESETS[name or LightragPresetName.DEFAULT]
    except KeyError:
        raise ValueError(f"unknown LightRAG preset {name!r}; choose one of "
                         f"{', '.join(PRESET_NAMES)}") from None


def paper_query(case: Any, skills: Sequence[str]) -> str:
    """The paper preset's query: the routed SKILL names, the state O, the history H and the
    reply A, as the audit prompts quote them (``prompt_fields``)."""
    from workbench.audit.cases import prompt_fields

    f = prompt_fields(case)
    return (f"SKILLs: {', '.join(skills)}\nState: {f['state']}\n"
            f"Conversation: {f['conversation']}\nReply: {f['reply']}")
