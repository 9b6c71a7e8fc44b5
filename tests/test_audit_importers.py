"""Importers (issue 34): each format's fixture (hand-written from the format's public
definition, see fixtures/importers/README.md) imports into cases, one per assistant reply,
with tool calls and results kept as turns; bad files are refused with where and what to fix,
and nothing of them is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.audit.cases import case_from_dict
from workbench.audit.importers import (
    ImportFormatError,
    ImportOptions,
    parse_cases_upload,
    read_cases_file,
)
from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "importers"
AIRLINE = ("airline=airline-policy",)
QA_MAP = "id=ticket,history=conversation,reply=bot_answer,label=qa_result,skills=policy_name"


def _read(name: str, **kw):
    return read_cases_file(FIX / name, ImportOptions(**kw))


def _roundtrip(cases):
    """Imported cases are cases of the schema: they survive its own validating reader."""
    for c in cases:
        again = case_from_dict(json.loads(json.dumps(c.to_dict())), "roundtrip")
        assert again.to_dict() == c.to_dict()


# -- one test per format, on a file of that shape -----------------------------------------

def test_tau2_results_file_one_case_per_agent_message_with_tool_turns():
    result = _read("tau2_airline_results.json", format="tau2", policies=AIRLINE)
    cases = {c.id: c for c in result.cases}
    sim = "5f0c2a8e-7d41-4b6e-9c1a-1e2b3c4d5e6f"
    assert [c.id for c in result.cases[:5]] == [f"{sim}:{i}" for i in (0, 2, 4, 6, 8)]
    assert len(result.cases) == 7 and result.notes == []
    cancel = cases[f"{sim}:6"]
    assert cancel.model_response == '[tool call] cancel_reservation {"reservation_id": "NQ7TZB"}'
    assert cancel.skills == ["airline-policy"] and cancel.session == sim
    roles = [t.role for t in cancel.turns]
    assert roles == ["assistant", "user", "assistant", "tool", "assistant", "user"]
    lookup = cancel.turns[3].content
    assert lookup.startswith("[tool result] get_reservation_details: ") and '"basic_economy"' in lookup
    assert cancel.extra["tau2"] == {"simulation_id": sim, "task_id": "wb-cancel-basic-economy",
                                    "trial": 0, "domain": "airline",
                                    "termination_reason": "user_stop", "reward": 0.0}
    assert cancel.label is None  # a task reward is not a verdict on one reply
    _roundtrip(result.cases)


def test_tau2_domain_without_a_mapping_is_reported_not_guessed():
    result = _read("tau2_airline_results.json", format="tau2")
    assert all(c.skills is None for c in result.cases)
    assert result.notes == ["policy 'airline' names no SKILL; its cases are routed by keywords "
                            "(map it: --policy airline=SKILL)"]
    known = _read("tau2_airline_results.json", format="tau2", known=["airline", "retail"])
    assert {tuple(c.skills) for c in known.cases} == {("airline",)} and known.notes == []


def test_openai_chat_jsonl_keeps_tool_calls_and_labels_the_last_reply():
    result = _read("openai_chat.jsonl", format="openai", policies=AIRLINE)
    ids = [c.id for c in result.cases]
    assert ids == ["chat-7f3a:2", "chat-7f3a:4", "chat-80b1:1"]
    call, offer, bags = result.cases
    assert call.model_response == '[tool call] get_reservation_details {"reservation_id": "Z7KQ2M"}'
    assert [t.role for t in offer.turns] == ["user", "assistant", "tool"]  # the system prompt is not history
    assert offer.turns[2].content.startswith("[tool result] get_reservation_details: {")
    assert offer.extra["system"]["chars"] == len("You are an airline customer service agent. "
                                                 "Follow the airline policy.")
    assert (call.label, offer.label, bags.label) == (None, "negative", None)
    assert offer.session == "support-2025-06-03-0042" and offer.skills == ["airline-policy"]
    assert bags.turns[0].content.startswith("What's the checked bag allowance")  # content parts
    _roundtrip(result.cases)


def test_otel_otlp_json_new_and_openllmetry_attributes():
    result = _read("otel_genai_spans.jsonl", format="otel", policies=AIRLINE)
    semconv, llmetry = result.cases  # the agent and tool spans carry no messages
    assert semconv.id == "4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8"
    assert semconv.session == "conv_mei_tan_0603"
    assert semconv.model_response.startswith("I'm sorry about the delay. As a gesture")
    assert [t.role for t in semconv.turns] == ["user", "assistant", "tool"]
    assert semconv.turns[1].content == '[tool call] get_user_details {"user_id": "mei_tan_4471"}'
    assert '"membership": "regular"' in semconv.turns[2].content
    assert semconv.extra["otel"]["gen_ai.response.id"] == "chatcmpl-wb-001"
    assert llmetry.turns[0].content.startswith("Please change my basic economy flight")
    assert llmetry.model_response.startswith("I'm sorry, basic economy flights cannot be modified")
    assert {tuple(c.skills) for c in result.cases} == {("airline-policy",)}
    _roundtrip(result.cases)


def test_otel_sdk_console_spans_with_semconv_1_28_events():
    [case] = _read("otel_sdk_console.json", format="otel", policies=AIRLINE).cases
    assert case.id == "5b8aa5a2d2c872e8321cf37308d69df2-051581bf3cb55c13"
    assert case.model_response == ('[tool call] book_reservation {"cabin": "economy", '
                                   '"flight_number": "HAT090", "user_id": "noah_berg_5520"}')
    assert [t.role for t in case.turns] == ["user"] and "HAT090" in case.turns[0].content


def test_csv_with_a_column_mapping():
    result = _read("qa_export.csv", format="map", column_map=QA_MAP)
    a, b = result.cases
    assert (a.id, a.label, b.id, b.label) == ("T-1041", "positive", "T-1042", "negative")
    assert b.skills == ["airline-policy"] and [t.role for t in b.turns] == ["user", "assistant"]
    assert b.model_response.startswith("Your flight was cancelled, so I've added a $100")
    _roundtrip(result.cases)


def test_jsonl_with_a_column_mapping_and_dotted_paths():
    text = "\n".join(json.dumps(r) for r in [
        {"rid": 5, "out": {"text": "No refund, sorry."}, "conv": "customer: refund?", "extra": 1},
        {"rid": 6, "out": {"text": "Done."}, "conv": [{"role": "customer", "content": "cancel"}]},
    ])
    result = parse_cases_upload(text.encode(), "export.jsonl", ImportOptions(
        "map", "id=rid,reply=out.text,history=conv", ("airline-policy",)))
    first, second = result.cases
    assert (first.id, first.model_response, first.context) == ("5", "No refund, sorry.", "customer: refund?")
    assert first.extra["columns"] == {"extra": 1} and first.skills == ["airline-policy"]
    assert [(t.role, t.content) for t in second.turns] == [("user", "cancel")]


# -- bad files: where and what to fix ------------------------------------------------------

@pytest.mark.parametrize("fmt,data,origin,expected", [
    ("openai", b'{"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]}\n',
     "log.jsonl", "log.jsonl:1: messages[1]: role 'robot' is not a chat role"),
    ("openai", b'{"messages": []}\n{"messages": [{"role": "assistant", "content": "ok"}]}\n{"x": 1}\n',
     "log.jsonl", "log.jsonl:3: not a chat conversation"),
    ("openai", b'{"messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]}\n', "log.jsonl",
     "log.jsonl:1: messages[0].tool_calls[0]: a tool call needs function.name"),
    ("tau2", b'{"simulations": [{"id": "s1", "messages": [{"role": "assistant", "content": 7}]}]}',
     "run.json", "run.json: simulations[0] (id 's1').messages[0]: 'content' must be a string or null"),
    ("tau2", b'{"messages": []}\n{"messages": []}\n', "run.json", "run.json:2: not valid JSON: Extra data"),
    ("tau2", b'{"simulations": [{"messages": []}]}', "run.json",
     "run.json: simulations[0]: the simulation has no 'id'"),
    ("otel", b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s", '
     b'"attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": "not json"}}]}]}]}]}',
     "spans.json", "gen_ai.input.messages is a string but not JSON"),
    ("otel", b'{"hello": 1}', "spans.json", "spans.json:1: not an OpenTelemetry span export"),
    ("map", b"a,b\n1,2\n", "x.csv", "--map does not say"),
])
def test_bad_files_name_where_and_the_fix(fmt, data, origin, expected):
    column_map = "id=a" if fmt == "map" else None
    with pytest.raises(ImportFormatError) as err:
        parse_cases_upload(data, origin, ImportOptions(fmt, column_map))
    assert expected in str(err.value)
    assert err.value.hint  # every refusal says what to do


def test_csv_problems_name_the_line():
    bad = b'ticket,answer\nT1,"fine"\nT2,"unclosed\n'
    with pytest.raises(ImportFormatError, match=r"x\.csv:\d+: "):
        parse_cases_upload(bad, "x.csv", ImportOptions("map", "id=ticket,reply=answer"))
    with pytest.raises(ImportFormatError, match=r"x\.csv:1: no column 'reply_text'"):
        parse_cases_upload(b"ticket,answer\nT1,ok\n", "x.csv", ImportOptions("map", "reply=reply_text"))
    with pytest.raises(ImportFormatError, match=r"x\.csv:3: duplicate case id 'T1'"):
        parse_cases_upload(b"ticket,answer\nT1,ok\nT1,ok\n", "x.csv",
                           ImportOptions("map", "id=ticket,reply=answer"))
    with pytest.raises(ImportFormatError, match=r"x\.csv:2: .*label 'maybe' is not a label"):
        parse_cases_upload(b"answer,gold\nok,maybe\n", "x.csv",
                           ImportOptions("map", "reply=answer,label=gold"))


def test_a_foreign_encoding_is_the_input_layers_error():
    with pytest.raises(Exception, match=r"re-save it as UTF-8"):
        parse_cases_upload('{"messages": [{"role": "assistant", "content": "café"}]}\n'.encode("utf-16"),
                           "log.jsonl", ImportOptions("openai"))


def test_nothing_to_audit_is_an_error_not_an_empty_dataset():
    with pytest.raises(ImportFormatError, match="no reply to audit"):
        parse_cases_upload(b'{"messages": [{"role": "user", "content": "hi"}]}\n', "log.jsonl",
                           ImportOptions("openai"))


def test_options_refuse_what_does_not_fit():
    with pytest.raises(ImportFormatError, match="--map is for --format map"):
        ImportOptions("openai", "reply=x")
    with pytest.raises(ImportFormatError, match="--policy is for the other formats"):
        ImportOptions("cases", policies=("a",))
    with pytest.raises(ImportFormatError, match="both sides"):
        parse_cases_upload(b"{}", "x.json", ImportOptions("tau2", policies=("airline=",)))


# -- the commands ----------------------------------------------------------------------------

def test_import_cases_stores_nothing_of_a_file_with_one_bad_record(tmp_path, capsys):
    from store import audit_repo
    from store.db import make_engine

    db = f"sqlite:///{tmp_path / 'wb.db'}"
    lines = (FIX / "openai_chat.jsonl").read_text().splitlines()
    bad = tmp_path / "log.jsonl"
    bad.write_text(lines[0] + "\n" + '{"messages": [{"role": "assistant", "content": 5}]}\n')
    assert main(["import-cases", str(bad), "--dataset", "d", "--db", db, "--format", "openai"]) == 2
    assert f"{bad}:2: messages[0]" in capsys.readouterr().err
    assert audit_repo.load_cases(make_engine(db), "d") == []
    assert main(["import-cases", str(FIX / "tau2_airline_results.json"), "--dataset", "d", "--db", db,
                 "--format", "tau2", "--policy", "airline=airline-policy"]) == 0
    assert len(audit_repo.load_cases(make_engine(db), "d")) == 7


def test_convert_cases_from_a_foreign_format_to_the_case_schema(tmp_path):
    out = tmp_path / "qa.jsonl"
    assert main(["convert", "cases", str(FIX / "qa_export.csv"), str(out), "--map", QA_MAP]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["T-1041", "T-1042"] and rows[1]["label"] == "negative"
    assert main(["convert", "traces", str(out), str(tmp_path / "t.parquet"), "--format", "tau2"]) == 2


def test_audit_reads_a_foreign_format(tmp_path, capsys):
    out = tmp_path / "traces.jsonl"
    assert main(["audit", "--index", str(ROOT / "fixtures" / "demo" / "index.json"),
                 "--cases", str(FIX / "otel_genai_spans.jsonl"), "--format", "otel",
                 "--policy", "airline=airline-policy", "--strategy", "cdg", "--no-judge",
                 "--out", str(out)]) == 0
    traces = [json.loads(line) for line in out.read_text().splitlines()]
    assert {t["id"] for t in traces} == {"4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8",
                                         "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"}
    assert all(t["skills"] == ["airline-policy"] and t["routing"] == "case" for t in traces)


def test_the_demo_airline_skill_is_the_tau2_policy():
    """The SKILL the tau2 cases are audited against is tau2-bench's airline policy, verbatim
    (fixtures/NOTICE.md): the corpus copy, where this checkout has ../shared."""
    corpus = ROOT.parent / "shared" / "corpora" / "tau2-bench" / "domains" / "airline" / "policy.md"
    if not corpus.is_file():
        corpus = Path("/work/shared/corpora/tau2-bench/domains/airline/policy.md")
    if not corpus.is_file():
        pytest.skip("the tau2-bench corpus is not beside this checkout")
    skill = (ROOT / "fixtures" / "demo" / "skills" / "airline-policy" / "SKILL.md").read_text()
    body = skill.split("---\n", 2)[2].lstrip("\n")
    assert body.rstrip("\n") == corpus.read_text().rstrip("\n")
