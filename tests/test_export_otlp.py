"""Judged cases as OpenTelemetry ``gen_ai.evaluation.result`` events (issue 47 item 1).

The demo run's OTLP/JSON must decode with ``opentelemetry-proto`` into an
``ExportLogsServiceRequest`` (the protobuf schema, after the OTLP/JSON rule that trace and
span ids are hex, not base64), and a collector stand-in on 127.0.0.1 must receive the same
events over OTLP/HTTP (protobuf) from the SDK's exporter.
"""

from __future__ import annotations

import base64
import copy
import json

import pytest
from export_fixtures import DEMO_CASES, DEMO_TRACES, StandIn, demo_as_otel, ids_for
from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from workbench.audit.cases import load_cases
from workbench.audit.importers import ImportOptions, read_cases_file
from workbench.audit.trace_file import read_traces
from workbench.cli import main
from workbench.decision import DecisionSetting, decide
from workbench.export import ExportError, judged_cases, otlp_json, otlp_request, push_otlp


@pytest.fixture(autouse=True)
def _allow_the_stand_ins(monkeypatch):
    """The stand-ins listen on 127.0.0.1, which outbound posts refuse unless an admin allows it."""
    monkeypatch.setenv("WORKBENCH_OUTBOUND_ALLOW", "127.0.0.1")



def decode(data: dict) -> ExportLogsServiceRequest:
    """OTLP/JSON -> the protobuf message: hex ids back to the base64 of the JSON mapping, then
    ``json_format.Parse`` (unknown fields refused)."""
    data = copy.deepcopy(data)
    for resource in data["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    return Parse(json.dumps(data), ExportLogsServiceRequest())


def attrs(record) -> dict:
    out = {}
    for kv in record.attributes:
        which = kv.value.WhichOneof("value")
        value = getattr(kv.value, which)
        out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.values] \
            if which == "array_value" else value
    return out


def records(request) -> list:
    return [r for res in request.resource_logs for s in res.scope_logs for r in s.log_records]


@pytest.fixture
def demo():
    traces, problems = read_traces(DEMO_TRACES)
    assert not problems
    return traces, load_cases(DEMO_CASES)


