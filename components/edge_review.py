"""Graph page: filter edges by provenance, and accept or reject proposed edges one key each.

One proposal is shown at a time (highest confidence first) with both rules and the text that
suggested it; ``a`` accepts it (a new version with the edge, provenance ``author``), ``x``
rejects it (recorded; a later extraction does not propose it again). Rule and policy text is
shown through ``st.text``/escaped Markdown only.
"""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity
from components.errors import show_error
from components.safe import md
from store import edge_review, repo
from workbench.glossary import help_for
from workbench.graph import PROVENANCES, SkillGraph
from workbench.roles import Actor, NotAllowed


def provenance_filter(skill: SkillGraph, key: str) -> list[str]:
    """A multiselect of the provenances present (all selected at first)."""
    present = sorted({e.provenance for e in [*skill.graph.edges, *skill.proposed]},
                     key=lambda p: (PROVENANCES + ("",)).index(p) if p in PROVENANCES else 99)
    if not present:
        return []
    counts = {p: sum(e.provenance == p for e in skill.graph.edges) for p in present}
    return st.multiselect(
        "Edges from", present, default=present, key=key,
        format_func=lambda p: f"{p or 'unknown'} ({counts[p]})",
        help=help_for("edge provenance"),
    )


def review_panel(engine: Engine, skill: SkillGraph, version: int, actor: Actor) -> int | None:
    """The next proposed edge with Accept (a) / Reject (x); returns the version to show after
    a decision, or None when nothing was decided in this run."""
    pending = sorted(skill.proposed, key=lambda e: (-(e.confidence or 0), e.source, e.target))
    st.subheader("Review proposed edges", help=help_for("proposed edge"))
    if not pending:
        st.caption("No proposed edge is waiting: every cue in the text is an edge or decided.")
        return None
    edge = pending[0]
    st.caption(md(f"{len(pending)} waiting. Press a to accept, x to reject."))
    st.markdown(md(f"{edge.source} requires {edge.target} — {edge.provenance}"
                   + ("" if edge.confidence is None else f", confidence {edge.confidence:.2f}")))
    for rid in (edge.source, edge.target):
        rule = skill.graph.rules[rid]
        quote = skill.rule_text(rid)[:300]
        st.text(f"{rid} [{rule.modality}] if {rule.condition}: {rule.action}\n  “{quote}”")
    if edge.evidence is not None:
        st.text(f"Evidence: {skill.source[edge.evidence.start:edge.evidence.end][:200]}"
                + (f" ({edge.note})" if edge.note else ""))
    # A decision saves a new graph version (accept) or steers later extractions (reject):
    # an edit of the graph, so the same role as saving one.
    may_edit = identity.permitted("edit graphs")
    c1, c2 = st.columns(2)
    accept = c1.button("Accept (a)", key="edge_accept", shortcut="a", type="primary",
                       disabled=not may_edit)
    reject = c2.button("Reject (x)", key="edge_reject", shortcut="x", disabled=not may_edit)
    if (accept or reject) and may_edit:
        try:
            return edge_review.decide_edge(engine, skill.name, version, edge.pair, accept, actor)
        except (repo.StaleVersion, NotAllowed) as exc:  # the store checks the role too
            show_error(exc)
    return None
