"""Review queue: audit a dataset (or load traces), then confirm or overturn the judge's
verdicts on flagged cases, strategy disagreements and gold mismatches, with progress and
analyst-judge agreement. Decisions are append-only records (``store.review``)."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from components import identity, links, queue_nav
from components.case_table import QUEUE_COLUMNS, queue_rows, show_case_table
from components.conversation import show_conversation, show_response, show_state
from components.errors import show_error
from components.replay_state import audit_index, policy_index
from components.safe import md
from components.state import engine, model_gateway, user_name
from components.verdict import show_verdict
from pages import _audit_cache as audit_cache
from store import audit_repo
from store import review as review_store
from workbench.audit import AuditOptions, run_audit
from workbench.audit.cases import CaseFormatError
from workbench.audit.importers import FORMAT_HELP, FORMATS, ImportOptions, parse_cases_upload
from workbench.audit.sinks import sink_done_keys
from workbench.audit.strategies import CONTEXT_FORMS
from workbench.audit.trace_file import read_traces
from workbench.errors import WorkbenchError, is_fatal
from workbench.glossary import gold_word, help_for
from workbench.inputs import InputError, decode_text
from workbench.review import (
    REASON_TEXT,
    REASONS,
    STATUSES,
    QueueItem,
    ReviewDecision,
    ReviewError,
    agreement,
    build_queue,
    filter_queue,
    item_text,
    review_progress,
)
from workbench.vocabulary import JudgeMode, KeywordMethod, StrategyName, values

CONFIRM_KEY, OVERTURN_KEY, NEXT_KEY, PREVIOUS_KEY = "y", "n", "j", "k"
SOURCES = ("A stored dataset", "Upload a cases file")

st.title("Review queue")
eng = engine()


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def _item_key(item: QueueItem) -> str:
    """A widget-key-safe id of a verdict: readable, and unique through a digest."""
    text = item_text(item.key)
    return f"{_safe(text)[:60]}_{hashlib.sha256(text.encode()).hexdigest()[:10]}"


# -- audit a dataset -------------------------------------------------------------------------

def store_uploaded_cases() -> None:
    fmt = st.selectbox("File format", FORMATS, format_func=FORMAT_HELP.get, key="rv_cases_format",
                       help="One case per assistant reply; tool calls and their results are kept "
                       "as turns of the conversation.")
    upload = st.file_uploader("Cases file", type=["jsonl", "ndjson", "json", "csv", "tsv"],
                              key="rv_cases_file")
    column_map = st.text_input("Column mapping", key="rv_cases_map", disabled=fmt != "map",
                               placeholder="reply=output,history=messages,id=ticket",
                               help="Which column holds the reply (required), the history, id, "
                               "session, label, skills and state.")
    policy = st.text_input("Policy", key="rv_cases_policy", disabled=fmt == "cases",
                           placeholder="airline=airline-policy",
                           help="A SKILL name for every case, or NAME=SKILL to map the policy "
                           "the file names (a tau2 domain, an agent name); comma-separated.")
    name = st.text_input("Store as dataset", key="rv_cases_name", placeholder="e.g. airline-may")
    # Storing a case again under its id replaces it, gold label included (workbench.roles).
    may_import = identity.permitted("import cases")
    if st.button("Store cases", key="rv_cases_store", disabled=not may_import):
        if upload is None or not name.strip():
            st.error("Choose a cases file and name the dataset first.")
            return
        stored = policy_index(eng)  # a policy the file names that is a stored SKILL is used as is
        try:
            result = parse_cases_upload(upload.getvalue(), upload.name, ImportOptions(
                fmt, column_map.strip() if fmt == "map" else None,
                tuple(p.strip() for p in policy.split(",") if p.strip()) if fmt != "cases" else (),
                None if stored is None else list(stored.skills)))
        except CaseFormatError as exc:
            show_error(exc, lead="Nothing was stored: ")
            return
        cases = result.cases
        for note in result.notes[:10]:
            st.warning(md(note))
        try:
            n = audit_repo.save_cases(eng, name.strip(), cases, actor=identity.actor())
        except WorkbenchError as exc:  # roles.NotAllowed: the store checks the role too
            show_error(exc)
            return
        audit_cache.clear()  # a case stored again under its id changed in place
        st.success(md(f"Stored {n} cases as dataset {name.strip()}."))


def run_batch(dataset: str, strategy: str, keywords: str, judge_mode: str, run_id: str,
              context: str = "") -> None:
    """Audit the dataset's cases not yet in the run, storing each trace as it finishes."""
    cases = list(audit_cache.cases(eng, dataset).values())
    if policy_index(eng) is None:
        st.error("No SKILLs in the store: import the policy index first "
                 "(`workbench import INDEX.json`, or the Skills page).")
        return
    # The run's stored traces are the sink's: what it holds is what a resumed run skips.
    try:
        sink = audit_repo.StoreSink(eng, run_id, dataset, actor=identity.actor())
    except WorkbenchError as exc:  # roles.NotAllowed, before any model call
        show_error(exc)
        return
    done_keys, _ = sink_done_keys(sink)
    ids = dict.fromkeys(c.id for c in cases)  # a duplicate id is audited once
    pending = sum((i, strategy, judge_mode, keywords) not in done_keys for i in ids)
    total, done = len(cases), len(cases) - pending
    if not pending:
        st.info(md(f"All {total} cases are already audited in run {run_id}; "
                   "pick a new run id to audit them again."))
        return
    bar = st.progress(done / total, text=f"{done} of {total} cases (already in the run)")

    def on_trace(trace) -> None:
        nonlocal done
        done += 1
        bar.progress(min(1.0, done / total), text=md(f"{done} of {total} cases · {trace.id}"))

    try:
        # The app's gateway, shared by its sessions: not closed here.
        gateway = model_gateway() if keywords == "llm" or judge_mode != "none" else None
        summary = run_audit(cases, audit_index(eng), strategy, sink, gateway,
                            AuditOptions(keywords=keywords, judge_mode=judge_mode)
                            .with_context(**CONTEXT_FORMS.get(context, {})),
                            concurrency=1, on_trace=on_trace)
    except WorkbenchError as exc:
        if not is_fatal(exc):
            raise
        show_error(exc, lead=f"The run stopped after {done} of {total} cases: ",
                   after="Traces so far are stored; fix the problem and audit again with the "
                   "same run id to resume.")
        return
    errors = ", ".join(f"{k} {v}" for k, v in sorted(summary.errors.items())) or "none"
    st.success(md(f"Run {run_id}: audited {summary.done} cases ({summary.skipped} were already "
                  f"in the run), {summary.judged} judged; errors: {errors}."))


