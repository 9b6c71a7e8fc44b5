"""Verdicts as Langfuse scores and Phoenix span annotations (issue 47 item 2).

The payloads are checked against the published request schemas, transcribed here as JSON
Schema (required fields and types; unknown fields refused, stricter than the servers):

- Langfuse: ``IngestionRequest`` / ``ScoreEvent`` / ``ScoreBody`` of
  ``fern/apis/server/definition/ingestion.yml`` (langfuse/langfuse @ 96e70fd), the server API
  behind ``POST /api/public/ingestion``; ``ScoreDataType`` NUMERIC | BOOLEAN | CATEGORICAL, the
  value "a string for categorical scores, numeric for boolean and numeric scores".
- Phoenix: ``AnnotateSpansRequestBody`` / ``SpanAnnotationData`` / ``AnnotationResult`` of
  ``schemas/openapi.json`` (Arize-ai/phoenix, arize-phoenix v20.3.0), ``POST /v1/span_annotations``.

Each is also pushed to a stand-in on 127.0.0.1 that validates the same schema, checks the
key reached it from the environment, and answers as the real service does (207 with
successes/errors; 200 with the inserted ids).
"""

from __future__ import annotations

import base64
import json

import jsonschema
import pytest
from export_fixtures import DEMO_CASES, DEMO_TRACES, StandIn, demo_as_otel, ids_for

from workbench.audit.cases import load_cases
from workbench.audit.importers import ImportOptions, read_cases_file
from workbench.audit.trace_file import read_traces
from workbench.cli import main
from workbench.decision import DecisionSetting, decide, decided_verdict
from workbench.export import (
    ExportError,
    judged_cases,
    langfuse_payload,
    phoenix_payload,
    push_langfuse,
    push_phoenix,
)

_STR = {"type": "string"}
SCORE_BODY = {
    "type": "object", "additionalProperties": False, "required": ["name", "value"],
    "properties": {
        "id": _STR, "traceId": _STR, "sessionId": _STR, "observationId": _STR, "datasetRunId": _STR,
        "name": _STR, "environment": _STR, "value": {"type": ["number", "string"]}, "comment": _STR,
        "metadata": {}, "dataType": {"enum": ["NUMERIC", "BOOLEAN", "CATEGORICAL"]}, "configId": _STR,
    },
    "allOf": [
        {"if": {"properties": {"dataType": {"const": "CATEGORICAL"}}, "required": ["dataType"]},
         "then": {"properties": {"value": {"type": "string"}}}},
        {"if": {"properties": {"dataType": {"enum": ["NUMERIC", "BOOLEAN"]}}, "required": ["dataType"]},
         "then": {"properties": {"value": {"type": "number"}}}},
    ],
}
LANGFUSE_INGESTION = {
    "type": "object", "additionalProperties": False, "required": ["batch"],
    "properties": {
        "metadata": {},
        "batch": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["id", "timestamp", "type", "body"],
            "properties": {"id": _STR, "timestamp": _STR, "metadata": {},
                           "type": {"const": "score-create"}, "body": SCORE_BODY},
        }},
    },
}
_NULLABLE = lambda t: {"anyOf": [{"type": t}, {"type": "null"}]}  # noqa: E731
PHOENIX_SPAN_ANNOTATIONS = {
    "type": "object", "additionalProperties": False, "required": ["data"],
    "properties": {"data": {"type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "required": ["name", "annotator_kind", "span_id"],
        "properties": {
            "name": _STR, "annotator_kind": {"enum": ["LLM", "CODE", "HUMAN"]},
            "result": {"anyOf": [{"type": "null"}, {
                "type": "object", "additionalProperties": False,
                "properties": {"label": _NULLABLE("string"), "score": _NULLABLE("number"),
                               "explanation": _NULLABLE("string")}}]},
            "metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
            "identifier": _STR, "span_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        },
    }}},
}


@pytest.fixture(autouse=True)
def _allow_the_stand_ins(monkeypatch):
    """The stand-ins listen on 127.0.0.1, which outbound posts refuse unless an admin allows it."""
    monkeypatch.setenv("WORKBENCH_OUTBOUND_ALLOW", "127.0.0.1")



def validate(payload, schema) -> None:
    jsonschema.Draft202012Validator(schema).validate(payload)


@pytest.fixture
def demo():
    traces, problems = read_traces(DEMO_TRACES)
    assert not problems
    return traces, load_cases(DEMO_CASES)


@pytest.fixture
def demo_otel(tmp_path):
    traces_path, spans_path, renamed = demo_as_otel(tmp_path)
    traces, _ = read_traces(traces_path)
    cases = read_cases_file(spans_path, ImportOptions("otel")).cases
    return traces, cases, renamed, traces_path, spans_path


