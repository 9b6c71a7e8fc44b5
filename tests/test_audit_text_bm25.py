"""Word handling and BM25, against hand-derived values."""

from __future__ import annotations

import math

import pytest

from workbench.audit.bm25 import BM25
from workbench.audit.text import content_words, stem, stems


@pytest.mark.parametrize(
    "word, expected",
    [("refunds", "refund"), ("refunded", "refund"), ("refunding", "refund"), ("delayed", "delay"),
     ("policies", "policy"), ("fees", "fee"), ("boxes", "box"), ("order", "order"), ("days", "day"),
     ("plus", "plus")],
)
def test_stem(word, expected):
    assert stem(word) == expected


def test_content_words_drop_stop_words():
    assert content_words("The agent must not refund the order!") == ["agent", "refund", "order"]
    assert stems("Refunds are refunded") == ["refund", "refund"]


def test_bm25_matches_hand_computation():
    docs = ["refund order", "refund refund delay", "cancel order"]
    bm = BM25(docs, k1=1.2, b=0.75)
    # N = 3, avgdl = (2 + 3 + 2) / 3 = 7/3. "delay": n = 1 -> idf = ln(1 + 2.5/1.5).
    # Doc 1: tf = 1, |d| = 3: score = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / (7/3))).
    idf = math.log(1 + 2.5 / 1.5)
    expected = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / (7 / 3)))
    assert bm.scores("delay") == {1: pytest.approx(expected)}
    # "refund" in docs 0 and 1: doc 1 has tf 2 and wins despite being longer.
    top = bm.top("refund", 3)
    assert [i for i, _ in top] == [1, 0]
    assert bm.top("unknown words", 3) == []


def test_bm25_empty_corpus():
    assert BM25([]).top("anything", 5) == []
