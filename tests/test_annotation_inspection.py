"""Reading audit traces as CDG inspection cases."""

from __future__ import annotations

import json

import pytest

from workbench.annotation.inspection import (
    TraceError,
    case_from_audit_result,
    closure_edges,
    parse_trace,
    read_traces_jsonl,
)
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE


def test_flat_trace_with_one_skill():
    case = parse_trace({
        "case_id": "c1", "skills": ["refunds"], "seeds": ["R3"], "closure": ["R3", "R2"],
        "history": [{"role": "user", "content": "refund me"}], "response": "Done.",
        "violation": True, "reason": "no identity check", "violated_rules": ["R1"],
        "extra": 7,
    })
    assert case.key == "c1"
    assert case.seeds == {"refunds": ("R3",)} and case.closure == {"refunds": ("R3", "R2")}
    assert case.history == "user: refund me"
    assert (case.violation, case.reason, case.violated_rules) == (True, "no identity check", ("R1",))
    assert case.raw["extra"] == 7


def test_nested_trace_per_skill_and_run():
    case = parse_trace({
        "run_id": "run-2",
        "case": {"id": 17, "history": "u: hi", "state": {"order": "pending"}},
        "retrieval": {"closure": {"refunds": ["R2", "R1"], "payments": ["P1"]},
                      "edges": [{"skill": "refunds", "source": "R2", "target": "R1"}]},
        "verdict": {"violation": False, "reason": "fine"},
    })
    assert case.key == "run-2/17" and case.case_id == "17"
    assert set(case.skills) == {"refunds", "payments"}
    assert '"order": "pending"' in case.state
    assert case.edges == (("refunds", "R2", "R1"),)
    assert case.violation is False


@pytest.mark.parametrize("trace, message", [
    ([1, 2], "expected a JSON object"),
    ({"skills": ["x"]}, "no case id"),
    ({"case_id": "c", "closure": "R1"}, "closure must be a list"),
    ({"case_id": "c", "edges": [{"source": "R1"}]}, "needs 'source' and 'target'"),
])
def test_bad_traces_say_what_is_missing(trace, message):
    with pytest.raises(TraceError, match=message):
        parse_trace(trace)


def test_jsonl_reports_bad_lines_and_keeps_the_rest():
    text = "\n".join([
        json.dumps({"case_id": "a"}), "", "{not json", json.dumps({"case_id": "a"}),
        json.dumps({"nothing": 1}), json.dumps({"case_id": "b"}),
    ])
    cases, errors = read_traces_jsonl(text, origin="t.jsonl")
    assert [c.key for c in cases] == ["a", "b"]
    assert len(errors) == 3
    # file:line, as the one trace reader names every problem
    assert errors[0].startswith("t.jsonl:3: not valid JSON")
    assert "repeats an earlier line" in errors[1] and errors[2].startswith("t.jsonl:5: no case id")


def test_edges_come_from_the_graph_when_the_trace_has_none(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    case = parse_trace({"case_id": "c", "skills": ["refunds"], "closure": ["R3", "R2", "R1"]})
    # Among R3, R2, R1 the graph has R3->R2 and R2->R1 (R3->R4 leaves the closure).
    assert [(e.source, e.target) for e in closure_edges(case, "refunds", skill)] == [
        ("R3", "R2"), ("R2", "R1")]
    assert closure_edges(case, "refunds", None) == []
    traced = parse_trace({"case_id": "c", "skills": ["refunds"], "closure": ["R3", "R2"],
                          "edges": [{"source": "R3", "target": "R2"}]})
    assert [(e.source, e.target) for e in closure_edges(traced, "refunds", skill)] == [("R3", "R2")]


def test_stored_audit_result_columns_win():
    case = case_from_audit_result("run-1", "airlines", "c9", "skillcdg", True,
                                  json.dumps({"case_id": "other", "response": "ok"}))
    assert (case.key, case.dataset, case.strategy, case.violation) == (
        "run-1/c9", "airlines", "skillcdg", True)
    with pytest.raises(TraceError, match="not JSON"):
        case_from_audit_result("r", "d", "c", "s", None, "{")


def test_stored_audit_results_become_cases(engine):
    from sqlmodel import Session

    from store.annotation_cases import audit_result_count, inspection_cases
    from store.core_tables import AuditResultRow

    with Session(engine) as session:
        session.add(AuditResultRow(run_id="r1", dataset="d", case_id="c1", strategy="skillcdg",
                                   violation=False, trace_json=json.dumps({"closure": ["R1"]})))
        session.add(AuditResultRow(run_id="r1", dataset="d", case_id="c2", strategy="bm25",
                                   trace_json="{broken"))
        session.commit()
    assert audit_result_count(engine) == 2
    cases, errors = inspection_cases(engine)
    assert [c.key for c in cases] == ["r1/c1"] and cases[0].violation is False
    assert cases[0].closure == {"": ("R1",)}  # no SKILL named: the page says so
    assert errors == ["audit result r1/c2: trace is not JSON (Expecting property name enclosed "
                      "in double quotes)"]
    only, _ = inspection_cases(engine, strategy="bm25")
    assert only == []


def test_audit_traces_are_joined_with_their_cases(engine):
    from store.annotation_cases import inspection_cases
    from store.audit_repo import save_cases, save_traces
    from workbench.audit.cases import case_from_dict
    from workbench.audit.trace import AuditTrace, Verdict

    save_cases(engine, "demo", [case_from_dict({
        "id": "c1", "skills": ["refunds"], "background": {"order": "pending"},
        "context": [{"role": "user", "content": "cancel and refund"}],
        "model_response": "Refunded in full."})], actor=COMMAND_LINE)
    save_traces(engine, [
        AuditTrace(id="c1", strategy="cdg", skills=["refunds"], seeds={"refunds": ["R3"]},
                   closure={"refunds": ["R3", "R2"]}, context="[R3] refund ...",
                   verdict=Verdict(True, "coupon kept", ["R3"])),
        AuditTrace(id="c1", strategy="bm25", passages=["p1"], verdict=Verdict(False, "", [])),
    ], "run-1", "demo", actor=COMMAND_LINE)
    [case], errors = inspection_cases(engine)  # the bm25 trace has no closure to inspect
    assert errors == []
    assert (case.key, case.strategy, case.violation, case.violated_rules) == (
        "run-1/c1", "cdg", True, ("R3",))
    assert case.closure == {"refunds": ("R3", "R2")} and case.seeds == {"refunds": ("R3",)}
    assert case.history == "user: cancel and refund" and case.response == "Refunded in full."
    assert '"order": "pending"' in case.state and case.rendered_context == "[R3] refund ..."
    assert len(inspection_cases(engine, with_closure_only=False)[0]) == 2
