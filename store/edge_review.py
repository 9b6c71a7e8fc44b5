"""Edge provenance per SKILL version, proposed edges, and an author's accept/reject decisions.

Kept beside ``store.repo`` (not in its tables) so a graph written before provenance existed
still loads unchanged: a version without rows here simply has edges of unknown provenance.

- ``EdgeTrustRow``: one row per edge or proposed edge of a version, with its provenance,
  confidence, evidence span and note; ``RuleTrustRow`` the same for its rules.
- ``EdgeDecisionRow``: an append-only log of accept/reject verdicts per SKILL *name*, keyed
  by rule ids, so a verdict outlives the version it was made on: re-extraction reads
  :func:`load_decisions` and neither re-proposes a rejected edge nor drops an accepted one.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, select

from store import repo
from store.models import utcnow
from workbench.extract.provenance import EdgeDecisions
from workbench.graph import Edge, RuleGraph, SkillGraph, Span
from workbench.roles import Actor, require


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


def _row(version_id: int, e: Edge, proposed: bool) -> EdgeTrustRow:
    return EdgeTrustRow(
        version_id=version_id, source=e.source, target=e.target, proposed=proposed,
        provenance=e.provenance, confidence=e.confidence,
        evidence_start=e.evidence.start if e.evidence else None,
        evidence_end=e.evidence.end if e.evidence else None, note=e.note,
    )


def save_edge_trust(engine: Engine, name: str, version: int, skill: SkillGraph) -> None:
    """Keep the provenance of ``skill``'s edges and its proposed edges for that version
    (replacing what was kept for it before)."""
    row = repo.get_version(engine, name, version)
    with Session(engine) as session:
        for table in (EdgeTrustRow, RuleTrustRow):
            for old in session.exec(select(table).where(table.version_id == row.id)):
                session.delete(old)
        session.add_all([_row(row.id, e, False) for e in skill.graph.edges]
                        + [_row(row.id, e, True) for e in skill.proposed])
        session.add_all([RuleTrustRow(version_id=row.id, rule_id=r.id, provenance=r.provenance,
                                      confidence=r.confidence)
                         for r in skill.graph.rules.values() if r.provenance or r.confidence is not None])
        session.commit()


def load_decisions(engine: Engine, name: str) -> EdgeDecisions:
    """Every verdict on ``name``'s edges, the latest per pair winning."""
    out = EdgeDecisions()
    with Session(engine) as session:
        rows = session.exec(select(EdgeDecisionRow).where(EdgeDecisionRow.skill == name)
                            .order_by(EdgeDecisionRow.id)).all()
    for r in rows:
        out.decide((r.source, r.target), r.decision == "accepted")
    return out


def with_trust(engine: Engine, name: str, version: int, skill: SkillGraph) -> SkillGraph:
    """``skill`` (as ``repo.load_skill`` gives it) with the kept provenance on its edges and
    its proposed edges, less those an author has decided on since."""
    rows, inherited = _trust_rows(engine, name, version)
    trust = {(r.source, r.target, r.proposed): r for r in rows}

    def stamped(e: Edge, proposed: bool) -> Edge:
        r = trust.get((e.source, e.target, proposed))
        if r is None:
            # A version saved by an edit has no rows of its own: an edge its ancestor did not
            # have was added by the editing author.
            return replace(e, provenance="author") if inherited and not proposed else e
        evidence = Span(r.evidence_start, r.evidence_end) if r.evidence_start is not None else None
        return replace(e, provenance=r.provenance, confidence=r.confidence, evidence=evidence,
                       note=r.note)

    with Session(engine) as session:
        rule_rows = session.exec(select(RuleTrustRow).where(
            RuleTrustRow.version_id == repo.get_version(engine, name, version).id)).all()
    rule_trust = {r.rule_id: r for r in rule_rows}
    rules = [replace(r, provenance=rule_trust[r.id].provenance, confidence=rule_trust[r.id].confidence)
             if r.id in rule_trust else r for r in skill.graph.rules.values()]
    decided = load_decisions(engine, name)
    done = decided.accepted | decided.rejected
    edges = [stamped(e, False) for e in skill.graph.edges]
    kept = {e.pair for e in edges}
    proposed = [stamped(Edge(r.source, r.target), True) for r in rows
                if r.proposed and (r.source, r.target) not in done and (r.source, r.target) not in kept
                and r.source in skill.graph.rules and r.target in skill.graph.rules]
    return SkillGraph(skill.name, skill.description, skill.source, RuleGraph(rules, edges), proposed)


