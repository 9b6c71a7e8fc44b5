"""Graph page: the drawing and, beside it, the chosen rule with its text, its source, a form
to edit it and pickers to add or remove its edges (issue 35 items 4 and 5).

It is a fragment: a click on a rule in the drawing, a search or a choice of view reruns only
this part (no page load, nothing else recomputed); a save reruns the whole page, which then
shows the new version. Every save goes through ``workbench.graph.editing.apply_edits`` (the checks
of the full tables) and ``repo.save_skill`` with the version shown as ``base_version``.

The rule shown is ``pages._graph_selection``'s one value, which only the author's acts change
(issue 44: a save followed by any full rerun moved it to the default rule, and an edge was
saved there). Every write names its rules on its button ("Save rule R1", "Add edge R1 → R4",
"Remove edge R1 → R4"), its widget key names them too, and its confirmation is drawn beside
it.
"""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, links, queue_nav
from components.errors import show_error
from components.rule_graph import legend, rule_graph
from components.rules import RULE_LINK_CONFIG, rules_frame, with_rule_links
from components.safe import md
from components.spans import show_source
from pages import _graph_impact as impact
from pages import _graph_selection as selection
from store import repo
from workbench.graph import MODALITIES, SkillGraph
from workbench.graph.clusters import Condensed, condense, sections
from workbench.graph.editing import apply_edits
from workbench.graph.rule_graph import search_rules
from workbench.graph.selection import EdgeWrite, select_options, write_key
from workbench.identity.roles import NotAllowed
from workbench.words import arrows, plural

FULL_GRAPH_LIMIT = 300  # a layered drawing of more than this is taller than anyone scrolls
SECTIONS_FROM = 100  # a whole graph of this many rules is drawn by section
VIEWS = ["closure of this rule", "dependants of this rule", "search results", "whole graph"]
# Each write shows its confirmation beside its own button (it was ~750 px above Save rule).
FLASH_RULE, FLASH_ADD, FLASH_REMOVE = "graph_saved_rule", "graph_saved_add", "graph_saved_remove"
# The rule form's draft whose impact was checked: ((skill, version, rule), Draft, line).
DRAFT = "graph_rule_draft"
_CHECK_KEY = "graph_rule_check_{}_{}_{}"


def _label(skill: SkillGraph):
    return lambda r: f"{r} — {skill.graph.rules[r].action[:80]}" if r in skill.graph.rules else r


@st.fragment
def focus(eng: Engine, skill: SkillGraph, version: int, latest: int, kinds: list[str] | None,
          author: str) -> None:
    name = skill.name
    query = st.text_input("Search rules", key=selection.QUERY, placeholder="e.g. refund coupon",
                          on_change=selection.on_search, args=(skill,))
    hits = search_rules(skill, query)
    verb = "matches" if len(hits) == 1 else "match"
    st.caption(f"{len(hits)} of {plural(len(skill.graph), 'rule')} {verb}.")
    if not hits:
        st.warning("No rule matches the search; clear it to see all rules.")
        return
    opened, missing_rule = selection.current(skill, hits)
    rule_id = opened.rule
    # No index: the box's value is the selection, set just above on every run.
    st.selectbox("Rule", select_options(rule_id, hits), key=selection.BOX,
                 format_func=_label(skill), on_change=selection.on_box_pick, args=(skill,))
    links.publish("rule", rule_id)
    if rule_id not in hits:
        st.caption(md(f"{rule_id} does not match the search; it stays open until you choose "
                      "another rule."))
    if missing_rule:
        st.warning(md(f"The link names rule {missing_rule}, which is not in this version; "
                      f"showing {rule_id}."))
    elif opened.note:
        st.warning(md(opened.note))
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
        # A big SKILL's whole graph is drawn by section (issue 44 item 6), sections opened
        # here or by a click on one; the rule shown keeps its section open.
        by_section = (view == VIEWS[3] and draw_as == "graph" and len(shown) >= SECTIONS_FROM)
        condensed = _sections(skill, rule_id, kinds) if by_section else None
        st.write(f"**{plural(len(shown), 'rule')}** shown"
                 + (f" in {plural(len(condensed.members) + len(condensed.opened), 'section')}; "
                    "a dashed box is a closed section: click it to open it." if condensed
                    else "."))
        pinned = None if version == latest else version
        if draw_as == "table":
            st.dataframe(with_rule_links(rules_frame(skill, shown), name, version=pinned),
                         hide_index=True, width="stretch", column_config=RULE_LINK_CONFIG,
                         key="graph_shown_table")
        else:
            legend()
            rule_graph(skill, shown, key=selection.DRAW_KEY, selected=rule_id,
                       provenances=kinds, condensed=condensed,
                       on_select=lambda: selection.on_click(skill, hits, _open_key(skill)))
    with detail_col:
        _rule_panel(eng, skill, rule_id, version, latest, author)
    checked = st.session_state.get(DRAFT)
    if checked and checked[0] == (name, version, rule_id):
        _draft_impact(eng, checked[1])
    if draw_as == "graph":
        with st.expander("Rules shown"):
            # A search narrows this table too (it listed every rule whatever the search said).
            listed = [r for r in shown if r in set(hits)] if query.strip() else shown
            st.dataframe(with_rule_links(rules_frame(skill, listed), name, version=pinned),
                         hide_index=True, width="stretch", column_config=RULE_LINK_CONFIG)


