"""Replay: one case, the trace step by step, the verdict with highlighted spans, and a
side-by-side comparison of two policy-access strategies."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from components import identity, links, queue_nav
from components.case_table import show_case_table
from components.conversation import show_conversation, show_response, show_state
from components.errors import show_error
from components.rerun_preview import show_rerun_preview
from components.safe import md
from components.trace_settings import show_trace_settings
from components.trace_view import show_steps
from components.verdict import decided_word, show_verdict
from pages import _audit_cache as audit_cache
from pages import _replay_rerun as rerun_steps
from pages._explain import find_rule_button
from pages._policy_cache import audit_index, policy_index
from pages._state import engine, model_gateway
from pages._thresholds import dataset_setting
from store import audit_repo
from workbench.audit import AuditTrace, CaseFormatError, case_from_dict
from workbench.decision import DecidedVerdict
from workbench.errors import WorkbenchError
from workbench.inputs import InputError, loads_json
from workbench.llm import load_config
from workbench.vocabulary import JudgeMode, KeywordMethod, StrategyName, values
from workbench.words import gold_word

STRATEGIES = list(values(StrategyName))

st.title("Replay")
eng = engine()
index = policy_index(eng)
if index is None:
    st.info("No SKILLs in the store yet. Run `make demo` or `workbench import fixtures/demo/index.json`.")
    st.stop()

PASTE = "(paste a case)"
sources = [*audit_repo.datasets(eng), PASTE]
top = st.columns([1, 2])
# ?dataset=&case=&run= : reload, back and shared links open this same case (issue #16).
missing_dataset = links.adopt("dataset", "replay_dataset", sources[:-1])
dataset = top[0].selectbox("Dataset", sources, key="replay_dataset")
links.publish("dataset", None if dataset == PASTE else dataset)
if missing_dataset:
    st.warning(md(f"The link names dataset “{missing_dataset}”, which is not stored; showing "
                  f"“{dataset}” instead."))
if dataset == PASTE:
    links.publish("case", None)
    raw = top[1].text_area("Case JSON (normalised schema: id, context, background, model_response, ...)",
                           key="replay_paste", height=150)
    if not raw.strip():
        st.stop()
    try:
        case = case_from_dict(loads_json(raw, "pasted case"), "pasted case")
    except (InputError, CaseFormatError) as exc:
        show_error(exc, lead="The pasted case cannot be used: ")
        st.stop()
else:
    cases = audit_cache.cases(eng, dataset)
    missing_case = links.adopt("case", "replay_case", list(cases))
    case_id = top[1].selectbox(
        "Case", list(cases), key="replay_case",
        format_func=lambda i: f"{i} — gold: {gold_word(cases[i].label)}")
    links.publish("case", case_id)
    # The dropdown alone did not scale to a dataset of hundreds of cases (issue #16): the
    # same choice from a list that filters, sorts and pages; selecting a row opens the case.
    with st.expander(f"Browse the {len(cases)} cases of {dataset} (filter, sort, pages)"):
        st.caption("Select a row to open that case.")
        # The filter also searches what was said: the conversation and the agent's reply.
        show_case_table(audit_cache.picker_frame(eng, dataset), key="replay_cases",
                        page_size=25, pick_into="replay_case", column_filters=("verdict", "gold"))
    if missing_case:
        st.warning(md(f"The link names case “{missing_case}”, which is not in {dataset}; "
                      f"showing {case_id} instead."))
    case = cases[case_id]

opts = st.columns(4)
strategy_a = opts[0].selectbox("Strategy", STRATEGIES, index=STRATEGIES.index(StrategyName.CDG),
                               key="replay_a")
strategy_b = opts[1].selectbox("Compare with", ["(none)", *STRATEGIES], key="replay_b")
judge_mode = opts[2].selectbox("Judge", values(JudgeMode), key="replay_judge")
keywords = opts[3].selectbox("Keywords", values(KeywordMethod), key="replay_keywords")

left, right = st.columns([1, 1])
with left:
    st.subheader("Conversation")
    show_conversation(case.turns)
    with st.expander("Environment state"):
        show_state(case.background)
    show_response(case.model_response)
    if case.label:
        st.caption(md(f"Gold label: {gold_word(case.label)}"))


# ?run= pins the traces shown to one stored run (a link from Evaluate or Review); without it
# the newest trace of any run is shown.
pinned_run = st.query_params.get("run") if dataset != PASTE else None
if pinned_run:
    st.caption(md(f"Showing the traces of run {pinned_run}."))


def preview_key(strategy: str) -> str:
    return f"replay_preview_{dataset}_{case.id}_{strategy}"


# The case's stored traces, read once per rerun (from the cache: no query per strategy).
# Unpinned, a newer trace without a verdict (a contexts-only run) does not hide the judged one.
stored_traces = {} if dataset == PASTE else audit_cache.case_traces(
    eng, dataset, case.id, pinned_run or None, prefer_judged=not pinned_run)
stored_verdicts = {} if dataset == PASTE else audit_cache.verdicts(eng, dataset)
# Which run each shown trace was stored in (the record's key holds the run).
_run_of = {} if dataset == PASTE else {
    id(t): run for run, t in audit_cache.records(eng, dataset) if t.id == case.id}


def stored(strategy: str) -> AuditTrace | None:
    if dataset == PASTE:  # a pasted case is never stored: its preview is all there is
        return st.session_state.get(preview_key(strategy))
    return stored_traces.get(strategy)


def preview(strategy: str) -> AuditTrace | None:
    return None if dataset == PASTE else st.session_state.get(preview_key(strategy))


def record(trace: AuditTrace | None) -> DecidedVerdict | None:
    """The stored trace's decided record, as Review and every list read it (None for a
    preview or a pasted case: the card builds one from the trace under the setting)."""
    if trace is None or id(trace) not in _run_of:
        return None
    return stored_verdicts.get((_run_of[id(trace)], trace.id, trace.strategy))


def model_config():
    """The gateway and its configuration when this re-run calls a model, else ``(None,
    None)``; a broken configuration is shown and stops the page."""
    if not rerun_steps.roles_called(keywords, judge_mode):
        return None, None
    try:
        gateway = model_gateway()
    except WorkbenchError as exc:  # LlmConfigError: say what to fix
        show_error(exc)
        st.stop()
    return gateway, gateway.config


def plan_config():
    """The model configuration for the estimate, when a model is called (a broken one gives
    no estimate here; pressing Run says what is wrong)."""
    if not rerun_steps.roles_called(keywords, judge_mode):
        return None
    try:
        return load_config()
    except WorkbenchError:
        return None


def run(strategies: list[str], plan) -> None:
    """Audit the case again as a preview (session only; see components/rerun_preview.py),
    the model's start-up first when needed, under progress bars."""
    gateway, config = model_config()
    try:
        traces = rerun_steps.rerun(eng, config, gateway, audit_index(eng), case, strategies,
                                   keywords, judge_mode, plan)
    except WorkbenchError as exc:  # the model could not start (EmbeddedModelUnavailable)
        show_error(exc, lead="The re-run did not start: ")
        return
    for strategy, trace in traces.items():
        st.session_state[preview_key(strategy)] = trace


