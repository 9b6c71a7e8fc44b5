"""The Review queue itself: progress and agreement, the queue list, and one verdict at a time
beside its conversation, reached by position or by a deep link to a case
(``/review?dataset=demo&case=mor-007``). Page-private: it reads the store (through the
cached reads of ``pages._audit_cache``) and hands decisions to ``pages._review_decide``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from components import links
from components.case_table import QUEUE_COLUMNS, queue_rows, show_case_table
from components.conversation import show_conversation, show_response, show_state
from components.safe import md
from components.trace_settings import show_trace_settings
from components.verdict import show_verdict
from pages import _audit_cache as audit_cache
from pages._explain import find_rule_button
from pages._policy_cache import policy_index
from pages._review_auto import auto_panel, labelled_of
from pages._review_decide import bulk_panel, decision_buttons, item_key
from pages._review_view import view_controls
from pages._thresholds import dataset_setting
from store import review as review_store
from workbench import words
from workbench.export.sheets import frame_csv
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
from workbench.words import agreement_text, gold_word, help_for

MIN_KAPPA_DECISIONS = 10
KAPPA = "Cohen's κ"


def show_agreement(items: list[QueueItem], decisions: list[ReviewDecision]) -> None:
    a = agreement(decisions, items)
    cols = st.columns(4)
    cols[0].metric("Decisions", a.decisions, help="current decisions: one per verdict and analyst")
    cols[1].metric("Confirmed", "–" if a.share_confirmed is None else f"{a.share_confirmed:.0%}",
                   help="share of decisions that keep the judge's verdict (confirmed, or right "
                        f"verdict with a wrong rule: {a.wrong_rule})")
    # κ on a handful of decisions is noise ("κ 1.00" after one decision): say so beside it.
    few = a.decisions < MIN_KAPPA_DECISIONS
    kappa_help = f"{help_for(KAPPA)} {help_for('agreement bands')}"
    cols[2].metric(KAPPA, words.agreement(a.kappa, a.decisions, KAPPA, MIN_KAPPA_DECISIONS),
                   help=kappa_help,
                   delta=(None if not few else "no decisions yet" if not a.decisions
                          else f"only {words.plural(a.decisions, 'decision')} so far"),
                   delta_color="off")
    cols[3].metric("Analysts vs gold", "–" if a.analysts_gold is None else f"{a.analysts_gold:.0%}",
                   help=f"{help_for('analysts vs gold')} On {a.gold_n} reviewed verdicts with a "
                        "gold label; judge alone: "
                        + ("–" if a.judge_gold is None else f"{a.judge_gold:.0%}"))
    if a.per_reviewer:
        with st.expander("Agreement per analyst"):
            st.dataframe(pd.DataFrame([
                {"analyst": r["reviewer"], "decisions": r["decisions"],
                 "verdict kept": r["confirmed"],
                 "share kept": "–" if r["share confirmed"] is None else f"{r['share confirmed']:.0%}",
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


def show_case(case) -> None:
    if case is None:
        st.caption("This case is not in the store (its traces were loaded without the cases).")
        return
    show_conversation(case.turns, height=360)
    with st.expander("Environment state"):
        show_state(case.background)
    show_response(case.model_response)


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
def queue_panel(eng: Engine, dataset: str, runs: list[str], reviewer: str) -> None:
    picked = tuple(runs) or None
    stamp = audit_cache.verdict_stamp(eng, dataset)
    # read once: the queue is keyed on them
    versions = (*audit_cache.versions(eng, dataset), stamp)
    cases = audit_cache.cases(eng, dataset, versions[1])
    items = _queue(str(eng.url), dataset, picked, versions,
                   audit_cache.records(eng, dataset, picked, versions[0]), cases,
                   audit_cache.verdicts(eng, dataset, stamp))
    decisions = review_store.decisions_for(eng, dataset)
    view = view_controls(eng, reviewer, sorted({i.strategy for i in items}))
    queue = filter_queue(items, view.reasons)
    saved = dataset_setting(eng, dataset)
    setting = saved[1] if saved else None
    shown = apply_view(items, view, reviewer, decisions, setting)
    progress = review_progress(queue, decisions, reviewer)
    st.progress(progress.share, text=f"{progress.reviewed} of {progress.total} reviewed "
                f"({progress.mine} by you)")
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
    with st.container(border=True, key="rv_card"):
        st.text(f"{pos + 1}/{len(shown)} · case {item.case_id} · {item.strategy} · run {item.run_id}")
    left, right = st.columns([1, 1])
    with left:
        show_case(case)
    with right:
        cited = item.verdict.rules or (item.trace.verdict is not None
                                       and item.trace.verdict.violated_rules)
        show_verdict(item.trace, policy_index(eng) if cited else None, key=item_key(item),
                     reply=case.model_response if case is not None else None, setting=setting,
                     gold=item.label, verdict=item.verdict)
        if find_rule_button(eng, dataset, item.verdict, item.trace, case, item_key(item)):
            st.rerun()
        advance = view.status != "not reviewed by me"  # there a decided verdict leaves the list
        decision_buttons(eng, item, reviewer, decisions, pos_key, pos, shown, advance)
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
                                                                _decided(decisions)))
    show_agreement(items, decisions)
