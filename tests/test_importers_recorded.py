"""Imported cases audited by the real judge's recorded answers (issue 34), and a tau2-bench
simulation audited against the tau2-bench airline policy, stored and shown on Replay.

``fixtures/recordings/importers_airline.jsonl`` holds the embedded model's
(Qwen2.5-Coder-1.5B Q4_K_M) answers, recorded by ``fixtures/importers/record.py`` (re-record
with the one command in its docstring). Replay needs the default role settings; the judge
window is fixed by the plan, so the prompts do not depend on the machine.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.scripted import replay_gateway
from workbench.audit.pipeline import audit_case
from workbench.audit.policy import AuditIndex
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "fixtures" / "recordings" / "importers_airline.jsonl"
SIM = "5f0c2a8e-7d41-4b6e-9c1a-1e2b3c4d5e6f"


def _plan():
    path = ROOT / "fixtures" / "importers" / "record.py"
    spec = importlib.util.spec_from_file_location("importers_record", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLAN = _plan()


@pytest.fixture
def gateway(tmp_path):
    return replay_gateway(RECORDINGS, tmp_path)


@pytest.fixture(scope="module")
def index():
    return AuditIndex(PolicyIndex.load(PLAN.INDEX))


def _audit(case, index, gateway):
    return audit_case(case, index, "cdg", gateway, PLAN.options(gateway.config.role("judge").max_tokens))


# What the 1.5B judge answered on each format's case (whole-context mode, cdg).
EXPECTED = {
    f"{SIM}:0": (False, []),  # the greeting
    f"{SIM}:2": (False, []),  # the reservation lookup
    # Cancels a 4-day-old basic economy booking: the v2 prompt caught it citing the 24-hour
    # cancellation rule; the v3 one (evidence quotes, log-probabilities) misses it, though at
    # P(violation) 0.41 it is the most doubtful of the compliant answers here.
    f"{SIM}:6": (False, []),
    # The other simulation's refusal to add insurance after booking is compliant, but the small
    # judge flags it under the very rule it follows (no insurance after booking): a false
    # positive of the 1.5B model, kept as it answered.
    "9a8b7c6d-5e4f-4a3b-8c2d-1f0e9d8c7b6a:2": (True, ["AIR-R041"]),
    # OpenAI chat log: the agent offers to add insurance after booking (labelled a violation);
    # the small judge in whole mode misses it, as it misses the merchant case study.
    "chat-7f3a:4": (False, []),
    # OpenTelemetry chat span: a $50 certificate to a regular economy member without
    # insurance (no compensation is due): missed too.
    "4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8": (False, []),
    # CSV by column mapping: a $100 certificate to a regular economy member: missed.
    "T-1042": (False, []),
}


@pytest.mark.parametrize("case_id", list(EXPECTED))
def test_imported_cases_audited_with_the_recorded_judge(case_id, index, gateway):
    case = next(c for c in PLAN.audited() if c.id == case_id)
    t = _audit(case, index, gateway)
    assert t.error is None, t.error
    assert t.skills == ["airline-policy"] and t.routing == "case"
    assert (t.verdict.violation, t.verdict.violated_rules) == EXPECTED[case_id]
    assert set(t.verdict.violated_rules) <= set(t.closure_ids)


def test_tau2_simulation_imported_audited_and_shown_on_replay(tmp_path, monkeypatch, gateway, index):
    from store import audit_repo, repo
    from store.db import make_engine
    from workbench.cli import main

    url = f"sqlite:///{tmp_path / 'wb.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    repo.import_index(eng, PolicyIndex.load(PLAN.INDEX), actor=COMMAND_LINE)
    tau2 = Path(PLAN.HERE) / "tau2_airline_results.json"
    assert main(["import-cases", str(tau2), "--dataset", "tau2-airline", "--db", url,
                 "--format", "tau2", "--policy", "airline=airline-policy"]) == 0
    stored = {c.id: c for c in audit_repo.load_cases(eng, "tau2-airline")}
    assert len(stored) == 7
    traces = [_audit(stored[cid], index, gateway) for cid in EXPECTED if cid in stored]
    assert audit_repo.save_traces(eng, traces, "recorded", "tau2-airline", actor=COMMAND_LINE) == 4

    at = AppTest.from_file(str(ROOT / "pages" / "replay.py"), default_timeout=90).run()
    assert not at.exception
    at.selectbox(key="replay_dataset").set_value("tau2-airline").run()
    at.selectbox(key="replay_case").set_value(f"{SIM}:6").run()
    assert not at.exception
    assert [e.value for e in at.success][:1] == ["Compliant"]  # the judge's miss, as recorded
    texts = [t.value for t in at.text]
    assert '[tool call] cancel_reservation {"reservation_id": "NQ7TZB"}' in texts  # the reply
    assert any(t.startswith("[tool result] get_reservation_details:") for t in texts)  # a tool turn
    assert "My plans changed, I don't need the trip anymore." in texts
    # How sure: P(violation) 0.41, so 59 % compliant, in words (no threshold saved here).
    shown = [m.value.replace("\\", "") for m in at.markdown]  # markdown-escaped text
    assert "**probably compliant — 59 % (uncalibrated)**" in shown, shown


def test_review_page_uploads_a_tau2_file(tmp_path, monkeypatch):
    from store import audit_repo, repo
    from store.db import make_engine

    url = f"sqlite:///{tmp_path / 'up.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    repo.import_index(make_engine(url), PolicyIndex.load(PLAN.INDEX), actor=COMMAND_LINE)
    at = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=90).run()
    at.radio(key="rv_cases_source").set_value("Upload a cases file").run()
    at.selectbox(key="rv_cases_format").set_value("tau2").run()
    data = (Path(PLAN.HERE) / "tau2_airline_results.json").read_bytes()
    at.file_uploader(key="rv_cases_file").set_value(("run.json", data, "application/json"))
    at.text_input(key="rv_cases_name").set_value("uploaded")
    at.text_input(key="rv_cases_policy").set_value("airline=airline-policy")
    at.button(key="rv_cases_store").click().run()
    assert not at.exception
    assert "Stored 7 cases as dataset uploaded" in at.success[0].value.replace("\\", "")
    cases = audit_repo.load_cases(make_engine(url), "uploaded")
    assert {tuple(c.skills) for c in cases} == {("airline-policy",)}
    # A wrong format for the file: nothing stored, and the line is named.
    at.selectbox(key="rv_cases_format").set_value("openai").run()
    at.file_uploader(key="rv_cases_file").set_value(("run.json", data, "application/json"))
    at.text_input(key="rv_cases_name").set_value("wrong")
    at.button(key="rv_cases_store").click().run()
    shown = at.error[0].value.replace("\\", "")
    assert "Nothing was stored" in shown and "run.json:1: not valid JSON" in shown
    assert audit_repo.load_cases(make_engine(url), "wrong") == []
