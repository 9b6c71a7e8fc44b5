"""Progress, agreement and the dataset report on the Annotate page."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from components import identity
from components.glossary import column_help, plain_stats
from components.safe import md
from pages._annotate_queue import ensure_queue
from store import annotation as store
from store import repo
from workbench.annotation.items import reference_item, rule_items
from workbench.annotation.labels import (
    CDG_INSPECTION,
    RULE_CORRECTNESS,
    Annotator,
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
    similarity_by_name,
    task_agreement,
    to_csv,
    to_jsonl,
)
from workbench.annotation.resolution import agreement_access
from workbench.words import REPORT_NAMES, TASK_WORDS, plural


def progress_panel(eng: Engine, skill, version: int, who: Annotator) -> None:
    labels, adjudications = store.all_records(eng)
    queue = ensure_queue(eng, RULE_CORRECTNESS, skill.name, version, list(rule_items(skill)))
    # Blind annotation covers every figure that moves with another annotator's labels: their
    # progress, the queue's unanimous/adjudicated/open counts and the agreement figures
    # (workbench.annotation.resolution.can_see_agreement). Until then an annotator sees only
    # their own progress, and why.
    access = agreement_access(who, labels, adjudications, RULE_CORRECTNESS, queue)
    if access.visible:
        roster = [a.name for a in store.annotators(eng) if not a.is_reviewer]
        st.subheader("Progress per annotator")
    else:
        roster = [who.name]
        st.subheader("Your progress")
    st.dataframe(pd.DataFrame(annotator_progress(labels, queue, roster, reference_item(skill))),
                 hide_index=True, key="prog_table")
    if not access.visible:
        st.info(md(access.reason))
        return
    status = queue_status(labels, adjudications, RULE_CORRECTNESS, queue)
    st.text(f"This version's {plural(len(queue), 'rule')}: unanimous {status['unanimous']}, "
            f"adjudicated {status['adjudicated']}, open {status['unresolved']}")
    st.subheader("Agreement per task type")
    if who.is_reviewer:
        shown_labels, shown_adjudications = labels, adjudications
        st.caption("All SKILLs and tasks (you see every label).")
    else:  # this version's closed queue only: nothing of items still open elsewhere
        wanted = set(queue)
        shown_labels = [lab for lab in labels if lab.task == RULE_CORRECTNESS and lab.item in wanted]
        shown_adjudications = [a for a in adjudications
                               if a.task == RULE_CORRECTNESS and a.item in wanted]
        st.caption(md(f"This version of {skill.name}: every rule is labelled and settled."))
    agree = plain_stats([{"task": TASK_WORDS.get(task, task), **stats}
                         for task, stats in task_agreement(shown_labels).items()
                         if who.is_reviewer or task.startswith(RULE_CORRECTNESS)])
    st.dataframe(agree, hide_index=True, key="agree_table", column_config=column_help(agree.columns))
    st.subheader("Judge vs human (reviewed items)")
    rows = [{"task": TASK_WORDS.get(task, task), "model": model, **stats}
            for task in ((RULE_CORRECTNESS, CDG_INSPECTION) if who.is_reviewer else (RULE_CORRECTNESS,))
            for model, stats in judge_human_agreement(shown_labels, shown_adjudications,
                                                      task).items()]
    if rows:
        judged = plain_stats(rows)
        st.dataframe(judged, hide_index=True, key="judge_table",
                     column_config=column_help(judged.columns))
    else:
        st.caption("No model labels (source = model) on reviewed items yet.")


def report_panel(eng: Engine, who: Annotator) -> None:
    if not who.is_reviewer:  # the report and its label export pool everyone's blind labels
        identity.explain_refusal("see all labels")
        return
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
        labels, adjudications = store.all_records(eng)
        try:
            with st.spinner("Matching inventories..."):
                report = dataset_report(
                    [repo.load_skill(eng, n) for n in chosen], labels, adjudications,
                    similarity=similarity_by_name(similarity), similarity_name=similarity,
                    threshold=threshold, reference_annotators=only or None,
                    min_annotators=int(min_annotators), confirm=_confirmer() if confirm else None,
                )
        except Exception as exc:  # model or embedding unavailable: say so, keep the page
            st.error(md(f"Could not build the report: {exc}"))
            return
        st.session_state["rep_result"] = report
    report = st.session_state.get("rep_result")
    if report is None:
        return
    table = report.table()
    st.dataframe(pd.DataFrame(table, columns=TABLE_COLUMNS).rename(columns=REPORT_NAMES),
                 hide_index=True, key="rep_table")
    d = st.columns(4)
    d[0].download_button("Report JSONL", to_jsonl(table), "annotation_report.jsonl",
                         "application/jsonl", key="rep_dl_jsonl")
    d[1].download_button("Report CSV", to_csv(table, TABLE_COLUMNS), "annotation_report.csv",
                         "text/csv", key="rep_dl_csv")
    d[2].download_button("Full report JSON", json.dumps(report.as_dict(), indent=1, ensure_ascii=False),
                         "annotation_report.json", "application/json", key="rep_dl_json")
    labels, adjudications = store.all_records(eng)
    d[3].download_button("Labels CSV", to_csv(label_rows(labels, adjudications), LABEL_COLUMNS),
                         "annotation_labels.csv", "text/csv", key="rep_dl_labels")
    with st.expander(f"Matched pairs for review ({len(report.pairs)})"):
        st.dataframe(pd.DataFrame([p.__dict__ for p in report.pairs]), hide_index=True,
                     key="rep_pairs")


def _confirmer():
    from pages._state import model_gateway
    from workbench.annotation.confirm import model_confirmer

    return model_confirmer(model_gateway())
