"""Headless page tests with Streamlit's AppTest against a temporary database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import repo
from store.db import make_engine
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(refund_db):
    return refund_db


def test_skills_page_lists_stats(db):
    at = AppTest.from_file(str(ROOT / "pages/skills.py"), default_timeout=60).run()
    assert not at.exception
    assert [m.value for m in at.metric] == ["1", "4", "3", f"{at.metric[3].value}"]
    assert at.metric[1].label == "Rules"
    assert at.selectbox(key="skills_pick").value == "refunds"
    frame = at.dataframe[0].value
    assert frame.loc[0, "rules"] == 4 and frame.loc[0, "max depth"] == 2


def test_skills_page_empty_store_says_how_to_import(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'empty.db'}")
    at = AppTest.from_file(str(ROOT / "pages/skills.py"), default_timeout=60).run()
    assert "workbench import" in at.info[0].value


def test_graph_page_focus_and_search(db):
    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=60).run()
    assert not at.exception
    assert at.selectbox(key="graph_rule").value == "R3"  # most prerequisites
    assert any("4 rules" in m.value for m in at.markdown)
    at.radio(key="graph_focus").set_value("dependants of this rule").run()
    # Issue 35: "1 rules" read as a typo.
    assert any("**1 rule** shown" in m.value for m in at.markdown)
    assert not any("1 rules" in m.value for m in at.markdown)
    at.text_input(key="graph_query").set_value("identity").run()
    assert at.selectbox(key="graph_rule").options == ["R1 — verify the customer's identity"]
    assert any("1 of 4 rules matches." in c.value for c in at.caption)
    at.radio(key="graph_focus").set_value("dependants of this rule").run()
    assert any("3 rules" in m.value for m in at.markdown)  # R1 <- R2 <- R3
    at.text_input(key="graph_query").set_value("zzz-no-match").run()
    assert "No rule matches" in at.warning[0].value


def test_graph_page_edit_creates_new_version(db):
    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=60).run()
    # Invalid edit: nothing saved, every problem listed.
    rules_key = "rules_editor_refunds_1"
    at.session_state[rules_key] = {"edited_rows": {1: {"modality": "must"}},
                                   "added_rows": [], "deleted_rows": []}
    at.button(key="graph_save").click().run()
    assert "Nothing was saved" in at.error[0].value and "'must'" in at.error[0].value
    assert [v.version for v in repo.versions(db, "refunds")] == [1]
    # Valid edit: new version 2 with the change and an edit-history entry.
    at.session_state[rules_key] = {"edited_rows": {0: {"action": "verify identity by email"}},
                                   "added_rows": [], "deleted_rows": []}
    at.text_input(key="graph_author").set_value("pat")
    at.button(key="graph_save").click().run()
    assert not at.exception
    assert [v.version for v in repo.versions(db, "refunds")] == [1, 2]
    assert repo.load_skill(db, "refunds").graph.rules["R1"].action == "verify identity by email"
    assert repo.edit_history(db, "refunds")[0].author == "pat"
    assert "Saved version 2" in at.success[0].value


def test_edit_impact_lists_affected_cases(tmp_path, monkeypatch):
    import json as _json

    from store import audit_repo
    from workbench.audit import load_cases

    demo = ROOT / "fixtures" / "demo"
    url = f"sqlite:///{tmp_path / 'impact.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    index = PolicyIndex.load(demo / "index.json")
    repo.import_index(eng, index, actor=COMMAND_LINE)
    audit_repo.save_cases(eng, "demo", load_cases(demo / "cases.jsonl"), actor=COMMAND_LINE)
    # Version 2 of the airline SKILL without any edges: every airline case whose closure had
    # prerequisites is affected.
    data = _json.loads((demo / "index.json").read_text())
    airline = next(s for s in data["skills"] if s["name"] == "airline-policy")
    airline["edges"] = []
    repo.save_skill(eng, PolicyIndex.from_dict({"format": "skillcdg/1", "skills": [airline]})[
        "airline-policy"], author="pat", note="drop edges", actor=COMMAND_LINE)
    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=120).run()
    at.selectbox(key="graph_skill").set_value("airline-policy").run()
    assert at.selectbox(key="graph_version").value == 2
    at.button(key="impact_find").click().run()
    assert not at.exception
    assert any(re.search(r"\*\*\d+ cases\*\* change closure\.", m.value) for m in at.markdown)
    # st.dataframe keys do not reach AppTest: find the table by its columns.
    table = next(d.value for d in at.dataframe if "closure loses" in d.value.columns)
    assert len(table) > 0 and all(c.startswith("air-") for c in table["case"])
    # Dropping edges only takes rules away: no closure gains one, and some lose some.
    assert set(table["closure gains"]) == {"–"} and (table["closure loses"] != "–").any()
