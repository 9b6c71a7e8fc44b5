"""Every runtime rule on a small hand-built contract: admission, rejection, guards, recovery
discount, milestones and observations, termination, budgets, turn shape, live-guard use."""

from __future__ import annotations

import pytest

from workbench.contracts import Action, ContractRuntime, parse_contract

# intake (required, done when the order was looked up) -> confirm (agent asks) -> approved
# (user says yes) -> act (refund, required). think is admissible anywhere.
TOY = r"""
contract: toy-refund
tools: [lookup, refund, think, notify]
budgets: {turns: 8, tool_calls: 5}
turn_shape: {max_tool_calls: 1, message_with_tool_call: false}
anywhere:
  - tool: think
milestones:
  - id: looked_up
    describe: look the order up
    verified_by: {tool: lookup}
    key: order_id
  - id: asked
    verified_by: {assistant: {pattern: '(?i)confirm'}}
    in_phase: confirm
  - id: approved
    verified_by: {user: {pattern: '(?i)\byes\b'}}
    in_phase: approved
  - id: refunded
    verified_by: {tool: refund}
    credit: 2
phases:
  - id: intake
    required: true
    admits:
      - tool: lookup
        args: {order_id: {pattern: '^O\d+$', from_user: true}}
      - assistant: any
    done_when: [looked_up]
  - id: confirm
    admits:
      - assistant: {pattern: '(?i)confirm'}
        describe: ask the user to confirm the refund
  - id: approved
    admits:
      - user: {pattern: '(?i)\byes\b'}
        describe: wait for the user's yes
  - id: act
    required: true
    admits:
      - tool: refund
        requires: ["looked_up[order_id]"]
transitions:
  intake:
    - {to: confirm, when: [looked_up]}
  confirm: [approved, intake]
  approved: [act]
  act: [intake]
"""

ORDER = '{"order_id": "O1", "total": 30}'


@pytest.fixture
def contract():
    return parse_contract(TOY, source="toy.yaml")


def user(text):
    return Action.user(text)


def say(text):
    return Action.assistant(text)


def tool(name, **args):
    return Action.tool(name, args)


def run_to_approved(rt):
    """The compliant path up to the user's yes (order O1 looked up)."""
    rt.step(user("Please refund order O1"))
    rt.step(tool("lookup", order_id="O1"), ORDER)
    rt.step(say("Refund $30 for O1: please confirm"))
    rt.step(user("yes"))


def test_compliant_run_is_accepted_with_full_credit(contract):
    rt = ContractRuntime(contract)
    run_to_approved(rt)
    result = rt.step(tool("refund", order_id="O1"), '{"refunded": 30}')
    assert result.accepted and result.phase == "act"
    verdict = rt.finish()
    assert verdict.accepted and verdict.missing_phases == ()
    assert rt.rejected == 0
    # looked_up 1 + asked 1 + approved 1 + refunded 2, none discounted
    assert rt.credit == pytest.approx(5.0)
    assert [s.phase for s in rt.history] == ["intake", "intake", "confirm", "approved", "act"]


def test_action_admitted_in_current_phase_keeps_the_phase(contract):
    rt = ContractRuntime(contract)
    result = rt.step(say("Which order?"))
    assert result.accepted and result.phase == "intake" and result.via == "in intake"


def test_transition_guard_unmet_rejects_and_names_the_milestone(contract):
    rt = ContractRuntime(contract)
    result = rt.step(say("Please confirm the refund"))
    # intake -> confirm needs looked_up; intake itself admits any assistant message, so the
    # message is accepted in intake (no phase change) rather than rejected.
    assert result.accepted and result.phase == "intake"
    refund = rt.step(tool("refund", order_id="O1"))
    assert not refund.accepted
    assert "intake -> confirm -> approved -> act" in refund.feedback.reason
    assert refund.feedback.next_action == "look the order up"  # the unmet `when` guard