def audit_panel() -> None:
    stored = audit_repo.datasets(eng)
    source = st.radio("Cases", SOURCES, horizontal=True, key="rv_cases_source",
                      index=0 if stored else 1)
    if source == SOURCES[1]:
        store_uploaded_cases()
        stored = audit_repo.datasets(eng)
    if not stored:
        st.caption("No stored cases yet.")
        return
    cols = st.columns(4)
    dataset = cols[0].selectbox("Dataset", stored, key="rv_audit_dataset")
    strategy = cols[1].selectbox("Strategy", values(StrategyName), key="rv_audit_strategy")
    keywords = cols[2].selectbox("Keywords", values(KeywordMethod), key="rv_audit_keywords")
    judge_mode = cols[3].selectbox("Judge", values(JudgeMode), key="rv_audit_judge",
                                   help="'none' builds the contexts only (nothing to review)")
    context = st.selectbox("Context", list(CONTEXT_FORMS), key="rv_audit_context",
                           help="how cdg and its ablations seed and render rules")
    if "rv_run_id" not in st.session_state:
        st.session_state["rv_run_id"] = "review-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_id = st.text_input("Run id", key="rv_run_id",
                           help="Audit again with the same run id to resume: cases already "
                                "audited in it (same strategy, judge and keywords) are skipped.")
    may_store = identity.permitted("store audit results")
    if st.button("Audit", key="rv_audit_run", type="primary", disabled=not may_store):
        if not run_id.strip():
            st.error("Give the run a name (run id).")
        else:
            run_batch(dataset, strategy, keywords, judge_mode, run_id.strip(), context)


