"""Contracts at run time: the Python call and ``POST /v1/contracts/{name}/check`` answer a
recorded airline run turn by turn exactly as ``contract replay`` decided it, refuse an
inadmissible update with the contract's feedback, and keep the blocked call."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from workbench.api.app import create_app
from workbench.api.contracts import ContractGuard
from workbench.api.settings import ApiSettings
from workbench.contracts import load_contract, replay
from workbench.contracts.actions import Action
from workbench.contracts.guard import ContractCheckLog, check_call
from workbench.contracts.trajectories import Trajectory, steps_from_messages
from workbench.identity.roles import Actor, NotAllowed

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "contracts"
RUNS = json.loads((HERE / "tau_airline_sample.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def contract():
    return load_contract(HERE / "airline.yaml")


@pytest.fixture()
def client(contract, tmp_path):
    log = ContractCheckLog(tmp_path / "checks.jsonl")
    service = SimpleNamespace(store_takes_actor=True)  # the audit routes are not called here
    app = create_app(service, ApiSettings(), ContractGuard({contract.name: contract}, log))
    with TestClient(app) as c:
        yield c, log


def proposals(messages):
    """Each recorded tool call as a question: (the messages before it, the call as JSON)."""
    for i, m in enumerate(messages):
        calls = m.get("tool_calls") or [] if m.get("role") == "assistant" else []
        if len(calls) != 1:
            continue
        text = (m.get("content") or "").strip()
        before = list(messages[:i]) + ([{"role": "assistant", "content": text}] if text else [])
        fn = calls[0]["function"]
        args = json.loads(fn["arguments"]) if isinstance(fn["arguments"], str) else fn["arguments"]
        yield before, {"name": fn["name"], "arguments": args, "with_message": bool(text)}


@pytest.mark.parametrize("run", RUNS, ids=[f"task{r['task_id']}-trial{r['trial']}" for r in RUNS])
def test_the_endpoint_decides_each_call_as_contract_replay_does(client, contract, run):
    http, log = client
    messages = run["traj"]
    report = replay(contract, Trajectory("run", steps_from_messages(messages)))
    recorded = [s for s in report.steps if s.action.kind == "tool"]
    asked = 0
    for (before, call), step in zip(proposals(messages), recorded, strict=False):
        assert (call["name"], call["arguments"]) == (step.action.name, dict(step.action.args))
        answer = http.post(f"/v1/contracts/{contract.name}/check",
                           json={"trajectory": before, "call": call, "session": "s1"})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["allowed"] == step.accepted, (len(before), call["name"])
        assert body["phase"] == step.feedback.phase
        if not step.accepted:
            assert body["feedback"] == step.feedback.render() and body["recorded"]
        asked += 1
    assert asked == len(recorded)  # every recorded call of these runs is a one-call turn
    rows, problems = log.read()
    assert problems == [] and len(rows) == sum(not s.accepted for s in recorded)


def test_an_inadmissible_update_is_refused_with_the_feedback_and_recorded(client, contract):
    http, log = client
    run = next(r for r in RUNS if (r["task_id"], r["trial"]) == (31, 3))
    first_user = next(i for i, m in enumerate(run["traj"]) if m["role"] == "user")
    before = run["traj"][: first_user + 1]  # the user asked; nobody is identified yet
    answer = http.post(f"/v1/contracts/{contract.name}/check", json={
        "trajectory": before, "call": {"name": "cancel_reservation",
                                       "arguments": {"reservation_id": "35V5SM"}}})
    body = answer.json()
    assert answer.status_code == 200 and body["allowed"] is False and body["recorded"]
    expected = check_call(contract, before, Action.tool("cancel_reservation",
                                                        {"reservation_id": "35V5SM"}))
    assert body["feedback"] == expected.feedback
    assert body["feedback"].startswith("Rejected: ") and "Admissible next action:" in body["feedback"]
    assert body["missing_phases"] and body["next_action"]
    [row], _ = log.read()
    assert row["call"]["name"] == "cancel_reservation" and row["actor"] == "api"
    assert row["feedback"] == body["feedback"] and row["allowed"] is False
    # An unknown contract names the served ones; a malformed trajectory names the message.
    missing = http.post("/v1/contracts/nope/check", json={"call": {"name": "x"}})
    assert missing.status_code == 404 and contract.name in missing.json()["hint"]
    bad = http.post(f"/v1/contracts/{contract.name}/check",
                    json={"trajectory": [{"content": "no role"}], "call": {"name": "x"}})
    assert bad.status_code == 422 and "trajectory[0]" in bad.json()["message"]


def test_the_log_takes_a_required_actor_who_may_store_results(contract, tmp_path):
    log = ContractCheckLog(tmp_path / "c.jsonl")
    check = check_call(contract, [], Action.tool("cancel_reservation", {"reservation_id": "X"}))
    assert not check.allowed
    with pytest.raises(TypeError):
        log.record(check)  # type: ignore[call-arg]
    with pytest.raises(NotAllowed):
        log.record(check, actor=Actor.signed_in("vic", "viewer"))
    log.record(check, actor=Actor.signed_in("ana", "analyst"))
    assert [r["actor"] for r in log.read()[0]] == ["ana"]
