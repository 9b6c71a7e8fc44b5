"""The review core: queue reasons and filters, decisions, progress, agreement (hand-derived)
and the side-by-side metrics table. (Trace files and resume: tests/test_audit_trace_file.py.)"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from workbench.audit.trace import AuditTrace
from workbench.review.queue import (
    REASONS,
    ReviewDecision,
    ReviewError,
    agreement,
    build_queue,
    current_decisions,
    filter_queue,
    gold_of,
    latest_records,
    metrics_rows,
    review_progress,
    validate_decision,
)


def trace_json(cid, strategy, violation, label=None, reason="", **extra):
    t = {"id": cid, "strategy": strategy, "label": label, "session": f"s-{cid}", **extra}
    t["verdict"] = None if violation is None else {
        "violation": violation, "reason": reason, "violated_rules": ["R1"] if violation else []}
    return t


def trace(cid, strategy, violation, label=None, reason="", **extra):
    return AuditTrace.from_dict(trace_json(cid, strategy, violation, label, reason, **extra))


# c1: both strategies decide violation, gold says violation -> decided violation only.
# c2: cdg compliant, raw decides violation, gold compliant -> raw: decided violation +
#     disagree + mismatch;
#     cdg: disagree only.
# c3: cdg compliant, gold violation -> mismatch only; raw failed (no verdict).
# c4: cdg compliant, gold compliant -> no reason.
RECORDS = [
    ("run-a", trace("c1", "cdg", False, "negative")),  # replaced by the newer c1/cdg below
    ("run-a", trace("c2", "cdg", False, "positive")),
    ("run-a", trace("c3", "cdg", False, "negative", reason="refund was fine")),
    ("run-a", trace("c4", "cdg", False, "positive")),
    ("run-b", trace("c1", "raw", True, "negative")),
    ("run-b", trace("c2", "raw", True, "positive", reason="Coupon NOT deducted")),
    ("run-b", trace("c3", "raw", None, "negative")),
    ("run-c", trace("c1", "cdg", True, "negative")),
]


def reasons_of(items):
    return {(i.case_id, i.strategy): i.reasons for i in items}


def test_queue_reasons_use_the_newest_trace_per_case_and_strategy():
    items = build_queue(RECORDS, dataset="demo")
    assert reasons_of(items) == {
        ("c1", "cdg"): ("decided-violation",),
        ("c2", "cdg"): ("strategies-disagree",),
        ("c3", "cdg"): ("gold-mismatch",),
        ("c4", "cdg"): (),
        ("c1", "raw"): ("decided-violation",),
        ("c2", "raw"): ("decided-violation", "strategies-disagree", "gold-mismatch"),
    }  # c3/raw has no verdict: nothing to confirm, so it is not queued
    first = items[0]
    assert first.key == ("run-c", "c1", "cdg") and first.dataset == "demo"
    assert first.others == {"raw": "violation"}


def test_gold_labels_given_override_those_in_traces():
    items = build_queue(RECORDS, labels={"c4": "negative"})
    assert reasons_of(items)[("c4", "cdg")] == ("gold-mismatch",)
    assert reasons_of(items)[("c3", "cdg")] == ("gold-mismatch",)  # not in labels: trace's


def test_filters_select_reasons_words_and_status():
    items = build_queue(RECORDS, texts={"c3": "The customer wants a REFUND to a new card"})
    assert len(filter_queue(items)) == 5  # every item with a reason
    assert len(filter_queue(items, None)) == 6 == len(filter_queue(items, []))  # no filter
    only = filter_queue(items, ["gold-mismatch"])
    assert [(i.case_id, i.strategy) for i in only] == [("c3", "cdg"), ("c2", "raw")]
    # Every word must appear, case-insensitively, in ids, reason, verdict or case text.
    assert [i.case_id for i in filter_queue(items, REASONS, "refund card")] == ["c3"]
    assert [i.case_id for i in filter_queue(items, REASONS, "coupon deducted")] == ["c2"]
    assert filter_queue(items, REASONS, "coupon card") == []
    decisions = [ReviewDecision("demo", "run-c", "c1", "cdg", "ada", "confirm", judge_violation=True)]
    todo = filter_queue(items, REASONS, status="not reviewed by me", reviewer="ada", decisions=decisions)
    assert ("c1", "cdg") not in reasons_of(todo) and len(todo) == 4
    done = filter_queue(items, REASONS, status="reviewed by me", reviewer="ada", decisions=decisions)
    assert [i.key for i in done] == [("run-c", "c1", "cdg")]
    assert len(filter_queue(items, REASONS, status="not reviewed by me", reviewer="bob",
                            decisions=decisions)) == 5
    with pytest.raises(ValueError, match="unknown queue reason"):
        filter_queue(items, ["flaged"])
    with pytest.raises(ValueError, match="status"):
        filter_queue(items, status="done")


def decision(case="c1", who="ada", what="confirm", judge=True, note="", minutes=0, run="r",
             strategy="cdg"):
    return ReviewDecision("demo", run, case, strategy, who, what, note, judge,
                          datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes))


def test_decisions_are_validated():
    assert validate_decision(decision()) is not None
    with pytest.raises(ReviewError, match="needs a note"):
        validate_decision(decision(what="overturn", note="  "))
    assert validate_decision(decision(what="overturn", note="policy allows it"))
    with pytest.raises(ReviewError, match="reviewer is empty"):
        validate_decision(decision(who=" "))
    with pytest.raises(ReviewError, match="decision must be one of"):
        validate_decision(decision(what="maybe"))
    with pytest.raises(ReviewError, match="under"):
        validate_decision(decision(note="x" * 10_001))
    with pytest.raises(ReviewError, match="case_id"):
        validate_decision(decision(case=""))
    with pytest.raises(ReviewError, match="timezone"):
        validate_decision(ReviewDecision("d", "r", "c", "s", "ada", "confirm",
                                         created_at=datetime(2025, 1, 1)))


def test_the_newest_decision_per_item_and_reviewer_is_current():
    records = [decision(minutes=0), decision(what="overturn", note="no", minutes=1),
               decision(who="bob", minutes=2)]
    current = current_decisions(records)
    assert current[(("r", "c1", "cdg"), "ada")].decision == "overturn"
    assert current[(("r", "c1", "cdg"), "bob")].decision == "confirm"
    assert decision(judge=True).implied_violation is True
    assert decision(judge=True, what="overturn", note="x").implied_violation is False
    assert decision(judge=None).implied_violation is None


def test_progress_counts_items_reviewed_by_anyone_and_by_me():
    items = filter_queue(build_queue(RECORDS))  # 5 items
    decisions = [
        ReviewDecision("demo", "run-c", "c1", "cdg", "ada", "confirm", judge_violation=True),
        ReviewDecision("demo", "run-c", "c1", "cdg", "bob", "confirm", judge_violation=True),
        ReviewDecision("demo", "run-b", "c2", "raw", "bob", "confirm", judge_violation=True),
        ReviewDecision("demo", "run-a", "c4", "cdg", "ada", "confirm", judge_violation=False),
    ]  # the last is not in the filtered queue
    p = review_progress(items, decisions, "ada")
    assert (p.total, p.reviewed, p.mine) == (5, 2, 1) and p.share == pytest.approx(0.4)
    assert review_progress([], decisions).share == 0.0


def test_agreement_share_confirmed_and_kappa_by_hand():
    # Judge: V, V, C, C. Ada confirms three and overturns the first C, so her labels are
    # V, V, V, C. p_o = 3/4. Judge marginals V2 C2, analyst V3 C1:
    # p_e = (2*3 + 2*1) / 16 = 1/2, kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2.
    ds = [decision("c1", judge=True), decision("c2", judge=True),
          decision("c3", judge=False, what="overturn", note="violated R2"),
          decision("c4", judge=False)]
    a = agreement(ds)
    assert (a.decisions, a.confirmed, a.overturned) == (4, 3, 1)
    assert a.share_confirmed == pytest.approx(0.75)
    assert a.kappa == pytest.approx(0.5)
    assert a.per_reviewer == [{"reviewer": "ada", "decisions": 4, "confirmed": 3,
                               "share confirmed": 0.75, "kappa": pytest.approx(0.5)}]
    assert a.analysts_alpha is None  # one analyst per verdict: nothing to compare
    # A changed mind replaces the earlier decision: now all four confirmed.
    a = agreement(ds + [decision("c3", judge=False, minutes=5)])
    assert a.share_confirmed == 1.0 and a.kappa == 1.0
    empty = agreement([])
    assert empty.decisions == 0 and empty.kappa is None and empty.share_confirmed is None


def test_agreement_among_analysts_and_against_gold():
    items = build_queue([("r", trace("c1", "cdg", True, "negative")),
                         ("r", trace("c2", "cdg", True, "positive"))])
    ds = [decision("c1", "ada"), decision("c1", "bob", "overturn", note="fine"),
          decision("c2", "ada", "overturn", note="compliant"), decision("c2", "bob", "overturn",
                                                                         note="compliant"),
          decision("c9", "ada")]  # not an item: ignored when items are given
    a = agreement(ds, items)
    assert a.decisions == 4
    # Implied labels: c1 ada V, bob C; c2 both C. Alpha by hand: coincidences over
    # n = 4 pairable values (V1, C3); observed disagreement pairs = 2 (c1, m=2: 2/1);
    # expected = 4^2 - (1 + 9) = 6; alpha = 1 - (4 - 1) * 2 / 6 = 0.
    assert a.analysts_alpha == pytest.approx(0.0)
    # Gold: c1 violation, c2 compliant. Judge right on c1 (both decisions), wrong on c2:
    # 2/4. Analysts: ada right twice, bob wrong on c1 and right on c2: 3/4.
    assert a.gold_n == 4
    assert a.judge_gold == pytest.approx(0.5) and a.analysts_gold == pytest.approx(0.75)


def test_latest_records_keep_first_seen_order():
    out = latest_records([("r1", AuditTrace("b", "s")), ("r1", AuditTrace("a", "s")),
                          ("r2", AuditTrace("b", "s"))])
    assert [(r, t.id) for r, t in out] == [("r2", "b"), ("r1", "a")]


def metric_trace(cid, strategy, violation, tokens, error=None):
    t = trace_json(cid, strategy, violation)
    # online tokens: the model calls' prompt plus completion tokens (2 * tokens here)
    call = {"step": "judge", "role": "judge", "prompt_tokens": tokens,
            "completion_tokens": tokens, "latency_ms": 1.0}
    t.update(context_tokens=tokens, usage=[call], timings_ms={"total": 10.0},
             error=error, units=["R1"], closure={"S": ["R1"]})
    return AuditTrace.from_dict(t)


def test_metrics_rows_per_run_and_newest_across_runs():
    cases = [SimpleNamespace(id="c1", label="negative", extra={"gold": {"governing_rules": ["R1"]}}),
             SimpleNamespace(id="c2", label="positive", extra={"gold": {"governing_rule": "R9"}}),
             SimpleNamespace(id="c3", label=None, extra={})]
    labels, gold_rules = gold_of(cases)
    assert labels == {"c1": "negative", "c2": "positive", "c3": None}
    assert gold_rules == {"c1": ["R1"], "c2": ["R9"]}
    records = [
        ("r1", metric_trace("c1", "cdg", True, 100)),
        ("r1", metric_trace("c2", "cdg", True, 300)),
        ("r1", metric_trace("c3", "cdg", False, 200)),
        ("r2", metric_trace("c1", "cdg", None, 50, {"kind": "ModelCallError", "message": "x"})),
    ]
    rows = metrics_rows("demo", records, labels, gold_rules)
    r1, r2 = rows
    # r1: c1 TP, c2 FP -> ACC 1/2; P = 1/2, R = 1/1, F1 = 2/3; c3 unlabelled.
    assert (r1["run"], r1["cases"], r1["labelled"], r1["judged"]) == ("r1", 3, 2, 3)
    assert r1["ACC"] == pytest.approx(0.5) and r1["violation-F1"] == pytest.approx(2 / 3)
    assert r1["gold in context"] == pytest.approx(0.5)  # R1 in context, R9 not
    assert r1["context tokens"] == pytest.approx(200.0) and r1["online tokens"] == pytest.approx(400.0)
    # r2: one failed case counts as wrong; F1 is undefined -> None, not NaN.
    assert r2["ACC"] == 0.0 and r2["violation-F1"] is None and r2["errors"] == "ModelCallError=1"
    latest = metrics_rows("demo", records, labels, gold_rules, by="latest")
    assert [r["run"] for r in latest] == ["latest"] and latest[0]["cases"] == 3
    assert latest[0]["ACC"] == 0.0  # newest c1 failed, c2 wrong
    assert not any(isinstance(v, float) and math.isnan(v) for r in rows + latest for v in r.values())
    with pytest.raises(ValueError, match="by must be"):
        metrics_rows("demo", records, by="strategy")


def test_decisions_on_cards_to_review_count_in_agreement_and_against_gold():
    # Two cards "to review": on c1 the score decided violation and the analyst overturned it
    # (says compliant); on c2 it decided compliant and the analyst confirmed (compliant).
    # Stood against: V, C; analysts: C, C. p_o = 1/2; kappa: judge V1 C1, analyst C2,
    # p_e = (1*0 + 1*2) / 4 = 1/2, kappa = (1/2 - 1/2) / (1/2) = 0.
    items = build_queue([("r", trace("c1", "cdg", True, "positive")),
                         ("r", trace("c2", "cdg", False, "positive"))])
    ds = [ReviewDecision("demo", "r", "c1", "cdg", "ada", "overturn", "fine", False,
                         shown="review", analyst_label="compliant"),
          ReviewDecision("demo", "r", "c2", "cdg", "ada", "confirm", "", False,
                         shown="review", analyst_label="compliant")]
    assert ds[0].stood_violation is True and ds[1].stood_violation is False
    a = agreement(ds, items)
    assert (a.decisions, a.confirmed, a.overturned) == (2, 1, 1)
    assert a.share_confirmed == pytest.approx(0.5) and a.kappa == pytest.approx(0.0)
    # Gold: both compliant. The analysts are right twice; what the decisions stood
    # against (V on c1, C on c2) once.
    assert a.gold_n == 2
    assert a.analysts_gold == pytest.approx(1.0) and a.judge_gold == pytest.approx(0.5)
    # The reviewer's example: one overturn of a card "to review".
    one = agreement([ds[0]])
    assert one.decisions == 1 and one.overturned == 1 and one.share_confirmed == 0.0


def test_what_a_decision_stood_against_matches_decision_on():
    from dataclasses import replace

    from workbench.review.queue import decision_on, shown_stands

    items = build_queue([("r", trace("c1", "cdg", True, "positive")),
                         ("r", trace("c2", "cdg", False, "positive"))])
    records = [v for item in items for v in (item.verdict, replace(item.verdict, label="review"))]
    for record in records:
        for what in ("confirm", "overturn", "wrong-rule"):
            d = decision_on(record, "demo", "ada", what, "why")
            assert d.stood_violation == shown_stands(record), (record.label, what)
