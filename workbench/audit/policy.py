"""A policy index prepared for online auditing: word indexes built once, used per case.

``AuditIndex`` wraps a :class:`~workbench.graph.PolicyIndex` with what every case needs and
nothing a case should rebuild: per-SKILL inverted indexes from word stems to rule ids (for
seeds), the words of each SKILL's name and description (for routing), document frequencies
(for lexical keywords) and, lazily, the SKILL passages used by the BM25 and dense baselines.
Building it is linear in the policy size; each case then costs only its own words.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from workbench.audit.text import stem_set
from workbench.graph import PolicyIndex, SkillGraph


@dataclass
class RuleWords:
    """Stem sets and an inverted index over one SKILL's rules (condition, action, spans)."""

    skill: SkillGraph
    stems_of: dict[str, frozenset[str]] = field(default_factory=dict)
    postings: dict[str, set[str]] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, skill: SkillGraph) -> RuleWords:
        out = cls(skill)
        for pos, (rid, rule) in enumerate(skill.graph.rules.items()):
            text = f"{rule.condition} {rule.action} {skill.rule_text(rid)}"
            ss = stem_set(text)
            out.stems_of[rid] = ss
            out.order[rid] = pos
            for s in ss:
                out.postings.setdefault(s, set()).add(rid)
        return out


class AuditIndex:
    """A PolicyIndex plus the lookup structures the online audit needs (built once)."""

    def __init__(self, index: PolicyIndex):
        self.index = index
        self.rule_words: dict[str, RuleWords] = {s.name: RuleWords.build(s) for s in index}
        self.skill_words: dict[str, frozenset[str]] = {
            s.name: stem_set(f"{s.name.replace('-', ' ').replace('_', ' ')} {s.description}")
            for s in index
        }
        # Document frequency of stems over all rules and SKILL descriptions: a word the policy
        # never uses cannot route or seed anything, and a word every rule uses says little.
        docs = [ss for rw in self.rule_words.values() for ss in rw.stems_of.values()]
        docs += self.skill_words.values()
        self.df: Counter[str] = Counter(s for ss in docs for s in ss)
        self.docs = max(len(docs), 1)
        self._memo: dict[tuple, Any] = {}
        self._lock = threading.RLock()

    def __contains__(self, name: object) -> bool:
        return name in self.index.skills

    def idf(self, stem: str) -> float:
        """0 for stems the policy never uses; higher for rarer stems."""
        n = self.df.get(stem, 0)
        return 0.0 if n == 0 else math.log(1.0 + self.docs / n)

    def skill(self, name: str) -> SkillGraph:
        return self.index[name]

    def passages(self, name: str, max_tokens: int):
        """Passages of a SKILL's source (cached per SKILL and size); see ``passages.py``."""
        from workbench.audit.passages import split_passages

        return self.memo(("passages", name, max_tokens), lambda: split_passages(self.index[name], max_tokens))

    def ranked(self, name: str):
        """The SKILL's rules prepared for scored seeding (cached); see ``rule_ranking.py``."""
        from workbench.audit.rule_ranking import RankedSkill

        return self.memo(("ranked", name), lambda: RankedSkill.build(self.index[name]))

    def raw_text(self, name: str) -> str:
        """The SKILL as the RawSkill baseline shows it: its whole document, under its name."""
        return f"[{name}] (the whole SKILL document)\n{self.index[name].source.strip()}"

    def raw_tokens(self, name: str) -> int:
        """Tokens of the SKILL rendered as the RawSkill baseline renders it (cached)."""
        from workbench.llm.tokens import count_tokens

        return self.memo(("raw_tokens", name), lambda: count_tokens(self.raw_text(name)))

    def memo(self, key: tuple, factory: Callable[[], Any]) -> Any:
        """A per-index cache for derived structures (BM25 indexes, passage embeddings)."""
        with self._lock:
            if key not in self._memo:
                self._memo[key] = factory()
            return self._memo[key]

    @cached_property
    def names(self) -> list[str]:
        return list(self.index.skills)
