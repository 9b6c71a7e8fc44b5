"""Blind annotation that stays blind (issue #45, item 4): nothing that moves with another
annotator's labels reaches an annotator before their own queue is settled; reviewers and
admins, who adjudicate, see everything."""

from __future__ import annotations

import pytest

from store import repo
from tests.test_page_annotate import frame, sign_in, texts
from workbench.annotation import can_see_agreement
from workbench.annotation.labels import RULE_CORRECTNESS, Adjudication, Label
from workbench.identity.roles import Actor, RoleError


@pytest.fixture
def skill(refund_db):
    """The refund SKILL of the page's store (``WORKBENCH_DB``), version 1."""
    return repo.load_skill(refund_db, "refunds")


@pytest.mark.parametrize("role", ["reviewer", "admin"])
def test_those_who_adjudicate_see_agreement_from_the_start(role):
    assert can_see_agreement(role, 0, 4, open_items=4)
    assert can_see_agreement(role, 0, 0, open_items=0)


@pytest.mark.parametrize("role", ["annotator", "author", "analyst", "viewer"])
@pytest.mark.parametrize("done, total, open_items, visible", [
    (0, 4, 4, False),  # nothing labelled yet
    (3, 4, 0, False),  # one to go (the others settled the rest between them)
    (4, 4, 1, False),  # all labelled, one disagreement open: a relabel would probe it
    (4, 4, 0, True),   # settled: labelled by them, nothing open
    (0, 0, 0, False),  # an empty queue has nothing to agree on
])
def test_an_annotator_sees_agreement_only_once_their_queue_is_settled(role, done, total,
                                                                     open_items, visible):
    assert can_see_agreement(role, done, total, open_items=open_items) is visible


def test_an_unknown_role_is_an_error_not_a_quiet_no():
    with pytest.raises(RoleError, match="unknown role"):
        can_see_agreement("boss", 4, 4, open_items=0)


def _label(skill, rid: str, who: str, value: str = "correct") -> Label:
    from workbench.annotation.items import rule_item

    return Label(rule_item(skill, rid), RULE_CORRECTNESS, who, value,
                 None if value == "correct" else "duplicate")


def _progress_view(at) -> tuple[str, list[dict]]:
    """Everything of Progress & agreement that could carry a number: texts, captions, alerts
    and every table."""
    words = "\n".join([texts(at)] + [i.value for i in at.info] + [w.value for w in at.warning])
    return words, [d.value.to_dict("records") for d in at.dataframe]


def test_ann_sees_nothing_move_when_bea_labels(refund_db, skill):
    """The issue's report: ann has labelled R3; bea labels R3 the same way, and ann's view
    turned "unanimous 0" into "unanimous 1". Now ann's view is the same before and after,
    while a reviewer's changes (the positive control: the view can move)."""
    from store.annotation import add_annotator, add_label

    add_annotator(refund_db, "ann")
    add_annotator(refund_db, "bea")
    add_label(refund_db, _label(skill, "R3", "ann"), actor=Actor.signed_in("ann", "annotator"))

    def ann_view():
        at = sign_in("ann")
        at.radio(key="ann_mode").set_value("Progress & agreement").run()
        assert not at.exception
        return at

    def rita_view():
        at = sign_in("rita", "reviewer")
        at.radio(key="ann_mode").set_value("Progress & agreement").run()
        assert not at.exception
        return _progress_view(at)

    at = ann_view()
    before = _progress_view(at)
    assert list(frame(at, "rules labelled")["annotator"]) == ["ann"]  # her own row only
    assert frame(at, "rules labelled").loc[0, "rules labelled"] == 1
    reviewer_before = rita_view()
    assert "unanimous 0" in reviewer_before[0]

    add_label(refund_db, _label(skill, "R3", "bea"), actor=Actor.signed_in("bea", "annotator"))
    assert _progress_view(ann_view()) == before
    assert "bea" not in str(before) and "unanimous" not in before[0]
    reviewer_after = rita_view()
    assert "unanimous 1" in reviewer_after[0] and reviewer_after != reviewer_before


def test_a_settled_queue_shows_ann_the_counts_and_the_decisions(refund_db, skill):
    """A reviewer's decision marks a disagreement, so ann sees it (on Rule correctness) only
    once her queue is settled, like the figures; then she sees both."""
    from store.annotation import add_adjudication, add_annotator, add_label

    add_annotator(refund_db, "ann")
    add_annotator(refund_db, "bea")
    add_annotator(refund_db, "rita", "reviewer")
    rules = list(skill.graph.rules)
    for rid in rules:
        add_label(refund_db, _label(skill, rid, "bea"), actor=Actor.signed_in("bea", "annotator"))
    for rid in rules[1:]:
        add_label(refund_db, _label(skill, rid, "ann"), actor=Actor.signed_in("ann", "annotator"))
    first = _label(skill, rules[0], "ann", "incorrect")
    add_adjudication(refund_db, Adjudication(first.item, RULE_CORRECTNESS, "rita", "correct"),
                     actor=Actor.signed_in("rita", "reviewer"))
    at = sign_in("ann")  # Rule correctness opens on the one rule ann has not labelled
    assert f"{rules[0]}" in texts(at) and "you labelled 3 of 4" in at.get("progress")[0].proto.text
    assert "Adjudicated by" not in texts(at)  # it would say bea and someone disagreed
    add_label(refund_db, first, actor=Actor.signed_in("ann", "annotator"))
    at = sign_in("ann")  # labelled by her, and every rule settled: the decision shows
    assert "Adjudicated by rita: correct" in texts(at)
    at.radio(key="ann_mode").set_value("Progress & agreement").run()
    assert "unanimous 3, adjudicated 1, open 0" in texts(at)
    assert list(frame(at, "rules labelled")["annotator"]) == ["ann", "bea"]
