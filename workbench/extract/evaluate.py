"""An extracted rule graph measured against a reference (hand-built) graph of the same SKILL.

Rules are matched by **span overlap** first: an extracted rule matches every reference rule
whose quoted text it overlaps by at least ``min_overlap`` of the shorter of the two (one
extracted rule quoting a sentence that holds two reference rules matches both). A rule with
no overlapping partner (or every rule, when the two sources differ) is matched by **text
similarity** second: token Jaccard of ``condition + action`` at least ``min_similarity``.

    rule precision = extracted rules matching some reference rule / extracted rules
    rule recall    = reference rules matched by some extracted rule / reference rules
    span exactness = matched extracted rules whose spans equal their best partner's
                     (ignoring surrounding whitespace and punctuation) / matched rules
    modality agreement = matched rules whose modality equals their best partner's / matched

Edges are compared over matched rules: an extracted edge ``a -> b`` counts when some pair
``(x, y)`` with ``x`` matched by ``a`` and ``y`` by ``b`` is a reference edge.

    edge precision = extracted edges that count / extracted edges whose ends both match
    edge recall    = reference edges some extracted edge counts for
                     / reference edges whose ends are both matched by some extracted rule
    edge F1        = 2 P R / (P + R)

With path credit an edge also counts when a reference *path* ``x ->* y`` exists (precision),
and a reference edge is found when the extracted edges, mapped onto reference rules, connect
its ends by a path (recall): the judge sees the closure, not single edges.

All edges are counted too (``edge_*_all``: precision over every extracted edge, recall over
every reference edge), so poor rule recall cannot hide behind the matched-pairs figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from workbench.annotation.matching import f1_of, jaccard_similarity
from workbench.graph import PolicyIndex, SkillGraph, Span

MIN_OVERLAP = 0.5
MIN_SIMILARITY = 0.5
_TRIM = " \t\r\n.,;:!?-*_`\"'()[]"


def _ratio_of(numerator: str, denominator: str) -> property:
    def ratio(self) -> float | None:
        den = getattr(self, denominator)
        return None if den == 0 else getattr(self, numerator) / den

    return property(ratio)


def _f1_of(precision: str, recall: str) -> property:
    return property(lambda self: f1_of(getattr(self, precision), getattr(self, recall)))


@dataclass
class SkillEvaluation:
    skill: str
    extracted_rules: int
    reference_rules: int
    matched_extracted: int
    matched_reference: int
    span_exact: int
    modality_agree: int
    extracted_edges: int
    reference_edges: int
    edges_between_matched: int  # extracted edges whose two ends both match
    reference_edges_matched: int  # reference edges whose two ends are both matched
    edge_hits: int  # extracted edges that count
    reference_edges_found: int
    path_credit: bool = False
    matched_by_text: int = 0  # extracted rules matched by text similarity, not spans
    notes: list[str] = field(default_factory=list)
    unmatched_extracted: list[str] = field(default_factory=list)
    unmatched_reference: list[str] = field(default_factory=list)

    # The figures, each a ratio of two counts above (None when the denominator is 0) or the
    # F1 of two of them.
    rule_precision = _ratio_of("matched_extracted", "extracted_rules")
    rule_recall = _ratio_of("matched_reference", "reference_rules")
    span_exactness = _ratio_of("span_exact", "matched_extracted")
    modality_agreement = _ratio_of("modality_agree", "matched_extracted")
    edge_precision = _ratio_of("edge_hits", "edges_between_matched")
    edge_recall = _ratio_of("reference_edges_found", "reference_edges_matched")
    edge_f1 = _f1_of("edge_precision", "edge_recall")
    edge_precision_all = _ratio_of("edge_hits", "extracted_edges")
    edge_recall_all = _ratio_of("reference_edges_found", "reference_edges")
    edge_f1_all = _f1_of("edge_precision_all", "edge_recall_all")

    def figures(self) -> dict[str, float | None]:
        names = ("rule_precision", "rule_recall", "span_exactness", "modality_agreement",
                 "edge_precision", "edge_recall", "edge_f1", "edge_precision_all",
                 "edge_recall_all", "edge_f1_all")
        return {n: (None if getattr(self, n) is None else round(getattr(self, n), 4)) for n in names}

    def to_dict(self) -> dict:
        return {**asdict(self), "figures": self.figures()}


def _overlap(a: tuple[Span, ...], b: tuple[Span, ...]) -> int:
    return sum(max(0, min(x.end, y.end) - max(x.start, y.start)) for x in a for y in b)


def _length(spans: tuple[Span, ...]) -> int:
    return sum(s.end - s.start for s in spans)


def _trimmed(source: str, spans: tuple[Span, ...]) -> tuple[str, ...]:
    return tuple(sorted(source[s.start : s.end].strip(_TRIM) for s in spans))


def match_rules(
    extracted: SkillGraph, reference: SkillGraph, min_overlap: float = MIN_OVERLAP,
    min_similarity: float = MIN_SIMILARITY,
) -> tuple[dict[str, list[str]], set[str]]:
    """Each extracted rule id -> the reference rule ids it matches (best first), and the ids
    of extracted rules matched by text similarity rather than by spans."""
    same_source = extracted.source == reference.source
    ext, ref = list(extracted.graph.rules.values()), list(reference.graph.rules.values())
    out: dict[str, list[str]] = {}
    by_text: set[str] = set()
    for e in ext:
        scored: list[tuple[float, str]] = []
        if same_source and e.spans:
            for r in ref:
                shared = _overlap(e.spans, r.spans)
                shorter = min(_length(e.spans), _length(r.spans))
                if shorter and shared / shorter >= min_overlap:
                    scored.append((shared / max(_length(e.spans), _length(r.spans)), r.id))
        out[e.id] = [rid for _, rid in sorted(scored, key=lambda t: (-t[0], t[1]))]
    unmatched = [e for e in ext if not out[e.id]]
    if unmatched and ref:
        sim = jaccard_similarity([f"{e.condition} {e.action}" for e in unmatched],
                                 [f"{r.condition} {r.action}" for r in ref])
        for i, e in enumerate(unmatched):
            j = int(sim[i].argmax())
            if sim[i, j] >= min_similarity:
                out[e.id] = [ref[j].id]
                by_text.add(e.id)
    return out, by_text


def _reach(graph_edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph_edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def evaluate_skill(
    extracted: SkillGraph, reference: SkillGraph, path_credit: bool = False,
    min_overlap: float = MIN_OVERLAP, min_similarity: float = MIN_SIMILARITY,
) -> SkillEvaluation:
    """Compare one extracted SKILL graph with its reference (see the module docstring)."""
    matches, by_text = match_rules(extracted, reference, min_overlap, min_similarity)
    eg, rg = extracted.graph, reference.graph
    notes = []
    if extracted.source != reference.source:
        notes.append("the two sources differ: rules were matched by text similarity only")
    covered = {rid for ids in matches.values() for rid in ids}
    matched_ext = [eid for eid, ids in matches.items() if ids]
    span_exact = modality = 0
    for eid in matched_ext:
        best = rg.rules[matches[eid][0]]
        rule = eg.rules[eid]
        if eid not in by_text and _trimmed(extracted.source, rule.spans) == _trimmed(
            reference.source, best.spans
        ):
            span_exact += 1
        modality += rule.modality == best.modality

    ref_pairs = {(e.source, e.target) for e in rg.edges}
    ref_next: dict[str, set[str]] = {}
    for s, t in ref_pairs:
        ref_next.setdefault(s, set()).add(t)
    mapped_next: dict[str, set[str]] = {}  # extracted edges drawn on reference rules
    between = hits = 0
    for e in eg.edges:
        sources, targets = matches.get(e.source, []), matches.get(e.target, [])
        if not sources or not targets:
            continue
        between += 1
        images = [(x, y) for x in sources for y in targets if x != y]
        for x, y in images:
            mapped_next.setdefault(x, set()).add(y)
        if any(p in ref_pairs for p in images) or (
            path_credit and any(y in _reach(ref_next, x) for x, y in images)
        ):
            hits += 1
    ref_matched = [(s, t) for s, t in ref_pairs if s in covered and t in covered]
    if path_credit:
        found = sum(1 for s, t in ref_matched if t in _reach(mapped_next, s))
    else:
        found = sum(1 for s, t in ref_matched if t in mapped_next.get(s, ()))
    return SkillEvaluation(
        skill=extracted.name, extracted_rules=len(eg.rules), reference_rules=len(rg.rules),
        matched_extracted=len(matched_ext), matched_reference=len(covered),
        span_exact=span_exact, modality_agree=modality,
        extracted_edges=len(eg.edges), reference_edges=len(ref_pairs),
        edges_between_matched=between, reference_edges_matched=len(ref_matched),
        edge_hits=hits, reference_edges_found=found, path_credit=path_credit,
        matched_by_text=len(by_text), notes=notes,
        unmatched_extracted=[eid for eid, ids in matches.items() if not ids],
        unmatched_reference=[rid for rid in rg.rules if rid not in covered],
    )


@dataclass
class IndexEvaluation:
    skills: list[SkillEvaluation]
    missing: list[str]  # extracted SKILLs without a reference of the same name

    def to_dict(self) -> dict:
        return {"skills": [s.to_dict() for s in self.skills], "missing_reference": self.missing}

    def table(self) -> str:
        head = ("skill", "rules", "ref", "rule P", "rule R", "span =", "modality",
                "edges", "ref edges", "edge P", "edge R", "edge F1", "F1 (all)")
        rows = [head]
        for s in self.skills:
            f = s.figures()
            rows.append((s.skill, str(s.extracted_rules), str(s.reference_rules),
                         *(_fmt(f[k]) for k in ("rule_precision", "rule_recall", "span_exactness",
                                                "modality_agreement")),
                         str(s.extracted_edges), str(s.reference_edges),
                         *(_fmt(f[k]) for k in ("edge_precision", "edge_recall", "edge_f1",
                                                "edge_f1_all"))))
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                           enumerate(zip(r, widths, strict=True))) for r in rows]
        lines.extend(f"{name}: no reference graph of that name" for name in self.missing)
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def evaluate_index(
    extracted: PolicyIndex, reference: PolicyIndex, path_credit: bool = False
) -> IndexEvaluation:
    """Every extracted SKILL against the reference SKILL of the same name."""
    return IndexEvaluation(
        [evaluate_skill(s, reference[s.name], path_credit) for s in extracted if s.name in reference.skills],
        [s.name for s in extracted if s.name not in reference.skills])

