"""Graph page: filter edges by provenance, and accept or reject proposed edges, one key each
or many at once.

One proposal is shown at a time (highest confidence first) with both rules and the text that
suggested it; ``a`` accepts it (a new version with the edge, provenance ``author``), ``x``
rejects it (recorded; a later extraction does not propose it again). Below, any number of
proposals are chosen and accepted or rejected together: ONE new version, previewed before
the press (63 proposals were 63 key presses and 63 versions). Rule and policy text is shown
through ``st.text``/escaped Markdown only.
"""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.errors import show_error
from components.safe import md
from store import edge_decisions, repo
from workbench.graph import PROVENANCES, Edge, SkillGraph
from workbench.graph.diff import diff_skills
from workbench.graph.editing import apply_edge_decisions
from workbench.identity.roles import Actor, NotAllowed
from workbench.words import help_for, plural

FLASH = "graph_proposals_saved"  # shown in this panel, beside the buttons that saved


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


def proposals_panel(engine: Engine, skill: SkillGraph, version: int, actor: Actor) -> int | None:
    """The next proposed edge with Accept (a) / Reject (x); returns the version to show after
    a decision, or None when nothing was decided in this run."""
    pending = sorted(skill.proposed, key=lambda e: (-(e.confidence or 0), e.source, e.target))
    st.subheader("Review proposed edges", help=help_for("proposed edge"))
    queue_nav.show_flash(FLASH)
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
    # The press carries the pair its run showed (the callback's args are that run's), so it
    # decides that proposal or, when it is no longer waiting, nothing (issue 44).
    pressed = {"on_click": _pressed, "args": (skill.name, version, edge.pair)}
    accept = c1.button("Accept (a)", key="edge_accept", shortcut="a", type="primary",
                       disabled=not may_edit, **pressed)
    reject = c2.button("Reject (x)", key="edge_reject", shortcut="x", disabled=not may_edit,
                       **pressed)
    if (accept or reject) and may_edit:
        pair = st.session_state.pop(PRESSED, None)
        if pair != (skill.name, version, edge.pair):
            st.warning("The proposal shown changed before your press reached the page; nothing "
                       "was decided. Decide the one shown now.")
            return None
        try:
            decided = edge_decisions.decide_edge(engine, skill.name, version, edge.pair, accept,
                                                 actor)
        except (repo.StaleVersion, NotAllowed) as exc:  # the store checks the role too
            show_error(exc)
        else:
            queue_nav.leave_flash(FLASH, "success", (
                f"Accepted {_pair_text(edge)}: saved version {decided}." if accept else
                f"Rejected {_pair_text(edge)}; the graph is unchanged."))
            return decided
    return proposals_bulk_panel(engine, skill, version, actor, pending, may_edit)


PRESSED = "graph_proposal_pressed"  # (skill, version, pair) the pressed button showed


def _pressed(skill: str, version: int, pair: tuple[str, str]) -> None:
    st.session_state[PRESSED] = (skill, version, pair)


def _pair_text(e: Edge) -> str:
    return f"{e.source} → {e.target}"


def proposals_bulk_panel(engine: Engine, skill: SkillGraph, version: int, actor: Actor,
               pending: list[Edge], may_edit: bool) -> int | None:
    """Choose several proposals, see what saving them changes, accept or reject them as ONE
    version; returns the version to show after a decision (None: nothing decided)."""
    key = f"edge_bulk_{skill.name}_{version}"
    by_text = {_pair_text(e): e for e in pending}
    with st.expander(f"Decide several at once ({plural(len(pending), 'proposal')} waiting)",
                     expanded=bool(st.session_state.get(key))):
        def choose_all() -> None:
            st.session_state[key] = list(by_text) if st.session_state.get(f"{key}_all") else []

        st.checkbox(f"Choose all {plural(len(pending), 'waiting proposal')}", key=f"{key}_all",
                    on_change=choose_all)
        chosen = [by_text[t] for t in st.multiselect(
            "Proposals to decide", list(by_text), key=key,
            help="Accepting adds each as an edge of yours; rejecting records the verdict (a "
                 "later extraction does not propose it again). Either way: one version.")
            if t in by_text]
        if not chosen:
            st.caption("Choose proposals above to see what accepting them changes.")
            return None
        verdicts = [(e.pair, True) for e in chosen]
        preview = diff_skills(skill, apply_edge_decisions(skill, verdicts))
        st.markdown("**Accepting** saves one new version: " + md(f"{preview.summary()}."))
        st.caption(md(f"Rejecting records {plural(len(chosen), 'verdict')}; the graph stays as "
                      "it is (no new version)."))
        c1, c2 = st.columns(2)
        accept = c1.button(f"Accept {plural(len(chosen), 'proposal')}", key=f"{key}_accept",
                           type="primary", disabled=not may_edit)
        reject = c2.button(f"Reject {plural(len(chosen), 'proposal')}", key=f"{key}_reject",
                           disabled=not may_edit)
        if not (accept or reject) or not may_edit:
            return None
        try:
            done = edge_decisions.decide_edges(engine, skill.name, version,
                                               [(e.pair, bool(accept)) for e in chosen], actor)
        except (repo.StaleVersion, NotAllowed) as exc:  # the store checks the role too
            show_error(exc)
            return None
        # The next run shows another version's panel (its keys name the version): the choice
        # does not carry over to proposals it never saw.
        queue_nav.leave_flash(FLASH, "success",
                              f"Saved version {done.version} ({plural(done.accepted, 'accepted proposal')}"
                              f"): {done.summary}" if done.created else
                              f"Rejected {plural(done.rejected, 'proposal')}; the graph is unchanged.")
        return done.version
