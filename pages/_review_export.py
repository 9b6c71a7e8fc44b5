"""Review → *Export verdicts*: the dataset's verdicts (newest per case and strategy, of the
chosen runs) as OpenTelemetry evaluation events, Langfuse scores or Phoenix span annotations,
each the decided record the cards show (label, rule, words, reason, review) — the same files
`workbench export-verdicts` writes. Page-private: it reads the store."""

from __future__ import annotations

import json

import streamlit as st
from sqlalchemy.engine import Engine

from components.safe import md
from pages import _audit_cache as audit_cache
from pages._thresholds import dataset_setting
from workbench.errors import WorkbenchError

FORMATS = {
    "OpenTelemetry (OTLP/JSON, gen_ai.evaluation.result events)": "otlp",
    "Langfuse (scores, public ingestion batch)": "langfuse",
    "Arize Phoenix (span annotations)": "phoenix",
}


def export_panel(eng: Engine, dataset: str, runs: list[str]) -> None:
    with st.expander("Export verdicts"):
        label = st.selectbox("Format", list(FORMATS), key="rv_export_format")
        fmt = FORMATS[label]
        key = (dataset, tuple(runs), fmt)
        # Built on request only: the queue's keys rerun this page, and a key press must not
        # read and encode every verdict of the dataset again.
        if st.button("Prepare the file", key="rv_export_prepare"):
            try:
                st.session_state["rv_export"] = (key, *_payload(eng, dataset, runs, fmt))
            except WorkbenchError as exc:
                st.warning(md(str(exc)))
                return
        ready = st.session_state.get("rv_export")
        if not ready or ready[0] != key:
            return
        _key, data, count, notes = ready
        for note in notes:
            st.caption(md(note))
        if not count:
            st.info("No judged verdict to export in this selection.")
            return
        st.download_button(f"Download {count} verdict{'s' if count != 1 else ''}", data,
                           file_name=f"{dataset}-verdicts-{fmt}.json", mime="application/json",
                           key="rv_export_download")
        st.caption("Post the file to the service, or push it with `workbench export-verdicts "
                   "... --push URL` (the key comes from the environment, never the command line).")


def _payload(eng: Engine, dataset: str, runs: list[str], fmt: str) -> tuple[bytes, int, list[str]]:
    from workbench.audit.trace import latest_per_case
    from workbench.export import judged_cases, langfuse_payload, otlp_json, otlp_request, phoenix_payload

    records = audit_cache.records(eng, dataset, runs or None)  # cached per data version
    newest = latest_per_case(records, key=lambda r: r[1].id)
    traces = [t for _run, t in newest]
    saved = dataset_setting(eng, dataset)
    setting = saved[1] if saved else None
    # The decided records the cards show: the file says what the pages say.
    stored = audit_cache.verdicts(eng, dataset)
    verdicts = {(t.id, t.strategy): v for run, t in newest
                if (v := stored.get((run, t.id, t.strategy))) is not None}
    chosen = judged_cases(traces, audit_cache.cases(eng, dataset), setting, verdicts=verdicts)
    notes, count = chosen.notes(), len(chosen.cases)
    if fmt == "otlp":
        body = otlp_json(otlp_request(chosen.cases))
    elif fmt == "langfuse":
        body = langfuse_payload(chosen.cases)
    else:
        body, unlinked = phoenix_payload(chosen.cases)
        count -= len(unlinked)
        if unlinked:
            notes.append(f"{len(unlinked)} verdicts left out: Phoenix annotates spans, and their "
                         "cases did not come from OpenTelemetry spans (import them with "
                         "--format otel to keep the link)")
    return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"), count, notes
