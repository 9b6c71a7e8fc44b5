"""The Review page as Langfuse/Argilla users expect it (issue #35 item 6), headless with
AppTest: ``?case=`` deep links, filters and sort in the address (a new session with the same
address shows the same view), saved views, the three-way decision with undo, bulk decisions
with a preview, and the message of a refused decision next to the buttons."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from store.review import decisions_for
from store.review_views import views_for
from tests.test_page_review import PAGE, card, db, note_key, plain  # noqa: F401  (fixture)
from workbench.review.queue import current_decisions


def _open(query: dict | None = None, reviewer: str = "ada") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params.update(query or {})
    at.run()
    at.text_input(key="rv_reviewer").set_value(reviewer).run()
    assert not at.exception
    return at


def _param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def _address(at: AppTest) -> dict:
    return {k: _param(at, k) for k in at.query_params}


def test_a_case_link_opens_that_verdict_and_the_address_follows(db):  # noqa: F811
    at = _open({"dataset": "demo", "case": "air-001-compensation-regular-economy",
                "strategy": "raw"})
    assert " · case air-001-compensation-regular-economy · raw · " in card(at)
    position = int(card(at).split("/")[0])
    assert _param(at, "position") == str(position) and _param(at, "strategy") == "raw"
    at.button(key="rv_prev").click().run()
    assert _param(at, "case") != "air-001-compensation-regular-economy"
    assert _param(at, "position") == str(position - 1)
    # A case with no verdict in the queue is named, not silently replaced.
    first = AppTest.from_file(PAGE, default_timeout=60)
    first.query_params.update({"dataset": "demo", "case": "ret-002-cancel-pending"})
    first.run()
    assert any("which these filters hide" in plain(w.value) for w in first.warning)


def test_filters_and_sort_survive_a_reload_and_a_pasted_link(db):  # noqa: F811
    at = _open({"dataset": "demo"})
    at.text_input(key="rv_query").set_value("skillet").run()
    at.multiselect(key="rv_f_verdict").set_value(["violation"]).run()
    at.selectbox(key="rv_sort").set_value("strategy").run()
    at.toggle(key="rv_desc").set_value(True).run()
    first = card(at)
    address = _address(at)
    assert {"q": "skillet", "verdict": "violation", "sort": "strategy", "desc": "1"}.items() \
        <= address.items()
    # A reload is a new session with the same address: the same view, the same verdict.
    again = _open(address)
    assert again.text_input(key="rv_query").value == "skillet"
    assert again.multiselect(key="rv_f_verdict").value == ["violation"]
    assert again.selectbox(key="rv_sort").value == "strategy" and again.toggle(key="rv_desc").value
    assert card(again) == first
    # What the link names that is not a choice is said, and left out.
    odd = AppTest.from_file(PAGE, default_timeout=60)
    odd.query_params.update({"dataset": "demo", "verdict": "maybe", "sort": "vibes"})
    odd.run()
    assert any("left out: verdict: maybe" in plain(w.value) for w in odd.warning)
    assert odd.selectbox(key="rv_sort").value == "uncertainty"  # the default: most doubtful first


def test_saved_views_are_stored_per_analyst_and_shown_again(db):  # noqa: F811
    at = _open({"dataset": "demo"})
    at.multiselect(key="rv_reasons").set_value(["gold-mismatch"]).run()
    at.text_input(key="rv_view_name").set_value("gold misses")
    at.button(key="rv_view_save").click().run()
    assert views_for(db, "ada") == {"gold misses": {"reasons": "gold-mismatch"}}
    assert views_for(db, "bob") == {}
    fresh = _open({"dataset": "demo"})
    assert card(fresh).startswith("1/6 ")
    fresh.button(key="rv_view_apply").click().run()
    assert fresh.multiselect(key="rv_reasons").value == ["gold-mismatch"]
    assert card(fresh).startswith("1/3 ") and _param(fresh, "reasons") == "gold-mismatch"


def test_three_way_decision_then_undo(db):  # noqa: F811
    at = _open({"dataset": "demo"})
    assert card(at).startswith("1/6 · case mor-001-delay-not-yet-late · cdg")
    # "Wrong rule" needs a note: the refusal is drawn under the buttons, nothing is stored.
    at.button(key="rv_wrong_rule").click().run()
    assert any("needs a note naming the rule" in e.value for e in at.error)
    assert decisions_for(db, "demo") == []
    at.text_input(key=note_key(at)).set_value("MOR-R003 is the rule broken")
    at.button(key="rv_wrong_rule").click().run()
    [made] = decisions_for(db, "demo")
    assert (made.decision, made.note, made.implied_violation) == (
        "wrong-rule", "MOR-R003 is the rule broken", True)
    assert card(at).startswith("2/6 ")
    assert at.button(key="rv_undo").label == (
        "Undo: right verdict, wrong rule (cdg verdict on mor-001-delay-not-yet-late)")
    at.button(key="rv_undo").click().run()
    assert not at.exception
    assert card(at).startswith("1/6 · case mor-001-delay-not-yet-late")  # back to it
    assert current_decisions(decisions_for(db, "demo")) == {}
    assert [x.decision for x in decisions_for(db, "demo")] == ["wrong-rule", "undo"]
    assert at.button(key="rv_undo").disabled  # nothing left to undo
    assert any("Undone: right verdict, wrong rule" in plain(s.value) for s in at.success)


def test_wrong_rule_is_only_offered_on_a_violation(db):  # noqa: F811
    at = _open({"dataset": "demo", "case": "air-001-compensation-regular-economy",
                "strategy": "cdg"})
    assert "compliant" in " ".join(t.value for t in at.text) or card(at)
    assert at.button(key="rv_wrong_rule").disabled
    assert not at.button(key="rv_confirm").disabled


def test_bulk_decision_previews_its_count_and_undoes_as_one(db):  # noqa: F811
    at = _open({"dataset": "demo"})
    at.multiselect(key="rv_reasons").set_value(["gold-mismatch"]).run()
    assert card(at).startswith("1/3 ")
    at.radio(key="rv_bulk_decision").set_value("overturn").run()
    preview = next(plain(i.value) for i in at.info if "decision" in i.value)
    assert "Records 3 decision(s), overturned, by ada" in preview
    at.button(key="rv_bulk_apply").click().run()  # no note: refused, nothing stored
    assert any("needs a note" in e.value for e in at.error) and decisions_for(db, "demo") == []
    at.text_input(key="rv_bulk_note").set_value("gold says otherwise").run()
    assert at.button(key="rv_bulk_apply").label == "Overturned: 3 verdict(s)"
    at.button(key="rv_bulk_apply").click().run()
    stored = decisions_for(db, "demo")
    assert [x.decision for x in stored] == ["overturn"] * 3 and len({x.batch for x in stored}) == 1
    assert at.get("progress")[0].proto.text == "3 of 3 reviewed (3 by you)"
    assert at.button(key="rv_undo").label == "Undo: overturned (3 verdicts at once)"
    at.button(key="rv_undo").click().run()
    assert current_decisions(decisions_for(db, "demo")) == {}
    assert at.get("progress")[0].proto.text == "0 of 3 reviewed (0 by you)"


def test_a_signed_in_annotator_cannot_decide_even_by_key(db):  # noqa: F811
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["identity"] = {"name": "ann", "role": "annotator"}
    at.query_params.update({"dataset": "demo"})
    at.run()
    assert at.button(key="rv_confirm").disabled and at.button(key="rv_wrong_rule").disabled
    assert not [b for b in at.button if b.key == "rv_bulk_apply"]  # no bulk panel either
