"""Review writes in the database (issue #35 item 6): role and own-name checks, bulk decisions
as one batch, undo that never takes back two actions for one press, and saved views. Runs on
SQLite and on PostgreSQL (conftest ``store_url``)."""

from __future__ import annotations

import pytest

from store import review_views
from store.review import add_decisions, decisions_for, last_decision, undo_last
from workbench.identity.roles import COMMAND_LINE, Actor, NotAllowed
from workbench.review.queue import ReviewDecision, StaleUndo, current_decisions


@pytest.fixture
def engine(store_engine):
    return store_engine


def d(case="c1", who="ada", what="confirm", note="", run="r1"):
    return ReviewDecision("demo", run, case, "cdg", who, what, note, True)


def test_only_roles_that_decide_reviews_may_and_each_under_their_own_name(engine):
    annotator = Actor.signed_in("ann", "annotator")
    with pytest.raises(NotAllowed, match="may not decide reviews"):
        add_decisions(engine, [d(who="ann")], actor=annotator)
    with pytest.raises(NotAllowed, match="cannot record decisions as bob"):
        add_decisions(engine, [d(who="bob")], actor=Actor.signed_in("ada", "analyst"))
    assert decisions_for(engine) == []
    # The role is checked before the fields: an annotator hears about the role.
    with pytest.raises(NotAllowed):
        add_decisions(engine, [d(who="ann", what="overturn")], actor=annotator)
    add_decisions(engine, [d(who="ada")], actor=Actor.signed_in("ada", "analyst"))
    add_decisions(engine, [d(who="anyone")], actor=COMMAND_LINE)  # the command line: single user
    assert [x.reviewer for x in decisions_for(engine)] == ["ada", "anyone"]


def test_bulk_decisions_share_a_batch_and_one_undo_takes_them_back(engine):
    [first] = add_decisions(engine, [d("c0")], actor=COMMAND_LINE)
    add_decisions(engine, [d("c1"), d("c2"), d("c3", what="overturn", note="wrong")], actor=COMMAND_LINE)
    stored = decisions_for(engine, "demo")
    batches = {x.batch for x in stored[1:]}
    assert len(batches) == 1 and "" not in batches and stored[0].batch == ""
    shown = last_decision(engine, "demo", "ada")
    assert sorted(x.case_id for x in shown) == ["c1", "c2", "c3"]
    undone = undo_last(engine, "demo", "ada", expected=tuple(x.id for x in shown), actor=COMMAND_LINE)
    assert sorted(x.case_id for x in undone) == ["c1", "c2", "c3"]
    current = current_decisions(decisions_for(engine, "demo"))
    assert [k[0][1] for k in current] == ["c0"]  # the bulk is gone, the single one stays
    assert len(decisions_for(engine, "demo")) == 7  # nothing deleted: 3 undo records added
    assert [x.id for x in last_decision(engine, "demo", "ada")] == [first]


def test_a_second_press_of_undo_changes_nothing(engine):
    add_decisions(engine, [d("c1")], actor=COMMAND_LINE)
    add_decisions(engine, [d("c2")], actor=COMMAND_LINE)
    shown = tuple(x.id for x in last_decision(engine, "demo", "ada"))
    assert [x.case_id for x in undo_last(engine, "demo", "ada", expected=shown, actor=COMMAND_LINE)] == ["c2"]
    # The same press again (a double click, or another tab showing the same button).
    with pytest.raises(StaleUndo, match="nothing was undone"):
        undo_last(engine, "demo", "ada", expected=shown, actor=COMMAND_LINE)
    assert [k[0][1] for k in current_decisions(decisions_for(engine, "demo"))] == ["c1"]
    assert undo_last(engine, "demo", "bob", actor=COMMAND_LINE) == []  # nothing of bob's to undo


def test_a_signed_in_analyst_cannot_undo_someone_elses_decision(engine):
    add_decisions(engine, [d(who="bob")], actor=COMMAND_LINE)
    with pytest.raises(NotAllowed, match="cannot undo the decisions of bob"):
        undo_last(engine, "demo", "bob", actor=Actor.signed_in("ada", "analyst"))
    assert len(decisions_for(engine)) == 1


def test_saved_views_are_per_owner_replaced_by_name_and_deletable(engine):
    review_views.save_view(engine, "ada", "refunds", {"q": "refund", "verdict": "violation"})
    review_views.save_view(engine, "ada", "refunds", {"q": "refund"})  # saved again: replaced
    review_views.save_view(engine, "ada", "all mine", {"status": "reviewed by me"})
    review_views.save_view(engine, "bob", "refunds", {"sort": "case"})
    assert review_views.views_for(engine, "ada") == {
        "all mine": {"status": "reviewed by me"}, "refunds": {"q": "refund"}}
    assert review_views.views_for(engine, "bob") == {"refunds": {"sort": "case"}}
    assert review_views.delete_view(engine, "ada", "refunds") is True
    assert review_views.delete_view(engine, "ada", "refunds") is False
    assert list(review_views.views_for(engine, "ada")) == ["all mine"]
    from workbench.review.queue import ReviewError

    with pytest.raises(ReviewError, match="name the view"):
        review_views.save_view(engine, "ada", "  ", {})
    with pytest.raises(ReviewError, match="enter your name"):
        review_views.save_view(engine, "", "x", {})
