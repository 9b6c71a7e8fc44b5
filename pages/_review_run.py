"""The Review page's ways in: store a cases file, audit a stored dataset in a batch run
(resumable: a run's stored traces are what it skips), or load a traces file. Page-private:
it talks to the store."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity
from components.errors import show_error
from components.safe import md
from pages import _audit_cache as audit_cache
from pages._policy_cache import audit_index, policy_index
from pages._state import model_gateway
from store import audit_repo
from workbench.audit import AuditOptions
from workbench.audit.batch import AuditBatch
from workbench.audit.cases import CaseFormatError
from workbench.audit.importers import FORMAT_HELP, FORMATS, ImportOptions, parse_cases_upload
from workbench.audit.strategies import CONTEXT_FORMS
from workbench.audit.trace_file import read_traces
from workbench.errors import WorkbenchError, is_fatal
from workbench.inputs import InputError, decode_text
from workbench.vocabulary import JudgeMode, KeywordMethod, StrategyName, values

SOURCES = ("A stored dataset", "Upload a cases file")


def safe_key(text: str) -> str:
    """``text`` as a widget-key-safe word."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def store_uploaded_cases(eng: Engine) -> None:
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
    # Storing a case again under its id replaces it, gold label included (workbench.identity.roles).
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


def run_batch(eng: Engine, dataset: str, strategy: str, keywords: str, judge_mode: JudgeMode, run_id: str,
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
    batch = AuditBatch.configure(strategy, AuditOptions(keywords=keywords, judge_mode=judge_mode)
                                 .with_context(**CONTEXT_FORMS.get(context, {})))
    pending = batch.pending(cases, sink)
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
        gateway = model_gateway() if batch.needs_model else None
        summary = batch.run(cases, audit_index(eng), sink, gateway, concurrency=1,
                            on_trace=on_trace)
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


def audit_panel(eng: Engine) -> None:
    stored = audit_repo.datasets(eng)
    source = st.radio("Cases", SOURCES, horizontal=True, key="rv_cases_source",
                      index=0 if stored else 1)
    if source == SOURCES[1]:
        store_uploaded_cases(eng)
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
            run_batch(eng, dataset, strategy, keywords, judge_mode, run_id.strip(), context)


def load_panel(eng: Engine) -> None:
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
