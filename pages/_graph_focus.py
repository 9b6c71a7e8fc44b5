"""Graph page: the drawing and, beside it, the chosen rule with its text, its source, a form
to edit it and pickers to add or remove its edges (issue 35 items 4 and 5).

It is a fragment: a click on a rule in the drawing, a search or a choice of view reruns only
this part (no page load, nothing else recomputed); a save reruns the whole page, which then
shows the new version. Every save goes through ``workbench.graph.editing.apply_edits`` (the checks
of the full tables) and ``repo.save_skill`` with the version shown as ``base_version``.
"""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, links, queue_nav
from components.errors import show_error
from components.rule_graph import clicked, legend, rule_graph
from components.rules import RULE_LINK_CONFIG, rules_frame, with_rule_links
from components.safe import md
from components.spans import show_source
from store import repo
from workbench.graph import MODALITIES, SkillGraph
from workbench.graph.editing import apply_edits
from workbench.graph.rule_graph import search_rules
from workbench.roles import NotAllowed
from workbench.words import plural

FULL_GRAPH_LIMIT = 300  # a layered drawing of more than this is taller than anyone scrolls
VIEWS = ["closure of this rule", "dependants of this rule", "search results", "whole graph"]
DRAW_KEY = "graph_drawing"
FLASH = "graph_saved"


def _picked(hits: list[str]) -> None:
    """A click on a rule: open it (clearing a search that hides it)."""
    rid = clicked(DRAW_KEY)
    if rid is None:
        return
    if rid not in hits:
        st.session_state["graph_query"] = ""
    st.session_state["graph_rule"] = rid


def _label(skill: SkillGraph):
    return lambda r: f"{r} — {skill.graph.rules[r].action[:80]}" if r in skill.graph.rules else r


@st.fragment
def focus(eng: Engine, skill: SkillGraph, version: int, latest: int, kinds: list[str] | None,
          author: str) -> None:
    name = skill.name
    query = st.text_input("Search rules", key="graph_query", placeholder="e.g. refund coupon")
    hits = search_rules(skill, query)
    verb = "matches" if len(hits) == 1 else "match"
    st.caption(f"{len(hits)} of {plural(len(skill.graph), 'rule')} {verb}.")
    if not hits:
        st.warning("No rule matches the search; clear it to see all rules.")
        return
    # Open on the rule with the most prerequisites: its closure shows the graph's structure best.
    default = max(range(len(hits)), key=lambda i: len(skill.graph.requires(hits[i])))
    missing_rule = links.adopt("rule", "graph_rule", hits)
    rule_id = st.selectbox("Rule", hits, index=default, key="graph_rule",
                           format_func=_label(skill))
    links.publish("rule", rule_id)
    if missing_rule:
        st.warning(md(f"The link names rule {missing_rule}, which is not among the rules shown "
                      f"(not in this version, or hidden by the search); showing {rule_id}."))
    c1, c2 = st.columns([4, 1])
    view = c1.radio("Show", VIEWS, horizontal=True, key="graph_focus")
    draw_as = c2.radio("Draw as", ["graph", "table"], horizontal=True, key="graph_draw_as")
    if view == VIEWS[0]:
        shown = skill.graph.closure([rule_id])
    elif view == VIEWS[1]:
        shown = skill.graph.dependants([rule_id])
    elif view == VIEWS[2]:
        shown = hits
    else:
        shown = list(skill.graph.rules)
        if len(shown) > FULL_GRAPH_LIMIT:
            st.warning(f"{plural(len(shown), 'rule')} is too many to draw at once; showing the "
                       "closure instead (or draw it as a table).")
            shown = skill.graph.closure([rule_id])

    graph_col, detail_col = st.columns([2, 1])
    with graph_col:
        st.write(f"**{plural(len(shown), 'rule')}** shown.")
        pinned = None if version == latest else version
        if draw_as == "table":
            st.dataframe(with_rule_links(rules_frame(skill, shown), name, version=pinned),
                         hide_index=True, width="stretch", column_config=RULE_LINK_CONFIG,
                         key="graph_shown_table")
        else:
            legend()
            rule_graph(skill, shown, key=DRAW_KEY, selected=rule_id, provenances=kinds,
                       on_select=lambda: _picked(hits))
    with detail_col:
        _rule_panel(eng, skill, rule_id, version, latest, author)
    if draw_as == "graph":
        with st.expander("Rules shown"):
            # A search narrows this table too (it listed every rule whatever the search said).
            listed = [r for r in shown if r in set(hits)] if query.strip() else shown
            st.dataframe(with_rule_links(rules_frame(skill, listed), name, version=pinned),
                         hide_index=True, width="stretch", column_config=RULE_LINK_CONFIG)