def _open_key(skill: SkillGraph) -> str:
    return f"graph_open_sections_{skill.name}"


def _sections(skill: SkillGraph, rule_id: str, kinds: list[str] | None) -> Condensed:
    """The whole graph by section: the sections chosen open, and the one of the rule shown."""
    groups = sections(skill)
    own = next((t for t, rules in groups.items() if rule_id in rules), None)
    key = _open_key(skill)
    if key in st.session_state:  # a title gone from this version is dropped, not an error
        st.session_state[key] = [t for t in st.session_state[key] if t in groups]
    chosen = st.multiselect("Open sections", list(groups), key=key,
                            help="Draw these sections rule by rule; the others are one box "
                                 "each. The section of the rule shown is always open.")
    edges = [e for e in skill.graph.edges if kinds is None or e.provenance in kinds]
    return condense(skill, groups, {*chosen, *([own] if own else [])}, rule_edges=edges)


def _rule_panel(eng: Engine, skill: SkillGraph, rule_id: str, version: int, latest: int,
                author: str) -> None:
    rule = skill.graph.rules[rule_id]
    st.subheader(f"Rule {rule_id}")
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
    saving = _Saving(eng, skill, version, author)

    # Every key below names the rule and version: after a save (a new version) each field
    # starts from the saved text, the note empty; another rule's press cannot land here.
    with st.form(write_key("graph_rule_form", skill.name, version, rule_id)):
        st.markdown(f"**Edit {md(rule_id)}**")
        condition = st.text_area("When (condition)", rule.condition, height=70)
        action = st.text_area("Then (action)", rule.action, height=70)
        modality = st.selectbox("Modality", MODALITIES, index=MODALITIES.index(rule.modality))
        note = st.text_input("What and why (optional)",
                             key=write_key("graph_rule_note", skill.name, version, rule_id))
        rows = _rows(skill)
        rows[rule_id].update(condition=condition, action=action, modality=modality)
        # Before saving: the audited cases this edit reaches (issue 56 item 2), listed under
        # the drawing; the form keeps the draft, so Save rule saves what was checked.
        if st.form_submit_button("Check impact on audited cases", key=_CHECK_KEY.format(
                skill.name, version, rule_id), wrap=True,
                help="Lists the stored cases whose closure holds this rule, before you save."):
            _check(eng, skill, version, rule_id, rows)
        if st.form_submit_button(f"Save rule {rule_id}", type="primary", disabled=disabled,
                                 wrap=True):
            saving.save(list(rows.values()), _edges(skill), note, FLASH_RULE)
    queue_nav.show_flash(FLASH_RULE)
    if (checked := st.session_state.get(DRAFT)) and checked[0] == (skill.name, version, rule_id):
        st.caption(checked[2])  # Markdown-safe: impact.summary escapes the names

    _add_edge(skill, rule_id, version, disabled, saving)
    queue_nav.show_flash(FLASH_ADD)

    touching = [e.pair for e in skill.graph.edges if rule_id in e.pair]
    if touching:
        gone = st.selectbox("Remove an edge of this rule", touching,
                            key=write_key("graph_remove_pick", skill.name, version, rule_id),
                            format_func=lambda p: f"{p[0]} requires {p[1]}")
        write = EdgeWrite("remove", *gone)
        if st.button(write.label, key=write.key(skill.name, version), disabled=disabled,
                     wrap=True):
            saving.save(list(_rows(skill).values()),
                        [e for e in _edges(skill) if (e["source"], e["target"]) != gone],
                        write.note, FLASH_REMOVE)
        queue_nav.show_flash(FLASH_REMOVE)


