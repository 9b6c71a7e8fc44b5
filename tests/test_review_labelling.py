"""Labels where they teach most (issue 57 item 5) on Review and the command line: the "Label
next" order proposes the unlabelled cases the current scorer is least sure of, one per
conversation and SKILL in turn; the auto-decide panel and `workbench review next` say how
many more labelled cases a promise at α needs, tested at ten levels and split-certified, and
the page makes the split-certified promise when asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._review_auto import SPLIT, guarantee_words, plan_guarantee
from tests.review_seed import DATASET, REPLY, seed_labelled
from tests.test_page_review_guarantee import synthetic
from workbench.audit import AuditTrace, Verdict
from workbench.audit.cases import AuditCase
from workbench.identity.roles import COMMAND_LINE
from workbench.review.decisions import ReviewDecision
from workbench.review.labelling import (
    forecast_words,
    label_next,
    promise_forecast,
    queue_forecast,
    split_auto,
)
from workbench.review.queue import build_queue
from workbench.review.views import SORTS, ReviewView, apply_view

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "review.py")


def trace(cid: str, p: float, session: str, skill: str) -> AuditTrace:
    return AuditTrace(id=cid, strategy="cdg", session=session, skills=[skill],
                      verdict=Verdict(p >= 0.5, "hand-set", [], probability=p,
                                      probability_source="logprobs"))


# case -> (P(violation), conversation, SKILL, gold label)
CASES = {
    "a1": (0.52, "conv-a", "refunds", None),  # the least sure, conversation a
    "a2": (0.55, "conv-a", "refunds", None),  # as unsure, same conversation: later
    "b1": (0.60, "conv-b", "refunds", None),
    "c1": (0.58, "conv-c", "delays", None),  # the other SKILL, in turn
    "d1": (0.95, "conv-d", "delays", None),  # sure: last
    "g1": (0.50, "conv-g", "refunds", "negative"),  # labelled (gold): never proposed
    "r1": (0.51, "conv-r", "refunds", None),  # an analyst decided it: labelled
}


@pytest.fixture
def queue():
    records = [("run-1", trace(cid, p, conv, skill)) for cid, (p, conv, skill, _) in CASES.items()]
    gold = {cid: g for cid, (*_, g) in CASES.items() if g}
    return build_queue(records, gold, "d")


DECIDED = [ReviewDecision("d", "run-1", "r1", "cdg", "ada", "confirm", judge_violation=True)]


def test_label_next_is_the_least_sure_unlabelled_one_per_conversation_and_skill_in_turn(queue):
    # First pass: one per conversation, the SKILLs in turn (refunds' least sure a1 first,
    # then delays' c1, refunds' b1, delays' d1); then a2, whose conversation had its turn.
    assert [i.case_id for i in label_next(queue, DECIDED)] == ["a1", "c1", "b1", "d1", "a2"]
    assert [i.case_id for i in label_next(queue, DECIDED, k=2)] == ["a1", "c1"]
    # Without the analyst's decision r1 is unlabelled, and the least sure of all.
    assert label_next(queue)[0].case_id == "r1"


def test_the_label_next_sort_puts_the_proposals_first_then_the_labelled_in_queue_order(queue):
    view, problems = ReviewView.from_params({"sort": "label next", "reasons": "none"})
    assert not problems and "label next" in SORTS
    shown = apply_view(queue, view, "ada", DECIDED)
    assert [i.case_id for i in shown] == ["a1", "c1", "b1", "d1", "a2", "g1", "r1"]
    assert view.to_params()["sort"] == "label next"  # the address and saved views carry it


def test_the_forecast_counts_labels_both_ways_by_hand():
    # No error at α = 10 %, δ = 5 %, half decided automatically: ten levels at δ/10 need 51
    # automatic decisions (0.9^51 = 0.0046 <= 0.005 < 0.9^50), so 102 labels; one test at δ
    # needs 29 (0.9^29 = 0.047 <= 0.05 < 0.9^28) in the certifying half, so 2 x 58 = 116.
    f = promise_forecast([0.9] * 40, [True] * 40, 0.10)
    assert (f.error_rate, f.tested.auto_needed, f.tested.labels_needed, f.tested.more) == (0.0, 51, 102, 62)
    assert (f.split.auto_needed, f.split.labels_needed, f.split.more, f.fewer) == (29, 116, 76, "tested")
    # 3 wrong of the confident 50 (of 100): 6 %. Ten levels need 314 automatic decisions,
    # one test 116: 628 labels against 2 x 232 = 464, so the split needs fewer.
    conf = [0.99] * 50 + [0.6] * 50
    right = [False] * 3 + [True] * 47 + [True] * 50
    f = promise_forecast(conf, right, 0.10)
    assert f.error_rate == pytest.approx(0.06)
    assert (f.tested.labels_needed, f.split.labels_needed, f.fewer) == (628, 464, "split")
    words = forecast_words(f)
    assert "the most confident half is wrong 6.0 % of the time" in words
    assert "needs 628 labelled cases, 528 more than labelled now" in words
    assert words.endswith("(116 decided automatically in its certifying half), fewer.")
    # At or above α no number of labels makes the promise; with too few labels, the least.
    assert "no number of labels can make a promise at 10 %" in forecast_words(
        promise_forecast([0.9] * 20, [False] * 10 + [True] * 10, 0.10))
    few = promise_forecast([0.9] * 4, [False] * 4, 0.10)
    assert few.error_rate is None and few.tested.labels_needed == 102


def test_the_forecast_of_a_queue_reads_the_labelled_cases_decided_records(queue):
    f = queue_forecast(queue, DECIDED, 0.10)
    assert f.labelled == 2 and f.error_rate is None  # g1 (gold) and r1 (the analyst's)


def test_the_split_certified_guarantee_is_the_same_promise_on_half_the_conversations():
    data = synthetic(400, 4)
    auto = split_auto(data.probabilities, data.truth, data.groups, 0.5, 0.10, calibrated=False)
    assert auto["method"] == SPLIT and auto["level"] is not None
    assert auto["bound"] <= 0.10 and auto["cases"] == 400 and auto["certifying"] == 200
    g = plan_guarantee(None, data, 0.10, how=SPLIT)
    assert g.level == auto["level"]
    assert guarantee_words(g).startswith(
        "Chosen on half the conversations of the 400 labelled verdicts and certified on the "
        "other half's 200: it decides")
    # Too few labels: refused with the reason.
    refused = plan_guarantee(None, synthetic(30, 0), 0.10, how=SPLIT)
    assert refused.level is None and "split-certified test" in refused.refusal


# -- the page and the command --------------------------------------------------------------

UNLABELLED = {f"new-{n}": p for n, p in enumerate([0.51, 0.9, 0.45, 0.7])}


@pytest.fixture
def db(demo_db):
    """The labelled synthetic dataset (120 cases, tests/review_seed.py) and four cases of new
    conversations nobody has labelled, in the same run."""
    from store import audit_repo

    eng = demo_db[0]
    seed_labelled(eng)
    audit_repo.save_cases(eng, DATASET, [AuditCase(cid, REPLY, session=f"new-conv-{cid}")
                                         for cid in UNLABELLED], actor=COMMAND_LINE)
    audit_repo.save_traces(eng, [trace(cid, p, f"new-conv-{cid}", "refunds")
                                 for cid, p in UNLABELLED.items()], "run-2", DATASET,
                           actor=COMMAND_LINE)
    return eng


def test_review_next_prints_the_proposals_and_the_forecast(db, capsys):
    from workbench.cli import main

    assert main(["review", "next", "--dataset", DATASET, "--k", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # The least sure first (|p - 0.5|: 0.51, 0.45, 0.7); 0.9 is left for a fourth.
    assert [p["case"] for p in out["proposals"]] == ["new-0", "new-2", "new-3"]
    assert out["labelled"] == 120 and out["cases"] == 124
    assert out["forecast"]["alpha"] == 0.1 and out["forecast"]["labelled"] == 120
    assert out["forecast"]["tested"]["labels_needed"] is not None
    assert main(["review", "next", "--dataset", DATASET, "--k", "2"]) == 0
    text = capsys.readouterr().out
    assert "Label next (2; least sure first" in text and "1. new-0 · cdg · run run-2" in text
    assert "On the 120 labelled cases so far the most confident half is wrong" in text
    assert main(["review", "next", "--dataset", "nothing-here"]) == 2


def test_the_page_sorts_label_next_and_says_what_the_promise_needs(db):
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.query_params["dataset"] = DATASET
    at.query_params["sort"] = "label next"
    at.run()
    at.text_input(key="rv_reviewer").set_value("ada").run()
    assert not at.exception
    card = next(t.value for t in at.text if " · case " in t.value)
    assert " · case new-0 · " in card  # the least sure unlabelled case first
    captions = [c.value for c in at.caption]
    assert any("4 cases without a label first." in c.replace("\\", "") for c in captions), captions
    assert any("On the 120 labelled cases so far the most confident half is wrong" in c
               .replace("\\", "") for c in captions)
    at.radio(key="rv_auto_how").set_value(SPLIT).run()
    assert not at.exception
    # What the page says is the split-certified plan of the dataset's labelled verdicts.
    from pages._review_auto import labelled_of
    from store import audit_repo

    cases = {c.id: c for c in audit_repo.load_cases(db, DATASET)}
    expected = plan_guarantee(None, labelled_of(audit_repo.run_traces(db, DATASET), cases, []),
                              0.10, 1.0, how=SPLIT)
    said = [m.value.replace("\\", "") for m in [*at.info, *at.warning]]
    assert guarantee_words(expected) in said, said
