"""What a SKILL version knows beyond its rules and edges: provenance and confidence of its
rules and edges, its proposed edges, and the author's verdicts on edges of the SKILL.

The tables live here, apart from ``store.repo`` and ``store.edge_decisions``, so that the one
save path (``repo.save_skill``) writes them in the version's own transaction and the one load
path (``repo.load_skill``) reads them back: ``workbench import`` of a ``skillcdg/1`` file with
proposals and sourced edges dropped both (issue 35), because only the extraction wrote them.

- ``EdgeTrustRow``: one row per edge or proposed edge of a version, with its provenance,
  confidence, evidence span and note; ``RuleTrustRow`` the same for its rules.
- ``EdgeDecisionRow``: an append-only log of accept/reject verdicts per SKILL *name*, keyed
  by rule ids, so a verdict outlives the version it was made on.

A version saved by an edit (which knows no provenance) has no rows of its own and reads those
of the latest earlier version that has some: an edge that version did not have was added by
the editing author.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from sqlmodel import Field, Session, SQLModel, select

from store.core_tables import SkillVersion, utcnow
from workbench.graph import Edge, EdgeDecision, RuleGraph, SkillGraph, Span


class EdgeTrustRow(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    version_id: int = Field(foreign_key="skillversion.id", index=True)
    source: str
    target: str
    proposed: bool = False  # True: suggested by a cue, not (yet) an edge of the graph
    provenance: str = ""
    confidence: float | None = None
    evidence_start: int | None = None
    evidence_end: int | None = None
    note: str = ""


class RuleTrustRow(SQLModel, table=True):
    """Provenance and confidence of one rule of a version (extracted rules: ``model``)."""

    id: int | None = Field(default=None, primary_key=True)
    version_id: int = Field(foreign_key="skillversion.id", index=True)
    rule_id: str
    provenance: str = ""
    confidence: float | None = None


class EdgeDecisionRow(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    skill: str = Field(index=True)
    source: str
    target: str
    decision: str  # "accepted" or "rejected"
    author: str
    created_at: datetime = Field(default_factory=utcnow)


def _edge_row(version_id: int, e: Edge, proposed: bool) -> EdgeTrustRow:
    return EdgeTrustRow(
        version_id=version_id, source=e.source, target=e.target, proposed=proposed,
        provenance=e.provenance, confidence=e.confidence,
        evidence_start=e.evidence.start if e.evidence else None,
        evidence_end=e.evidence.end if e.evidence else None, note=e.note,
    )


def trust_rows(version_id: int, skill: SkillGraph) -> list[SQLModel]:
    """The rows that keep ``skill``'s provenance, confidences and proposals for a version."""
    return ([_edge_row(version_id, e, False) for e in skill.graph.edges]
            + [_edge_row(version_id, e, True) for e in skill.proposed]
            + [RuleTrustRow(version_id=version_id, rule_id=r.id, provenance=r.provenance,
                            confidence=r.confidence)
               for r in skill.graph.rules.values() if r.provenance or r.confidence is not None])


def replace_trust(session: Session, version_id: int, skill: SkillGraph) -> None:
    """Replace what is kept for ``version_id`` by ``skill``'s (in the caller's transaction)."""
    for table in (EdgeTrustRow, RuleTrustRow):
        for old in session.exec(select(table).where(table.version_id == version_id)):
            session.delete(old)
    session.add_all(trust_rows(version_id, skill))


def _rows_for(session: Session, name: str, version: int):
    """The edge and rule rows of ``version``, or (for a version saved by an edit, which has
    none) of the latest earlier live version that has some; True when they were inherited."""
    ids = session.exec(select(SkillVersion.id).where(
        SkillVersion.name == name, SkillVersion.deleted == False,  # noqa: E712
        SkillVersion.version <= version).order_by(SkillVersion.version.desc())).all()
    for n, vid in enumerate(ids):
        edges = session.exec(select(EdgeTrustRow).where(EdgeTrustRow.version_id == vid)).all()
        rules = session.exec(select(RuleTrustRow).where(RuleTrustRow.version_id == vid)).all()
        if edges or rules:
            return list(edges), list(rules), n > 0
    return [], [], False


def decisions(session: Session, name: str) -> list[EdgeDecision]:
    """Every verdict on ``name``'s edges, oldest first."""
    rows = session.exec(select(EdgeDecisionRow).where(EdgeDecisionRow.skill == name)
                        .order_by(EdgeDecisionRow.id)).all()
    return [EdgeDecision(r.source, r.target, r.decision, r.author, _iso(r.created_at)) for r in rows]


def _iso(moment: datetime) -> str:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def latest_verdicts(found: list[EdgeDecision]) -> dict[tuple[str, str], bool]:
    """The latest verdict per pair (True: accepted)."""
    return {d.pair: d.accepted for d in found}


def with_trust(session: Session, name: str, version: int, skill: SkillGraph) -> SkillGraph:
    """``skill`` (version ``version`` of ``name``, as its rules and edges are stored) with the
    kept provenance on its rules and edges, its proposed edges less those decided since or
    now edges, and every verdict on the SKILL's edges."""
    edge_rows, rule_rows, inherited = _rows_for(session, name, version)
    trust = {(r.source, r.target, r.proposed): r for r in edge_rows}

    def stamped(e: Edge, proposed: bool) -> Edge:
        r = trust.get((e.source, e.target, proposed))
        if r is None:
            # An edge the ancestor did not have was added by the editing author.
            return replace(e, provenance="author") if inherited and not proposed else e
        evidence = Span(r.evidence_start, r.evidence_end) if r.evidence_start is not None else None
        return replace(e, provenance=r.provenance, confidence=r.confidence, evidence=evidence,
                       note=r.note)

    rule_trust = {r.rule_id: r for r in rule_rows}
    rules = [replace(r, provenance=rule_trust[r.id].provenance, confidence=rule_trust[r.id].confidence)
             if r.id in rule_trust else r for r in skill.graph.rules.values()]
    verdicts = decisions(session, name)
    done = set(latest_verdicts(verdicts))
    edges = [stamped(e, False) for e in skill.graph.edges]
    kept = {e.pair for e in edges}
    proposed = [stamped(Edge(r.source, r.target), True) for r in edge_rows
                if r.proposed and (r.source, r.target) not in done and (r.source, r.target) not in kept
                and r.source in skill.graph.rules and r.target in skill.graph.rules]
    return SkillGraph(skill.name, skill.description, skill.source, RuleGraph(rules, edges),
                      proposed, verdicts)


def add_decisions(session: Session, name: str, given: list[EdgeDecision], author: str) -> int:
    """Append the verdicts of ``given`` (an imported file's) that the log does not hold yet
    (same pair, verdict, author and time), in order; returns how many were added. A verdict
    without a time is taken as now, unless it already is the latest verdict on its pair, so
    importing the same file twice adds nothing."""
    held = decisions(session, name)
    seen = {(d.pair, d.decision, d.author, d.at) for d in held}
    latest = latest_verdicts(held)
    added = 0
    for d in given:
        who = d.author or author
        if (d.pair, d.decision, who, d.at) in seen or (not d.at and latest.get(d.pair) == d.accepted):
            continue
        when = datetime.fromisoformat(d.at) if d.at else utcnow()
        session.add(EdgeDecisionRow(skill=name, source=d.source, target=d.target,
                                    decision=d.decision, author=who,
                                    created_at=when if when.tzinfo else when.replace(tzinfo=UTC)))
        seen.add((d.pair, d.decision, who, d.at))
        latest[d.pair] = d.accepted
        added += 1
    return added