def test_the_schemas_refuse_what_the_services_refuse():
    good = {"batch": [{"id": "e", "timestamp": "2026-01-01T00:00:00.000Z", "type": "score-create",
                       "body": {"name": "n", "value": "violation", "dataType": "CATEGORICAL"}}]}
    validate(good, LANGFUSE_INGESTION)
    for bad in ({"name": "n"},  # no value
                {"name": "n", "value": 0.3, "dataType": "CATEGORICAL"},  # categorical as number
                {"name": "n", "value": "x", "dataType": "NUMERIC"},
                {"name": "n", "value": 1, "trace_id": "t"}):  # a misspelt field
        with pytest.raises(jsonschema.ValidationError):
            validate({"batch": [{**good["batch"][0], "body": bad}]}, LANGFUSE_INGESTION)
    with pytest.raises(jsonschema.ValidationError):
        validate({"data": [{"name": "n", "annotator_kind": "JUDGE", "span_id": "00f067aa0ba902b7"}]},
                 PHOENIX_SPAN_ANNOTATIONS)
    with pytest.raises(jsonschema.ValidationError):  # a span id must be 16 hex digits
        validate({"data": [{"name": "n", "annotator_kind": "LLM", "span_id": "case-1"}]},
                 PHOENIX_SPAN_ANNOTATIONS)


def test_demo_langfuse_payload_follows_the_ingestion_schema(demo):
    traces, cases = demo
    setting = DecisionSetting(threshold=0.3)
    payload = langfuse_payload(judged_cases(traces, cases, setting).cases)
    validate(payload, LANGFUSE_INGESTION)
    batch = payload["batch"]
    assert len(batch) == 42 and len({e["id"] for e in batch}) == 42  # envelope ids unique
    by = {(e["body"]["traceId"], e["body"]["name"]): e["body"] for e in batch}
    for t in traces:
        d = decide(setting, probability=t.verdict.probability, verdict=t.verdict.violation)
        label = by[(t.id, "skillcdg.compliance")]  # not from OTel: the case id names the trace
        # The decided record's label: the demo's judge said compliant everywhere, so a case
        # 0.3 decides a violation has no rule behind it yet and is to review, saying why.
        record = decided_verdict(t, saved=(0, setting))
        assert label["value"] == record.label == ("review" if d.violation else "compliant")
        assert label["comment"] == record.reason
        assert (label["comment"] == t.verdict.reason) is not d.violation
        assert label["metadata"]["threshold"] == 0.3 and "observationId" not in label
        assert by[(t.id, "skillcdg.violation_probability")]["value"] == pytest.approx(d.probability)
    # Exporting again updates the same scores (the body id upserts), with new envelopes.
    again = langfuse_payload(judged_cases(traces, cases, setting).cases)
    assert [e["body"]["id"] for e in again["batch"]] == [e["body"]["id"] for e in batch]


def test_langfuse_scores_land_on_the_otel_trace_and_observation(demo_otel):
    traces, cases, renamed, *_ = demo_otel
    payload = langfuse_payload(judged_cases(traces, cases).cases)
    validate(payload, LANGFUSE_INGESTION)
    for demo_id in renamed:
        trace_id, span_id = ids_for(demo_id)
        bodies = [e["body"] for e in payload["batch"] if e["body"]["traceId"] == trace_id]
        assert len(bodies) == 2 and {b["observationId"] for b in bodies} == {span_id}


def _langfuse(received_keys):
    def respond(got):
        assert got.path == "/api/public/ingestion", got.path
        user, _, password = base64.b64decode(got.headers["authorization"].removeprefix("Basic ")) \
            .decode().partition(":")
        received_keys.append((user, password))
        payload = json.loads(got.body)
        validate(payload, LANGFUSE_INGESTION)
        answer = {"successes": [{"id": e["id"], "status": 201} for e in payload["batch"]], "errors": []}
        return 207, json.dumps(answer).encode(), "application/json"
    return respond


def test_langfuse_round_trip_through_a_stand_in(demo_otel):
    traces, cases, *_ = demo_otel
    payload = langfuse_payload(judged_cases(traces, cases).cases)
    keys: list = []
    env = {"LANGFUSE_PUBLIC_KEY": "pk-lf-test", "LANGFUSE_SECRET_KEY": "sk-lf-test"}
    with StandIn(_langfuse(keys)) as langfuse:
        assert push_langfuse(payload, langfuse.url, env=env, timeout=10) == 42
        with pytest.raises(ExportError, match="LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"):
            push_langfuse(payload, langfuse.url, env={}, timeout=10)
    assert keys == [("pk-lf-test", "sk-lf-test")]
    # Langfuse reports refused events inside a 207: that is an error, not a success.
    refuse = lambda got: (207, json.dumps({"successes": [], "errors": [  # noqa: E731
        {"id": "x", "status": 400, "message": "Invalid request data"}]}).encode(), "application/json")
    with StandIn(refuse) as langfuse, pytest.raises(ExportError, match="refused 1 of 42.*Invalid request"):
        push_langfuse(payload, langfuse.url + "/api/public/ingestion", env=env, timeout=10)
    with pytest.raises(ExportError, match="credential"):
        push_langfuse(payload, "https://pk:sk@cloud.langfuse.com", env=env)