def load_panel() -> None:
    upload = st.file_uploader("Traces JSONL (from `workbench audit` or another workbench)",
                              type=["jsonl", "ndjson"], key="rv_traces_file")
    cols = st.columns(2)
    dataset = cols[0].text_input("Dataset", key="rv_traces_dataset",
                                 placeholder="the dataset the cases belong to")
    run_id = cols[1].text_input("Run id", key="rv_traces_run", placeholder="default: the file name")
    may_store = identity.permitted("store audit results")
    if st.button("Store traces", key="rv_traces_store", disabled=not may_store):
        if upload is None or not dataset.strip():
            st.error("Choose a traces file and name its dataset first.")
            return
        try:
            text, _ = decode_text(upload.getvalue(), upload.name)
        except InputError as exc:
            show_error(exc, lead="Nothing was stored: ")
            return
        traces, problems = read_traces(text=text, origin=upload.name)
        if problems:
            st.warning(md(f"{len(problems)} line(s) skipped: " + "; ".join(problems[:5])))
        if traces:
            run = run_id.strip() or Path(upload.name).stem
            try:
                n = audit_repo.save_traces(eng, traces, run, dataset.strip(), actor=identity.actor())
            except WorkbenchError as exc:  # roles.NotAllowed: the store checks the role too
                show_error(exc)
                return
            st.success(md(f"Stored {n} traces as run {run} of dataset {dataset.strip()}."))


# -- the queue ---------------------------------------------------------------------------------

def _decide(item: QueueItem, decision: str, reviewer: str, pos_key: str, size: int,
            advance: bool) -> None:
    note = st.session_state.get(f"rv_note_{_item_key(item)}", "") or ""
    if not identity.allowed("decide reviews"):  # a shortcut key must not get past the role
        st.session_state["rv_flash"] = ("error", "Your role cannot decide reviews; nothing saved.")
        return
    try:
        review_store.add_decision(eng, ReviewDecision(
            item.dataset, item.run_id, item.case_id, item.strategy, reviewer, decision, note,
            item.violation))
    except ReviewError as exc:
        st.session_state["rv_flash"] = ("error", str(exc))
        return
    verb = "Confirmed" if decision == "confirm" else "Overturned"
    st.session_state["rv_flash"] = ("success", f"{verb} the {item.strategy} verdict on {item.case_id}.")
    if advance:
        queue_nav.advance(pos_key, size)


MIN_KAPPA_DECISIONS = 10


