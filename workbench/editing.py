"""Author edits to a SKILL's rule graph, validated before they become a new version.

The Graph page hands us the edited rule table and edge list as plain rows; we check them the
same way a loaded index is checked and either return the new ``SkillGraph`` with a summary of
what changed, or every problem found (nothing is saved until all are fixed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from workbench.graph import MODALITIES, Edge, Problem, Rule, RuleGraph, SkillGraph, Span


@dataclass
class EditResult:
    skill: SkillGraph | None
    problems: list[Problem] = field(default_factory=list)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return self.skill is not None and not self.problems


def _clean(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from an empty editor cell
        return ""
    return str(value).strip()


def apply_edits(
    skill: SkillGraph,
    rule_rows: Iterable[Mapping[str, object]],
    edge_rows: Iterable[Mapping[str, object]],
) -> EditResult:
    """Build the edited graph from table rows (``id, condition, action, modality`` and
    ``source, target``). Spans of kept rules are preserved; a new rule starts without a span
    (the UI marks it so an author can locate its source text later)."""
    problems: list[Problem] = []
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, row in enumerate(rule_rows):
        loc = f"rule row {i + 1}"
        rid = _clean(row.get("id"))
        condition, action = _clean(row.get("condition")), _clean(row.get("action"))
        modality = _clean(row.get("modality"))
        if not rid and not condition and not action:
            continue  # an empty row the editor added
        if not rid:
            problems.append(Problem(loc, "the rule needs an id"))
            continue
        if rid in seen:
            problems.append(Problem(loc, f"duplicate rule id {rid!r}; ids must be unique"))
            continue
        seen.add(rid)
        if not condition or not action:
            problems.append(Problem(loc, f"rule {rid!r} needs both a condition and an action"))
        if modality not in MODALITIES:
            problems.append(Problem(loc, f"rule {rid!r}: modality {modality!r} is not one of "
                                         f"{', '.join(MODALITIES)}"))
        old = skill.graph.rules.get(rid)
        spans: tuple[Span, ...] = old.spans if old else ()
        rules.append(Rule(rid, condition, action, modality, spans))

    edges: list[Edge] = []
    pairs: set[tuple[str, str]] = set()
    for i, row in enumerate(edge_rows):
        loc = f"edge row {i + 1}"
        src, tgt = _clean(row.get("source")), _clean(row.get("target"))
        if not src and not tgt:
            continue
        for end, rid in (("source", src), ("target", tgt)):
            if rid not in seen:
                problems.append(Problem(loc, f"{end} {rid!r} is not a rule of this SKILL"))
        if src == tgt and src:
            problems.append(Problem(loc, f"{src!r} cannot require itself"))
        if (src, tgt) in pairs:
            problems.append(Problem(loc, f"duplicate edge {src!r} -> {tgt!r}"))
        pairs.add((src, tgt))
        edges.append(Edge(src, tgt))

    if problems:
        return EditResult(None, problems)
    new = SkillGraph(skill.name, skill.description, skill.source, RuleGraph(rules, edges))
    return EditResult(new, [], summarize_changes(skill, new))


def summarize_changes(old: SkillGraph, new: SkillGraph) -> str:
    """A one-line, human-readable description of what changed between two versions."""
    o, n = old.graph.rules, new.graph.rules
    added = [r for r in n if r not in o]
    removed = [r for r in o if r not in n]
    changed = [r for r in n if r in o and (n[r].condition, n[r].action, n[r].modality)
               != (o[r].condition, o[r].action, o[r].modality)]
    oe = {(e.source, e.target) for e in old.graph.edges}
    ne = {(e.source, e.target) for e in new.graph.edges}
    parts = [f"{what} {', '.join(ids)}" for what, ids in (
        ("added rules", added), ("removed rules", removed), ("edited rules", changed),
        ("added edges", [f"{a}->{b}" for a, b in sorted(ne - oe)]),
        ("removed edges", [f"{a}->{b}" for a, b in sorted(oe - ne)]),
    ) if ids]
    return "; ".join(parts) or "no changes"
