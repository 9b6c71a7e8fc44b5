"""Graph page: the selected rule, ONE value in ``st.session_state`` per SKILL, changed only by
the author's acts (issue 44 item 1; the rules are in ``workbench.graph.selection``).

Widgets show it and report picks; none owns it. The Rule box is given the selection before
it is drawn on every run, so the label the browser holds is always the current one (a stale
label after a save made Streamlit fall back to the box's default rule, and the edge pickers
with it). Acts that change it: a click on the drawing, a pick in the Rule box, a pasted link
or back/forward, a search that hides it.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from components import links
from components.rule_graph import clicked
from workbench.graph import SkillGraph
from workbench.graph.clusters import section_title
from workbench.graph.rule_graph import search_rules
from workbench.graph.selection import Shown, accept_pick, after_search, shown_rule

SELECTED = "graph_selected"  # {skill name: rule id}
BOX = "graph_rule"  # the Rule select box (its value is a copy, written before it is drawn)
QUERY = "graph_query"
DRAW_KEY = "graph_drawing"  # the drawing (tests/e2e/graph_drawing.py finds it by this key)


def _chosen(name: str) -> str | None:
    return st.session_state.get(SELECTED, {}).get(name)


def choose(name: str, rule_id: str) -> None:
    st.session_state.setdefault(SELECTED, {})[name] = rule_id


def current(skill: SkillGraph, hits: Sequence[str]) -> tuple[Shown, str | None]:
    """The rule to show, and a rule a link named that this version lacks (the caller says
    so). Call it just before drawing the Rule box (it sets the box's value)."""
    linked, missing = links.fresh("rule"), None
    if linked is not None:  # a pasted link or back/forward: the author's act
        if linked in skill.graph.rules:
            choose(skill.name, linked)
        else:
            missing = linked
    shown = shown_rule(skill.graph, _chosen(skill.name), hits)
    if _chosen(skill.name) is None and shown.rule is not None:
        choose(skill.name, shown.rule)  # the opening default, now the selection
    if shown.rule is not None:
        st.session_state[BOX] = shown.rule  # the box shows the selection, fresh label each run
    return shown, missing


def on_box_pick(skill: SkillGraph) -> None:
    """The Rule box's on_change: a rule id is a pick; a label left from before a save is not."""
    rule_id = accept_pick(skill.graph, st.session_state.get(BOX))
    if rule_id is not None:
        choose(skill.name, rule_id)


def on_click(skill: SkillGraph, hits: Sequence[str], open_key: str | None = None) -> None:
    """The drawing's on_select: open the clicked rule (clearing a search that hides it); a
    click on a closed section's box opens that section (its titles kept under ``open_key``)."""
    node = clicked(DRAW_KEY)
    rule_id = accept_pick(skill.graph, node)
    if rule_id is None:
        title = section_title(skill, node)
        if open_key is not None and title is not None:
            opened = list(st.session_state.get(open_key) or [])
            st.session_state[open_key] = [*opened, title] if title not in opened else opened
        return
    if rule_id not in hits:
        st.session_state[QUERY] = ""
    choose(skill.name, rule_id)


def on_search(skill: SkillGraph) -> None:
    """The search box's on_change: a search that hides the selection moves it to a hit."""
    hits = search_rules(skill, st.session_state.get(QUERY, ""))
    moved = after_search(skill.graph, _chosen(skill.name), hits)
    if moved is not None:
        choose(skill.name, moved)
