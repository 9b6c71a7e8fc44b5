"""Scored seeding: rank a SKILL's rules for a whole case, then choose seeds whose closure fits.

Query (weighted bags of word stems, built once per case by :func:`case_query`): the reply A
(weight ``reply``), the state O (``state``), the audit keywords (``keywords``) and the
history H turn by turn, most recent first, turn i back weighted ``history * decay**i``. Two
bags differ only in the decay: the *rule* bag decays fast (``decay``: the last turns say
which step is at hand), the *section* bag slowly (``section_decay``: the whole conversation
names the request, i.e. which workflow among similar ones). A stem's summed weight is
saturated (BM25's query-term factor, ``k3``) so a word repeated through a long history
cannot drown the rest.

Each rule is scored with BM25 (k1 = 1.2, b = 0.75, Lucene idf) over two fields, each
normalised by its best score in the SKILL and mixed linearly (``section`` weighs the second):
the rule's own text (condition, action, verbatim span), queried with the rule bag; and its
section context (the heading path above its span, less the document title every rule
shares), queried with the section bag plus the routed SKILL's name and description (the
SKILL's own statement of what it is for). That is what tells two near-identical steps of
sibling workflows apart when the reply's words fit both.

Seeds (:func:`choose_seeds`) solve a budgeted maximum coverage greedily: the best-scored
rule whose closure fits the target first, then repeatedly the candidate whose ``require``
closure adds the most relevance (summed scores of rules not yet in context) per *marginal*
token, while it fits. A seed that would overflow is skipped, never truncated.

Defaults (:data:`DEFAULT_WEIGHTS`) were chosen by leave-one-intent-out cross-validation on
CompliBench airlines (long variant, lexical keywords, no judge): for each of the 10 intents,
the configuration with the best mean gold coverage over the budgets 5-30 % on the other
intents was scored on the held-out one. Two small grids: recency decays and the section
weight (decay 0.3 / section decay 0.8 / section 1.0 won 8 of 10 folds), then the state and
description weights (state 0 / description 2 won 8 of 10). Held-out coverage of the chosen
configurations: 0.627 / 0.800 / 0.957 / 0.985 / 0.995 at 5 / 10 / 15 / 20 / 30 %. The state
weight is 0 because O (names, card numbers, addresses) decides whether a condition holds,
not which rule governs; its rare words only pull seeds toward arbitrary rules. Nothing in
the defaults names a domain.

Cost: per case, one pass over the query's stems (numpy adds over precomputed per-term
contributions) plus one closure per seed tried; independent of the SKILL's size beyond the
rules that share a word with the case, and of the conversation's length beyond the turns
whose weight is not negligible (:data:`NEGLIGIBLE_TURN_WEIGHT`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from workbench.audit.cases import AuditCase, render_state
from workbench.audit.text import stems
from workbench.graph import SkillGraph
from workbench.graph.render import render_rule
from workbench.llm.tokens import count_tokens

# A turn weighing less than this share of the newest one is not read: it can only break an
# exact tie between rules, and a 20,000-turn conversation would otherwise be stemmed whole
# for every case (issue 36). At the default decays the bags read the newest 18 (rule) and
# 93 (section) turns.
NEGLIGIBLE_TURN_WEIGHT = 1e-9
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


@dataclass(frozen=True)
class QueryWeights:
    reply: float = 1.0
    history: float = 1.0
    decay: float = 0.3  # rule field: turn i back counts decay**i (the step at hand)
    section_decay: float = 0.8  # section field: the whole conversation names the section
    state: float = 0.0  # O: names, numbers, addresses decide conditions, not which rule
    keywords: float = 0.5
    section: float = 1.0  # weight of the section field against the rule field (1.0)
    description: float = 2.0  # the routed SKILL's name + description, in the section query
    k3: float = 1.5


DEFAULT_WEIGHTS = QueryWeights()


def heading_paths(source: str) -> tuple[list[int], list[str]]:
    """Start offsets of the Markdown headings of ``source`` and the heading path at each."""
    starts: list[int] = []
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    for m in _HEADING.finditer(source):
        level = len(m.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, m.group(2).strip()))
        starts.append(m.start())
        paths.append(" / ".join(t for _, t in stack))
    return starts, paths


def section_of(starts: list[int], paths: list[str], offset: int) -> str:
    import bisect

    i = bisect.bisect_right(starts, offset) - 1
    return paths[i] if i >= 0 else ""


class _Field:
    """BM25 contributions of one field: stem -> (rule positions, idf * saturated tf)."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75):
        n = len(docs)
        tfs = [Counter(d) for d in docs]
        lengths = [len(d) for d in docs]
        avg = (sum(lengths) / n) if n and sum(lengths) else 1.0
        df = Counter(t for c in tfs for t in c)
        rows: dict[str, list[int]] = {}
        vals: dict[str, list[float]] = {}
        for i, c in enumerate(tfs):
            norm = k1 * (1 - b + b * lengths[i] / avg)
            for t, f in c.items():
                idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                rows.setdefault(t, []).append(i)
                vals.setdefault(t, []).append(idf * f * (k1 + 1) / (f + norm))
        self.postings = {
            t: (np.asarray(rows[t], dtype=np.int64), np.asarray(vals[t], dtype=np.float64))
            for t in rows
        }

    def add_scores(self, out: np.ndarray, query: dict[str, float], scale: float) -> None:
        for t, w in query.items():
            hit = self.postings.get(t)
            if hit is not None:
                out[hit[0]] += (scale * w) * hit[1]


