"""Selective review: the uncertainty order, the auto-decide preview and the words shown."""

from __future__ import annotations

import math

import pytest

from workbench.audit.trace import Verdict
from workbench.decision import DecisionSetting, auto_decide_preview, judgement, order_by_uncertainty
from workbench.words import probability


def probability_words(verdict, setting=None):
    return probability(judgement(verdict, setting)).replace("–", "")


def v(p):
    return Verdict(violation=p is not None and p >= 0.5, reason="r", violated_rules=[], probability=p)


def test_the_most_doubtful_verdicts_come_first_and_unknown_ones_last():
    items = [("a", v(0.95)), ("b", v(None)), ("c", v(0.52)), ("d", v(0.1)), ("e", v(0.4))]
    order = [name for name, _ in order_by_uncertainty(items, lambda it: it[1])]
    # Confidence at threshold 0.5: c 0.52, e 0.60, d 0.90, a 0.95; b has no probability.
    assert order == ["c", "e", "d", "a", "b"]
    # A lower threshold moves the doubt: at 0.3, e (0.4) is a violation with confidence 0.4.
    lower = DecisionSetting(0.3)
    assert [n for n, _ in order_by_uncertainty(items, lambda it: it[1], lower)][:2] == ["e", "c"]


def test_confidence_is_read_through_the_calibration():
    setting = DecisionSetting(0.5, {"a": 1.0, "b": math.log(3)})  # odds times 3
    j = judgement(v(0.5), setting)
    assert j.probability == pytest.approx(0.75) and j.violation and j.confidence == pytest.approx(0.75)
    assert probability_words(v(0.5), setting) == "possible violation — 75 %"
    assert probability_words(v(0.9)) == "likely violation — 90 % (uncalibrated)"
    assert probability_words(v(0.3)) == "probably compliant — 70 % (uncalibrated)"
    assert probability_words(v(None)) == ""


def test_auto_decide_preview_counts_before_anything_is_applied():
    items = [(v(0.97), "negative"), (v(0.93), "positive"), (v(0.02), "positive"), (v(0.6), "negative"),
             (v(None), "negative"), (v(0.05), None)]
    preview = auto_decide_preview(items, lambda it: it[0], 0.9, gold=lambda it: it[1])
    # Decided: 0.97 (right), 0.93 (wrong), 0.02 (right), 0.05 (no label); left: 0.6 and None.
    assert (preview.decided, preview.to_review, preview.labelled, preview.correct) == (4, 2, 3, 2)
    assert preview.accuracy == pytest.approx(2 / 3) and preview.coverage == pytest.approx(4 / 6)
    with pytest.raises(ValueError):
        auto_decide_preview(items, lambda it: it[0], 0.3)
