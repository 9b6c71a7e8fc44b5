"""The tau-bench airline contract (fixtures/contracts/airline.yaml) on hand-written
conversations, one per procedure, and on five real gpt-4o runs read by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.contracts import (
    Action,
    ContractRuntime,
    load_contract,
    load_trajectories,
    replay_all,
    summarize,
)

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "contracts"

RESERVATION = json.dumps({"reservation_id": "ZX9Q1T", "user_id": "ana_rossi_1001",
                          "cabin": "business", "flights": []})
OTHER = json.dumps({"reservation_id": "QQ1234", "user_id": "ana_rossi_1001"})
PROFILE = json.dumps({"name": {"first_name": "Ana"}, "reservations": ["ZX9Q1T", "QQ1234"]})
PROPOSAL = ("Cancel reservation ZX9Q1T (business, HAT001 on May 20), refund to the original "
            "card. Do you confirm the cancellation?")


@pytest.fixture(scope="module")
def airline():
    return load_contract(HERE / "airline.yaml")


@pytest.fixture
def rt(airline):
    return ContractRuntime(airline)


def identified(rt):
    rt.step(Action.user("Cancel ZX9Q1T please. My user id is ana_rossi_1001."))
    assert rt.step(Action.tool("get_user_details", {"user_id": "ana_rossi_1001"}), PROFILE).accepted
    assert rt.step(Action.tool("get_reservation_details", {"reservation_id": "ZX9Q1T"}),
                   RESERVATION).accepted


def cancel(rt, reservation="ZX9Q1T"):
    return rt.step(Action.tool("cancel_reservation", {"reservation_id": reservation}), RESERVATION)


def test_confirmed_cancellation_is_accepted(rt):
    identified(rt)
    assert rt.step(Action.assistant(PROPOSAL)).phase == "propose"
    assert rt.step(Action.user("Yes, please go ahead.")).phase == "confirmed"
    result = cancel(rt)
    assert result.accepted and result.phase == "commit"
    assert "database_updated" in result.milestones
    assert rt.finish().accepted and rt.rejected == 0


def test_update_without_confirmation_is_rejected(rt):
    identified(rt)
    rt.step(Action.assistant("I see your reservation ZX9Q1T."))
    rt.step(Action.user("Cancel it."))
    result = cancel(rt)
    assert not result.accepted
    assert "route: work -> propose -> confirmed -> commit" in result.feedback.reason
    assert "ask for explicit confirmation (yes)" in result.feedback.next_action


def test_yes_must_answer_the_proposal_immediately(rt):
    identified(rt)
    rt.step(Action.assistant(PROPOSAL))
    rt.step(Action.user("Yes."))
    rt.step(Action.assistant("By the way, the refund takes 5 to 7 business days."))  # -> work
    assert not cancel(rt).accepted  # the yes went stale


def test_a_question_or_a_refusal_is_not_a_yes(rt):
    identified(rt)
    for reply in ("If I cancel, can I go ahead and rebook later?", "No, don't proceed yet.",
                  "I'll go with the first option."):
        rt.step(Action.assistant(PROPOSAL))
        assert rt.step(Action.user(reply)).phase == "work", reply
        assert not cancel(rt).accepted


def test_confirmation_covers_consecutive_updates_and_reads(rt):
    identified(rt)
    rt.step(Action.tool("get_reservation_details", {"reservation_id": "QQ1234"}), OTHER)
    rt.step(Action.assistant("Cancel ZX9Q1T and QQ1234? Please confirm."))
    rt.step(Action.user("Yes, both."))
    assert rt.step(Action.tool("think", {"thought": "two cancels"}), "").accepted
    assert cancel(rt).accepted
    assert cancel(rt, "QQ1234").accepted


def test_write_before_identification_is_rejected_with_identification_hint(rt):
    rt.step(Action.user("Cancel ZX9Q1T, I don't remember my user id."))
    # reading is allowed, but the reservation's owner is not a user id the user gave
    assert rt.step(Action.tool("get_reservation_details", {"reservation_id": "ZX9Q1T"}),
                   RESERVATION).accepted
    rt.step(Action.assistant(PROPOSAL))
    rt.step(Action.user("Yes."))
    result = cancel(rt)
    assert not result.accepted
    assert result.feedback.next_action.startswith("call get_user_details with the user id")
    assert not rt.finish().accepted


def test_identification_by_reading_a_reservation_the_user_owns(rt):
    rt.step(Action.user("I'm ana_rossi_1001, cancel ZX9Q1T."))
    read = rt.step(Action.tool("get_reservation_details", {"reservation_id": "ZX9Q1T"}), RESERVATION)
    assert set(read.milestones) == {"user_identified[ana_rossi_1001]", "reservation_read[ZX9Q1T]"}
    assert rt.phase_done("identify")


def test_user_id_must_come_from_the_user(rt):
    rt.step(Action.user("I forgot my user id, my name is Ana Rossi."))
    guessed = rt.step(Action.tool("get_user_details", {"user_id": "ana_rossi_1001"}), PROFILE)
    assert not guessed.accepted
    assert "a value the user gave" in guessed.feedback.reason


def test_change_needs_that_reservation_read(rt):
    identified(rt)
    rt.step(Action.assistant("Cancel QQ1234? Please confirm."))
    rt.step(Action.user("Yes"))
    result = cancel(rt, "QQ1234")  # QQ1234 was never read
    assert not result.accepted and "reservation_read" in result.feedback.reason
    assert result.feedback.next_action.startswith("call get_reservation_details for this reservation")


def test_booking_needs_the_identified_user(rt):
    identified(rt)
    rt.step(Action.assistant("Book HAT001 for Ana, $200 on the card ending 1111. Confirm?"))
    rt.step(Action.user("yes"))
    wrong_user = rt.step(Action.tool("book_reservation", {"user_id": "someone_else_1"}), "{}")
    assert not wrong_user.accepted and "user_identified" in wrong_user.feedback.reason
    assert rt.step(Action.tool("book_reservation", {"user_id": "ana_rossi_1001"}), "{}").accepted


def test_one_tool_call_at_a_time_and_never_with_a_message(rt):
    rt.step(Action.user("I'm ana_rossi_1001."))
    chatty = rt.step(Action.tool("get_user_details", {"user_id": "ana_rossi_1001"},
                                 with_message=True), PROFILE)
    assert not chatty.accepted and "together with a message" in chatty.feedback.reason
    batch = rt.step(Action.tool("get_user_details", {"user_id": "ana_rossi_1001"}, parallel=2),
                    PROFILE)
    assert not batch.accepted
    assert not rt.phase_done("identify")  # rejected calls verify nothing


def test_transfer_and_public_lookups_are_admissible_before_identification(rt):
    rt.step(Action.user("Any flights from JFK to SEA on May 20?"))
    assert rt.step(Action.tool("search_direct_flight", {"origin": "JFK"}), "[]").accepted
    assert rt.step(Action.tool("transfer_to_human_agents", {"summary": "x"}), "Transfer successful").accepted


def test_synthetic_fixture_verdicts(airline):
    reports = {r.trajectory_id: r for r in replay_all(
        airline, load_trajectories(HERE / "airline_synthetic.json"))}
    assert reports["compliant-cancel"].rejection_free
    assert reports["unconfirmed-cancel"].accepted_termination
    assert reports["unconfirmed-cancel"].rejected == 1
    assert not reports["unidentified-cancel"].accepted_termination


def test_real_tau_bench_runs_read_by_hand(airline):
    """Verdicts checked by reading each run (see the closing note of issue 9):
    31/3 compliant cancel; 28/1 five cancels without a yes plus a tool call sent with a
    message; 39/2 its only reservation read was sent with a message, so the user was never
    identified; 32/3 compliant booking with a wrong outcome; 47/1 no tool call at all."""
    trajectories = load_trajectories(HERE / "tau_airline_sample.json")
    reports = {r.trajectory_id: r for r in replay_all(airline, trajectories)}
    got = {tid: (r.accepted_termination, r.rejected, r.outcome) for tid, r in reports.items()}
    assert got == {
        "task31-trial3": (True, 0, 1.0),
        "task28-trial1": (True, 6, 0.0),
        "task39-trial2": (False, 2, 0.0),
        "task32-trial3": (True, 0, 0.0),
        "task47-trial1": (False, 0, 1.0),
    }
    rejected = [s.action.name for s in reports["task28-trial1"].steps if not s.accepted]
    assert rejected == ["get_user_details"] + ["cancel_reservation"] * 5
    summary = summarize(list(reports.values()))
    assert (summary.pcr, summary.rf_pcr) == (0.6, 0.4)
