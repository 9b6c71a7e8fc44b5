"""Reference inventory on the Annotate page: annotators write the SKILL's atomic rules
themselves, anchored to source spans, without seeing the extraction."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from components import identity
from components.spans import show_source
from pages._annotate_session import flash, leave_flash, signed_in
from store import annotation as store
from workbench.annotation.items import locate_quote, reference_item
from workbench.annotation.labels import (
    REFERENCE_RULE,
    Annotator,
    Label,
    LabelError,
    ReferenceRule,
    retraction_value,
)
from workbench.annotation.report import reference_inventory
from workbench.graph import MODALITIES, Span
from workbench.identity.roles import NotAllowed


def reference_panel(eng: Engine, skill, who: Annotator) -> None:
    key = reference_item(skill)
    labels = store.labels_for(eng, REFERENCE_RULE, key)
    entries = reference_inventory(labels, skill, None if who.is_reviewer else [who.name])
    st.caption("Write the SKILL's atomic rules yourself. The extracted rules are not shown here.")
    left, right = st.columns([1, 1])
    with right:
        spans = [Span(s, e) for entry in entries for s, e in entry.rule.spans]
        show_source(skill.source, spans)
    with left:
        how = st.radio("Span", ["Paste a quote", "Start/end offsets"], horizontal=True,
                       key="ref_span_mode")
        with st.form("ref_form", clear_on_submit=True):
            st.text_input("Condition (when the rule applies)", key="ref_condition")
            st.text_input("Action (what is required, prohibited or permitted)", key="ref_action")
            st.selectbox("Modality", MODALITIES, key="ref_modality")
            if how == "Paste a quote":
                st.text_area("Quote from the source", key="ref_quote", height=90,
                             help="Several pieces: separate them with a line holding only ...")
                st.number_input("Occurrence", min_value=1, value=1, key="ref_occurrence",
                                help="Which match, when the quote occurs more than once")
            else:
                cols = st.columns(2)
                cols[0].number_input("Start", min_value=0, max_value=len(skill.source), key="ref_start")
                cols[1].number_input("End", min_value=0, max_value=len(skill.source),
                                     value=min(1, len(skill.source)), key="ref_end")
            st.text_input("Note (optional)", key="ref_note")
            st.form_submit_button("Add reference rule", on_click=_add_reference,
                                  args=(eng, skill.source, key, how))
        flash()
        title = "Reference rules (all annotators)" if who.is_reviewer else "Your reference rules"
        st.subheader(f"{title}: {len(entries)}")
        if entries:
            st.dataframe(pd.DataFrame([
                {"annotator": e.annotator, "modality": e.rule.modality, "condition": e.rule.condition,
                 "action": e.rule.action,
                 "quote": " … ".join(skill.source[s:t] for s, t in e.rule.spans)}
                for e in entries
            ]), hide_index=True, key="ref_table")
        mine = [e.rule for e in entries if e.annotator == who.name]
        if mine:
            with st.form("ref_retract_form"):
                st.selectbox(
                    "Take back one of your reference rules",
                    range(len(mine)),
                    format_func=lambda i: f"{i + 1}. {mine[i].modality}: {mine[i].condition} "
                    f"→ {mine[i].action}",
                    key="ref_retract_choice",
                    help="The record stays in the audit trail; the rule leaves the inventory.",
                )
                st.form_submit_button("Retract", on_click=_retract, args=(eng, key, mine))


def _retract(eng: Engine, item: str, mine: list[ReferenceRule]) -> None:
    who, state = signed_in(), st.session_state
    if who is None:
        return
    rule = mine[int(state["ref_retract_choice"])]
    try:
        store.add_label(eng, Label(item, REFERENCE_RULE, who.name, retraction_value(rule)),
                        actor=identity.actor())
    except (LabelError, NotAllowed) as exc:
        leave_flash("error", f"Not retracted: {exc}")
        return
    leave_flash("success", "Reference rule retracted.")


def _add_reference(eng: Engine, source: str, item: str, how: str) -> None:
    who, state = signed_in("added"), st.session_state
    if who is None:
        return
    try:
        if how == "Paste a quote":
            spans = locate_quote(source, state.get("ref_quote") or "", int(state["ref_occurrence"]))
        else:
            spans = ((int(state["ref_start"]), int(state["ref_end"])),)
        rule = ReferenceRule(state.get("ref_condition", "").strip(), state.get("ref_action", "").strip(),
                             state["ref_modality"], spans)
        store.add_label(eng, Label(item, REFERENCE_RULE, who.name, rule.to_value(),
                                   note=(state.get("ref_note") or "").strip()),
                        actor=identity.actor())
    except (LabelError, NotAllowed) as exc:
        leave_flash("error", f"Not added: {exc}")
        return
    leave_flash("success", "Reference rule added.")
