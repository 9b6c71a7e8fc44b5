"""Dataset metrics against hand-derived values, and replay of trajectories end to end."""

from __future__ import annotations

import math

import pytest

from workbench.contracts import (
    Action,
    ReplayReport,
    TerminationVerdict,
    Trajectory,
    TrajectoryStep,
    outcome_class,
    parse_contract,
    replay,
    replay_all,
    summarize,
)


def report(tid, accepted, rejected, agent_steps, credit, outcome, hints=None):
    return ReplayReport(tid, (), TerminationVerdict(accepted, "p"), rejected, agent_steps, {},
                        credit, outcome, rejected if hints is None else hints)


REPORTS = [
    report("A", True, 0, 10, 3.0, 1.0),
    report("B", True, 2, 10, 2.9, 0.0),
    report("C", False, 1, 5, 1.0, 1.0),
    report("D", False, 0, 5, 0.0, None),
]


def test_hint_rate_counts_steps_with_feedback_shown_not_rejections():
    # B's budget ran out: 3 rejections, feedback shown on 1; E ran with feedback withheld.
    reports = [report("B", False, 3, 10, 0.0, 0.0, hints=1),
               report("E", True, 2, 10, 1.0, 1.0, hints=0)]
    assert summarize(reports).hint_rate == pytest.approx(1 / 20)  # (1 + 0) / (10 + 10)


def test_rf_pcr_counts_accepted_runs_shown_no_feedback_not_runs_without_rejections():
    # The paper's RF-PCR: accepted termination with no rejected-action feedback. E and F were
    # replayed with feedback withheld (rejections, no hints): both count; only F, without a
    # single rejection, counts for the no-rejection PCR. G was shown feedback: neither.
    reports = [report("E", True, 2, 10, 1.0, 1.0, hints=0),
               report("F", True, 0, 10, 1.0, 1.0, hints=0),
               report("G", True, 1, 10, 1.0, 1.0, hints=1),
               report("H", False, 0, 10, 0.0, 0.0, hints=0)]
    s = summarize(reports)
    assert s.pcr == pytest.approx(3 / 4)  # E, F, G
    assert s.rf_pcr == pytest.approx(2 / 4)  # E, F
    assert s.no_rejection_pcr == pytest.approx(1 / 4)  # F
    assert s.to_dict()["rf_pcr"] == 0.5 and s.to_dict()["no_rejection_pcr"] == 0.25


def test_summary_against_hand_derived_values():
    s = summarize(REPORTS)
    assert s.n == 4
    assert s.pcr == pytest.approx(0.5)  # A, B accepted: 2/4
    assert s.rf_pcr == pytest.approx(0.25)  # only A was shown no feedback: 1/4
    assert s.no_rejection_pcr == pytest.approx(0.25)  # only A has no rejection: 1/4
    assert s.hint_rate == pytest.approx(0.1)  # (0+2+1+0) / (10+10+5+5) = 3/30
    assert s.outcome_rate == pytest.approx(2 / 3)  # A, C succeed among A, B, C (D unknown)
    assert s.mean_credit == pytest.approx(1.725)  # (3 + 2.9 + 1 + 0) / 4
    assert s.outcome_known == 3
    assert s.table.to_dict() == {
        "pcr": {"success": 1, "failure": 1, "unknown": 0},
        "no_pcr": {"success": 1, "failure": 0, "unknown": 1},
    }
    rows = s.table.rows()
    assert rows[0] == {"accepted termination": "yes", "success": 1, "failure": 1, "unknown": 0,
                       "total": 2}


def test_empty_summary_is_nan_and_null_in_json():
    s = summarize([])
    assert s.n == 0 and math.isnan(s.pcr) and math.isnan(s.hint_rate)
    assert s.to_dict()["pcr"] is None and s.to_dict()["outcome_rate"] is None


def test_success_threshold():
    assert outcome_class(0.5) == "failure"
    assert outcome_class(0.5, threshold=0.5) == "success"
    assert outcome_class(None) == "unknown"
    assert summarize(REPORTS[:2], success_threshold=0.0).outcome_rate == 1.0


CONTRACT_TEXT = """
contract: greet-then-answer
phases:
  - id: greet
    required: true
    admits: [{assistant: {pattern: '(?i)hello'}}]
  - id: answer
    required: true
    admits: [{tool: search}, {assistant: any}]
transitions:
  greet: [greet, answer]   # try staying first: "Hello!" is also admitted by answer
milestones:
  - {id: searched, verified_by: {tool: search}}
"""
CONTRACT = parse_contract(CONTRACT_TEXT)


def trajectory(tid, actions, outcome=None):
    return Trajectory(tid, tuple(TrajectoryStep(a, o) for a, o in actions), outcome)


GOOD = trajectory("good", [(Action.user("hi"), None), (Action.assistant("Hello!"), None),
                           (Action.tool("search", {"q": "x"}), "results")], outcome=1.0)
SKIPS_GREETING = trajectory("skip", [(Action.user("hi"), None),
                                     (Action.tool("search", {"q": "x"}), "results")], outcome=1.0)


def test_replay_reports_termination_rejections_and_credit():
    good = replay(CONTRACT, GOOD)
    assert good.accepted_termination and good.rejection_free
    assert good.credit == 1.0 and good.milestones == {"searched": (None,)}
    assert good.to_dict()["accepted_termination"] is True
    # The search is admissible (greet -> answer is allowed), so nothing is rejected, but the
    # required greeting never happened: a good outcome that bypassed a required phase.
    skip = replay(CONTRACT, SKIPS_GREETING)
    assert skip.rejected == 0 and not skip.accepted_termination
    assert skip.termination.missing_phases == ("greet",)
    assert skip.outcome == 1.0


def test_replay_scorer_overrides_the_recorded_outcome():
    scored = replay(CONTRACT, GOOD, scorer=lambda t: False)
    assert scored.outcome == 0.0
    assert replay(CONTRACT, GOOD, scorer=lambda t: None).outcome is None


def test_replay_all_then_summarize_pcr_by_outcome():
    reports = replay_all(CONTRACT, [GOOD, trajectory("silent", [(Action.user("hi"), None)], 0.0)])
    s = summarize(reports)
    assert (s.pcr, s.rf_pcr, s.outcome_rate) == (0.5, 0.5, 0.5)
    assert s.table.cell(True, "success") == 1 and s.table.cell(False, "failure") == 1


def test_transitions_are_tried_before_the_phase_own_rules():
    """Without the explicit self-loop the greeting is taken by the transition to answer, so
    greet is never done: the order in which transitions are listed is the priority."""
    text = CONTRACT_TEXT.replace("greet: [greet, answer]", "greet: [answer]")
    moved = replay(parse_contract(text), GOOD)
    assert moved.steps[1].phase == "answer" and not moved.accepted_termination
