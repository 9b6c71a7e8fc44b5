"""The Skills page shows what an extraction may have lost and how it scores against a
reference graph of the same SKILL."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from store import repo
from store.db import make_engine
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
EXTRACTED = ROOT / "fixtures" / "demo" / "extracted" / "v1"  # the BEFORE extraction


def test_reference_figures_and_rule_cap_warning(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'skills.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    monkeypatch.setenv("WORKBENCH_REFERENCE_INDEX", str(ROOT / "fixtures" / "demo" / "index.json"))
    eng = make_engine(url)
    airline = PolicyIndex.load(EXTRACTED / "index.embedded.json")["airline-policy"]
    report = next(r for r in json.loads((EXTRACTED / "reports.json").read_text())
                  if r["skill"] == "airline-policy")
    report["blocks"][0]["capped"] = 1  # as a run that hit the rule cap would store it
    repo.save_skill(eng, airline, author="test", note="extracted", report=report, actor=COMMAND_LINE)
    eng.dispose()

    at = AppTest.from_file(str(ROOT / "pages/skills.py"), default_timeout=60).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rule recall"] == "76 %"  # 48 of 63 hand-built rules covered
    assert metrics["Rule precision"] == "73 %"  # 47 of 64 extracted rules on a hand rule
    assert "Edge F1" in metrics
    assert any("rule cap" in w.value for w in at.warning)
