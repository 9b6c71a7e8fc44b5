"""Record and replay: real exchanges stored once, replayed exactly, and loud when missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.llm import (
    Gateway,
    LlmConfigError,
    MissingRecording,
    ModelCallError,
    Recorder,
    Replayer,
    load_config,
    request_key,
    transport_from_env,
)
from workbench.llm.fake_server import FakeChatServer, reply, role_env, status

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "recordings" / "llm_gateway.jsonl"

SCHEMA = {
    "type": "object",
    "properties": {"keywords": {"type": "array", "items": {"type": "string"}}},
    "required": ["keywords"],
}
MESSAGES = [{"role": "user", "content": "Keywords for: 'I want a refund for order 12'"}]
ANSWER = {"keywords": ["refund", "order"]}


def test_recorded_exchanges_replay_without_a_server(tmp_path):
    path = tmp_path / "rec.jsonl"
    with FakeChatServer([reply("not json"), reply(ANSWER)]) as srv:
        live = Gateway(load_config(env=role_env(srv.api_base)), recorder=Recorder(path))
        recorded = live.complete_json("judge", MESSAGES, SCHEMA, schema_name="kw")
        old_base = srv.api_base
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2  # the bad answer and the repair are both recorded
    assert {"key", "role", "request", "response"} <= set(lines[0])
    assert lines[0]["request"]["messages"] == MESSAGES
    assert "api_base" not in json.dumps(lines) and old_base not in path.read_text()

    # Another port (the server is gone): the same requests still find their answers.
    with FakeChatServer(default=status(500, "must not be called")) as other:
        replay = Gateway(load_config(env=role_env(other.api_base)), recorder=Replayer(path))
        replayed = replay.complete_json("judge", MESSAGES, SCHEMA, schema_name="kw")
        assert other.requests == []
    assert replayed.data == recorded.data == ANSWER
    assert replayed.key == recorded.key and replayed.usage.attempts == 2


def test_missing_recording_is_loud_and_names_the_request(tmp_path):
    path = tmp_path / "rec.jsonl"
    path.write_text("")
    with FakeChatServer() as srv:
        gw = Gateway(load_config(env=role_env(srv.api_base)), recorder=Replayer(path))
        with pytest.raises(MissingRecording) as info:
            gw.complete_json("judge", MESSAGES, SCHEMA, schema_name="kw", step="kw:1")
        assert srv.requests == []  # no silent fallback to a live call
    err = info.value
    assert not isinstance(err, ModelCallError)  # callers that tolerate failures can't eat it
    assert err.key == request_key(gw.build_request(gw.config.role("judge"), MESSAGES, SCHEMA, "kw"))
    message = str(err)
    assert err.key in message and "role judge" in message
    assert "refund for order 12" in message and "schema kw" in message
    assert "WORKBENCH_LLM_MODE=record" in message and f"WORKBENCH_LLM_RECORDINGS={path}" in message


def test_changed_prompt_is_not_answered_by_an_old_recording(tmp_path):
    path = tmp_path / "rec.jsonl"
    with FakeChatServer([reply(ANSWER)]) as srv:
        config = load_config(env=role_env(srv.api_base))
        Gateway(config, recorder=Recorder(path)).complete_json("judge", MESSAGES, SCHEMA)
    changed = [{"role": "user", "content": MESSAGES[0]["content"] + " please"}]
    with pytest.raises(MissingRecording):
        Gateway(config, recorder=Replayer(path)).complete_json("judge", changed, SCHEMA)


def test_mode_comes_from_the_environment(tmp_path):
    path = tmp_path / "r.jsonl"
    assert transport_from_env({}) is None
    assert transport_from_env({"WORKBENCH_LLM_MODE": "live"}) is None
    rec = transport_from_env({"WORKBENCH_LLM_MODE": "record", "WORKBENCH_LLM_RECORDINGS": str(path)})
    assert isinstance(rec, Recorder)
    path.write_text("")
    rep = transport_from_env({"WORKBENCH_LLM_MODE": "replay", "WORKBENCH_LLM_RECORDINGS": str(path)})
    assert isinstance(rep, Replayer)
    with pytest.raises(LlmConfigError, match="WORKBENCH_LLM_RECORDINGS"):
        transport_from_env({"WORKBENCH_LLM_MODE": "replay"})
    with pytest.raises(LlmConfigError, match="not one of"):
        transport_from_env({"WORKBENCH_LLM_MODE": "fallback"})
    with pytest.raises(LlmConfigError, match="do not exist"):
        Replayer(tmp_path / "nope.jsonl")


def test_damaged_recording_file_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"key": "abc", "response": {"text": "x"}}\n{"key": \n')
    with pytest.raises(LlmConfigError, match="line 2 is damaged"):
        Replayer(path)


def test_replayer_reads_a_folder_of_recordings(tmp_path):
    for name, text in (("a.jsonl", "A"), ("b.jsonl", "B")):
        (tmp_path / name).write_text(json.dumps({"key": name, "response": {"text": text}}) + "\n")
    replayer = Replayer(tmp_path)
    assert len(replayer) == 2 and "a.jsonl" in replayer


@pytest.fixture
def fixture_gateway(monkeypatch, tmp_path):
    """A gateway on the built-in configuration (embedded model) replaying FIXTURE.

    To re-record with the real model (delete the file first to start clean):
      WORKBENCH_LLM_MODE=record \
        .venv/bin/python -m pytest tests/test_llm_recording.py -k embedded_model_recording
    """
    if os.environ.get("WORKBENCH_LLM_MODE") != "record":
        monkeypatch.setenv("WORKBENCH_LLM_MODE", "replay")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS", str(FIXTURE))
    monkeypatch.chdir(tmp_path)  # a developer's ./workbench.toml must not change the keys
    return Gateway.from_env(load_config(env={}))


def test_embedded_model_recording_replays(fixture_gateway):
    """Replays answers the real embedded model gave (recorded with it, see the fixture)."""
    verdict = {
        "type": "object",
        "properties": {"violation": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["violation", "reason"],
        "additionalProperties": False,
    }
    messages = [
        {
            "role": "system",
            "content": "You audit an agent's reply against one rule. Answer in JSON.",
        },
        {
            "role": "user",
            "content": "Rule: never promise a refund before the order is cancelled.\n"
            "Agent reply: 'Your order is still active, but I have refunded you already.'\n"
            "Does the reply violate the rule?",
        },
    ]
    res = fixture_gateway.complete_json(
        "judge", messages, verdict, schema_name="verdict", step="fixture:judge"
    )
    assert isinstance(res.data["violation"], bool) and res.data["reason"].strip()
    assert res.usage.prompt_tokens > 20 and res.usage.completion_tokens > 3
    assert res.usage.model.startswith("embedded/")


def test_greedy_recordings_answer_the_papers_near_greedy_temperature(tmp_path):
    # A recording made at 0.0 (before every role defaulted to 0.01) answers the same request
    # at 0.01, but not at 0.5; an exact recording wins over the near-greedy one.
    config = load_config(env={})
    role = config.role("judge")
    assert role.temperature == 0.01
    gw = Gateway(config, recorder=Replayer(FIXTURE))  # only to build requests
    at_001 = gw.build_request(role, MESSAGES, SCHEMA, "kw")
    at_000 = {**at_001, "temperature": 0.0}
    at_050 = {**at_001, "temperature": 0.5}

    def line(request, text):
        response = {"text": text, "finish_reason": "stop", "prompt_tokens": 1,
                    "completion_tokens": 1, "cost_usd": None, "model": "m"}
        return json.dumps({"key": request_key(request), "role": "judge", "request": request,
                           "response": response})

    path = tmp_path / "greedy.jsonl"
    path.write_text(line(at_000, "greedy") + "\n")
    replayer = Replayer(path)
    assert replayer.send(at_001, role, key=request_key(at_001)).text == "greedy"
    with pytest.raises(MissingRecording):
        replayer.send(at_050, role, key=request_key(at_050))
    path.write_text(line(at_000, "greedy") + "\n" + line(at_001, "exact") + "\n")
    assert Replayer(path).send(at_001, role, key=request_key(at_001)).text == "exact"