def test_rejected_action_changes_neither_phase_nor_milestones_and_sets_recovery(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1 please"))
    rt.step(tool("lookup", order_id="O1"), ORDER)
    before = rt.state
    result = rt.step(tool("refund", order_id="O1"), '{"refunded": 30}')
    assert not result.accepted
    after = rt.state
    assert after.phase == before.phase == "intake"
    assert after.milestones == before.milestones  # refunded not completed
    assert after.recovering and after.rejected == 1
    assert result.milestones == () and result.credit == 0


def test_argument_checks_reject_with_the_failed_check(contract):
    rt = ContractRuntime(contract)
    rt.step(user("my order is O1"))
    bad_format = rt.step(tool("lookup", order_id="X9"))
    assert not bad_format.accepted
    assert "order_id" in bad_format.feedback.reason and "must match" in bad_format.feedback.reason
    invented = rt.step(tool("lookup", order_id="O2"))  # well-formed but never said by the user
    assert not invented.accepted
    assert "a value the user gave" in invented.feedback.reason
    assert rt.step(tool("lookup", order_id="O1"), ORDER).accepted


def test_keyed_requirement_needs_the_same_key(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1, and O2 too"))
    rt.step(tool("lookup", order_id="O1"), ORDER)
    rt.step(say("Refund O2? Please confirm"))
    rt.step(user("yes"))
    other = rt.step(tool("refund", order_id="O2"))  # O2 was never looked up
    assert not other.accepted
    assert "for this order_id" in other.feedback.reason
    assert other.feedback.next_action == "look the order up (for this order_id)"


def test_anywhere_action_is_accepted_without_phase_change(contract):
    rt = ContractRuntime(contract)
    run_to_approved(rt)
    result = rt.step(tool("think", thought="refund now"), "")
    assert result.accepted and result.via == "anywhere" and result.phase == "approved"
    assert rt.step(tool("refund", order_id="O1"), "{}").accepted  # still approved after think


def test_user_turns_are_never_rejected_and_can_move_the_phase(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    rt.step(tool("lookup", order_id="O1"), ORDER)
    rt.step(say("please confirm"))
    chatter = rt.step(user("what is the weather?"))  # admitted nowhere: accepted, no change
    assert chatter.accepted and chatter.phase == "confirm" and chatter.via == "user turn"
    yes = rt.step(user("yes"))
    assert yes.accepted and yes.phase == "approved"
    assert rt.rejected == 0 and rt.agent_steps == 2


def test_not_reachable_in_one_step_gives_the_route_and_first_step(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    rt.step(tool("lookup", order_id="O1"), ORDER)
    result = rt.step(tool("refund", order_id="O1"))
    assert not result.accepted
    assert "route: intake -> confirm -> approved -> act" in result.feedback.reason
    assert result.feedback.next_action == "ask the user to confirm the refund"
    assert result.feedback.phase == "intake"


def test_action_admitted_nowhere_is_rejected(contract):
    rt = ContractRuntime(contract)
    result = rt.step(tool("notify", to="x"))
    assert not result.accepted
    assert "not admitted in phase 'intake' nor anywhere" in result.feedback.reason


def test_milestone_needs_a_valid_observation(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    failed = rt.step(tool("lookup", order_id="O1"), "Error: order not found")
    assert failed.accepted and failed.milestones == ()
    missing = rt.step(tool("lookup", order_id="O1"), None)  # no result (yet)
    assert missing.milestones == ()
    assert "looked_up" not in rt.state.milestones
    observed = rt.observe(ORDER)  # the live-guard path: result arrives after the step
    assert observed.milestones == ("looked_up[O1]",) and observed.observation == ORDER
    assert rt.phase_done("intake")


def test_credit_only_for_the_first_completion_of_each_milestone(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1 and O2"))
    first = rt.step(tool("lookup", order_id="O1"), ORDER)
    second = rt.step(tool("lookup", order_id="O2"), '{"order_id": "O2"}')
    again = rt.step(tool("lookup", order_id="O1"), ORDER)
    assert first.credit == 1.0 and first.milestones == ("looked_up[O1]",)
    assert second.credit == 0.0 and second.milestones == ("looked_up[O2]",)  # new key, no credit
    assert again.credit == 0.0 and again.milestones == ()
    assert rt.state.milestones["looked_up"] == ("O1", "O2")


def test_recovery_discount_on_the_first_progress_after_a_rejection(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    assert not rt.step(tool("refund", order_id="O1")).accepted  # rejection: recovery flag on
    recovered = rt.step(tool("lookup", order_id="O1"), ORDER)
    assert recovered.recovery and recovered.credit == pytest.approx(0.9)  # 1.0 * rho
    assert not rt.state.recovering
    later = rt.step(say("Refund O1? please confirm"))
    assert not later.recovery and later.credit == 1.0  # no discount once recovered


def test_withheld_feedback_makes_no_recovery_and_no_discount(contract):
    # The paper (A.1): disabling feedback keeps the recovery flag zero. Before issue 32 the
    # flag was set on every rejection, so the same run earned 0.9 here without feedback.
    rt = ContractRuntime(contract, feedback=False)
    rt.step(user("refund O1"))
    rejected = rt.step(tool("refund", order_id="O1"))
    assert not rejected.accepted and not rejected.feedback_shown
    assert not rt.state.recovering and rt.state.rejected == 1
    after = rt.step(tool("lookup", order_id="O1"), ORDER)
    assert not after.recovery and after.credit == 1.0  # full credit: nobody was corrected
    assert rt.credit == 1.0


def test_rho_override_discounts_the_recovery_action(contract):
    rt = ContractRuntime(contract, rho=0.5)
    rt.step(user("refund O1"))
    rt.step(tool("refund", order_id="O1"))  # rejected
    rt.step(user("ok"))  # user turns are not agent actions: the flag stays
    assert rt.state.recovering
    recovered = rt.step(tool("lookup", order_id="O1"), ORDER)
    assert recovered.recovery and recovered.credit == pytest.approx(0.5)


def test_any_accepted_action_resets_the_recovery_flag(contract):
    # The paper (section 3): the flag is reset by any accepted action, also one that makes
    # no progress. Hand-written trajectory: reject, think (accepted, no milestone), lookup.
    rt = ContractRuntime(contract, rho=0.5)
    rt.step(user("refund O1"))
    assert not rt.step(tool("refund", order_id="O1")).accepted  # flag on
    thought = rt.step(tool("think", thought="I must look it up"), "")
    assert thought.accepted and thought.recovery and thought.credit == 0.0  # the recovery action
    assert not rt.state.recovering
    later = rt.step(tool("lookup", order_id="O1"), ORDER)
    assert not later.recovery and later.credit == 1.0  # full credit, not 1.0 * 0.5
    assert rt.credit == 1.0


def test_recovery_credit_waits_for_the_recovery_actions_observation(contract):
    # The recovery action's milestone is verified by its observation, delivered later:
    # still discounted; the next accepted action is not a recovery.
    rt = ContractRuntime(contract, rho=0.5)
    rt.step(user("refund O1"))
    rt.step(tool("refund", order_id="O1"))  # rejected
    pending = rt.step(tool("lookup", order_id="O1"))  # no observation yet
    assert pending.recovery and pending.credit == 0.0 and not rt.state.recovering
    assert rt.observe(ORDER).credit == pytest.approx(0.5)


def test_recovery_action_without_milestone_clears_the_flag(contract):
    rt = ContractRuntime(contract)
    rt.step(tool("refund", order_id="O1"))  # rejected
    cleared = rt.step(say("Which order do you mean?"))  # progress by a phase rule
    assert cleared.recovery and cleared.credit == 0.0 and not rt.state.recovering
    rt.step(user("O1"))
    assert rt.step(tool("lookup", order_id="O1"), ORDER).credit == 1.0


def test_termination_requires_every_required_phase(contract):
    rt = ContractRuntime(contract)
    run_to_approved(rt)
    verdict = rt.finish()
    assert not verdict.accepted
    assert verdict.missing_phases == ("act",)
    assert "required phase(s) not done: act" in verdict.reason


def test_final_phases_restrict_accepted_termination():
    text = TOY + "termination: {final_phases: [act]}\n"
    rt = ContractRuntime(parse_contract(text))
    run_to_approved(rt)
    rt.step(tool("refund", order_id="O1"), "{}")
    assert rt.finish().accepted
    rt.step(say("done, anything else?"))  # act -> intake
    verdict = rt.finish()
    assert not verdict.accepted and "ended in phase 'intake'" in verdict.reason


def test_turn_budget_exhaustion_halts_the_run_and_fails_termination():
    text = TOY.replace("budgets: {turns: 8, tool_calls: 5}", "budgets: {turns: 2}")
    rt = ContractRuntime(parse_contract(text))
    rt.step(user("refund O1"))
    rt.step(say("Which order?"))
    rt.step(say("Hello?"))
    over = rt.step(tool("lookup", order_id="O1"), ORDER)  # the third agent action
    assert not over.accepted and over.via == "budget" and over.halted == "turns"
    assert "turns budget (2) is exhausted" in over.feedback.reason
    assert over.feedback.next_action is None
    after = rt.step(say("still here"))
    assert not after.accepted and after.via == "halted"
    ignored = rt.step(user("yes"))
    assert ignored.accepted and ignored.via == "halted" and ignored.phase == "intake"
    verdict = rt.finish()
    assert not verdict.accepted and verdict.budget_exhausted == "turns"
    assert verdict.reason.startswith("the turns budget ran out before accepted termination")
    assert rt.state.turns == 2 and rt.rejected == 2


def test_tool_call_budget_counts_tool_calls_only():
    text = TOY.replace("budgets: {turns: 8, tool_calls: 5}", "budgets: {tool_calls: 1}")
    rt = ContractRuntime(parse_contract(text))
    rt.step(user("refund O1"))
    assert rt.step(tool("lookup", order_id="O1"), ORDER).accepted
    assert rt.step(say("please confirm")).accepted  # messages do not use the tool budget
    rt.step(user("yes"))
    over = rt.step(tool("refund", order_id="O1"), "{}")
    assert not over.accepted and over.halted == "tool_calls"
    # exhausted after intake was done but act never was: termination fails
    assert not rt.finish().accepted


def test_budget_exhaustion_fails_even_with_every_required_phase_done():
    # The paper: exhaustion without accepted termination is a failure. Every required phase
    # was done by the third action, but the agent went on and ran out of turns.
    text = TOY.replace("budgets: {turns: 8, tool_calls: 5}", "budgets: {turns: 3}")
    rt = ContractRuntime(parse_contract(text))
    run_to_approved(rt)  # 2 agent actions
    rt.step(tool("refund", order_id="O1"), "{}")  # the third: act done
    assert rt.finish().accepted  # had the run ended here, it would terminate
    assert not rt.step(say("anything else?")).accepted  # the fourth is over budget
    verdict = rt.finish()
    assert not verdict.accepted and verdict.budget_exhausted == "turns"
    assert verdict.missing_phases == ()
    assert verdict.reason == "the turns budget ran out before accepted termination"


def test_turn_shape_rejects_parallel_calls_and_calls_with_a_message(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    parallel = rt.step(Action.tool("lookup", {"order_id": "O1"}, parallel=2), ORDER)
    assert not parallel.accepted and "2 tool calls were sent in one turn" in parallel.feedback.reason
    chatty = rt.step(Action.tool("lookup", {"order_id": "O1"}, with_message=True), ORDER)
    assert not chatty.accepted and "together with a message" in chatty.feedback.reason
    assert "looked_up" not in rt.state.milestones


def test_unknown_tool_is_rejected(contract):
    rt = ContractRuntime(contract)
    result = rt.step(tool("delete_everything"))
    assert not result.accepted and "not one of the contract's tools" in result.feedback.reason


def test_check_is_a_dry_run(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    before = rt.state
    feedback = rt.check(tool("refund", order_id="O1"))
    assert not feedback.admissible
    assert rt.state == before and len(rt.history) == 1
    assert rt.check(tool("lookup", order_id="O1")).admissible


def test_dry_run_does_not_spend_or_halt_the_budget():
    text = TOY.replace("budgets: {turns: 8, tool_calls: 5}", "budgets: {turns: 1}")
    rt = ContractRuntime(parse_contract(text))
    rt.step(say("hi"))
    assert not rt.check(say("again")).admissible
    assert rt.state.halted is None


def test_feedback_never_contains_observation_content(contract):
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    secret = '{"order_id": "O1", "answer": "SECRET-ANSWER-42"}'
    steps = [rt.step(tool("lookup", order_id="O1"), secret),
             rt.step(tool("refund", order_id="O1"), secret)]
    for step in steps:
        assert "SECRET-ANSWER-42" not in step.feedback.render()
    assert steps[1].feedback.render().startswith("Rejected: ")
    assert "Current phase: intake." in steps[1].feedback.render()


def test_feedback_is_shown_on_live_rejections_and_withheld_when_switched_off(contract):
    def run(rt):
        rt.step(user("refund O1"))
        return [rt.step(tool("refund", order_id="O1")),  # rejected
                rt.step(tool("lookup", order_id="O1"), ORDER),  # accepted
                rt.step(tool("refund", order_id="O1"))]  # rejected (confirm first)

    shown = run(ContractRuntime(contract))
    assert [s.feedback_shown for s in shown] == [True, False, True]
    assert shown[0].agent_message().startswith("Rejected: ") and shown[1].agent_message() is None
    quiet_rt = ContractRuntime(contract, feedback=False)
    quiet = run(quiet_rt)
    # same verdicts and state, nothing shown
    assert [s.accepted for s in quiet] == [s.accepted for s in shown]
    assert [s.feedback_shown for s in quiet] == [False, False, False]
    assert quiet[0].agent_message() == "The action was not executed."
    assert quiet_rt.state.rejected == 2 and quiet_rt.state.hints == 0


def test_no_feedback_is_shown_after_the_budget_ran_out():
    text = TOY.replace("budgets: {turns: 8, tool_calls: 5}", "budgets: {turns: 1}")
    rt = ContractRuntime(parse_contract(text))
    rt.step(say("hi"))
    over = rt.step(say("again"))  # exhausts: the agent is told the run is over
    after = rt.step(say("still here"))  # the run is over: nobody to tell
    assert over.feedback_shown and not after.feedback_shown
    assert (rt.state.rejected, rt.state.hints, rt.state.agent_steps) == (2, 1, 3)


def test_live_guard_flow(contract):
    """An agent asks before executing, executes only accepted calls, reports the result."""
    rt = ContractRuntime(contract)
    rt.step(user("refund O1"))
    proposed = tool("refund", order_id="O1")
    verdict = rt.step(proposed)
    assert not verdict.accepted  # the agent is told, the refund is not executed
    lookup = rt.step(tool("lookup", order_id="O1"))
    assert lookup.accepted
    rt.observe(ORDER)
    assert rt.state.milestones == {"looked_up": ("O1",)}
    assert rt.history[-1].observation == ORDER


def test_accepted_feedback_suggests_a_next_action(contract):
    rt = ContractRuntime(contract)
    first = rt.step(user("refund O1"))
    assert first.feedback.next_action == "look the order up"
    rt.step(tool("lookup", order_id="O1"), ORDER)
    assert rt.history[-1].feedback.next_action == "ask the user to confirm the refund"


def test_rho_outside_range_is_refused(contract):
    with pytest.raises(ValueError, match="rho must be in"):
        ContractRuntime(contract, rho=0)
