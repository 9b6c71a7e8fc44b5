"""Trajectory import: tau-bench records and plain message lists become actions + observations."""

from __future__ import annotations

import json

import pytest

from workbench.contracts import (
    TrajectoryFormatError,
    load_trajectories,
    parse_trajectories,
    steps_from_messages,
)


def call(name, args, call_id):
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


MESSAGES = [
    {"role": "system", "content": "# Policy"},
    {"role": "user", "content": "Cancel ABC123, my id is mia_li_3668"},
    {"role": "assistant", "content": None,
     "tool_calls": [call("get_user_details", {"user_id": "mia_li_3668"}, "c1")]},
    {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": '{"name": "Mia"}'},
    {"role": "assistant", "content": "Let me look that up.",
     "tool_calls": [call("get_reservation_details", {"reservation_id": "ABC123"}, "c2")]},
    {"role": "tool", "tool_call_id": "c2", "name": "get_reservation_details", "content": "{}"},
    {"role": "assistant", "content": "Shall I cancel ABC123? Please confirm."},
]


def test_messages_map_to_actions_and_observations():
    steps = steps_from_messages(MESSAGES)
    kinds = [(s.action.kind, s.action.name) for s in steps]
    assert kinds == [("user", ""), ("tool", "get_user_details"), ("assistant", ""),
                     ("tool", "get_reservation_details"), ("assistant", "")]
    assert steps[0].action.text.startswith("Cancel ABC123")
    assert steps[1].action.args == {"user_id": "mia_li_3668"}
    assert steps[1].observation == '{"name": "Mia"}' and not steps[1].action.with_message
    # text + tool call in one assistant message: the message first, then the flagged call
    assert steps[2].action.text == "Let me look that up."
    assert steps[3].action.with_message and steps[3].observation == "{}"
    assert steps[4].observation is None


def test_reused_call_ids_pair_with_the_latest_unanswered_call():
    messages = [
        {"role": "assistant", "tool_calls": [call("search", {"q": 1}, "same")]},
        {"role": "tool", "tool_call_id": "same", "name": "search", "content": "first"},
        {"role": "assistant", "tool_calls": [call("search", {"q": 2}, "same")]},
        {"role": "tool", "tool_call_id": "same", "name": "search", "content": "second"},
    ]
    steps = steps_from_messages(messages)
    assert [s.observation for s in steps] == ["first", "second"]


def test_parallel_calls_are_flagged_and_answered_by_id():
    messages = [
        {"role": "assistant", "tool_calls": [call("a", {}, "x"), call("b", {}, "y")]},
        {"role": "tool", "tool_call_id": "y", "content": "for b"},
        {"role": "tool", "tool_call_id": "x", "content": "for a"},
    ]
    steps = steps_from_messages(messages)
    assert [s.action.parallel for s in steps] == [2, 2]
    assert [(s.action.name, s.observation) for s in steps] == [("a", "for a"), ("b", "for b")]


def test_unparseable_arguments_are_kept_for_display_only():
    messages = [{"role": "assistant", "tool_calls": [
        {"id": "z", "function": {"name": "lookup", "arguments": "{not json"}}]}]
    (step,) = steps_from_messages(messages)
    assert step.action.args == {"_raw_arguments": "{not json"}


def test_structured_contents_are_flattened():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "there"}]},
        {"role": "assistant", "tool_calls": [call("read", {}, "r")]},
        {"role": "tool", "tool_call_id": "r", "content": {"ok": True}},
    ]
    steps = steps_from_messages(messages)
    assert steps[0].action.text == "hello\nthere"
    assert steps[1].observation == '{"ok": true}'


def test_bad_messages_say_where():
    with pytest.raises(TrajectoryFormatError, match=r"messages\[1\]: unknown role 'robot'"):
        steps_from_messages([{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}])
    with pytest.raises(TrajectoryFormatError, match=r"messages\[0\]: expected a message object"):
        steps_from_messages(["hello"])


def test_tau_bench_records():
    records = [
        {"task_id": 7, "trial": 2, "reward": 1.0, "info": {}, "traj": MESSAGES},
        {"task_id": 7, "trial": 3, "reward": 0.0, "traj": MESSAGES[:2]},
    ]
    trajectories = parse_trajectories(records, "runs.json")
    assert [t.id for t in trajectories] == ["task7-trial2", "task7-trial3"]
    assert [t.outcome for t in trajectories] == [1.0, 0.0]
    assert trajectories[0].meta == {"task_id": 7, "trial": 2}
    assert trajectories[0].agent_steps == 4


def test_plain_message_list_files(tmp_path):
    single = tmp_path / "chat.json"
    single.write_text(json.dumps(MESSAGES))
    (trajectory,) = load_trajectories(single)
    assert trajectory.id == "chat" and trajectory.outcome is None and len(trajectory.steps) == 5
    many = tmp_path / "many.json"
    many.write_text(json.dumps({"trajectories": [{"id": "a", "messages": MESSAGES, "outcome": 1},
                                                 MESSAGES[:2]]}))
    assert [(t.id, t.outcome) for t in load_trajectories(many)] == [("a", 1.0), ("1", None)]


def test_json_lines(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"r{i}", "messages": MESSAGES[:2]}) for i in range(3)))
    assert [t.id for t in load_trajectories(path)] == ["r0", "r1", "r2"]
    path.write_text('{"id": "ok", "messages": []}\n{broken\n')
    with pytest.raises(TrajectoryFormatError, match=r"runs.jsonl:2: not valid JSON"):
        load_trajectories(path)


def test_file_errors_are_explained(tmp_path):
    with pytest.raises(TrajectoryFormatError, match="cannot read"):
        load_trajectories(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(TrajectoryFormatError, match=r"bad.json:1: not valid JSON"):
        load_trajectories(bad)
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"foo": 1}]))
    with pytest.raises(TrajectoryFormatError, match=r"expected 'traj' \(tau-bench\) or 'messages'"):
        load_trajectories(odd)
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps([{"id": "a", "messages": []}, {"id": "a", "messages": []}]))
    with pytest.raises(TrajectoryFormatError, match="appears twice"):
        load_trajectories(dup)