def _trust_rows(engine: Engine, name: str, version: int) -> tuple[list[EdgeTrustRow], bool]:
    """The trust rows of ``version``, or (for a version saved by an edit, which has none) of
    the latest earlier version that has some; True when they were inherited."""
    wanted = repo.get_version(engine, name, version)
    ids = [v.id for v in repo.versions(engine, name) if v.version <= version][::-1]
    with Session(engine) as session:
        for vid in ids:
            rows = session.exec(select(EdgeTrustRow).where(EdgeTrustRow.version_id == vid)).all()
            if rows:
                return list(rows), vid != wanted.id
    return [], False


def decide_edge(
    engine: Engine, name: str, version: int, pair: tuple[str, str], accept: bool, actor: Actor
) -> int:
    """Record a verdict on ``pair`` and apply it: accepting a proposed edge adds it (as an
    ``author`` edge) in a new version; rejecting an edge of the graph removes it in a new
    version; rejecting a proposal only records the verdict. Returns the version now showing
    the decision. Raises ``repo.StaleVersion`` when ``version`` is not the latest and the
    graph would change, ``repo.NotFound`` for an unknown SKILL or version, ``ValueError``
    when ``pair`` names a rule the version does not have, ``roles.NotAllowed`` (nothing
    recorded) when ``actor`` may not edit graphs: a rejection steers later extractions, so
    even one that leaves the graph as it is needs the graph editor's role."""
    require(actor, "edit graphs")
    author = actor.name
    skill = with_trust(engine, name, version, repo.load_skill(engine, name, version))
    unknown = [r for r in pair if r not in skill.graph.rules]
    if unknown:
        raise ValueError(f"{name} v{version} has no rule {', '.join(unknown)}; reload the graph")

    def record() -> None:
        with Session(engine) as session:
            session.add(EdgeDecisionRow(skill=name, source=pair[0], target=pair[1],
                                        decision="accepted" if accept else "rejected",
                                        author=author))
            session.commit()

    is_edge = pair in {e.pair for e in skill.graph.edges}
    if not accept and not is_edge:
        record()
        return version  # rejecting a proposal: nothing in the graph changes
    if accept and is_edge:
        edges = [replace(e, provenance="author", confidence=1.0) if e.pair == pair else e
                 for e in skill.graph.edges]
        verb = "confirmed"
    elif accept:
        shown = next((e for e in skill.proposed if e.pair == pair), Edge(*pair))
        edges = [*skill.graph.edges, replace(shown, provenance="author", confidence=1.0)]
        verb = "accepted"
    else:
        edges = [e for e in skill.graph.edges if e.pair != pair]
        verb = "rejected"
    changed = SkillGraph(skill.name, skill.description, skill.source,
                         RuleGraph(skill.graph.rules.values(), edges),
                         [e for e in skill.proposed if e.pair != pair])
    # An edge decision is an edit built on ``version``: refused (StaleVersion) when a later
    # version exists, so accepting an edge on an old version never reverts newer edits.
    saved = repo.save_skill(engine, changed, author=author, base_version=version, actor=actor,
                            note=f"{verb} edge {pair[0]} -> {pair[1]}")
    save_edge_trust(engine, name, saved.version, changed)
    record()  # only once the graph change is saved: a refused stale save records nothing
    return saved.version
