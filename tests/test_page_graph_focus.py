"""Issue 35 item 5 on the Graph page (AppTest): the chosen rule is edited beside the drawing;
an edge is added with two pickers (an empty choice is refused, a duplicate said); an edge of
the rule is removed; a blank table row is named, never dropped silently; an annotator gets
every control disabled. Every save is a version built on the one shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import repo

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(refund_db):
    return refund_db


def _page(role: str | None = None, rule: str = "R3") -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=60)
    at.query_params["rule"] = rule
    if role:
        at.session_state["identity"] = {"name": f"the {role}", "role": role}
    return at.run()


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _selectbox(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def test_the_chosen_rule_is_edited_beside_the_drawing(db):
    at = _page(rule="R1")
    assert not at.exception
    assert any("Edit R1" in m.value for m in at.markdown)
    next(t for t in at.text_area if t.label == "Then (action)").set_value("verify id and e-mail")
    _button(at, "Save rule").click().run()
    assert not at.exception
    assert [v.version for v in repo.versions(db, "refunds")] == [1, 2]
    assert repo.load_skill(db, "refunds").graph.rules["R1"].action == "verify id and e-mail"
    assert repo.edit_history(db, "refunds")[-1].summary == "edited rules R1"
    assert any("Saved version 2: edited rules R1" in s.value.replace("\\", "") for s in at.success)
    assert at.selectbox(key="graph_version").value == 2


def test_an_edge_is_added_with_pickers_and_an_empty_choice_is_refused(db):
    at = _page(rule="R1")
    assert _selectbox(at, "Rule that requires (source)").value == "R1"  # the chosen rule
    _button(at, "Add edge").click().run()
    assert any("Choose the prerequisite (target) rule; nothing was saved" in e.value.replace("\\", "")
               for e in at.error)
    assert [v.version for v in repo.versions(db, "refunds")] == [1]
    _selectbox(at, "Prerequisite (target)").set_value("R4")
    _button(at, "Add edge").click().run()
    assert not at.exception
    skill = repo.load_skill(db, "refunds")
    assert ("R1", "R4") in {e.pair for e in skill.graph.edges}
    assert {e.pair: e.provenance for e in skill.graph.edges}[("R1", "R4")] == "author"
    assert repo.edit_history(db, "refunds")[-1].summary == "added edges R1->R4"


def test_a_duplicate_edge_is_said_and_an_edge_of_the_rule_is_removed(db):
    at = _page(rule="R3")
    _selectbox(at, "Prerequisite (target)").set_value("R2")  # R3 requires R2 already
    _button(at, "Add edge").click().run()
    assert any("R3 already requires R2" in i.value.replace("\\", "") for i in at.info)
    _selectbox(at, "Remove an edge of this rule").set_value(("R3", "R4"))
    _button(at, "Remove edge").click().run()
    assert not at.exception
    assert ("R3", "R4") not in {e.pair for e in repo.load_skill(db, "refunds").graph.edges}
    assert repo.edit_history(db, "refunds")[-1].summary == "removed edges R3->R4"


def test_a_blank_table_row_is_named_not_dropped_silently(db):
    at = _page()
    at.session_state["rules_editor_refunds_1"] = {
        "edited_rows": {0: {"action": "verify identity by e-mail"}},
        "added_rows": [{"id": None, "condition": None, "action": None}], "deleted_rows": []}
    at.button(key="graph_save").click().run()
    assert any("Not saved: rule row 5 is empty." in s.value.replace("\\", "") for s in at.success)
    assert [v.version for v in repo.versions(db, "refunds")] == [1, 2]  # the edit is saved


def test_an_annotator_gets_every_graph_control_disabled(db):
    at = _page("annotator")
    for label in ("Save rule", "Add edge", "Remove edge", "Save as new version"):
        assert _button(at, label).disabled, label
