"""Author edits to a SKILL's rule graph, validated before they become a new version, and
the author's decisions on proposed and existing edges (``apply_edge_decisions``).

The Graph page hands us the edited rule table and edge list as plain rows; we check them the
same way a loaded index is checked and either return the new ``SkillGraph`` with a summary of
what changed, or every problem found (nothing is saved until all are fixed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from workbench.errors import WorkbenchError
from workbench.graph.diff import diff_skills
from workbench.graph.rule_graph import MODALITIES, Edge, Problem, Rule, RuleGraph, SkillGraph, Span


class EdgeDecisionError(WorkbenchError, ValueError):
    """A decision on an edge whose rules the SKILL version does not have."""


@dataclass
class EditResult:
    skill: SkillGraph | None
    problems: list[Problem] = field(default_factory=list)
    summary: str = ""
    # Rows left out because they were empty: said on the page, never dropped silently.
    skipped: list[str] = field(default_factory=list)

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
    ``source, target``). Spans, provenance and confidence of kept rules and edges are
    preserved, and so are the proposals that did not become edges; a new rule starts without
    a span (the UI marks it so an author can locate its source text later), and new rules and
    edges are the author's. Empty rows are left out and named in ``skipped``."""
    problems: list[Problem] = []
    skipped: list[str] = []
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, row in enumerate(rule_rows):
        loc = f"rule row {i + 1}"
        rid = _clean(row.get("id"))
        condition, action = _clean(row.get("condition")), _clean(row.get("action"))
        modality = _clean(row.get("modality"))
        if not rid and not condition and not action:
            skipped.append(f"{loc} is empty")  # a row the editor added and nobody filled
            continue
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
        if old is None:
            rules.append(Rule(rid, condition, action, modality, (), "author"))
        else:
            spans: tuple[Span, ...] = old.spans
            rules.append(replace(old, condition=condition, action=action, modality=modality,
                                 spans=spans))

    edges: list[Edge] = []
    pairs: set[tuple[str, str]] = set()
    for i, row in enumerate(edge_rows):
        loc = f"edge row {i + 1}"
        src, tgt = _clean(row.get("source")), _clean(row.get("target"))
        if not src and not tgt:
            skipped.append(f"{loc} is empty")
            continue
        for end, rid in (("source", src), ("target", tgt)):
            if rid not in seen:
                problems.append(Problem(loc, f"{end} {rid!r} is not a rule of this SKILL"))
        if src == tgt and src:
            problems.append(Problem(loc, f"{src!r} cannot require itself"))
        if (src, tgt) in pairs:
            problems.append(Problem(loc, f"duplicate edge {src!r} -> {tgt!r}"))
        pairs.add((src, tgt))
        kept = next((e for e in skill.graph.edges if e.pair == (src, tgt)), None)
        edges.append(kept or _accepted(skill, (src, tgt)))

    if problems:
        return EditResult(None, problems, skipped=skipped)
    proposed = [e for e in skill.proposed if e.pair not in pairs
                and e.source in seen and e.target in seen]
    new = SkillGraph(skill.name, skill.description, skill.source, RuleGraph(rules, edges),
                     proposed, list(skill.decisions))
    return EditResult(new, [], summarize_changes(skill, new), skipped)


def _accepted(skill: SkillGraph, pair: tuple[str, str]) -> Edge:
    """A new edge from the author: a proposal's evidence and note kept when it was one."""
    shown = next((e for e in skill.proposed if e.pair == pair), Edge(*pair))
    return replace(shown, provenance="author", confidence=1.0)


def apply_edge_decisions(skill: SkillGraph, decisions: Sequence[tuple[tuple[str, str], bool]]) -> SkillGraph:
    """``skill`` with an author's edge decisions ``((source, target), accept)`` applied, all at
    once (one version for many): accepting a proposal adds it as an ``author`` edge, accepting
    an edge confirms it (``author``, confidence 1), rejecting an edge removes it; every decided
    pair leaves the proposals. Raises :class:`EdgeDecisionError` naming the rules the SKILL lacks."""
    unknown = sorted({r for pair, _ in decisions for r in pair if r not in skill.graph.rules})
    if unknown:
        raise EdgeDecisionError(f"{skill.name} has no rule {', '.join(unknown)}; nothing was decided",
                                "reload the graph, or name rules of this version "
                                "(`workbench graph diff` lists them)")
    decided = dict(decisions)  # the last decision on a pair wins
    edges = []
    for e in skill.graph.edges:
        if e.pair not in decided:
            edges.append(e)
        elif decided[e.pair]:
            edges.append(replace(e, provenance="author", confidence=1.0))
    kept = {e.pair for e in edges}
    edges += [_accepted(skill, pair) for pair, accept in decided.items()
              if accept and pair not in kept]
    proposed = [e for e in skill.proposed if e.pair not in decided]
    return SkillGraph(skill.name, skill.description, skill.source,
                      RuleGraph(skill.graph.rules.values(), edges), proposed, list(skill.decisions))


def summarize_changes(old: SkillGraph, new: SkillGraph) -> str:
    """A one-line, human-readable description of what changed between two versions
    (``workbench.graph.diff``: the same computation as the version comparison)."""
    return diff_skills(old, new).summary()
