"""The Review queue itself: the dataset and the view, progress and agreement, the queue list,
and one verdict at a time beside the reply it judged, reached by position or by a deep link to
a case (``/review?dataset=demo&case=mor-007``); the dataset's alerts and export below it.
Page-private: it reads the store (through the cached reads of ``pages._audit_cache``) and
hands decisions to ``pages._review_decide``.

The first screen at 1280×800 holds the card's label, the reply's marked words and the first
decision button (issue 56): the dataset, sort, search and status share one row, the runs and
the other filters fold away, the decision buttons sit right under the label, and the reply
(its words marked) heads the conversation column, with the turn it answers below it and the
rest of the conversation folded.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from components import links
from components.case_table import QUEUE_COLUMNS, queue_rows, show_case_table
from components.conversation import show_conversation, show_recent, show_response, show_state
from components.safe import md
from components.trace_settings import show_trace_settings
from components.verdict import show_marked_reply, show_verdict
from pages import _audit_cache as audit_cache
from pages._explain import find_rule_button
from pages._policy_cache import policy_index
from pages._review_alerts import alerts_panel
from pages._review_auto import auto_panel, labelled_of
from pages._review_decide import bulk_panel, decision_buttons, item_key
from pages._review_export import export_panel
from pages._review_run import safe_key
from pages._review_view import adopt_url, current_view, filter_controls, view_row
from pages._thresholds import dataset_setting
from store import audit_repo
from store import review as review_store
from workbench import words
from workbench.export.sheets import frame_csv
from workbench.review.labelling import label_next
from workbench.review.queue import (
    REASON_TEXT,
    QueueItem,
    ReviewDecision,
    agreement,
    build_queue,
    filter_queue,
    review_progress,
)
from workbench.review.views import apply_view
from workbench.words import agreement_text, gold_word, help_for, percent, plural

MIN_KAPPA_DECISIONS = 10
KAPPA = "Cohen's κ"


def show_agreement(items: list[QueueItem], decisions: list[ReviewDecision]) -> None:
    a = agreement(decisions, items)
    # A row that wraps (components.metric_row's way, with a delta): four fixed columns cut
    # "too few decisions to measure" at 1280 and 800 px (issue 56).
    row = st.container(horizontal=True, wrap=True, gap="medium", key="rv_agreement")
    row.metric("Decisions", a.decisions, help="current decisions: one per verdict and analyst",
                   width="content")
    row.metric("Confirmed", percent(a.share_confirmed), width="content",
                   help="share of decisions that keep the judge's verdict (confirmed, or right "
                        f"verdict with a wrong rule: {a.wrong_rule})")
    # κ on a handful of decisions is noise ("κ 1.00" after one decision): say so beside it.
    few = a.decisions < MIN_KAPPA_DECISIONS
    kappa_help = f"{help_for(KAPPA)} {help_for('agreement bands')}"
    row.metric(KAPPA, words.agreement(a.kappa, a.decisions, KAPPA, MIN_KAPPA_DECISIONS),
                   help=kappa_help, width="content",
                   delta=(None if not few else "no decisions yet" if not a.decisions
                          else f"only {words.plural(a.decisions, 'decision')} so far"),
                   delta_color="off")
    row.metric("Analysts vs gold", percent(a.analysts_gold), width="content",
                   help=f"{help_for('analysts vs gold')} On {a.gold_n} reviewed verdicts with a "
                        f"gold label; judge alone: {percent(a.judge_gold)}")
    if a.per_reviewer:
        with st.expander("Agreement per analyst"):
            st.dataframe(pd.DataFrame([
                {"analyst": r["reviewer"], "decisions": r["decisions"],
                 "verdict kept": r["confirmed"],
                 "share kept": percent(r["share confirmed"]),
                 "Cohen's κ with the judge": words.agreement(r["kappa"], r["decisions"], "Cohen's κ",
                                                              MIN_KAPPA_DECISIONS)}
                for r in a.per_reviewer]), hide_index=True)
            if a.analysts_alpha is not None:
                st.text("Among analysts (verdicts two or more reviewed): Krippendorff's α = "
                        + agreement_text(a.analysts_alpha, "Krippendorff's α"))
            rows = [{"when (UTC)": d.created_at.isoformat(), "reviewer": d.reviewer,
                     "run": d.run_id, "case": d.case_id, "strategy": d.strategy,
                     "decision": d.decision, "shown": d.shown, "analyst_label": d.analyst_label,
                     "note": d.note, "record": d.id,
                     "undoes": d.undoes} for d in decisions]
            st.download_button("Download all decisions (CSV)",
                               frame_csv(pd.DataFrame(rows)).encode("utf-8"),
                               file_name="review_decisions.csv", mime="text/csv",
                               key="rv_decisions_csv")


def show_case(item: QueueItem, case) -> None:
    """The reply judged, its words the label rests on marked, first; then the turn it
    answers; the rest of the conversation and the environment state folded."""
    if case is None:
        st.caption("This case is not in the store (its traces were loaded without the cases).")
        return
    if not show_marked_reply(item.trace, item.verdict, case.model_response):
        show_response(case.model_response)
    show_recent(case.turns)
    with st.expander(f"Whole conversation ({plural(len(case.turns), 'turn')})"):
        show_conversation(case.turns, height=360)
    with st.expander("Environment state"):
        show_state(case.background)


def show_item(item: QueueItem, case, decisions: list[ReviewDecision]) -> None:
    st.text("In the queue because: " + (", ".join(REASON_TEXT[r] for r in item.reasons)
                                        or "(no reason: filters cleared)"))
    if item.others:
        st.text("Other strategies: " + " · ".join(f"{s}: {label}" for s, label in item.others.items()))
    st.text(f"Gold: {gold_word(item.label)}")
    extra_gold = (getattr(case, "extra", None) or {}).get("gold") if case is not None else None
    if isinstance(extra_gold, dict):
        if extra_gold.get("violated_rules"):
            st.text("Gold violated rules: " + ", ".join(map(str, extra_gold["violated_rules"])))
        if extra_gold.get("note"):
            with st.expander("Gold note"):
                st.text(str(extra_gold["note"]))
    mine = [d for d in decisions if d.key == item.key]
    if mine:
        undone = {d.undoes for d in mine if d.undoes is not None}
        st.caption("Decisions on this verdict (newest last)")
        st.dataframe(pd.DataFrame([
            {"when (UTC)": d.created_at.strftime("%Y-%m-%d %H:%M"), "reviewer": d.reviewer,
             "decision": d.words + (" (undone)" if d.id in undone else ""),
             "shown": d.shown or "–", "analyst's label": d.analyst_label or "–", "note": d.note}
            for d in mine]), hide_index=True)
    show_trace_settings(item.trace)


@st.cache_resource(show_spinner=False, max_entries=8)
def _queue(url: str, dataset: str, runs: tuple[str, ...] | None, versions: tuple,
           _records: list, _cases: dict, _verdicts: dict) -> list[QueueItem]:
    """The dataset's queue items with their decided records, built once per data version
    (``pages._audit_cache``: traces, cases, the setting, explanations, decisions): a key press
    reruns the page but finds the queue already built. Shared: read-only."""
    labels = {cid: c.label for cid, c in _cases.items() if c.label}
    texts = {cid: c.said for cid, c in _cases.items()}
    return build_queue(_records, labels, dataset, texts, _verdicts)


@st.cache_resource(show_spinner=False, max_entries=8)
def _queue_list(dataset: str, versions: tuple, shown_keys: tuple, decided: tuple, threshold: object,
                _shown: list[QueueItem], _decisions: list[ReviewDecision], _setting) -> pd.DataFrame:
    """The queue list's rows, built once per shown queue and decision state: a key press
    that only moves through the queue finds them built (1,000 rows cost ~0.1 s)."""
    return pd.DataFrame(queue_rows(dataset, _shown, _decisions, REASON_TEXT, _setting),
                        columns=list(QUEUE_COLUMNS))


def _decided(decisions: list[ReviewDecision]) -> tuple:
    # Decisions (undo records included) are only ever added: their number and the newest
    # one identify the state.
    return (len(decisions), decisions[-1].id if decisions else 0)


def _position(shown: list[QueueItem], items: list[QueueItem], pos_key: str) -> None:
    """Follow the address: ``?case=`` (and ``&strategy=``) opens that case's verdict, else
    ``?position=N`` (1-based); only when it changed since this session wrote it."""
    case = links.fresh("case")
    strategy = st.query_params.get("strategy")
    if case is not None:
        hits = [n for n, i in enumerate(shown)
                if i.case_id == case and (not strategy or i.strategy == strategy)]
        if hits:
            st.session_state[pos_key] = hits[0]
            links.fresh("position")  # the case wins over a position written with it
            return
        anywhere = any(i.case_id == case for i in items)
        st.warning(md(f"The link names case “{case}”, which "
                      + ("these filters hide: clear the filters to see it."
                         if anywhere else "has no judged verdict in these runs.")))
    wanted = links.fresh("position")
    if wanted is not None and wanted.isdigit():
        st.session_state[pos_key] = int(wanted) - 1


@st.fragment
def queue_panel(eng: Engine, datasets: list[str], reviewer: str) -> None:
    """The queue of one dataset: its view, the card, the list, bulk and automatic decisions,
    agreement, and the dataset's alerts and export. One fragment: a key press reruns only
    this (a dataset chosen here changes everything it draws)."""
    adopt_url()
    links.adopt("dataset", "rv_dataset", datasets)
    row = st.columns([3, 3, 3, 2])
    dataset = row[0].selectbox("Dataset", datasets, key="rv_dataset")
    links.publish("dataset", dataset)
    view_row(*row[1:])
    with st.expander("Runs, filters and saved views"):
        runs = st.multiselect("Runs", audit_repo.runs(eng, dataset),
                              key=f"rv_runs_{safe_key(dataset)}",
                              placeholder="all runs (newest trace per case and strategy)")
        picked = tuple(runs) or None
        stamp = audit_cache.verdict_stamp(eng, dataset)
        # read once: the queue is keyed on them
        versions = (*audit_cache.versions(eng, dataset), stamp)
        cases = audit_cache.cases(eng, dataset, versions[1])
        items = _queue(str(eng.url), dataset, picked, versions,
                       audit_cache.records(eng, dataset, picked, versions[0]), cases,
                       audit_cache.verdicts(eng, dataset, stamp))
        strategies = sorted({i.strategy for i in items})
        filter_controls(eng, reviewer, strategies)
    view = current_view(strategies)
    decisions = review_store.decisions_for(eng, dataset)
    queue = filter_queue(items, view.reasons)
    saved = dataset_setting(eng, dataset)
    setting = saved[1] if saved else None
    shown = apply_view(items, view, reviewer, decisions, setting)
    progress = review_progress(queue, decisions, reviewer)
    st.progress(progress.share, text=f"{progress.reviewed} of {progress.total} reviewed "
                f"({progress.mine} by you)")
    showing = f"Showing: {view.describe()}."
    if view.sort == "label next":  # how many cases the order proposes
        n = len(label_next(shown, decisions, setting.threshold if setting else 0.5))
        showing += (f" {plural(n, 'case')} without a label first." if n else
                    " Every case shown has a label (gold or an analyst's): nothing to propose.")
    st.caption(md(showing), help=help_for("label next") if view.sort == "label next" else None)
    _queue_body(eng, dataset, picked, reviewer, items, shown, cases, decisions, saved, view,
                versions)
    alerts_panel(eng, dataset, reviewer)  # what the alert rules fired on this dataset
    export_panel(eng, dataset, runs)  # the verdicts as OTLP / Langfuse / Phoenix files


def _queue_body(eng: Engine, dataset: str, picked: tuple[str, ...] | None, reviewer: str,
                items: list[QueueItem], shown: list[QueueItem], cases: dict,
                decisions: list[ReviewDecision], saved, view, versions: tuple) -> None:
    """The card of the verdict at the queue's position, then the list, bulk and automatic
    decisions and the agreement figures."""
    setting = saved[1] if saved else None
    if not items:
        st.info("No judged verdict in these runs yet (traces audited with judge 'none' or "
                "failed have nothing to confirm).")
        show_agreement(items, decisions)
        return
    if not shown:
        st.success("Nothing in the queue matches these filters.")
        show_agreement(items, decisions)
        return
    # The card first, above the fold; the list, the bulk and automatic decisions and the
    # agreement figures follow it (issue 44 item 2).
    pos_key = f"rv_pos/{dataset}"
    _position(shown, items, pos_key)
    pos = max(0, min(int(st.session_state.get(pos_key, 0)), len(shown) - 1))
    st.session_state[pos_key] = pos
    item = shown[pos]
    links.publish("position", pos + 1)
    links.publish("case", item.case_id)
    links.publish("strategy", item.strategy)
    case = cases.get(item.case_id)
    with st.container(key="rv_card"):
        st.text(f"{pos + 1}/{len(shown)} · case {item.case_id} · {item.strategy} · run {item.run_id}")
    left, right = st.columns([1, 1])
    with left:
        show_case(item, case)
    with right:
        cited = item.verdict.rules or (item.trace.verdict is not None
                                       and item.trace.verdict.violated_rules)
        advance = view.status != "not reviewed by me"  # there a decided verdict leaves the list
        # The reply and its marked words are drawn beside the card (show_case), not in it.
        show_verdict(item.trace, policy_index(eng) if cited else None, key=item_key(item),
                     setting=setting, gold=item.label, verdict=item.verdict,
                     version=saved[0] if saved else None,
                     actions=lambda: decision_buttons(eng, item, reviewer, decisions, pos_key,
                                                      pos, shown, advance))
        if find_rule_button(eng, dataset, item.verdict, item.trace, case, item_key(item)):
            st.rerun()
        show_item(item, case, decisions)
    with st.expander(f"Queue list ({len(shown)} verdicts, in the order above): filter, select, "
                     "open on Replay"):
        st.caption("Select rows to decide them together below.")
        show_case_table(_queue_list(dataset, versions, tuple(i.key for i in shown),
                                    _decided(decisions), saved[0] if saved else (), shown, decisions,
                                    setting),
                        key="rv_list", columns=QUEUE_COLUMNS, select_into="rv_selected",
                        id_column=("case", "strategy", "run"),
                        column_filters=("strategy", "verdict", "gold"), sortable=False)
    picked_rows = set(st.session_state.get("rv_selected") or [])
    selected = [i for i in shown if (i.case_id, i.strategy, i.run_id) in picked_rows]
    bulk_panel(eng, shown, selected, reviewer, decisions)
    records = audit_cache.records(eng, dataset, picked, versions[0])
    auto_panel(eng, shown, reviewer, decisions, saved,
               lambda: labelled_of(records, cases, decisions), (dataset, picked, versions,
                                                                _decided(decisions)), items)
    show_agreement(items, decisions)
