"""GRPO on agent turns with the contract's progress reward: prompts from the five tau-bench
airline runs, the reward of a generated turn by hand, and a real (tiny-model) GRPO run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from workbench.contracts import load_contract
from workbench.train.agent_turns import (
    ANSWER_FORMAT,
    load_agent_turns,
    parse_tool_call,
    turn_messages,
    turn_reward,
)

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "contracts"
AIRLINE, SAMPLE = HERE / "airline.yaml", HERE / "tau_airline_sample.json"


@pytest.fixture(scope="module")
def contract():
    return load_contract(AIRLINE)


@pytest.fixture(scope="module")
def turns(contract):
    return load_agent_turns(SAMPLE, contract)


def call(name: str, **args) -> str:
    return json.dumps({"name": name, "arguments": args})


def index_of(turns, trajectory: str, position: int) -> int:
    return next(i for i, t in enumerate(turns) if (t.trajectory_id, t.position) == (trajectory, position))


def test_one_prompt_per_agent_turn_with_the_answer_format(turns, contract):
    records = json.loads(SAMPLE.read_text())
    agent = sum(1 for r in records for i, m in enumerate(r["traj"]) if m["role"] == "assistant"
                and any(p["role"] == "user" for p in r["traj"][:i]))
    assert len(turns) == agent == 54
    first = turns[0]
    assert (first.trajectory_id, first.position) == ("task31-trial3", 2)
    system = first.prompt[0]
    assert system["role"] == "system" and system["content"].startswith("# Airline Agent Policy")
    assert system["content"].endswith(ANSWER_FORMAT.format(tools=", ".join(contract.tools)))
    assert [m["role"] for m in first.prompt[1:]] == ["user"]
    later = turns[2]  # after get_user_details: the earlier call in the answer format, its result
    assert [m["role"] for m in later.prompt[1:]] == ["user", "assistant", "user", "assistant", "tool"]
    assert json.loads(later.prompt[4]["content"]) == {
        "name": "get_user_details", "arguments": {"user_id": "mohamed_hernandez_5188"}}
    assert json.loads(later.prompt[5]["content"])["name"]["first_name"] == "Mohamed"
    assert all(isinstance(m["content"], str) for t in turns for m in t.prompt)
    assert len(load_agent_turns(SAMPLE, contract, turns_per_trajectory=2)) == 10


@pytest.mark.parametrize(("text", "expected"), [
    ('{"name": "think", "arguments": {"thought": "x"}}', ("think", {"thought": "x"})),
    ('```json\n{"name": "think", "arguments": {}}\n```', ("think", {})),
    ('<tool_call>\n{"name": "think", "arguments": "{\\"thought\\": \\"y\\"}"}\n</tool_call>',
     ("think", {"thought": "y"})),
    ('{"name": "think"}', ("think", {})),
    ("Could you give me your user id?", None),
    ('{"name": "", "arguments": {}}', None),
    ('{"name": "think", "arguments": [1]}', None),
    ('{"name": "think", "arguments": "not json"}', None),
    ('{"name": "think", ', None),
    ("[" * 100_000, None),
    ("{" + '"a":' * 50_000, None),
])
def test_only_a_well_formed_call_is_a_tool_call(text, expected):
    assert parse_tool_call(text) == expected


def test_a_generated_turn_earns_the_credit_the_contract_verifies_on_it(turns, contract):
    reward = turn_reward(contract, turns, advantage="turn")
    lookup = index_of(turns, "task31-trial3", 4)  # the user gave their id: look them up
    # the recorded call is observed (its recorded result): user_identified, credit 1
    assert reward(lookup, call("get_user_details", user_id="mohamed_hernandez_5188")) == 1.0
    assert turn_messages(turns[lookup], call("get_user_details", user_id="mohamed_hernandez_5188"))[
        -1]["role"] == "tool"
    # another call has no result offline: admitted, nothing verified
    assert reward(lookup, call("get_user_details", user_id="someone_else_1")) == 0.0
    assert [m["role"] for m in turn_messages(turns[lookup], call("think", thought="x"))] == ["assistant"]
    assert reward(lookup, "Thank you, one moment please.") == 0.0  # a message, no milestone
    # a database write before the user is identified is rejected: 0
    assert reward(lookup, call("cancel_reservation", reservation_id="35V5SM")) == 0.0
    # asking to confirm the cancellation completes confirmation_requested (a message)
    ask = index_of(turns, "task31-trial3", 24)
    assert reward(ask, turns[ask].recorded[0]["content"]) == 1.0


def test_the_recovery_turn_is_discounted_only_when_feedback_was_shown(turns, contract):
    # task 28: the agent's previous call was rejected; its next call completes two milestones
    # (user_identified through the reservation, reservation_read): 2 x rho with feedback.
    turn = index_of(turns, "task28-trial1", 6)
    text = call("get_reservation_details", reservation_id="8C8K4E")
    assert turn_reward(contract, turns, advantage="turn")(turn, text) == pytest.approx(2 * 0.9)
    assert turn_reward(contract, turns, arm="credit_only", advantage="turn")(turn, text) == 2.0
    assert turn_reward(contract, turns, rho=0.5, advantage="turn")(turn, text) == 1.0


def test_one_advantage_per_trajectory_scores_the_whole_run(turns, contract):
    """The default (the contracts paper): a completion's reward is the return of the recorded
    run with the completion in its turn's place, so the recorded turn gets the recorded
    trajectory's own return R = outcome + Σ credit, whatever turn it stands in."""
    from workbench.contracts import load_trajectories
    from workbench.contracts.reward import progress_reward

    whole = {t.id: t for t in load_trajectories(SAMPLE)}
    returns = dict(zip(whole, progress_reward(contract)(list(whole.values())), strict=True))
    reward = turn_reward(contract, turns)
    for trajectory in ("task31-trial3", "task28-trial1"):
        for i, turn in enumerate(turns):
            if turn.trajectory_id != trajectory:
                continue
            recorded = turn.recorded[0]
            if recorded.get("content") and recorded.get("tool_calls"):
                continue  # text and a call in one turn: the answer format allows one of them
            text = recorded.get("content") or ""
            if recorded.get("tool_calls"):
                fn = recorded["tool_calls"][0]["function"]
                args = fn.get("arguments") or {}
                text = call(fn["name"], **(json.loads(args) if isinstance(args, str) else args))
            assert reward(i, text) == pytest.approx(returns[trajectory]), (trajectory, turn.position)
    # Looking the user up at turn 4 earns user_identified there; a message instead leaves it to
    # a later recorded turn, so the run's return hardly moves; a rejected write costs the run.
    lookup = index_of(turns, "task31-trial3", 4)
    ok = reward(lookup, call("get_user_details", user_id="mohamed_hernandez_5188"))
    assert reward(lookup, "One moment please.") <= ok
    with pytest.raises(ValueError, match="choose one of trajectory, turn"):
        turn_reward(contract, turns, advantage="episode")


