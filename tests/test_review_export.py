"""Review → Export verdicts: the file the page offers is what `export-verdicts` writes,
decided under the dataset's saved setting."""

from __future__ import annotations

import json
from pathlib import Path

from store import audit_repo
from store.thresholds import save_threshold
from workbench.audit.trace_file import read_traces
from workbench.decision import DecisionSetting
from workbench.identity.roles import COMMAND_LINE


def test_the_review_page_exports_the_datasets_verdicts_as_otlp_and_langfuse(demo_db):
    from pages._review_export import _payload

    eng = demo_db[0]
    traces, _ = read_traces(Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "traces_cdg.jsonl")
    audit_repo.save_traces(eng, traces, "demo-cdg", "demo", actor=COMMAND_LINE)
    save_threshold(eng, "dataset:demo", DecisionSetting(0.3), base_version=None, actor=COMMAND_LINE)
    data, count, _notes = _payload(eng, "demo", [], "otlp")
    body = json.loads(data)
    records = body["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert count == len(records) == 21
    labels = {a["key"]: a["value"] for a in records[0]["attributes"]}
    assert labels["gen_ai.evaluation.score.label"]["stringValue"] in ("violation", "compliant")
    data, count, _ = _payload(eng, "demo", [], "langfuse")
    assert count > 0 and json.loads(data)["batch"][0]["type"] == "score-create"
    # Phoenix annotates spans: cases that did not come from OpenTelemetry are left out, said so
    _data, count, notes = _payload(eng, "demo", [], "phoenix")
    assert count == 0 and any("Phoenix annotates spans" in n for n in notes)
