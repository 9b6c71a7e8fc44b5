"""Audit keywords from (history H, state O, reply A): the words that find governing rules.

Two methods:

- ``lexical`` (deterministic, no model): the content words of the reply (weight 2) and the
  last user message (weight 1), weighted by how rare each word is in the policy (IDF over
  rules and SKILL descriptions); words the policy never uses are dropped, since they can
  neither route nor seed. Ties keep the order of first appearance.
- ``llm``: the ``keyworder`` role names at most ``max_keywords`` (4 by default) short topics
  under a JSON schema; conversation and reply are fenced as data.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from workbench.audit.cases import AuditCase, prompt_fields
from workbench.audit.policy import AuditIndex
from workbench.audit.prompts import build_messages
from workbench.audit.text import content_words, stem
from workbench.vocabulary import KeywordMethod, values

KEYWORD_METHODS = values(KeywordMethod)
DEFAULT_MAX_LLM_KEYWORDS = 4
DEFAULT_MAX_LEXICAL_KEYWORDS = 6
KEYWORDS_PROMPT = "keywords_v2"


def lexical_keywords(
    case: AuditCase, index: AuditIndex | None = None, max_keywords: int = DEFAULT_MAX_LEXICAL_KEYWORDS
) -> list[str]:
    """Up to ``max_keywords`` words of the reply and last user message, rarest-in-policy first.

    Without ``index`` words are ranked by weighted frequency only.
    """
    score: dict[str, float] = defaultdict(float)
    surface: dict[str, str] = {}
    first: dict[str, int] = {}
    pos = 0
    for text, weight in ((case.model_response, 2.0), (case.last_user_message, 1.0)):
        for w in content_words(text):
            if w.isdigit() or len(w) < 3:
                continue
            s = stem(w)
            score[s] += weight
            surface.setdefault(s, w)
            first.setdefault(s, pos)
            pos += 1
    if index is not None:
        score = {s: v * idf for s, v in score.items() if (idf := index.idf(s)) != 0.0}
    ranked = sorted(score, key=lambda s: (-score[s], first[s]))
    return [surface[s] for s in ranked[:max_keywords]]


def keyword_schema(max_keywords: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "keywords": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 40},
                "maxItems": max_keywords,
            }
        },
        "required": ["keywords"],
        "additionalProperties": False,
    }


def keyword_messages(case: AuditCase, max_keywords: int) -> list[dict[str, str]]:
    return build_messages(
        KEYWORDS_PROMPT,
        max_keywords=str(max_keywords),
        **prompt_fields(case),
    )


def clean_keywords(raw: Any, max_keywords: int) -> list[str]:
    """Model output is untrusted: keep distinct, non-empty, short strings, at most the limit."""
    words = (" ".join(k.split())[:40] for k in (raw if isinstance(raw, list) else []) if isinstance(k, str))
    first: dict[str, str] = {}  # lower-cased keyword -> its first spelling
    for k in filter(None, words):
        first.setdefault(k.lower(), k)
    return list(first.values())[:max_keywords]