def _add_edge(skill: SkillGraph, rule_id: str, version: int, disabled: bool,
              saving: _Saving) -> None:
    """The selected rule is one end; the author picks the direction and the other end, and
    the button names both ends before the press (the source was a second picker that
    followed the selection wherever it went)."""
    st.markdown("**Add an edge**")
    others = [r for r in skill.graph.rules if r != rule_id]
    outgoing = f"{rule_id} requires …"
    way = st.radio("Direction", [outgoing, f"… requires {rule_id}"], horizontal=True,
                   label_visibility="collapsed",
                   key=write_key("graph_add_way", skill.name, version, rule_id))
    if way == outgoing:
        other = st.selectbox("Prerequisite (target)", others, index=None, format_func=_label(skill),
                             placeholder="choose a rule",
                             key=write_key("graph_add_target", skill.name, version, rule_id))
        write = EdgeWrite("add", rule_id, other)
    else:
        other = st.selectbox("Rule that requires it (source)", others, index=None,
                             format_func=_label(skill), placeholder="choose a rule",
                             key=write_key("graph_add_source", skill.name, version, rule_id))
        write = EdgeWrite("add", other, rule_id)
    # wrap: the panel is narrow at 800 px; the words that say which edge a press writes
    # ("Add edge MOR-C0…") were cut (issue 56).
    if not st.button(write.label, key=write.key(skill.name, version), disabled=disabled,
                     wrap=True):
        return
    if not write.complete:
        st.error("Choose the other rule of the edge first; nothing was saved.")
    elif (write.source, write.target) in {e.pair for e in skill.graph.edges}:
        st.info(md(f"{write.source} already requires {write.target}; nothing to save."))
    else:
        saving.save(list(_rows(skill).values()),
                    [*_edges(skill), {"source": write.source, "target": write.target}],
                    write.note, FLASH_ADD)


def _check(eng: Engine, skill: SkillGraph, version: int, rule_id: str,
           rows: dict[str, dict]) -> None:
    """The form's edit as a draft (validated, not saved), for the impact shown below; the
    panel says how many audited cases it reaches."""
    st.session_state.pop(DRAFT, None)
    result = apply_edits(skill, list(rows.values()), _edges(skill))
    if not result.ok:
        st.error("This edit would not save. Fix these first:\n\n"
                 + "\n".join(f"- {md(str(p))}" for p in result.problems))
    elif result.summary == "no changes":
        st.info(md(f"The form holds no change to {rule_id} yet: edit it, then check."))
    else:
        draft = impact.Draft(skill, version, result.skill, f"your edit of {rule_id}")
        st.session_state[DRAFT] = ((skill.name, version, rule_id), draft,
                                   impact.headline(eng, draft) + " Listed below the drawing; "
                                   "nothing is saved yet.")


def _draft_impact(eng: Engine, draft: impact.Draft) -> None:
    """Below the drawing, full width: what the checked draft does to the audited cases."""
    with st.container(border=True, key="graph_draft_impact"):
        st.markdown("**Before you save: the audited cases this edit reaches**")
        datasets = impact.audited_datasets(eng, draft.base.name)
        if not datasets:
            st.caption("No stored cases yet (`workbench import-cases ...`): nothing to check.")
            return
        dataset = (st.selectbox("Stored cases of", datasets, key="graph_draft_dataset")
                   if len(datasets) > 1 else datasets[0])
        impact.show(eng, draft, dataset, key="graph_draft")


def _rows(skill: SkillGraph) -> dict[str, dict]:
    return {r.id: {"id": r.id, "condition": r.condition, "action": r.action,
                   "modality": r.modality} for r in skill.graph.rules.values()}


def _edges(skill: SkillGraph) -> list[dict]:
    return [{"source": e.source, "target": e.target} for e in skill.graph.edges]


class _Saving:
    """Saves of the rule panel: validated, built on the version shown, confirmed beside the
    button that saved (``flash``)."""

    def __init__(self, eng: Engine, skill: SkillGraph, version: int, author: str):
        self.eng, self.skill, self.version, self.author = eng, skill, version, author

    def save(self, rules: list[dict], edges: list[dict], note: str, flash: str) -> None:
        """Validate and save as a new version built on the version shown; on success rerun
        the page on the new version, else say why here (nothing saved)."""
        result = apply_edits(self.skill, rules, edges)
        if not result.ok:
            st.error("Nothing was saved. Fix these and save again:\n\n"
                     + "\n".join(f"- {md(str(p))}" for p in result.problems))
            return
        if result.summary == "no changes":
            st.info("No changes to save.")
            return
        try:
            saved = repo.save_skill(self.eng, result.skill, author=self.author or "analyst",
                                    note=note, base_version=self.version,
                                    actor=identity.actor(self.author), trust=True)
        except NotAllowed as refused:  # the store checks the role too
            show_error(refused)
            return
        except repo.StaleVersion as stale:
            st.error(md(f"Nothing was saved: this edit was made on version {stale.base}, but "
                        f"version {stale.latest} is the latest (changed since: {arrows(stale.changes)}). "
                        f"Switch to version {stale.latest} and make the edit there."))
            return
        queue_nav.leave_flash(flash, "success",
                              f"Saved version {saved.version}: {arrows(result.summary)}")
        st.session_state["graph_show_version"] = saved.version
        st.rerun(scope="app")