def store(strategy: str, new: AuditTrace) -> None:
    """Keep a previewed trace, in a run of its own: never mixed into a batch run. (The
    cached traces follow by themselves: the stored row changes the data version.)"""
    run_id = f"replay-{case.id}-{strategy}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    try:
        audit_repo.save_trace(eng, new, run_id=run_id, dataset=dataset, actor=identity.actor())
    except WorkbenchError as exc:  # roles.NotAllowed: the store checks the role too
        show_error(exc)
        return
    st.session_state.pop(preview_key(strategy), None)
    queue_nav.leave_flash("replay_flash", "success", f"Stored the new {strategy} result as run {run_id}.")
    links.publish("run", None)  # show the newest trace, which is now this one
    st.rerun()


chosen = [strategy_a] + ([strategy_b] if strategy_b != "(none)" and strategy_b != strategy_a else [])
with right:
    st.subheader("Verdict")
    queue_nav.show_flash("replay_flash")
    plan = rerun_steps.plan(eng, plan_config(), case, chosen, keywords, judge_mode,
                            {s: stored(s) for s in chosen})
    st.caption(md(rerun_steps.plan_words(plan, chosen, keywords, judge_mode)))
    if st.button("Run audit (preview)" if stored(strategy_a) is None else "Re-run audit (preview)",
                 key="replay_run", type="primary"):
        run(chosen, plan)
    if dataset != PASTE:
        for s in chosen:
            new = preview(s)
            # Annotators preview a re-run but store no verdict (workbench.identity.roles).
            may_store = identity.allowed("store audit results")
            if new is not None and show_rerun_preview(s, stored(s), new, key=s, may_store=may_store):
                store(s, new)
    trace_a = stored(strategy_a) or preview(strategy_a)
    if trace_a is None:
        st.info("No stored trace for this case and strategy yet: press Run audit.")
    else:
        if stored(strategy_a) is None and dataset != PASTE:
            st.caption("Below: the new result (a preview, not stored).")
        saved = None if dataset == PASTE else dataset_setting(eng, dataset)
        setting = saved[1] if saved else None
        # The gold label's disagreement with the decision is a warning on the card itself.
        shown_a = record(stored(strategy_a))
        show_verdict(trace_a, index, key="a", reply=case.model_response, setting=setting,
                     gold=case.label, verdict=shown_a, version=saved[0] if saved else None)
        if dataset != PASTE and find_rule_button(eng, dataset, shown_a, stored(strategy_a), case,
                                                 "a"):
            st.rerun()
        show_trace_settings(trace_a)
        newer = None if dataset == PASTE or stored(strategy_a) is None else \
            audit_cache.newer_unjudged(eng, dataset, case.id, trace_a)
        if newer is not None:
            st.caption(md(f"A newer trace of {trace_a.strategy} without a verdict (run "
                          f"{newer}, contexts only) is not shown here: it has nothing to "
                          "replace this verdict with."))

if trace_a is not None:
    if len(chosen) == 2:
        st.subheader("Side by side")
        cols = st.columns(2)
        for col, s in zip(cols, chosen, strict=True):
            t = stored(s) or preview(s)
            with col:
                st.markdown(f"**{md(s)}**")
                if t is None:
                    st.info("No trace yet for this strategy: press Run audit.")
                    continue
                c1, c2 = st.columns(2)
                c1.metric("Context tokens", t.context_tokens)
                shown_t = record(stored(s))
                c2.metric("Verdict", decided_word(t, setting, shown_t) or "–")
                show_verdict(t, index, key=f"side_{s}", reply=case.model_response, setting=setting,
                             gold=case.label, verdict=shown_t, version=saved[0] if saved else None)
    st.subheader("Trace")
    show_steps(trace_a, index, key="a")