@dataclass
class RankedSkill:
    """One SKILL's rules prepared for scored seeding (built once per index, see AuditIndex)."""

    skill: SkillGraph
    ids: list[str]
    rule_field: _Field
    section_field: _Field
    sections: list[str]
    context_stems: list[str]  # the SKILL's name and description
    rule_tokens: dict[str, dict[str, int]] = field(default_factory=dict)  # style -> id -> tokens
    rule_blocks: dict[str, dict[str, str]] = field(default_factory=dict)  # style -> id -> text

    @classmethod
    def build(cls, skill: SkillGraph) -> RankedSkill:
        starts, paths = heading_paths(skill.source)
        ids, rule_docs, sections = [], [], []
        for rid, rule in skill.graph.rules.items():
            ids.append(rid)
            rule_docs.append(stems(f"{rule.condition} {rule.action} {skill.rule_text(rid)}"))
            where = section_of(starts, paths, rule.spans[0].start) if rule.spans else ""
            sections.append(where.split(" / ") if where else [])
        # Headings above every rule (the document title) say nothing about which rule applies,
        # and would only dilute the words that do; drop the common prefix.
        common = 0
        while sections and all(len(p) > common + 1 for p in sections) and len(
                {p[common] for p in sections}) == 1:
            common += 1
        sections = [" / ".join(p[common:]) for p in sections]
        section_docs = [stems(x) for x in sections]
        name = skill.name.replace("-", " ").replace("_", " ")
        return cls(skill, ids, _Field(rule_docs), _Field(section_docs), sections,
                   stems(f"{name} {skill.description}"))

    @cached_property
    def position(self) -> dict[str, int]:
        return {rid: i for i, rid in enumerate(self.ids)}

    @cached_property
    def header_tokens(self) -> int:
        return count_tokens(f"## SKILL: {self.skill.name}\n\n") + 1

    def blocks(self, style: str) -> dict[str, str]:
        """Every rule rendered in ``style`` (rendered once: the index is built per run)."""
        if style not in self.rule_blocks:
            self.rule_blocks[style] = {rid: render_rule(self.skill, rid, style) for rid in self.ids}
        return self.rule_blocks[style]

    def tokens_of(self, style: str) -> dict[str, int]:
        """Rendered tokens of every rule in ``style`` (what a rule adds to a context)."""
        if style not in self.rule_tokens:
            self.rule_tokens[style] = {
                rid: count_tokens(text) + 1 for rid, text in self.blocks(style).items()
            }
        return self.rule_tokens[style]

    def relevance(self, query: CaseQuery) -> float:
        """The best BM25 score of a rule's own text for the case's words (before the
        per-SKILL normalisation of :meth:`scores`): how much the case is about some rule of
        this SKILL at all. 0 when the case shares no word with any rule."""
        out = np.zeros(len(self.ids), dtype=np.float64)
        self.rule_field.add_scores(out, query.rule, 1.0)
        return float(out.max(initial=0.0))

    def scores(self, query: CaseQuery, weights: QueryWeights) -> np.ndarray:
        # Each field's scores are divided by their maximum over the SKILL, so the mix weights
        # mean the same for a two-line reply and a forty-turn history.
        out = np.zeros(len(self.ids), dtype=np.float64)
        self.rule_field.add_scores(out, query.rule, 1.0)
        top = out.max(initial=0.0)
        if top > 0:
            out /= top
        if weights.section:
            section_query = dict(query.section)
            if weights.description:
                for s, w in _saturate(Counter(self.context_stems), weights.k3).items():
                    section_query[s] = section_query.get(s, 0.0) + weights.description * w
            sec = np.zeros(len(self.ids), dtype=np.float64)
            self.section_field.add_scores(sec, section_query, 1.0)
            top = sec.max(initial=0.0)
            if top > 0:
                out += (weights.section / top) * sec
        return out


