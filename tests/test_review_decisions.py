"""Review decisions (issue #35 item 6): three ways to decide, undo as a record, bulk plans, and
the queue view kept as URL parameters with a sort registry. Pure core, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workbench.audit.trace import AuditTrace, Verdict
from workbench.review.decisions import describe_action, last_action, undo_records
from workbench.review.queue import (
    DECISIONS,
    ReviewDecision,
    ReviewError,
    agreement,
    build_queue,
    current_decisions,
    plan_bulk,
    validate_decision,
)
from workbench.review.views import SORTS, ReviewView, SortKey, apply_view

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def d(case="c1", what="confirm", who="ada", note="", judge=True, n=1, batch="", undoes=None):
    return ReviewDecision("demo", "r1", case, "cdg", who, what, note, judge,
                          T0 + timedelta(minutes=n), id=n, batch=batch, undoes=undoes)


def test_three_decisions_and_what_each_implies():
    assert DECISIONS == ("confirm", "overturn", "wrong-rule")
    assert d(what="confirm").implied_violation is True
    assert d(what="overturn", note="why").implied_violation is False
    # Right verdict, wrong rule: the violation stands.
    assert d(what="wrong-rule", note="C007 applies").implied_violation is True
    assert d(what="wrong-rule", note="x").words == "right verdict, wrong rule"


@pytest.mark.parametrize("bad, message", [
    (dict(what="overturn"), "needs a note saying why"),
    (dict(what="wrong-rule"), "needs a note naming the rule"),
    (dict(what="wrong-rule", note="C1", judge=False), "no rule stands behind it to be wrong"),
    (dict(what="maybe"), "decision must be one of confirm, overturn, wrong-rule"),
    (dict(what="undo"), "names the decision it withdraws"),
    (dict(what="confirm", undoes=3), "only an undo record does"),
])
def test_invalid_decisions_say_what_to_fix(bad, message):
    with pytest.raises(ReviewError, match=message):
        validate_decision(d(**bad))


def test_undo_withdraws_the_last_decision_and_the_earlier_one_counts_again():
    history = [d("c1", "confirm", n=1), d("c1", "overturn", note="no", n=2)]
    assert current_decisions(history)[(("r1", "c1", "cdg"), "ada")].decision == "overturn"
    action = last_action(history, "ada")
    assert [x.id for x in action] == [2]
    [undo] = undo_records(action)
    assert (undo.decision, undo.undoes) == ("undo", 2)
    history.append(ReviewDecision(**{**undo.__dict__, "id": 3}))
    assert current_decisions(history)[(("r1", "c1", "cdg"), "ada")].decision == "confirm"
    # Undo again goes further back: now the confirm is the last action.
    assert [x.id for x in last_action(history, "ada")] == [1]
    assert describe_action(last_action(history, "ada")) == "confirmed (cdg verdict on c1)"


def test_a_bulk_decision_is_one_action_for_undo_and_only_the_reviewers_own():
    history = [d("c1", n=1), d("c2", n=2, batch="b"), d("c3", n=3, batch="b"),
               d("c4", who="bob", n=4)]
    action = last_action(history, "ada")
    assert sorted(x.case_id for x in action) == ["c2", "c3"]
    assert describe_action(action) == "confirmed (2 verdicts at once)"
    assert [x.case_id for x in last_action(history, "bob")] == ["c4"]
    assert last_action(history, "cy") == []


def _items():
    traces = [("r1", AuditTrace("c1", "cdg", label="negative", verdict=Verdict(True, "r", ["R1"]))),
              ("r1", AuditTrace("c2", "cdg", label="positive", verdict=Verdict(True, "r", ["R2"]))),
              ("r1", AuditTrace("c3", "cdg", label="negative", verdict=Verdict(False, "r", []))),
              ("r1", AuditTrace("c3", "raw", label="negative", verdict=Verdict(True, "r", ["R3"])))]
    texts = {"c1": "the customer asks for a refund", "c2": "a skillet arrived broken",
             "c3": "the order was late"}
    return build_queue(traces, None, "demo", texts)


def test_agreement_counts_wrong_rule_as_keeping_the_verdict():
    items = _items()
    decisions = [ReviewDecision("demo", "r1", "c1", "cdg", "ada", "wrong-rule", "R9", True, T0),
                 ReviewDecision("demo", "r1", "c2", "cdg", "ada", "overturn", "no", True, T0)]
    a = agreement(decisions, items)
    assert (a.confirmed, a.wrong_rule, a.overturned) == (0, 1, 1)
    assert a.share_confirmed == 0.5  # the verdict kept on c1, overturned on c2


def test_bulk_plan_previews_what_it_records_and_skips_compliant_for_wrong_rule():
    items = _items()
    mine = [ReviewDecision("demo", "r1", "c1", "cdg", "ada", "confirm", "", True, T0)]
    plan = plan_bulk(items, "wrong-rule", "ada", "R7 applies", mine)
    assert [x.case_id for x in plan.decisions] == ["c1", "c2", "c3"]  # c3/raw is a violation
    assert [(i.case_id, i.strategy) for i in plan.skipped] == [("c3", "cdg")]
    assert plan.redecided == 1
    text = plan.preview("right verdict, wrong rule", "ada")
    assert "Records 3 decision(s)" in text and "1 compliant verdict(s) are left out" in text
    assert "1 of these verdicts you had decided already" in text


def test_a_view_round_trips_through_url_parameters_and_names_what_it_ignores():
    view = ReviewView(reasons=("decided-violation",), query="skillet", verdict=("violation",),
                      strategies=("cdg",), sort="case", descending=True)
    params = view.to_params()
    assert params == {"reasons": "decided-violation", "q": "skillet", "verdict": "violation",
                      "strategy_in": "cdg", "sort": "case", "desc": "1"}
    assert ReviewView.from_params(params) == (view, [])
    # An address or saved view written before the decided record keeps its meaning.
    assert ReviewView.from_params({**params, "reasons": "flagged"}) == (view, [])
    assert ReviewView().to_params() == {}  # the plain queue has a clean address
    assert ReviewView.from_params({"reasons": "none"})[0].reasons == ()
    back, problems = ReviewView.from_params({"verdict": "violation,maybe", "sort": "vibes"})
    assert back.verdict == ("violation",) and back.sort == "uncertainty"  # the default: most doubtful first
    assert problems == ["verdict: maybe (use violation, compliant, review)",
                        "sort: vibes (use " + ", ".join(SORTS) + ")"]


def test_apply_view_filters_by_column_text_and_decision_and_sorts():
    items = _items()
    decisions = [ReviewDecision("demo", "r1", "c2", "cdg", "bob", "overturn", "no", True, T0, id=1)]
    by = lambda view: [(i.case_id, i.strategy) for i in apply_view(items, view, "ada", decisions)]  # noqa: E731
    everything = ReviewView(reasons=())
    assert by(everything) == [("c1", "cdg"), ("c2", "cdg"), ("c3", "cdg"), ("c3", "raw")]
    assert by(ReviewView(reasons=(), query="SKILLET")) == [("c2", "cdg")]  # conversation text
    assert by(ReviewView(reasons=(), verdict=("compliant",))) == [("c3", "cdg")]
    assert by(ReviewView(reasons=(), gold=("compliant",))) == [("c2", "cdg")]
    assert by(ReviewView(reasons=(), strategies=("raw",))) == [("c3", "raw")]
    assert by(ReviewView(reasons=(), decided=("overturned",))) == [("c2", "cdg")]
    assert len(by(ReviewView(reasons=(), decided=("no decision yet",)))) == 3
    assert by(ReviewView(reasons=(), sort="case", descending=True))[0][0] == "c3"
    assert by(ReviewView(reasons=(), sort="newest decision"))[0] == ("c2", "cdg")


def test_one_more_sort_is_one_registry_entry(monkeypatch):
    """How the lead's "order by uncertainty" plugs in: a SortKey, nothing else."""
    items = _items()
    monkeypatch.setitem(SORTS, "strategy desc", SortKey("strategy, z first",
                                                        lambda i, c: (-ord(i.strategy[0]),)))
    view, problems = ReviewView.from_params({"sort": "strategy desc"})
    assert problems == [] and view.to_params() == {"sort": "strategy desc"}
    assert apply_view(items, ReviewView(reasons=(), sort="strategy desc"))[0].strategy == "raw"
