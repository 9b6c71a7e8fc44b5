"""What changed between two versions of a SKILL: rules added, removed and changed field by
field, edges added and removed (and edges whose provenance changed), proposals that came or
went, and whether the description or the source text changed.

The Graph page's version comparison, ``workbench graph diff`` and the edit history's summary
all read this one computation, so a history line says what the change *did*, never what an
author's note claims (issue 35: a note claiming an added edge that was never saved read as
if it had been).

Usage::

    diff = diff_skills(old, new)
    diff.summary()        # "added rules R5; edited rules R1; added edges R5->R3"
    diff.to_dict()        # JSON for scripts
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.graph.rule_graph import Edge, Rule, SkillGraph

# The fields of a rule a version may change, in the order a person reads them.
RULE_FIELDS = ("condition", "action", "modality", "spans", "provenance", "confidence")
# The ones whose change is an edit of the rule's meaning (the summary's "edited rules").
MEANING_FIELDS = ("condition", "action", "modality", "spans")
EDGE_TRUST_FIELDS = ("provenance", "confidence", "evidence", "note")


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: object
    after: object

    def to_dict(self) -> dict:
        return {"field": self.field, "before": _plain(self.before), "after": _plain(self.after)}


@dataclass(frozen=True)
class RuleChange:
    rule_id: str
    changes: tuple[FieldChange, ...]

    @property
    def fields(self) -> list[str]:
        return [c.field for c in self.changes]

    @property
    def edits_meaning(self) -> bool:
        return any(c.field in MEANING_FIELDS for c in self.changes)


@dataclass(frozen=True)
class EdgeChange:
    pair: tuple[str, str]
    changes: tuple[FieldChange, ...]


@dataclass
class GraphDiff:
    """Version ``old`` -> ``new`` of one SKILL. Lists are in the newer version's order
    (removed items in the older one's)."""

    rules_added: list[Rule] = field(default_factory=list)
    rules_removed: list[Rule] = field(default_factory=list)
    rules_changed: list[RuleChange] = field(default_factory=list)
    edges_added: list[Edge] = field(default_factory=list)
    edges_removed: list[Edge] = field(default_factory=list)
    edges_changed: list[EdgeChange] = field(default_factory=list)
    proposals_added: list[Edge] = field(default_factory=list)
    proposals_removed: list[Edge] = field(default_factory=list)
    description: FieldChange | None = None
    source_changed: bool = False

    @property
    def empty(self) -> bool:
        return not (self.rules_added or self.rules_removed or self.rules_changed
                    or self.edges_added or self.edges_removed or self.edges_changed
                    or self.proposals_added or self.proposals_removed or self.description
                    or self.source_changed)

    def summary(self, with_trust: bool = True) -> str:
        """One line: what a person would say changed ("no changes" when nothing did).
        Provenance-only changes and proposals are named after the rules and edges;
        ``with_trust=False`` leaves them out (a version that keeps no provenance of its own)."""
        edited = [c.rule_id for c in self.rules_changed if c.edits_meaning]
        retrusted = [c.rule_id for c in self.rules_changed if not c.edits_meaning]
        if not with_trust:
            trust_parts = {"changed provenance of rules", "changed provenance of edges",
                           "new proposals", "proposals gone"}
        else:
            trust_parts = set()
        parts = [f"{what} {', '.join(ids)}" for what, ids in (
            ("added rules", [r.id for r in self.rules_added]),
            ("removed rules", [r.id for r in self.rules_removed]),
            ("edited rules", edited),
            ("added edges", [_arrow(e.pair) for e in sorted(self.edges_added, key=_pair)]),
            ("removed edges", [_arrow(e.pair) for e in sorted(self.edges_removed, key=_pair)]),
            ("changed provenance of rules", retrusted),
            ("changed provenance of edges", [_arrow(c.pair) for c in self.edges_changed]),
            ("new proposals", [_arrow(e.pair) for e in self.proposals_added]),
            ("proposals gone", [_arrow(e.pair) for e in self.proposals_removed]),
        ) if ids and what not in trust_parts]
        if self.description:
            parts.append("changed the description")
        if self.source_changed:
            parts.append("changed the source text")
        return "; ".join(parts) or "no changes"

    def counts(self) -> dict[str, int]:
        return {"rules added": len(self.rules_added), "rules removed": len(self.rules_removed),
                "rules changed": len(self.rules_changed), "edges added": len(self.edges_added),
                "edges removed": len(self.edges_removed)}

    def to_dict(self) -> dict:
        return {
            "rules_added": [_rule_dict(r) for r in self.rules_added],
            "rules_removed": [_rule_dict(r) for r in self.rules_removed],
            "rules_changed": [{"id": c.rule_id, "changes": [f.to_dict() for f in c.changes]}
                              for c in self.rules_changed],
            "edges_added": [list(e.pair) for e in self.edges_added],
            "edges_removed": [list(e.pair) for e in self.edges_removed],
            "edges_changed": [{"edge": list(c.pair), "changes": [f.to_dict() for f in c.changes]}
                              for c in self.edges_changed],
            "proposals_added": [list(e.pair) for e in self.proposals_added],
            "proposals_removed": [list(e.pair) for e in self.proposals_removed],
            "description": None if self.description is None else self.description.to_dict(),
            "source_changed": self.source_changed,
            "summary": self.summary(),
        }


def diff_skills(old: SkillGraph, new: SkillGraph) -> GraphDiff:
    """Everything that differs from ``old`` to ``new`` (two versions of one SKILL)."""
    o, n = old.graph.rules, new.graph.rules
    out = GraphDiff(
        rules_added=[r for rid, r in n.items() if rid not in o],
        rules_removed=[r for rid, r in o.items() if rid not in n],
        rules_changed=[RuleChange(rid, changes) for rid, r in n.items() if rid in o
                       and (changes := _changes(o[rid], r, RULE_FIELDS))],
        source_changed=old.source != new.source,
    )
    oe, ne = {e.pair: e for e in old.graph.edges}, {e.pair: e for e in new.graph.edges}
    out.edges_added = [e for pair, e in ne.items() if pair not in oe]
    out.edges_removed = [e for pair, e in oe.items() if pair not in ne]
    out.edges_changed = [EdgeChange(pair, changes) for pair, e in ne.items() if pair in oe
                         and (changes := _changes(oe[pair], e, EDGE_TRUST_FIELDS))]
    op, np_ = {e.pair for e in old.proposed}, {e.pair for e in new.proposed}
    # A proposal that became an edge is told as an added edge, not as a proposal gone.
    out.proposals_added = [e for e in new.proposed if e.pair not in op]
    out.proposals_removed = [e for e in old.proposed if e.pair not in np_ and e.pair not in ne]
    if old.description != new.description:
        out.description = FieldChange("description", old.description, new.description)
    return out


def _changes(before: object, after: object, fields: tuple[str, ...]) -> tuple[FieldChange, ...]:
    return tuple(FieldChange(f, getattr(before, f), getattr(after, f)) for f in fields
                 if getattr(before, f) != getattr(after, f))


def _pair(e: Edge) -> tuple[str, str]:
    return e.pair


def _arrow(pair: tuple[str, str]) -> str:
    return f"{pair[0]}->{pair[1]}"


def _plain(value: object) -> object:
    """A field's value as JSON: spans as ``[[start, end], ...]``, a span as ``[start, end]``."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "start") and hasattr(value, "end"):
        return [value.start, value.end]
    return value


def _rule_dict(r: Rule) -> dict:
    return {"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}


def describe(value: object) -> str:
    """A field's value as a person reads it (spans as character ranges, none as "—")."""
    if value is None or value == "" or value == ():
        return "—"
    plain = _plain(value)
    if isinstance(plain, list) and plain and isinstance(plain[0], list):
        return ", ".join(f"{a}–{b}" for a, b in plain)
    if isinstance(plain, list):
        return f"{plain[0]}–{plain[1]}"
    return str(plain)
