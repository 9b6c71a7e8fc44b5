"""The progress-credit reward over hand-written trajectories, in every factorial arm, and
the feedback switch in replay."""

from __future__ import annotations

import json

import pytest
from test_contracts_runtime import ORDER, TOY

from workbench.contracts import (
    CONDITIONS,
    TrajectoryFormatError,
    parse_contract,
    progress_reward,
    replay,
    step_rewards,
    summarize,
    trajectory_return,
)
from workbench.contracts.trajectories import Trajectory, steps_from_messages


def call(cid, name, **args):
    return {"role": "assistant", "content": "",
            "tool_calls": [{"id": cid, "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(cid, content):
    return {"role": "tool", "tool_call_id": cid, "content": content}


PROMPT = [{"role": "system", "content": "You are a refund agent."},
          {"role": "user", "content": "Please refund order O1"}]
# refund before lookup (rejected), then the compliant path. Credits with rho = 0.5:
# lookup is the recovery action: looked_up 1 * 0.5; asked 1; approved (the user's yes) 1;
# refunded 2 -> 4.5 in all.
COMPLETION = [
    call("c1", "refund", order_id="O1"), result("c1", "not executed"),
    call("c2", "lookup", order_id="O1"), result("c2", ORDER),
    {"role": "assistant", "content": "Refund $30 for O1: please confirm"},
    {"role": "user", "content": "yes"},
    call("c3", "refund", order_id="O1"), result("c3", '{"refunded": 30}'),
]


@pytest.fixture
def contract():
    return parse_contract(TOY, source="toy.yaml")


def test_step_rewards_and_return_by_hand(contract):
    trajectory = Trajectory("t", steps_from_messages(PROMPT + COMPLETION), outcome=1.0)
    report = replay(contract, trajectory, rho=0.5)
    # steps: user, refund (rejected), lookup, message, user yes, refund
    assert step_rewards(report) == pytest.approx([0, 0, 0.5, 1, 1, 2])
    assert trajectory_return(report) == pytest.approx(1.0 + 4.5)
    assert trajectory_return(report, use_credit=False) == pytest.approx(1.0)
    assert trajectory_return(report, outcome_weight=2, credit_weight=0.1) == pytest.approx(2.45)
    unknown = replay(contract, Trajectory("u", trajectory.steps), rho=0.5)
    assert trajectory_return(unknown) == pytest.approx(4.5)  # unknown outcome counts 0


@pytest.mark.parametrize(("arm", "expected"), [
    ("outcome_only", 1.0), ("feedback_only", 1.0), ("credit_only", 6.0), ("feedback_credit", 5.5),
])
def test_trainer_reward_function_in_each_arm(contract, arm, expected):
    reward = progress_reward(contract, arm=arm, rho=0.5)
    assert reward.__name__ == f"contract_{arm}"
    # TRL passes conversational prompts and completions, plus dataset columns as kwargs
    returns = reward([COMPLETION, COMPLETION[2:]], prompts=[PROMPT, PROMPT], outcome=[1.0, None])
    # credit_only withholds feedback: the lookup after the rejection is no recovery, so it
    # earns 1 + 5 undiscounted (the paper, A.1; 5.5 before issue 32, as with feedback).
    # The second skips the rejected refund: no recovery, credit 1 + 1 + 1 + 2 = 5, outcome 0
    assert returns == pytest.approx([expected, 5.0 if CONDITIONS[arm].credit else 0.0])


def test_reward_rejects_plain_text_and_bad_settings(contract):
    with pytest.raises(TrajectoryFormatError, match="completions\\[0\\].*plain-text"):
        progress_reward(contract)(["I refunded it"])
    with pytest.raises(ValueError, match="unknown condition 'both'"):
        progress_reward(contract, arm="both")
    with pytest.raises(ValueError, match="rho must be in"):
        progress_reward(contract, rho=0)


def test_replay_with_feedback_withheld_keeps_verdicts_and_shows_no_hints(contract):
    trajectory = Trajectory("t", steps_from_messages(PROMPT + COMPLETION), outcome=1.0)
    shown = replay(contract, trajectory)
    withheld = replay(contract, trajectory, feedback=False)
    assert (shown.rejected, shown.hints, shown.agent_steps) == (1, 1, 4)
    assert (withheld.rejected, withheld.hints) == (1, 0)
    assert withheld.accepted_termination == shown.accepted_termination is True
    # no feedback, no recovery: the credit is the undiscounted one (shown: lookup * 0.9)
    assert withheld.credit == replay(contract, trajectory, rho=1).credit == 5.0
    assert shown.credit == pytest.approx(4.9)
    # hint rate: 1 / 4 agent steps with feedback, 0 without
    assert summarize([shown]).hint_rate == pytest.approx(0.25)
    assert summarize([withheld]).hint_rate == 0.0