def test_arms_without_credit_are_refused(turns, contract):
    for arm in ("outcome_only", "feedback_only"):
        with pytest.raises(ValueError, match="choose credit_only or feedback_credit"):
            turn_reward(contract, turns, arm=arm)
    with pytest.raises(ValueError, match="rho must be in"):
        turn_reward(contract, turns, rho=1.5)


@pytest.mark.slow  # a tiny model built here trains for two GRPO steps on CPU (~10-30 s)
def test_grpo_trains_on_the_tau_sample_with_the_progress_reward(tmp_path, contract, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    from tests.tiny_models import tiny_model
    from workbench.cli import main
    from workbench.train.runs import read_metrics
    from workbench.train.trainers import TrainConfig, train_grpo

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        turns = load_agent_turns(SAMPLE, contract, turns_per_trajectory=2)
        corpus = [m["content"] for t in turns for m in t.prompt] + [call("think", thought="ok")]
        student = tiny_model(tmp_path / "student", corpus, seed=3)
        scored: list[tuple[int, str, float]] = []
        reward = turn_reward(contract, turns)

        def logged(i: int, text: str) -> float:
            value = reward(i, text)
            scored.append((i, text, value))
            return value

        cfg = TrainConfig(epochs=1, global_batch=4, micro_batch=2, group=2, max_new_tokens=12,
                          max_steps=2, save_every=1, learning_rate=1e-3)
        result = train_grpo(student, [t.prompt for t in turns], logged, tmp_path / "run", cfg)
        assert result.steps == 2 and (result.adapter / "adapter_config.json").is_file()
        rows = read_metrics(tmp_path / "run")
        assert [r["step"] for r in rows] == [1, 2]
        assert len(scored) == 2 * 4  # every sampled completion went through the reward
        for row, part in zip(rows, (scored[:4], scored[4:]), strict=True):
            assert row["reward_mean"] == pytest.approx(sum(v for _, _, v in part) / 4)
            assert math.isfinite(row["loss"])

        # The same through the command line, resumable like the other recipes.
        args = ["train", "grpo-contract", "--contract", str(AIRLINE), "--trajectories", str(SAMPLE),
                "--turns", "1", "--student", str(student), "--run-dir", str(tmp_path / "cli"),
                "--group", "2", "--global-batch", "2", "--micro-batch", "2",
                "--max-new-tokens", "8", "--max-steps", "1", "--lora-rank", "2"]
        assert main(args) == 0
        assert "5 agent turns; 1 steps (resumed from 0)" in capsys.readouterr().out
        with pytest.raises(SystemExit):  # the arms without credit are not offered
            main([*args, "--arm", "outcome_only"])
        assert "invalid choice: 'outcome_only'" in capsys.readouterr().err
    finally:
        torch.set_num_threads(threads)