def _saturate(raw: Counter | dict[str, float], k3: float) -> dict[str, float]:
    return {t: w * (k3 + 1) / (w + k3) for t, w in raw.items() if w > 0}


@dataclass(frozen=True)
class CaseQuery:
    """Weighted stems for the rule field (the step at hand) and the section field (the
    request the conversation is about)."""

    rule: dict[str, float]
    section: dict[str, float]

    def __iter__(self):
        return iter(dict.fromkeys([*self.rule, *self.section]))


def case_query(
    case: AuditCase, keywords: Sequence[str] = (), weights: QueryWeights = DEFAULT_WEIGHTS
) -> CaseQuery:
    """The case as weighted bags of stems (see the module doc)."""

    memo: dict[int, list[str]] = {}  # turn -> its stems: both bags read the same turns

    def bag(decay: float) -> dict[str, float]:
        raw: dict[str, float] = {}

        def add(text: str, w: float, turn: int = -1) -> None:
            if w <= 0 or not text:
                return
            found = memo.get(turn) if turn >= 0 else None
            if found is None:
                found = stems(text)
                if turn >= 0:
                    memo[turn] = found
            for s in found:
                if len(s) > 1 and not s.isdigit():
                    raw[s] = raw.get(s, 0.0) + w

        add(case.model_response, weights.reply)
        if isinstance(case.context, str):
            add(case.context, weights.history * decay)
        else:
            for i, turn in enumerate(reversed(case.turns)):
                if decay**i < NEGLIGIBLE_TURN_WEIGHT:  # older turns weigh less still
                    break
                add(turn.content, weights.history * decay**i, i)
        state = render_state(case)
        if state != "(none)":
            add(state, weights.state)
        for kw in keywords:
            add(kw, weights.keywords)
        return _saturate(raw, weights.k3)

    return CaseQuery(bag(weights.decay), bag(weights.section_decay))


@dataclass
class ScoredSeeds:
    seeds: dict[str, list[str]]  # SKILL -> seed ids, best first
    rules: dict[str, list[str]]  # SKILL -> closure (or the seeds alone without closure)
    scores: dict[str, float]  # "skill/rule" -> score of each seed
    target: int  # the token target the seeds were chosen for
    estimated_tokens: int