def test_demo_phoenix_payload_follows_the_span_annotations_schema(demo_otel, demo):
    traces, cases, renamed, *_ = demo_otel
    payload, unlinked = phoenix_payload(judged_cases(traces, cases).cases)
    validate(payload, PHOENIX_SPAN_ANNOTATIONS)
    assert not unlinked and len(payload["data"]) == 21
    spans = {ids_for(d)[1]: d for d in renamed}
    demo_traces = {t.id: t for t in demo[0]}
    for a in payload["data"]:
        t = demo_traces[spans[a["span_id"]]]
        d = decide(None, probability=t.verdict.probability, verdict=t.verdict.violation)
        assert a["result"] == {"label": str(d.outcome), "score": pytest.approx(d.probability),
                               "explanation": t.verdict.reason}
        assert a["annotator_kind"] == "LLM" and a["identifier"] == "skillcdg:cdg"
    # Cases that did not come from OTel have no span to annotate: left out, named.
    payload, unlinked = phoenix_payload(judged_cases(*demo).cases)
    assert payload == {"data": []} and len(unlinked) == 21


def _phoenix(keys):
    def respond(got):
        assert got.path == "/v1/span_annotations", got.path
        keys.append(got.headers.get("authorization"))
        payload = json.loads(got.body)
        validate(payload, PHOENIX_SPAN_ANNOTATIONS)
        ids = [{"id": f"U3BhbkFubm90YXRpb246{i}"} for i, _ in enumerate(payload["data"])]
        return 200, json.dumps({"data": ids}).encode(), "application/json"
    return respond


def test_phoenix_round_trip_through_a_stand_in(demo_otel):
    traces, cases, *_ = demo_otel
    payload, _ = phoenix_payload(judged_cases(traces, cases).cases)
    keys: list = []
    with StandIn(_phoenix(keys)) as phoenix:
        assert push_phoenix(payload, phoenix.url, env={"PHOENIX_API_KEY": "px-test"}, timeout=10) == 21
        assert push_phoenix(payload, phoenix.url + "/v1/span_annotations", env={}, timeout=10) == 21
    assert keys == ["Bearer px-test", None]
    with StandIn(lambda got: (422, b'{"detail": "span_id missing"}', "application/json")) as phoenix, \
            pytest.raises(ExportError, match="422.*span_id missing"):
        push_phoenix(payload, phoenix.url, env={}, timeout=10)


def test_the_command_writes_and_pushes_langfuse_and_phoenix(demo_otel, tmp_path, capsys, monkeypatch):
    _traces, _cases, _renamed, traces_path, spans_path = demo_otel
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-cli")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-cli")
    monkeypatch.delenv("PHOENIX_API_KEY", raising=False)
    base = ["export-verdicts", str(traces_path), "--cases", str(spans_path), "--cases-format", "otel"]
    keys: list = []
    with StandIn(_langfuse(keys)) as langfuse:
        out = tmp_path / "langfuse.json"
        assert main([*base, "--format", "langfuse", "--out", str(out), "--push", langfuse.url]) == 0
    validate(json.loads(out.read_text()), LANGFUSE_INGESTION)
    assert keys == [("pk-lf-cli", "sk-lf-cli")]
    with StandIn(_phoenix([])) as phoenix:
        out = tmp_path / "phoenix.json"
        assert main([*base, "--format", "phoenix", "--out", str(out), "--push", phoenix.url]) == 0
    validate(json.loads(out.read_text()), PHOENIX_SPAN_ANNOTATIONS)
    printed = capsys.readouterr().out
    assert "sent 42 scores" in printed and "sent 21 span annotations" in printed
    # The demo's own cases have no span: Phoenix has nothing to annotate (exit 2, what to do).
    assert main(["export-verdicts", str(DEMO_TRACES), "--cases", str(DEMO_CASES), "--format",
                 "phoenix", "--out", str(tmp_path / "p.json")]) == 2
    assert "--cases-format otel" in capsys.readouterr().err
    assert main([*base, "--format", "langfuse", "--push", "http://127.0.0.1:9/?token=sk"]) == 2
