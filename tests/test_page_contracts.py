"""The /contracts page, headless with AppTest: validation, replay, step-through, escaping."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "contracts.py")


@pytest.fixture
def app():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_default_page_replays_the_synthetic_conversations(app):
    assert "contract: tau-airline" in app.text_area(key="contract_yaml").value
    assert any("Valid contract: 5 phases" in s.value for s in app.success)
    assert metric(app, "Trajectories") == "3"
    assert metric(app, "PCR") == "66.7 %" and metric(app, "RF-PCR") == "33.3 %"
    table = app.dataframe[0].value  # the PCR x outcome table comes first
    assert list(table["accepted termination"]) == ["yes", "no"]
    assert list(table["success"]) == [2, 0] and list(table["failure"]) == [0, 1]


def test_withholding_feedback_zeroes_the_hint_rate_only(app):
    pcr, hints = metric(app, "PCR"), metric(app, "Hint rate")
    assert hints != "0.0 %"
    app.toggle(key="contract_feedback").set_value(False).run()
    assert not app.exception
    assert metric(app, "Hint rate") == "0.0 %" and metric(app, "PCR") == pcr


def test_invalid_contract_shows_located_problems_and_stops(app):
    broken = "contract: x\nphases:\n  - id: a\n    admits: [{tol: 1}]\n"
    app.text_area(key="contract_yaml").set_value(broken).run()
    assert not app.exception
    assert any(re.match(r"The contract has \d+ problems?; fix (it|them) to replay", e.value)
               for e in app.error)
    assert any("line 4: phases[0].admits[0].tol: unknown key 'tol'" in c.value for c in app.code)
    assert not app.metric  # stopped before the replay


def test_step_through_shows_the_rejection_and_feedback(app):
    app.selectbox[1].set_value("unconfirmed-cancel").run()
    slider = app.slider(key="step-unconfirmed-cancel")
    slider.set_value(2).run()
    assert not app.exception
    assert any(e.value == "Rejected" for e in app.error)
    assert any(c.value.startswith("Rejected: cancel_reservation is admitted in phase 'commit'")
               for c in app.code)
    steps = app.dataframe[-1].value  # "steps up to here" comes last
    assert list(steps["verdict"]) == ["accepted", "accepted", "REJECTED"]


def test_trajectory_text_is_shown_verbatim_never_as_markdown_or_html(app):
    hostile = "<script>alert(1)</script> **bold** [link](http://example.com) <b>x</b>"
    pasted = json.dumps([{"role": "user", "content": hostile},
                         {"role": "assistant", "content": "ok"}])
    app.selectbox[0].set_value("Paste JSON…").run()
    app.text_area(key="pasted_trajectories").set_value(pasted).run()
    assert not app.exception
    assert metric(app, "Trajectories") == "1"
    assert any(c.value == hostile for c in app.code)  # shown as plain text
    rendered = [m.value for m in app.markdown] + [c.value for c in app.caption]
    assert not any("<script>" in v or "**bold**" in v for v in rendered)


def test_unreadable_pasted_json_is_explained(app):
    app.selectbox[0].set_value("Paste JSON…").run()
    app.text_area(key="pasted_trajectories").set_value("[{").run()
    assert not app.exception
    assert any("could not be read" in e.value for e in app.error)
    assert any("not valid JSON" in c.value for c in app.code)


def test_reset_restores_the_airline_contract(app):
    app.text_area(key="contract_yaml").set_value("contract: [").run()
    assert app.error
    app.button[0].click().run()
    assert not app.exception and not app.error
    assert "contract: tau-airline" in app.text_area(key="contract_yaml").value


def test_blocked_calls_recorded_at_run_time_are_listed(tmp_path, monkeypatch):
    from workbench.contracts import ContractCheckLog, check_call, load_contract
    from workbench.contracts.actions import Action
    from workbench.identity.roles import Actor

    log_path = tmp_path / "checks.jsonl"
    monkeypatch.setenv("WORKBENCH_CONTRACT_LOG", str(log_path))
    contract = load_contract(Path(PAGE).parents[1] / "fixtures" / "contracts" / "airline.yaml")
    check = check_call(contract, [], Action.tool("cancel_reservation", {"reservation_id": "X"}),
                       session="<b>s-1</b>")
    ContractCheckLog().record(check, actor=Actor.signed_in("api", "analyst"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    blocked = next(e for e in at.expander if e.label == "Blocked at run time (1)")
    table = blocked.dataframe[0].value
    assert table["call"].tolist() == ["cancel_reservation"]
    assert table["session"].tolist() == ["<b>s-1</b>"]  # shown as text, never as HTML
    assert table["feedback"].tolist()[0].startswith("Rejected: ")