def show_agreement(items: list[QueueItem], decisions: list[ReviewDecision]) -> None:
    a = agreement(decisions, items)
    cols = st.columns(4)
    cols[0].metric("Decisions", a.decisions, help="current decisions: one per verdict and analyst")
    cols[1].metric("Confirmed", "–" if a.share_confirmed is None else f"{a.share_confirmed:.0%}",
                   help="share of decisions that confirm the judge")
    # κ on a handful of decisions is noise ("κ 1.00" after one decision): say so beside it.
    few = a.decisions < MIN_KAPPA_DECISIONS
    cols[2].metric("Cohen's κ", "–" if a.kappa is None else f"{a.kappa:.2f}", help=help_for("Cohen's κ"),
                   delta=f"only {a.decisions} decisions: not yet reliable" if few else None,
                   delta_color="off")
    cols[3].metric("Analysts vs gold", "–" if a.analysts_gold is None else f"{a.analysts_gold:.0%}",
                   help=f"{help_for('analysts vs gold')} On {a.gold_n} reviewed verdicts with a "
                        "gold label; judge alone: "
                        + ("–" if a.judge_gold is None else f"{a.judge_gold:.0%}"))
    if a.per_reviewer:
        with st.expander("Agreement per analyst"):
            st.dataframe(pd.DataFrame(a.per_reviewer), hide_index=True)
            if a.analysts_alpha is not None:
                st.text(f"Among analysts (verdicts two or more reviewed): Krippendorff's α = "
                        f"{a.analysts_alpha:.2f}")
            rows = [{"when (UTC)": d.created_at.isoformat(), "reviewer": d.reviewer,
                     "run": d.run_id, "case": d.case_id, "strategy": d.strategy,
                     "decision": d.decision, "note": d.note} for d in decisions]
            st.download_button("Download all decisions (CSV)",
                               pd.DataFrame(rows).to_csv(index=False).encode("utf-8"),
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
        st.text("Other strategies: " + " · ".join(
            f"{s}: {'violation' if v else 'compliant' if v is not None else 'no verdict'}"
            for s, v in item.others.items()))
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
        st.caption("Decisions on this verdict (newest last)")
        st.dataframe(pd.DataFrame([
            {"when (UTC)": d.created_at.strftime("%Y-%m-%d %H:%M"), "reviewer": d.reviewer,
             "decision": d.decision, "note": d.note} for d in mine]), hide_index=True)


@st.cache_resource(show_spinner=False, max_entries=8)
def _queue(url: str, dataset: str, runs: tuple[str, ...] | None, versions: tuple,
           _records: list, _cases: dict) -> list[QueueItem]:
    """The dataset's queue items, built once per data version (``components.audit_cache``):
    a key press reruns the page but finds the queue already built. Shared: read-only."""
    labels = {cid: c.label for cid, c in _cases.items() if c.label}
    texts = {cid: " ".join([c.model_response, *(t.content for t in c.turns)])
             for cid, c in _cases.items()}
    return build_queue(_records, labels, dataset, texts)


@st.cache_resource(show_spinner=False, max_entries=4)
def _queue_list(dataset: str, versions: tuple, shown_keys: tuple, decided: tuple,
                _shown: list[QueueItem], _decisions: list[ReviewDecision]) -> pd.DataFrame:
    """The queue list's rows, built once per shown queue and decision state: a key press
    that only moves through the queue finds them built (1,000 rows cost ~0.1 s)."""
    return pd.DataFrame(queue_rows(dataset, _shown, _decisions, REASON_TEXT),
                        columns=list(QUEUE_COLUMNS))


def _decided(decisions: list[ReviewDecision]) -> tuple:
    # Decisions are only ever added: their number and the newest one identify the state.
    return (len(decisions), decisions[-1].created_at.isoformat() if decisions else "")


@st.fragment
def queue_panel(dataset: str, runs: list[str], reviewer: str) -> None:
    picked = tuple(runs) or None
    versions = audit_cache.versions(eng, dataset)  # read once: the queue is keyed on them
    cases = audit_cache.cases(eng, dataset, versions[1])
    items = _queue(str(eng.url), dataset, picked, versions,
                   audit_cache.records(eng, dataset, picked, versions[0]), cases)
    decisions = review_store.decisions_for(eng, dataset)
    cols = st.columns([3, 3, 2])
    reasons = cols[0].multiselect("Show verdicts where", REASONS, default=list(REASONS),
                                  format_func=REASON_TEXT.get, key="rv_reasons",
                                  help="clear to see every judged verdict")
    query = cols[1].text_input("Search", key="rv_query",
                               placeholder="case id, words of the conversation, reply or reason")
    status = cols[2].selectbox("Status", STATUSES, key="rv_status")
    queue = filter_queue(items, reasons)
    shown = filter_queue(queue, None, query, status, reviewer, decisions)
    progress = review_progress(queue, decisions, reviewer)
    st.progress(progress.share, text=f"{progress.reviewed} of {progress.total} reviewed "
                f"({progress.mine} by you)")
    show_agreement(items, decisions)
    queue_nav.show_flash("rv_flash")
    if not items:
        st.info("No judged verdict in these runs yet (traces audited with judge 'none' or "
                "failed have nothing to confirm).")
        return
    if not shown:
        st.success("Nothing in the queue matches these filters.")
        return
    with st.expander(f"Queue list ({len(shown)} verdicts): sort, filter, open on Replay"):
        show_case_table(_queue_list(dataset, versions, tuple(i.key for i in shown),
                                    _decided(decisions), shown, decisions),
                        key="rv_list", columns=QUEUE_COLUMNS)
    pos_key = f"rv_pos/{dataset}"
    wanted = links.fresh("position")  # ?position=N (1-based): reload keeps the place
    if wanted is not None and wanted.isdigit():
        st.session_state[pos_key] = int(wanted) - 1
    pos = queue_nav.position(pos_key, len(shown))
    links.publish("position", pos + 1)
    item = shown[pos]
    case = cases.get(item.case_id)
    with st.container(border=True, key="rv_card"):
        st.text(f"{pos + 1}/{len(shown)} · case {item.case_id} · {item.strategy} · run {item.run_id}")
    left, right = st.columns([1, 1])
    with left:
        show_case(case)
    with right:
        cited = item.trace.verdict is not None and item.trace.verdict.violated_rules
        show_verdict(item.trace, policy_index(eng) if cited else None, key=_item_key(item))
        st.text_input("Note (required to overturn)", key=f"rv_note_{_item_key(item)}",
                      placeholder="why; press Tab to leave the field, then a key")
        advance = status != "not reviewed by me"  # there a decided verdict leaves the list
        args = (reviewer, pos_key, len(shown), advance)
        may_decide = identity.permitted("decide reviews")
        buttons = st.columns(2)
        buttons[0].button("Confirm verdict", key="rv_confirm", shortcut=CONFIRM_KEY,
                          type="primary", on_click=_decide, args=(item, "confirm", *args),
                          disabled=not reviewer or not may_decide, width="stretch")
        buttons[1].button("Overturn verdict", key="rv_overturn", shortcut=OVERTURN_KEY,
                          on_click=_decide, args=(item, "overturn", *args),
                          disabled=not reviewer or not may_decide, width="stretch")
        queue_nav.nav_buttons("rv", pos_key, pos, len(shown), PREVIOUS_KEY, NEXT_KEY)
        queue_nav.key_legend([(CONFIRM_KEY.upper(), "confirm"), (OVERTURN_KEY.upper(), "overturn"),
                              (NEXT_KEY.upper(), "next"), (PREVIOUS_KEY.upper(), "previous")])
        show_item(item, case, decisions)


reviewer = identity.acting_name("Reviewer", "rv_reviewer", user_name())
if not reviewer:
    st.warning("Enter your name to record decisions.")
datasets = audit_repo.trace_datasets(eng)
with st.expander("Audit a dataset", expanded=not datasets):
    audit_panel()
with st.expander("Load a traces file"):
    load_panel()
datasets = audit_repo.trace_datasets(eng)
if not datasets:
    st.info("No audit traces yet: audit a dataset or load a traces file above.")
    st.stop()
top = st.columns([1, 2])
links.adopt("dataset", "rv_dataset", datasets)
dataset = top[0].selectbox("Dataset", datasets, key="rv_dataset")
links.publish("dataset", dataset)
runs = top[1].multiselect("Runs", audit_repo.runs(eng, dataset), key=f"rv_runs_{_safe(dataset)}",
                          placeholder="all runs (newest trace per case and strategy)")
queue_panel(dataset, runs, reviewer)
