"""Annotate: rule correctness, reference inventories and CDG inspection, blind, with
adjudication, progress, agreement and the dataset report (SkillCDG appendix B.4)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from components import annotation as ui
from components.spans import show_source
from components.state import engine
from store import annotation as store
from store import repo
from store.annotation_cases import audit_result_count, inspection_cases
from workbench.annotation.items import locate_quote, reference_item, rule_items
from workbench.annotation.labels import (
    CDG_INSPECTION,
    CRITERIA,
    REFERENCE_RULE,
    ROLES,
    RULE_CORRECTNESS,
    Adjudication,
    Annotator,
    Label,
    LabelError,
    ReferenceRule,
    current_labels,
    inspection_item,
    visible_labels,
)
from workbench.annotation.report import (
    LABEL_COLUMNS,
    TABLE_COLUMNS,
    annotator_progress,
    dataset_report,
    default_threshold,
    judge_human_agreement,
    label_rows,
    queue_status,
    reference_inventory,
    similarity_by_name,
    task_agreement,
    to_csv,
    to_jsonl,
)
from workbench.graph import MODALITIES, Rule, Span

MODES = ("Rule correctness", "Reference inventory", "CDG inspection", "Progress & agreement",
         "Dataset report")

st.title("Annotate")
eng = engine()


# -- who is annotating -------------------------------------------------------------------

def signed_in() -> Annotator | None:
    """The annotator of this browser session. Sign-in by name for now: real authentication
    (e.g. ``st.user``) only has to fill ``st.session_state["annotator"]`` the same way."""
    data = st.session_state.get("annotator")
    return Annotator(data["name"], data["role"]) if data else None


def _sign_in() -> None:
    name = (st.session_state.get("ann_name_input") or "").strip()
    role = st.session_state.get("ann_role_input") or "annotator"
    if not name:
        st.session_state["ann_flash"] = ("error", "Type your name to sign in.")
        return
    try:
        store.add_annotator(eng, name, role)
    except LabelError as exc:
        st.session_state["ann_flash"] = ("error", str(exc))
        return
    st.session_state["annotator"] = {"name": name, "role": role}
    st.session_state["user_name"] = name  # edit histories elsewhere record the same person


def _sign_out() -> None:
    st.session_state.pop("annotator", None)
    st.session_state.pop("user_name", None)


def flash() -> None:
    """Show the message a callback left; messages may quote user input, so it is escaped."""
    kind, text = st.session_state.pop("ann_flash", (None, None))
    if kind == "error":
        st.error(ui.md(text))
    elif kind == "success":
        st.success(ui.md(text))


who = signed_in()
if who is None:
    flash()
    with st.form("ann_signin"):
        st.text_input("Your name", key="ann_name_input", placeholder="e.g. Ada")
        st.selectbox("Role", ROLES, key="ann_role_input",
                     help="Annotators label blind; reviewers see every label and adjudicate.")
        st.form_submit_button("Sign in", on_click=_sign_in)
    st.caption("Press Enter in the name field to sign in.")
    st.stop()

top_left, top_right = st.columns([4, 1])
top_left.text(f"Signed in as {who.name} ({who.role})")
top_right.button("Sign out", on_click=_sign_out, key="ann_signout")
mode = st.radio("Task", MODES, horizontal=True, key="ann_mode")


def pick_skill_version():
    names = repo.skill_names(eng)
    if not names:
        st.info("No SKILLs in the store yet. Import an index: "
                "`workbench import fixtures/demo/index.json`.")
        st.stop()
    left, right = st.columns([3, 1])
    name = left.selectbox("SKILL", names, key="ann_skill")
    numbers = [v.version for v in repo.versions(eng, name)][::-1]
    version = right.selectbox("Version", numbers, key="ann_version")
    return repo.load_skill(eng, name, version), version


def ensure_queue(task: str, skill_name: str, version: int, keys: list[str]) -> list[str]:
    """The task queue of a SKILL version, created on first visit (idempotent)."""
    queue = store.task_items(eng, task, skill_name, version)
    if set(keys) - set(queue):
        store.add_task_items(eng, task, skill_name, version, keys)
        queue = store.task_items(eng, task, skill_name, version)
    wanted = set(keys)
    return [k for k in queue if k in wanted]


# -- rule correctness --------------------------------------------------------------------

def _disagreements(queue: list[str], labels: list[Label], adjudicated: set[str]) -> list[str]:
    values: dict[str, set] = {}
    for lab in current_labels(labels):  # as in resolve(): the value decides, not error types
        if lab.source == "human":
            values.setdefault(lab.item, set()).add(lab.value)
    return [k for k in queue if len(values.get(k, ())) > 1 and k not in adjudicated]


def _record(item: str, value: str, error_type: str | None, pos_key: str, size: int,
            advance: bool) -> None:
    """Button callback: store the annotator's label (or the reviewer's decision), move on."""
    who = signed_in()
    note = (st.session_state.get(f"rc_note/{item}") or "").strip()
    try:
        if who.is_reviewer:
            store.add_adjudication(eng, Adjudication(item, RULE_CORRECTNESS, who.name, value,
                                                     error_type, note))
        else:
            store.add_label(eng, Label(item, RULE_CORRECTNESS, who.name, value, error_type, note))
    except LabelError as exc:
        st.session_state["ann_flash"] = ("error", str(exc))
        return
    st.session_state["ann_flash"] = ("success", f"Saved {ui.describe(value, error_type)}.")
    if advance:
        st.session_state[pos_key] = min(st.session_state.get(pos_key, 0) + 1, size - 1)


def _move(pos_key: str, step: int, size: int) -> None:
    st.session_state[pos_key] = max(0, min(size - 1, st.session_state.get(pos_key, 0) + step))


@st.fragment
def rule_correctness(skill, version: int) -> None:
    who = signed_in()
    items = rule_items(skill)
    if not items:
        st.info("This SKILL version has no extracted rules to judge.")
        return
    queue = ensure_queue(RULE_CORRECTNESS, skill.name, version, list(items))
    labels = [lab for lab in store.labels_for(eng, RULE_CORRECTNESS) if lab.item in items]
    adjudications = [a for a in store.adjudications_for(eng, RULE_CORRECTNESS) if a.item in items]
    decided = {a.item: a for a in adjudications}  # oldest first, so the newest wins
    only = who.is_reviewer and st.toggle("Only disagreements", value=True,
                                         key="rc_only_disagreements")
    # A decided disagreement leaves the list, so the next one moves up without a step.
    shown = _disagreements(queue, labels, set(decided)) if only else queue
    if not shown:
        st.success("No disagreement waits for adjudication in this SKILL version.")
        return
    mine = {lab.item for lab in labels if lab.annotator == who.name}
    pos_key = f"rc_pos/{skill.name}/{version}/{who.name}/{who.role}"
    if pos_key not in st.session_state:  # continue where this annotator left off
        todo = [i for i, k in enumerate(shown) if k not in mine]
        st.session_state[pos_key] = todo[0] if todo else 0
    pos = min(st.session_state[pos_key], len(shown) - 1)
    item = shown[pos]
    rule: Rule = skill.graph.rules[items[item]]

    done = len(mine & set(queue))
    st.progress(done / len(queue), text=f"Rule {pos + 1} of {len(shown)} · you labelled "
                f"{done} of {len(queue)}")
    flash()
    left, right = st.columns([1, 1])
    with left:
        ui.rule_card(rule, heading=f"{pos + 1}/{len(shown)}")
        st.text_input("Note (optional)", key=f"rc_note/{item}",
                      placeholder="why; press Tab to leave the field, then a key")
        verb = "Adjudicate" if who.is_reviewer else "Mark"
        st.button(f"{verb} correct", key="rc_correct", shortcut=ui.CORRECT_KEY, type="primary",
                  on_click=_record, args=(item, "correct", None, pos_key, len(shown), not only))
        cols = st.columns(2)
        for n, (key, error) in enumerate(ui.ERROR_KEYS.items()):
            cols[n % 2].button(f"{ui.ERROR_TEXT[error]}", key=f"rc_err_{error}", shortcut=key,
                               on_click=_record,
                               args=(item, "incorrect", error, pos_key, len(shown), not only),
                               width="stretch")
        nav = st.columns(2)
        nav[0].button("Previous", key="rc_prev", shortcut=ui.PREVIOUS_KEY, on_click=_move,
                      args=(pos_key, -1, len(shown)), disabled=pos == 0, width="stretch")
        nav[1].button("Next", key="rc_next", shortcut=ui.NEXT_KEY, on_click=_move,
                      args=(pos_key, 1, len(shown)), disabled=pos >= len(shown) - 1,
                      width="stretch")
        ui.key_legend(ui.correctness_legend())
        _labels_of_item(item, labels, decided.get(item), who)
    with right:
        show_source(skill.source, rule.spans, context_chars=700)


def _labels_of_item(item: str, labels: list[Label], decided: Adjudication | None,
                    who: Annotator) -> None:
    seen = visible_labels(current_labels(labels), who, item, RULE_CORRECTNESS)
    own = [lab for lab in seen if lab.annotator == who.name]
    if own:
        st.text(f"Your label: {ui.describe(own[0].value, own[0].error_type)}")
    others = [lab for lab in seen if lab.annotator != who.name]
    if not who.is_reviewer and not own:
        st.caption("Blind annotation: other annotators' labels are hidden until you label this rule.")
        return
    if others:
        st.dataframe(ui.labels_frame(others), hide_index=True, key="rc_others")
    else:
        st.caption("No other labels yet.")
    if decided is not None:
        st.text(ui.adjudication_text(decided))


# -- reference inventory -----------------------------------------------------------------

def reference_panel(skill) -> None:
    who = signed_in()
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
                                  args=(skill.source, key, how))
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


def _add_reference(source: str, item: str, how: str) -> None:
    who, state = signed_in(), st.session_state
    try:
        if how == "Paste a quote":
            spans = locate_quote(source, state.get("ref_quote") or "", int(state["ref_occurrence"]))
        else:
            spans = ((int(state["ref_start"]), int(state["ref_end"])),)
        rule = ReferenceRule(state.get("ref_condition", "").strip(), state.get("ref_action", "").strip(),
                             state["ref_modality"], spans)
        store.add_label(eng, Label(item, REFERENCE_RULE, who.name, rule.to_value(),
                                   note=(state.get("ref_note") or "").strip()))
    except LabelError as exc:
        state["ann_flash"] = ("error", f"Not added: {exc}")
        return
    state["ann_flash"] = ("success", "Reference rule added.")


# -- CDG inspection ----------------------------------------------------------------------

def load_cases():
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
        from workbench.annotation.inspection import read_traces_jsonl

        try:
            text = upload.getvalue().decode("utf-8")
        except UnicodeDecodeError:
            st.error("The file is not UTF-8 text; save it as UTF-8 JSONL and upload it again.")
            return []
        cases, errors = read_traces_jsonl(text, origin=upload.name)
    for message in errors[:5]:
        st.warning(ui.md(message))
    return cases


def _skill_graph(name: str):
    try:
        return repo.load_skill(eng, name)
    except repo.NotFound:
        return None


def inspection_panel() -> None:
    who = signed_in()
    cases = load_cases()
    if not cases:
        return
    keys = [c.key for c in cases]
    case = next(c for c in cases if c.key == st.selectbox("Case", keys, key="insp_case"))
    ui.case_view(case, _skill_graph)
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
                              on_click=_submit_inspection, args=(list(items.values()),))
    for criterion, item in items.items():
        seen = visible_labels(current_labels(labels), who, item, CDG_INSPECTION)
        if who.is_reviewer or any(lab.annotator == who.name for lab in seen):
            others = [lab for lab in seen if lab.annotator != who.name]
            if others:
                st.text(ui.CRITERION_TEXT[criterion])
                st.dataframe(ui.labels_frame(others), hide_index=True, key=f"insp_others/{item}")


def _submit_inspection(items: list[str]) -> None:
    """Form callback: one label (or, for a reviewer, one decision) per answered criterion."""
    who, state = signed_in(), st.session_state
    answers = [(item, state.get(f"insp/{item}"), (state.get(f"insp_note/{item}") or "").strip())
               for item in items]
    answers = [a for a in answers if a[1]]
    if not answers:
        state["ann_flash"] = ("error", "Choose pass or fail for at least one criterion.")
        return
    try:
        if who.is_reviewer:
            for item, value, note in answers:
                store.add_adjudication(eng, Adjudication(item, CDG_INSPECTION, who.name, value,
                                                         note=note))
        else:
            store.add_labels(eng, [Label(item, CDG_INSPECTION, who.name, value, note=note)
                                   for item, value, note in answers])
    except LabelError as exc:
        state["ann_flash"] = ("error", str(exc))
        return
    state["ann_flash"] = ("success", f"Saved {len(answers)} criterion label(s).")


# -- progress, agreement and the report --------------------------------------------------

def _all_records():
    labels = [lab for task in (RULE_CORRECTNESS, REFERENCE_RULE, CDG_INSPECTION)
              for lab in store.labels_for(eng, task)]
    adjudications = [a for task in (RULE_CORRECTNESS, CDG_INSPECTION)
                     for a in store.adjudications_for(eng, task)]
    return labels, adjudications


def progress_panel(skill, version: int) -> None:
    labels, adjudications = _all_records()
    roster = [a.name for a in store.annotators(eng) if not a.is_reviewer]
    queue = ensure_queue(RULE_CORRECTNESS, skill.name, version, list(rule_items(skill)))
    st.subheader("Progress per annotator")
    st.dataframe(pd.DataFrame(annotator_progress(labels, queue, roster, reference_item(skill))),
                 hide_index=True, key="prog_table")
    status = queue_status(labels, adjudications, RULE_CORRECTNESS, queue)
    st.text(f"This version's {len(queue)} rules: unanimous {status['unanimous']}, "
            f"adjudicated {status['adjudicated']}, open {status['unresolved']}")
    st.subheader("Agreement per task type")
    st.dataframe(pd.DataFrame([{"task": task, **stats}
                               for task, stats in task_agreement(labels).items()]),
                 hide_index=True, key="agree_table")
    st.subheader("Judge vs human (reviewed items)")
    rows = [{"task": task, "model": model, **stats}
            for task in (RULE_CORRECTNESS, CDG_INSPECTION)
            for model, stats in judge_human_agreement(labels, adjudications, task).items()]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="judge_table")
    else:
        st.caption("No model labels (source = model) on reviewed items yet.")


def report_panel() -> None:
    names = repo.skill_names(eng)
    chosen = st.multiselect("SKILLs (latest version of each)", names, default=names, key="rep_skills")
    cols = st.columns(4)
    similarity = cols[0].selectbox("Similarity", ["embedding", "jaccard", "tfidf"], key="rep_sim")
    threshold = cols[1].slider("Threshold", 0.05, 1.0, default_threshold(similarity),
                               0.05, key=f"rep_threshold/{similarity}")
    min_annotators = cols[2].number_input("Min. annotators", 1, 10, 2, key="rep_min")
    confirm = cols[3].checkbox("Confirm with the judge", key="rep_confirm",
                               help="Ask the judge role about every matched pair (model calls).")
    people = sorted({a.name for a in store.annotators(eng)})
    only = st.multiselect("Reference rules of (empty: everyone, pooled)", people, key="rep_people")
    if st.button("Build report", key="rep_build", type="primary"):
        labels, adjudications = _all_records()
        try:
            with st.spinner("Matching inventories..."):
                report = dataset_report(
                    [repo.load_skill(eng, n) for n in chosen], labels, adjudications,
                    similarity=similarity_by_name(similarity), similarity_name=similarity,
                    threshold=threshold, reference_annotators=only or None,
                    min_annotators=int(min_annotators), confirm=_confirmer() if confirm else None,
                )
        except Exception as exc:  # model or embedding unavailable: say so, keep the page
            st.error(ui.md(f"Could not build the report: {exc}"))
            return
        st.session_state["rep_result"] = report
    report = st.session_state.get("rep_result")
    if report is None:
        return
    table = report.table()
    st.dataframe(pd.DataFrame(table, columns=TABLE_COLUMNS), hide_index=True, key="rep_table")
    d = st.columns(4)
    d[0].download_button("Report JSONL", to_jsonl(table), "annotation_report.jsonl",
                         "application/jsonl", key="rep_dl_jsonl")
    d[1].download_button("Report CSV", to_csv(table, TABLE_COLUMNS), "annotation_report.csv",
                         "text/csv", key="rep_dl_csv")
    d[2].download_button("Full report JSON", json.dumps(report.as_dict(), indent=1, ensure_ascii=False),
                         "annotation_report.json", "application/json", key="rep_dl_json")
    labels, adjudications = _all_records()
    d[3].download_button("Labels CSV", to_csv(label_rows(labels, adjudications), LABEL_COLUMNS),
                         "annotation_labels.csv", "text/csv", key="rep_dl_labels")
    with st.expander(f"Matched pairs for review ({len(report.pairs)})"):
        st.dataframe(pd.DataFrame([p.__dict__ for p in report.pairs]), hide_index=True,
                     key="rep_pairs")


def _confirmer():
    from store.llm_cache import persistent_gateway
    from workbench.annotation.confirm import model_confirmer

    return model_confirmer(persistent_gateway(eng))


if mode in ("Rule correctness", "Reference inventory", "Progress & agreement"):
    skill, version = pick_skill_version()
    if mode == "Rule correctness":
        rule_correctness(skill, version)
    elif mode == "Reference inventory":
        reference_panel(skill)
    else:
        progress_panel(skill, version)
elif mode == "CDG inspection":
    inspection_panel()
else:
    report_panel()