def _rule_panel(eng: Engine, skill: SkillGraph, rule_id: str, version: int, latest: int,
                author: str) -> None:
    rule = skill.graph.rules[rule_id]
    st.subheader(f"Rule {rule_id}")
    queue_nav.show_flash(FLASH)
    st.text(f"Modality: {rule.modality}\nWhen: {rule.condition}\nThen: {rule.action}")
    requires, needed_by = skill.graph.requires(rule_id), skill.graph.required_by(rule_id)
    st.caption(md("Requires: " + (", ".join(requires) or "nothing") + " · Required by: "
                  + (", ".join(needed_by) or "nothing")))
    if rule.spans:
        show_source(skill.source, rule.spans, context_chars=400)
    else:
        st.warning("This rule has no source span yet (added by an edit).")

    editable = version == latest
    may_edit = identity.allowed("edit graphs")
    if not editable:
        st.caption(f"Switch to version {latest} to edit here.")
    elif not may_edit:
        identity.explain_refusal("edit graphs")
    disabled = not (editable and may_edit)
    ids = list(skill.graph.rules)
    label = _label(skill)

    with st.form(f"graph_rule_form_{skill.name}_{version}_{rule_id}"):
        st.markdown(f"**Edit {md(rule_id)}**")
        condition = st.text_area("When (condition)", rule.condition, height=70)
        action = st.text_area("Then (action)", rule.action, height=70)
        modality = st.selectbox("Modality", MODALITIES, index=MODALITIES.index(rule.modality))
        note = st.text_input("What and why (optional)", key=f"graph_rule_note_{rule_id}")
        if st.form_submit_button("Save rule", type="primary", disabled=disabled):
            rows = _rows(skill)
            rows[rule_id].update(condition=condition, action=action, modality=modality)
            _save(eng, skill, list(rows.values()), _edges(skill), version, author, note)

    # Pickers, not a grid row: the source and target are chosen from the rules by name, so
    # the second value cannot land in another row, and an empty choice is refused, not dropped.
    with st.form(f"graph_add_edge_{skill.name}_{version}"):
        st.markdown("**Add an edge**")
        # No keys: the pickers are new for each chosen rule, the source starting on it.
        source = st.selectbox("Rule that requires (source)", ids, index=ids.index(rule_id),
                              format_func=label)
        target = st.selectbox("Prerequisite (target)", ids, index=None, format_func=label,
                              placeholder="choose a rule")
        if st.form_submit_button("Add edge", disabled=disabled):
            if target is None:
                st.error("Choose the prerequisite (target) rule; nothing was saved.")
            elif (source, target) in {e.pair for e in skill.graph.edges}:
                st.info(md(f"{source} already requires {target}; nothing to save."))
            else:
                _save(eng, skill, list(_rows(skill).values()),
                      [*_edges(skill), {"source": source, "target": target}], version, author,
                      f"added edge {source} -> {target}")

    touching = [e.pair for e in skill.graph.edges if rule_id in e.pair]
    if touching:
        with st.form(f"graph_remove_edge_{skill.name}_{version}_{rule_id}"):
            gone = st.selectbox("Remove an edge of this rule", touching,
                                format_func=lambda p: f"{p[0]} requires {p[1]}")
            if st.form_submit_button("Remove edge", disabled=disabled):
                _save(eng, skill, list(_rows(skill).values()),
                      [e for e in _edges(skill) if (e["source"], e["target"]) != gone], version,
                      author, f"removed edge {gone[0]} -> {gone[1]}")


def _rows(skill: SkillGraph) -> dict[str, dict]:
    return {r.id: {"id": r.id, "condition": r.condition, "action": r.action,
                   "modality": r.modality} for r in skill.graph.rules.values()}


def _edges(skill: SkillGraph) -> list[dict]:
    return [{"source": e.source, "target": e.target} for e in skill.graph.edges]


def _save(eng: Engine, skill: SkillGraph, rules: list[dict], edges: list[dict], version: int,
          author: str, note: str) -> None:
    """Validate and save as a new version built on ``version``; on success rerun the page on
    the new version, else say why here (nothing saved)."""
    result = apply_edits(skill, rules, edges)
    if not result.ok:
        st.error("Nothing was saved. Fix these and save again:\n\n"
                 + "\n".join(f"- {md(str(p))}" for p in result.problems))
        return
    if result.summary == "no changes":
        st.info("No changes to save.")
        return
    try:
        saved = repo.save_skill(eng, result.skill, author=author or "analyst", note=note,
                                base_version=version, actor=identity.actor(author), trust=True)
    except NotAllowed as refused:  # the store checks the role too
        show_error(refused)
        return
    except repo.StaleVersion as stale:
        st.error(md(f"Nothing was saved: this edit was made on version {stale.base}, but "
                    f"version {stale.latest} is the latest (changed since: {stale.changes}). "
                    f"Switch to version {stale.latest} and make the edit there."))
        return
    queue_nav.leave_flash(FLASH, "success", f"Saved version {saved.version}: {result.summary}")
    st.session_state["graph_show_version"] = saved.version
    st.rerun(scope="app")
