"""Seed rules: keywords matched against rule conditions, actions and verbatim source spans.

A keyword matches a rule when the rule's words contain all of the keyword's word stems (one
may be missing for keywords of three or more words, since a model's "refund policy rules"
should still find a refund rule). Rules are ranked by how many distinct keywords they
match, then by how specific those keywords are (a keyword matching few rules counts more),
then by document order; the best ``max_seeds`` are the seeds. The cap is what keeps a broad
keyword ("order") from seeding half of a 3,000-rule policy; the closure then adds exactly
what those seeds require.

Cost: one posting-list intersection per keyword and SKILL (stem -> rule ids, built once in
:class:`~workbench.audit.policy.AuditIndex`), so it does not grow with the policy's size
beyond the rules a keyword actually matches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.audit.policy import AuditIndex
from workbench.audit.text import stems

DEFAULT_MAX_SEEDS = 8


@dataclass
class SeedResult:
    seeds: dict[str, list[str]]  # SKILL -> seed rule ids, best first
    matches: dict[str, list[str]] = field(default_factory=dict)  # "skill/rule" -> keywords

    @property
    def empty(self) -> bool:
        return not any(self.seeds.values())


def _matching_rules(index: AuditIndex, skill: str, keyword_stems: list[str]) -> set[str]:
    rw = index.rule_words[skill]
    need = len(keyword_stems) if len(keyword_stems) < 3 else len(keyword_stems) - 1
    lists = sorted((rw.postings.get(s, set()) for s in keyword_stems), key=len)
    if need == len(keyword_stems):
        return set(lists[0]).intersection(*lists[1:]) if lists else set()
    counts = Counter(rid for posting in lists for rid in posting)
    return {rid for rid, n in counts.items() if n >= need}


def find_seeds(
    index: AuditIndex,
    skills: Sequence[str],
    keywords: Sequence[str],
    max_seeds: int = DEFAULT_MAX_SEEDS,
) -> SeedResult:
    """Seed rules per SKILL (``skills`` must exist in ``index``)."""
    per_kw = [(kw, ks) for kw in keywords if (ks := list(dict.fromkeys(stems(kw))))]
    scored: dict[tuple[str, str], list] = {}  # (skill, rule) -> [n keywords, specificity, kws]
    for skill in skills:
        for kw, ks in per_kw:
            hit = _matching_rules(index, skill, ks)
            if not hit:
                continue
            weight = 1.0 / len(hit)
            for rid in hit:
                entry = scored.setdefault((skill, rid), [0, 0.0, []])
                entry[0] += 1
                entry[1] += weight
                entry[2].append(kw)
    skill_pos = {s: i for i, s in enumerate(skills)}
    ranked = sorted(
        scored,
        key=lambda k: (
            -scored[k][0],
            -scored[k][1],
            skill_pos[k[0]],
            index.rule_words[k[0]].order[k[1]],
        ),
    )[:max_seeds]
    seeds: dict[str, list[str]] = {s: [] for s in skills}
    matches: dict[str, list[str]] = {}
    for skill, rid in ranked:
        seeds[skill].append(rid)
        matches[f"{skill}/{rid}"] = scored[(skill, rid)][2]
    return SeedResult(seeds, matches)