def choose_seeds(
    ranked: dict[str, RankedSkill],
    query: CaseQuery,
    target: int,
    close: bool = True,
    style: str = "compact",
    weights: QueryWeights = DEFAULT_WEIGHTS,
    max_candidates: int = 64,
    relevance_floor: float = 0.0,
) -> ScoredSeeds:
    """Seeds over the SKILLs of ``ranked`` (in routing order) whose closure fits ``target``.

    Budgeted maximum coverage, greedily: the first seed is the best-scored rule whose closure
    fits (the single likeliest governing rule; when none fits, the best one anyway, since the
    target is soft and a hard budget is the caller's). Then, among the ``max_candidates`` best-scored rules
    of each SKILL, repeatedly the one whose closure adds the most relevance (summed scores
    of the rules it brings in that are not in context yet) per marginal token, while it fits.
    Extending a chain is therefore cheap once its prerequisites are in: the step after the
    matched ones is added for its own tokens only. Without closure a candidate brings itself.

    A rule with score 0 shares no word with the case and is never a seed; a SKILL whose rules
    all score 0, or whose best rule text scores below ``relevance_floor`` for the case's own
    words (:meth:`RankedSkill.relevance`; the section and description scores alone never
    make a seed), gets no seeds: the caller applies the EmptySeed policy.
    """
    import heapq

    score_of: dict[str, np.ndarray] = {}
    candidates: list[tuple[float, int, int, str]] = []
    for si, (name, rs) in enumerate(ranked.items()):
        sc = rs.scores(query, weights)
        score_of[name] = sc
        if relevance_floor > 0 and rs.relevance(query) < relevance_floor:
            continue
        positive = np.flatnonzero(sc > 0)
        if positive.size > max_candidates:
            positive = positive[np.argpartition(-sc[positive], max_candidates)[:max_candidates]]
        for i in positive.tolist():
            candidates.append((float(sc[i]), si, i, name))
    # Best score first; ties by routing order, then document order (deterministic).
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    seeds: dict[str, list[str]] = {name: [] for name in ranked}
    chosen: dict[str, dict[str, None]] = {name: {} for name in ranked}
    scores: dict[str, float] = {}
    header = {name: rs.header_tokens for name, rs in ranked.items()}
    pos = {name: rs.position for name, rs in ranked.items()}
    reach: dict[tuple[str, str], list[str]] = {}

    def marginal(name: str, rid: str) -> tuple[float, int, list[str]]:
        rs = ranked[name]
        key = (name, rid)
        if key not in reach:
            reach[key] = rs.skill.graph.closure([rid]) if close else [rid]
        new = [r for r in reach[key] if r not in chosen[name]]
        tokens = rs.tokens_of(style)
        cost = sum(tokens[r] for r in new) + (0 if chosen[name] else header[name])
        sc = score_of[name]
        gain = float(sum(sc[pos[name][r]] for r in new))
        return gain, cost, new

    def take(name: str, rid: str, score: float, new: list[str], cost: int) -> None:
        nonlocal used
        used += cost
        seeds[name].append(rid)
        scores[f"{name}/{rid}"] = round(score, 4)
        for r in new:
            chosen[name][r] = None

    used = 0
    # First seed: the best-scored rule whose closure fits; if none fits, the best one anyway
    # (the target is soft: a context over it beats none; a hard budget is the caller's).
    fitting = (c for c in candidates if marginal(c[3], ranked[c[3]].ids[c[2]])[1] <= target)
    first = next(fitting, candidates[0] if candidates else None)
    if first is not None:
        score, _, i, name = first
        _, cost, new = marginal(name, ranked[name].ids[i])
        take(name, ranked[name].ids[i], score, new, cost)
    # Lazy greedy: a candidate's ratio only falls as the context grows, so a popped
    # candidate whose recomputed ratio still tops the heap is the true best.
    heap = [(-float("inf"), order, score, name, ranked[name].ids[i])
            for order, (score, _, i, name) in enumerate(candidates[1:])]
    heapq.heapify(heap)
    while heap:
        _, order, score, name, rid = heapq.heappop(heap)
        if rid in chosen[name]:
            continue  # already in context through an earlier seed's closure
        gain, cost, new = marginal(name, rid)
        if used + cost > target or gain <= 0:
            continue
        ratio = gain / max(cost, 1)
        if heap and -heap[0][0] > ratio:
            heapq.heappush(heap, (-ratio, order, score, name, rid))
            continue
        take(name, rid, score, new, cost)
    rules = {name: list(ids) for name, ids in chosen.items()}
    if close:
        # Seeds first, then what they require, as RuleGraph.closure orders it.
        rules = {name: rs.skill.graph.closure(seeds[name]) if seeds[name] else []
                 for name, rs in ranked.items()}
    return ScoredSeeds(seeds, rules, scores, target, used)
