"""CDG inspection on the Annotate page: an audit case, from the store or an uploaded trace
file, judged pass or fail on each of the four criteria (reviewers adjudicate)."""

from __future__ import annotations

from functools import partial

import streamlit as st
from sqlalchemy.engine import Engine

from components import annotation as ui
from components import identity
from components.errors import show_error
from components.safe import md
from pages._annotate_session import flash, leave_flash, signed_in
from store import annotation as store
from store import repo
from store.annotation_cases import audit_result_count, inspection_cases
from workbench.annotation.inspection import read_traces_jsonl
from workbench.annotation.labels import (
    CDG_INSPECTION,
    CRITERIA,
    Adjudication,
    Annotator,
    Label,
    LabelError,
    inspection_item,
)
from workbench.annotation.resolution import current_labels, visible_labels
from workbench.identity.roles import NotAllowed
from workbench.inputs import InputError, decode_text
from workbench.words import plural


def _load_cases(eng: Engine):
    stored = audit_result_count(eng)
    sources = (["Stored audit results"] if stored else []) + ["Upload traces (JSONL)"]
    where = st.radio("Cases from", sources, horizontal=True, key="insp_source")
    if where == "Stored audit results":
        cases, errors = inspection_cases(eng)
        if not cases:
            st.info("No stored trace has a rule closure to inspect; upload traces instead.")
    else:
        upload = st.file_uploader("Audit traces, one JSON object per line", type=["jsonl", "json"],
                                  key="insp_upload")
        if upload is None:
            st.info("No audit results are stored yet. Upload traces as JSONL: case_id, skills, "
                    "history, response, seeds, closure, edges and verdict per line.")
            return []
        try:
            text, _ = decode_text(upload.getvalue(), upload.name)
        except InputError as exc:
            show_error(exc)
            return []
        cases, errors = read_traces_jsonl(text, origin=upload.name)
    for message in errors[:5]:
        st.warning(md(message))
    return cases


def _skill_graph(eng: Engine, name: str):
    try:
        return repo.load_skill(eng, name)
    except repo.NotFound:
        return None


def inspection_panel(eng: Engine, who: Annotator) -> None:
    cases = _load_cases(eng)
    if not cases:
        return
    keys = [c.key for c in cases]
    case = next(c for c in cases if c.key == st.selectbox("Case", keys, key="insp_case"))
    ui.case_view(case, partial(_skill_graph, eng))
    items = {criterion: inspection_item(case.key, criterion) for criterion in CRITERIA}
    labels = [lab for lab in store.labels_for(eng, CDG_INSPECTION) if lab.item in items.values()]
    flash()
    verb = "Adjudicate" if who.is_reviewer else "Inspect"
    with st.form(f"insp_form/{case.key}"):
        st.subheader(f"{verb}: the four criteria")
        for criterion, item in items.items():
            st.radio(ui.CRITERION_TEXT[criterion], ["pass", "fail"], index=None, horizontal=True,
                     key=f"insp/{item}")
            st.text_input("Note", key=f"insp_note/{item}", label_visibility="collapsed",
                          placeholder="note (optional)")
        st.form_submit_button("Adjudicate" if who.is_reviewer else "Submit inspection",
                              on_click=_submit_inspection, args=(eng, list(items.values())))
    for criterion, item in items.items():
        seen = visible_labels(current_labels(labels), who, item, CDG_INSPECTION)
        if seen:  # a reviewer sees everyone's; an annotator only their own (blind)
            st.text(ui.CRITERION_TEXT[criterion])
            st.dataframe(ui.labels_frame(seen), hide_index=True, key=f"insp_labels/{item}")


def _submit_inspection(eng: Engine, items: list[str]) -> None:
    """Form callback: one label (or, for a reviewer, one decision) per answered criterion."""
    who, state = signed_in(), st.session_state
    if who is None:
        return
    answers = [(item, state.get(f"insp/{item}"), (state.get(f"insp_note/{item}") or "").strip())
               for item in items]
    answers = [a for a in answers if a[1]]
    if not answers:
        leave_flash("error", "Choose pass or fail for at least one criterion.")
        return
    try:
        if who.is_reviewer:
            for item, value, note in answers:
                store.add_adjudication(eng, Adjudication(item, CDG_INSPECTION, who.name, value,
                                                         note=note), actor=identity.actor())
        else:
            store.add_labels(eng, [Label(item, CDG_INSPECTION, who.name, value, note=note)
                                   for item, value, note in answers], actor=identity.actor())
    except (LabelError, NotAllowed) as exc:
        leave_flash("error", str(exc))
        return
    leave_flash("success", f"Saved {plural(len(answers), 'criterion label')}.")