def test_demo_otlp_json_decodes_with_opentelemetry_proto(demo):
    traces, cases = demo
    selection = judged_cases(traces, cases)
    assert len(selection.cases) == 21 and not selection.notes()
    data = otlp_json(otlp_request(selection.cases))
    request = decode(data)
    recs = records(request)
    assert len(recs) == 21
    by_case = {attrs(r)["skillcdg.case_id"]: r for r in recs}
    for t in traces:
        r = by_case[t.id]
        a = attrs(r)
        assert r.event_name == "gen_ai.evaluation.result"
        assert a["gen_ai.evaluation.name"] == "skillcdg.compliance"
        # The label and score are workbench.decision.decide's, under the default setting.
        d = decide(None, probability=t.verdict.probability, verdict=t.verdict.violation)
        assert a["gen_ai.evaluation.score.label"] == a["skillcdg.decision"] == str(d.outcome)
        assert a["gen_ai.evaluation.score.value"] == pytest.approx(d.probability)
        assert a["gen_ai.evaluation.explanation"] == t.verdict.reason
        assert a["skillcdg.skill"] == t.skills and a["skillcdg.decision.automatic"] is False
        assert not r.trace_id and not r.span_id  # the demo's cases did not come from OTel
    scope = request.resource_logs[0].scope_logs[0].scope
    assert scope.name == "skillcdg.workbench.export"
    service = {kv.key: kv.value.string_value for kv in request.resource_logs[0].resource.attributes}
    assert service["service.name"] == "skillcdg-workbench"
    # OTLP/JSON: enums as integers, ids (when present) as hex.
    first = data["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    assert isinstance(first["severityNumber"], int)


def test_a_threshold_and_a_guarantee_reach_the_event(demo):
    traces, cases = demo
    # 0.3 turns the demo's higher probabilities into violations; the guarantee's level 0.8
    # makes the confident ones automatic.
    setting = DecisionSetting(threshold=0.3, auto={"alpha": 0.1, "delta": 0.05, "level": 0.8, "bound": 0.09})
    recs = records(decode(otlp_json(otlp_request(judged_cases(traces, cases, setting).cases))))
    by_case = {attrs(r)["skillcdg.case_id"]: r for r in recs}
    seen = set()
    for t in traces:
        d = decide(setting, probability=t.verdict.probability, verdict=t.verdict.violation)
        r = by_case[t.id]
        a = attrs(r)
        # The decided record: a violation 0.3 decides over the judge's "compliant" has no rule
        # behind it yet, so it is to review (never a violation explained by "complies").
        assert a["gen_ai.evaluation.score.label"] == ("review" if d.violation else "compliant")
        assert a["skillcdg.decision.automatic"] is d.automatic
        assert a["skillcdg.decision.threshold"] == 0.3 and a["skillcdg.decision.guarantee.alpha"] == 0.1
        assert r.severity_text == ("WARN" if d.violation else "INFO")
        seen.add((d.outcome, d.automatic))
    assert len({o for o, _ in seen}) == 2 and len({a for _, a in seen}) == 2  # both kinds met


def test_cases_imported_from_otel_are_linked_to_their_span(tmp_path):
    traces_path, spans_path, renamed = demo_as_otel(tmp_path)
    imported = read_cases_file(spans_path, ImportOptions("otel")).cases
    assert {c.id for c in imported} == set(renamed.values())
    traces, _ = read_traces(traces_path)
    request = decode(otlp_json(otlp_request(judged_cases(traces, imported).cases)))
    recs = records(request)
    assert len(recs) == 21
    for r in recs:
        a = attrs(r)
        demo_id = next(k for k, v in renamed.items() if v == a["skillcdg.case_id"])
        trace_id, span_id = ids_for(demo_id)
        assert (r.trace_id.hex(), r.span_id.hex()) == (trace_id, span_id)
        assert a["gen_ai.response.id"] == f"resp-{demo_id}"


def test_violated_rules_carry_their_skill_and_source_span(demo):
    traces, cases = demo
    t = traces[0]
    rule = t.closure["airline-policy"][0]
    t.verdict.violation, t.verdict.violated_rules = True, [rule]
    t.verdict.probability, t.verdict.reason = 0.9, f"Breaks {rule}."
    start, end = t.unit_spans[rule]["spans"][0]
    a = attrs(records(decode(otlp_json(otlp_request(judged_cases([t], cases).cases))))[0])
    assert a["skillcdg.violated_rules"] == [rule]
    assert a["skillcdg.source_span"] == [f"airline-policy:{start}-{end}"]
    assert a["skillcdg.judge.violation"] is True


def _collector(received):
    def respond(got):
        assert got.path == "/v1/logs", got.path
        assert got.headers["content-type"] == "application/x-protobuf"
        ExportLogsServiceRequest.FromString(got.body)  # a malformed body fails here (422)
        return 200, ExportLogsServiceResponse().SerializeToString(), "application/x-protobuf"
    return respond


def test_a_collector_stand_in_receives_the_events_over_otlp_http(tmp_path, monkeypatch):
    traces_path, spans_path, renamed = demo_as_otel(tmp_path)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-collector-key=from-the-env")
    with StandIn(_collector(None)) as collector:
        traces, _ = read_traces(traces_path)
        cases = read_cases_file(spans_path, ImportOptions("otel")).cases
        assert push_otlp(judged_cases(traces, cases).cases, collector.url, timeout=10) == 21
    (got,) = collector.received
    assert got.headers["x-collector-key"] == "from-the-env"
    recs = records(ExportLogsServiceRequest.FromString(got.body))
    assert len(recs) == 21 and all(r.event_name == "gen_ai.evaluation.result" for r in recs)
    assert {r.span_id.hex() for r in recs} == {v.split("-")[1] for v in renamed.values()}


def test_a_collector_that_refuses_is_an_error_and_a_key_in_the_address_is_refused(demo):
    traces, cases = demo
    picked = judged_cases(traces[:2], cases).cases
    with StandIn(lambda got: (400, b"bad", "text/plain")) as collector:
        with pytest.raises(ExportError, match="0 of 2 evaluation events delivered.*answered 400"):
            push_otlp(picked, collector.url + "/v1/logs", timeout=5)
    with pytest.raises(ExportError, match="credential"):
        push_otlp(picked, "http://127.0.0.1:9/v1/logs?api_key=SECRET")


def test_the_command_writes_otlp_json_and_pushes(tmp_path, capsys):
    traces_path, spans_path, _ = demo_as_otel(tmp_path)
    out = tmp_path / "events.json"
    with StandIn(_collector(None)) as collector:
        rc = main(["export-verdicts", str(traces_path), "--cases", str(spans_path), "--cases-format",
                   "otel", "--format", "otlp", "--out", str(out), "--push", collector.url])
    assert rc == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "wrote 21 evaluation events (21 linked to their span)" in printed and "sent 21" in printed
    assert len(records(decode(json.loads(out.read_text())))) == 21
    assert len(collector.received) == 1
    # Nothing to do, a key in the address, no traces file: exit 2 with what to do.
    assert main(["export-verdicts", str(traces_path), "--format", "otlp"]) == 2
    assert main(["export-verdicts", str(traces_path), "--format", "otlp",
                 "--push", "http://user:SECRET@127.0.0.1:9"]) == 2
    assert main(["export-verdicts", str(tmp_path / "none.jsonl"), "--format", "otlp", "--out",
                 str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert "SECRET" not in err and "credential" in err and "no such traces file" in err
