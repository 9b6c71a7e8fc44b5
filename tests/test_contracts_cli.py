"""``workbench contract check|replay`` run in-process through ``workbench.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "contracts"
AIRLINE = str(HERE / "airline.yaml")
SYNTHETIC = str(HERE / "airline_synthetic.json")
TAU_SAMPLE = str(HERE / "tau_airline_sample.json")


def test_check_valid_contract(capsys):
    assert main(["contract", "check", AIRLINE]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: contract 'tau-airline'")
    assert "5 phases (required: identify; initial: identify)" in out


def test_check_json(capsys):
    assert main(["contract", "check", AIRLINE, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] and data["issues"] == []
    assert data["contract"]["required_phases"] == ["identify"]


def test_check_invalid_contract_lists_located_problems(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("contract: bad\nphases:\n  - id: a\n    admits: [{tol: x}]\n")
    assert main(["contract", "check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: invalid contract")
    assert f"{bad}:4: phases[0].admits[0].tol: unknown key 'tol'" in err
    assert main(["contract", "check", str(bad), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert not data["valid"] and data["issues"][0]["line"] == 4


def test_check_missing_file(tmp_path, capsys):
    assert main(["contract", "check", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_replay_json_per_trajectory_and_summary(capsys):
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {t["id"]: t for t in data["trajectories"]}
    assert set(rows["compliant-cancel"]) >= {"id", "accepted_termination", "rejected",
                                             "milestones", "credit", "outcome"}
    assert rows["compliant-cancel"]["accepted_termination"] is True
    assert rows["compliant-cancel"]["credit"] == 5.0
    assert rows["unconfirmed-cancel"]["rejected"] == 1
    assert rows["unidentified-cancel"]["accepted_termination"] is False
    summary = data["summary"]
    # 2 of 3 accepted, 1 of 3 without rejection; outcomes 1, 1, 0
    assert summary["n"] == 3
    assert summary["pcr"] == round(2 / 3, 6) and summary["rf_pcr"] == round(1 / 3, 6)
    assert summary["outcome_rate"] == round(2 / 3, 6)
    assert summary["pcr_x_outcome"] == {"pcr": {"success": 2, "failure": 0, "unknown": 0},
                                        "no_pcr": {"success": 0, "failure": 1, "unknown": 0}}
    assert "steps" not in rows["compliant-cancel"]


def test_replay_without_feedback_keeps_verdicts_and_zeroes_the_hint_rate(capsys):
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--json", "--no-feedback"]) == 0
    withheld = json.loads(capsys.readouterr().out)
    assert (shown["feedback"], withheld["feedback"]) == ("shown", "withheld")
    assert shown["summary"]["hint_rate"] > 0 and withheld["summary"]["hint_rate"] == 0
    for key in ("pcr", "no_rejection_pcr", "outcome_rate"):
        assert withheld["summary"][key] == shown["summary"][key]
    # RF-PCR counts accepted runs shown no rejection feedback: without feedback, all of them
    assert shown["summary"]["rf_pcr"] == round(1 / 3, 6)
    assert withheld["summary"]["rf_pcr"] == withheld["summary"]["pcr"] == round(2 / 3, 6)


def test_replay_without_feedback_applies_no_recovery_discount(capsys):
    # Five of the 200 gpt-4o airline runs: one milestone is earned by a recovery action, so
    # with feedback the mean credit is discounted (2.36); withheld, no action is a recovery
    # and the credit is the undiscounted one (--rho 1: 2.40). Before issue 32 withholding
    # feedback still gave 2.36.
    def summary(*extra: str) -> dict:
        assert main(["contract", "replay", AIRLINE, TAU_SAMPLE, "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)["summary"]

    shown, withheld, undiscounted = summary(), summary("--no-feedback"), summary("--rho", "1")
    assert shown["mean_credit"] == pytest.approx(2.36)
    assert withheld["mean_credit"] == undiscounted["mean_credit"] == pytest.approx(2.4)
    assert withheld["hint_rate"] == 0 and shown["hint_rate"] > 0


def test_replay_text_with_steps(capsys):
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--show", "unconfirmed-cancel"]) == 0
    out = capsys.readouterr().out
    assert "summary: n=3 pcr=0.667 rf_pcr=0.333" in out
    assert "steps of unconfirmed-cancel" in out
    assert "REJ [identify -> identify] cancel_reservation" in out
    assert "feedback: Rejected: cancel_reservation is admitted in phase 'commit'" in out


def test_replay_show_in_json_includes_steps(capsys):
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--json", "--show", "compliant-cancel"]) == 0
    rows = {t["id"]: t for t in json.loads(capsys.readouterr().out)["trajectories"]}
    steps = rows["compliant-cancel"]["steps"]
    assert [s["phase"] for s in steps][-3:] == ["commit", "work", "work"]


def test_replay_user_errors(tmp_path, capsys):
    assert main(["contract", "replay", AIRLINE, str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('[{"foo": 1}]')
    assert main(["contract", "replay", AIRLINE, str(bad)]) == 2
    assert "expected 'traj' (tau-bench) or 'messages'" in capsys.readouterr().err
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--show", "nope"]) == 2
    assert "no trajectory with id 'nope'" in capsys.readouterr().err
    assert main(["contract", "replay", AIRLINE, SYNTHETIC, "--rho", "0"]) == 2
    assert "--rho must be in (0, 1]" in capsys.readouterr().err


def test_replay_rho_changes_discounted_credit(capsys):
    # task28-trial1: the read right after its rejected get_user_details completes
    # user_identified and reservation_read (discounted), then transferred earns a full 1.0.
    sample = str(HERE / "tau_airline_sample.json")
    main(["contract", "replay", AIRLINE, sample, "--json"])
    default = {t["id"]: t["credit"] for t in json.loads(capsys.readouterr().out)["trajectories"]}
    main(["contract", "replay", AIRLINE, sample, "--json", "--rho", "0.5"])
    halved = {t["id"]: t["credit"] for t in json.loads(capsys.readouterr().out)["trajectories"]}
    assert default["task28-trial1"] == 2.8 and halved["task28-trial1"] == 2.0  # 0.9*2+1, 0.5*2+1
    assert default["task31-trial3"] == halved["task31-trial3"] == 5.0


def test_contract_group_without_subcommand_prints_help(capsys):
    assert main(["contract"]) == 2
    assert "check" in capsys.readouterr().out
