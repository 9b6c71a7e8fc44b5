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
    """The button whose text starts with ``label`` (a writing button names its rules)."""
    return next(b for b in at.button if b.label.startswith(label))


def _selectbox(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def test_the_chosen_rule_is_edited_beside_the_drawing(db):
    at = _page(rule="R1")
    assert not at.exception
    assert any("Edit R1" in m.value for m in at.markdown)
    next(t for t in at.text_area if t.label == "Then (action)").set_value("verify id and e-mail")
    _button(at, "Save rule R1").click().run()
    assert not at.exception
    assert [v.version for v in repo.versions(db, "refunds")] == [1, 2]
    assert repo.load_skill(db, "refunds").graph.rules["R1"].action == "verify id and e-mail"
    assert repo.edit_history(db, "refunds")[-1].summary == "edited rules R1"
    assert any("Saved version 2: edited rules R1" in s.value.replace("\\", "") for s in at.success)
    assert at.selectbox(key="graph_version").value == 2


def test_an_edge_is_added_with_pickers_and_an_empty_choice_is_refused(db):
    at = _page(rule="R1")
    _button(at, "Add edge R1 → …").click().run()  # the chosen rule is the source
    assert any("Choose the other rule of the edge first; nothing was saved" in e.value
               for e in at.error)
    assert [v.version for v in repo.versions(db, "refunds")] == [1]
    _selectbox(at, "Prerequisite (target)").set_value("R4").run()
    _button(at, "Add edge R1 → R4").click().run()
    assert not at.exception
    skill = repo.load_skill(db, "refunds")
    assert ("R1", "R4") in {e.pair for e in skill.graph.edges}
    assert {e.pair: e.provenance for e in skill.graph.edges}[("R1", "R4")] == "author"
    assert repo.edit_history(db, "refunds")[-1].summary == "added edges R1->R4"


def test_a_duplicate_edge_is_said_and_an_edge_of_the_rule_is_removed(db):
    at = _page(rule="R3")
    _selectbox(at, "Prerequisite (target)").set_value("R2").run()  # R3 requires R2 already
    _button(at, "Add edge R3 → R2").click().run()
    assert any("R3 already requires R2" in i.value.replace("\\", "") for i in at.info)
    _selectbox(at, "Remove an edge of this rule").set_value(("R3", "R4")).run()
    _button(at, "Remove edge R3 → R4").click().run()
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


def _text_input(at: AppTest, label: str):
    return next(t for t in at.text_input if t.label == label)


def test_a_save_keeps_the_chosen_rule_clears_the_note_and_confirms_beside_the_button(db):
    """Issue 44 items 1 and 8: the rule picked stays the selection through a save and later
    full runs; the note is empty again; the confirmation follows the rule form."""
    at = _page(rule="R1")
    at.selectbox(key="graph_rule").set_value("R2").run()
    next(t for t in at.text_area if t.label == "Then (action)").set_value("refund to the card")
    note_key = "|".join(["graph_rule_note", "refunds", "1", "R2"])
    at.text_input(key=note_key).set_value("clearer")
    _button(at, "Save rule R2").click().run()
    assert not at.exception
    assert repo.edit_history(db, "refunds")[-1].summary == "edited rules R2"
    for _ in range(2):  # the save's own run, and an unrelated full run after it
        assert at.selectbox(key="graph_rule").value == "R2"
        assert at.query_params["rule"] in ("R2", ["R2"])
        assert _text_input(at, "What and why (optional)").value == ""
        at.run()
    at = _page(rule="R2")  # the confirmation is drawn after the form, before the edge pickers
    next(t for t in at.text_area if t.label == "Then (action)").set_value("refund to the bank")
    _button(at, "Save rule R2").click().run()
    # Depth-first, in drawing order: what the page shows, top to bottom in the panel.
    texts = [str(getattr(e, "label", None) or getattr(e, "value", "")) for e in at.main]
    form = next(i for i, t in enumerate(texts) if t.startswith("Save rule R2"))
    saved = next(i for i, t in enumerate(texts) if "Saved version 3" in t)
    add = next(i for i, t in enumerate(texts) if t.startswith("Add edge"))
    assert form < saved < add


def test_an_edge_into_the_chosen_rule_names_both_ends(db):
    at = _page(rule="R1")
    at.radio(key="|".join(["graph_add_way", "refunds", "1", "R1"])).set_value("… requires R1").run()
    _selectbox(at, "Rule that requires it (source)").set_value("R4").run()
    _button(at, "Add edge R4 → R1").click().run()
    assert not at.exception
    assert repo.edit_history(db, "refunds")[-1].summary == "added edges R4->R1"
    assert at.selectbox(key="graph_rule").value == "R1"


def test_a_search_moves_the_selection_only_when_it_hides_it(db):
    at = _page(rule="R1")
    at.text_input(key="graph_query").set_value("identity").run()  # R1 matches: it stays
    assert at.selectbox(key="graph_rule").value == "R1"
    at.text_input(key="graph_query").set_value("refund").run()
    hits = at.selectbox(key="graph_rule").options
    assert "R1" not in " ".join(hits) and at.selectbox(key="graph_rule").value != "R1"
