"""Edge provenance per SKILL version, proposed edges, and an author's accept/reject decisions.

The tables live in ``store.skill_trust`` (re-exported here), which ``store.repo`` writes and
reads with every version; this module holds the decisions: re-extraction reads
:func:`load_decisions` and neither re-proposes a rejected edge nor drops an accepted one.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from store import repo, skill_trust
from store.skill_trust import EdgeDecisionRow, EdgeTrustRow, RuleTrustRow, replace_trust
from workbench.extract.provenance import EdgeDecisions
from workbench.graph import Edge, RuleGraph, SkillGraph
from workbench.roles import Actor, require

__all__ = ["EdgeDecisionRow", "EdgeTrustRow", "RuleTrustRow", "decide_edge", "load_decisions",
           "save_edge_trust", "with_trust"]


def save_edge_trust(engine: Engine, name: str, version: int, skill: SkillGraph) -> None:
    """Keep the provenance of ``skill``'s edges and its proposed edges for that version
    (replacing what was kept for it before). ``repo.save_skill(..., trust=True)`` does this
    in the version's own transaction; this is for a version already saved."""
    row = repo.get_version(engine, name, version)
    with Session(engine) as session:
        replace_trust(session, row.id, skill)
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
    """``skill`` with the kept provenance on its edges and its proposed edges, less those an
    author has decided on since (``repo.load_skill`` already returns a SKILL so)."""
    repo.get_version(engine, name, version)  # NotFound for an unknown version, as before
    with Session(engine) as session:
        return skill_trust.with_trust(session, name, version, skill)


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
                            note=f"{verb} edge {pair[0]} -> {pair[1]}", trust=True)
    record()  # only once the graph change is saved: a refused stale save records nothing
    return saved.version
