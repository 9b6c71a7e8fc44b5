"""Edge decisions: an author accepts or rejects proposed ``require`` edges (and may confirm or
remove edges of the graph), with edge provenance per SKILL version. Not the Review page's
decisions on audit verdicts, which are ``store.review``.

The tables live in ``store.skill_trust`` (re-exported here), which ``store.repo`` writes and
reads with every version; this module holds the decisions: re-extraction reads
:func:`load_edge_decisions` and neither re-proposes a rejected edge nor drops an accepted one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from store import repo, skill_trust
from store.session import insert_all
from store.skill_trust import EdgeDecisionRow, EdgeTrustRow, RuleTrustRow, replace_trust
from workbench.extract.provenance import EdgeDecisions
from workbench.graph import EdgeDecision, SkillGraph
from workbench.graph.diff import diff_skills
from workbench.graph.editing import apply_edge_decisions
from workbench.identity.roles import Actor, require

__all__ = ["EdgesDecided", "EdgeDecisionRow", "EdgeTrustRow", "RuleTrustRow", "decide_edge", "decide_edges",
           "load_edge_decisions",
           "save_edge_trust", "with_trust"]


def save_edge_trust(engine: Engine, name: str, version: int, skill: SkillGraph) -> None:
    """Keep the provenance of ``skill``'s edges and its proposed edges for that version
    (replacing what was kept for it before). ``repo.save_skill(..., trust=True)`` does this
    in the version's own transaction; this is for a version already saved."""
    row = repo.get_version(engine, name, version)
    with Session(engine) as session:
        replace_trust(session, row.id, skill)
        session.commit()


def load_edge_decisions(engine: Engine, name: str) -> EdgeDecisions:
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
    the decision. See :func:`decide_edges` for the errors."""
    return decide_edges(engine, name, version, [(pair, accept)], actor).version


@dataclass(frozen=True)
class EdgesDecided:
    """What :func:`decide_edges` did."""

    version: int  # the version now showing the verdicts
    created: bool  # a new version was saved (False: only proposals were rejected)
    accepted: int
    rejected: int
    summary: str  # what the graph change did ("no changes" for rejected proposals only)


def decide_edges(
    engine: Engine, name: str, version: int, verdicts: Sequence[tuple[tuple[str, str], bool]],
    actor: Actor, note: str = "",
) -> EdgesDecided:
    """Apply several verdicts ``((source, target), accept)`` at once: ONE new version holds
    every accepted proposal (an ``author`` edge), confirmed edge and removed edge, and every
    verdict is recorded in that version's transaction (63 proposals: one version, not 63).
    Rejecting proposals only changes no graph: the verdicts are recorded, no version added.

    Raises ``repo.StaleVersion`` when ``version`` is not the latest and the graph would
    change (nothing recorded), ``repo.NotFound`` for an unknown SKILL or version,
    ``ValueError`` when a pair names a rule the version lacks, ``roles.NotAllowed``
    (nothing recorded) when ``actor`` may not edit graphs: a rejection steers later
    extractions, so even one that leaves the graph as it is needs the graph editor's role."""
    require(actor, "edit graphs")
    if not verdicts:
        raise ValueError("no verdict given: choose the proposals to accept or reject")
    skill = repo.load_skill(engine, name, version)
    changed = apply_edge_decisions(skill, verdicts)
    decisions = [EdgeDecision(s, t, "accepted" if ok else "rejected", actor.name)
                 for (s, t), ok in dict(verdicts).items()]
    diff = diff_skills(skill, changed)
    accepted = sum(d.accepted for d in decisions)
    graph_changes = diff.edges_added or diff.edges_removed or diff.edges_changed
    if not graph_changes:  # rejecting proposals only: the graph stays, the verdicts are kept
        _record_only(engine, name, decisions)
        return EdgesDecided(version, False, accepted, len(decisions) - accepted, "no changes")
    if not note:
        verb = {True: "accepted", False: "rejected"}
        note = (f"{verb[decisions[0].accepted]} edge {decisions[0].source} -> {decisions[0].target}"
                if len(decisions) == 1 else
                f"decided {len(decisions)} edges at once ({accepted} accepted, "
                f"{len(decisions) - accepted} rejected)")
    # An edge decision is an edit built on ``version``: refused (StaleVersion) when a later
    # version exists, so accepting an edge on an old version never reverts newer edits.
    saved = repo.save_skill(engine, changed, author=actor.name, base_version=version, actor=actor,
                            note=note, trust=True, decisions=decisions)
    return EdgesDecided(saved.version, saved.created, accepted, len(decisions) - accepted,
                        diff.summary())


def _record_only(engine: Engine, name: str, decisions: list[EdgeDecision]) -> None:
    insert_all(engine, [EdgeDecisionRow(skill=name, source=d.source, target=d.target,
                                        decision=d.decision, author=d.author) for d in decisions])
