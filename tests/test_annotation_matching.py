"""Rule-set agreement: one-to-one matching, precision / recall / F1, lexical similarities."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.annotation import (
    ReferenceRule,
    jaccard_similarity,
    match_by_similarity,
    match_inventories,
    rule_text,
    tfidf_cosine_similarity,
)
from workbench.graph import Rule


def test_matching_is_optimal_not_greedy():
    # Greedy would take (0, 0) = 0.9 and leave extracted 1 with only 0.1 (below threshold):
    # one match. The maximum-weight matching takes (0, 1) + (1, 0) = 0.8 + 0.85 = 1.65.
    similarity = np.array([
        [0.9, 0.8, 0.0],
        [0.85, 0.1, 0.0],
    ])
    result = match_by_similarity(similarity, threshold=0.5)
    assert [(p.extracted, p.reference) for p in result.pairs] == [(0, 1), (1, 0)]
    assert [p.similarity for p in result.pairs] == [0.8, 0.85]
    # precision = 2/2, recall = 2/3, F1 = 2 * 1 * (2/3) / (1 + 2/3) = 0.8
    assert result.precision == 1.0
    assert result.recall == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(0.8)
    assert result.unmatched_extracted == () and result.unmatched_reference == (2,)


def test_threshold_drops_weak_pairs():
    similarity = np.array([[0.6, 0.2], [0.3, 0.49]])
    result = match_by_similarity(similarity, threshold=0.5)
    # Only (0, 0) clears 0.5: precision = 1/2, recall = 1/2, F1 = 1/2
    assert [(p.extracted, p.reference) for p in result.pairs] == [(0, 0)]
    assert (result.precision, result.recall, result.f1) == (0.5, 0.5, 0.5)
    assert result.unmatched_extracted == (1,) and result.unmatched_reference == (1,)
    # A pair exactly at the threshold counts.
    assert match_by_similarity(np.array([[0.5]]), threshold=0.5).matched == 1


def test_no_match_and_empty_inventories():
    none = match_by_similarity(np.zeros((2, 3)), threshold=0.5)
    assert none.matched == 0 and none.f1 == 0.0 and none.precision == 0.0
    empty_extracted = match_by_similarity(np.zeros((0, 3)), threshold=0.5)
    assert empty_extracted.precision is None and empty_extracted.recall == 0.0
    assert empty_extracted.f1 is None
    both_empty = match_inventories([], [])
    assert both_empty.as_dict()["precision"] is None and both_empty.as_dict()["pairs"] == []


@pytest.mark.parametrize("threshold", [0, -0.1, 1.5])
def test_threshold_must_be_in_unit_interval(threshold):
    with pytest.raises(ValueError, match="must be in \\(0, 1\\]"):
        match_by_similarity(np.ones((1, 1)), threshold)


def test_bad_similarity_matrices_are_rejected():
    with pytest.raises(ValueError, match="NaN"):
        match_by_similarity(np.array([[np.nan]]), 0.5)
    with pytest.raises(ValueError, match="2-D"):
        match_by_similarity(np.ones(3), 0.5)
    with pytest.raises(ValueError, match="expected \\(1, 1\\)"):
        match_inventories(["a"], ["b"], similarity=lambda left, right: np.ones((2, 2)))


def test_jaccard_similarity_by_hand():
    # tokens: {customer, asks, refund} vs {customer, asks, refund, within, 30, days}
    # ("a", "for" and "the" are stopwords): |A & B| = 3, |A | B| = 6 -> 0.5
    matrix = jaccard_similarity(["the customer asks for a refund"],
                                ["customer asks a refund within 30 days", ""])
    assert matrix.shape == (1, 2)
    assert matrix[0, 0] == pytest.approx(0.5)
    assert matrix[0, 1] == 0.0
    # Negation is kept: "must not refund" differs from "must refund" (2/3 overlap).
    assert jaccard_similarity(["must refund"], ["must not refund"])[0, 0] == pytest.approx(2 / 3)


def test_tfidf_cosine_similarity():
    matrix = tfidf_cosine_similarity(
        ["verify identity before discussing order", "refund amount paid"],
        ["verify identity before discussing order", "never share card numbers"],
    )
    assert matrix[0, 0] == pytest.approx(1.0)
    assert matrix[0, 1] == 0.0 and matrix[1, 1] == 0.0
    assert tfidf_cosine_similarity([], ["x"]).shape == (0, 1)
    assert tfidf_cosine_similarity(["the"], ["a"]).tolist() == [[0.0]]


def test_match_inventories_with_rules_references_and_mappings():
    extracted = [
        Rule("R1", "a customer asks about an order", "verify the customer's identity", "required"),
        Rule("R2", "an order is to be cancelled", "cancel only if status is pending", "permitted"),
        Rule("R3", "weather is nice", "offer a discount", "permitted"),  # hallucinated
    ]
    reference = [
        {"condition": "an order is to be cancelled", "action": "cancel only while pending"},
        ReferenceRule("a customer asks about an order", "verify customer identity first",
                      "required", ((0, 10),)),
    ]
    result = match_inventories(extracted, reference, threshold=0.5)
    assert sorted((p.extracted, p.reference) for p in result.pairs) == [(0, 1), (1, 0)]
    # precision = 2/3, recall = 2/2, F1 = 2 * (2/3) / (2/3 + 1) = 0.8
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == 1.0
    assert result.f1 == pytest.approx(0.8)
    tfidf = match_inventories(extracted, reference, similarity=tfidf_cosine_similarity,
                              threshold=0.3)
    assert sorted((p.extracted, p.reference) for p in tfidf.pairs) == [(0, 1), (1, 0)]


def test_similarity_is_pluggable():
    calls = []

    def by_length(left, right):
        calls.append((list(left), list(right)))
        return np.array([[1.0 if len(a) == len(b) else 0.0 for b in right] for a in left])

    result = match_inventories(["abc", "de"], ["xy", "zzz"], similarity=by_length)
    assert calls == [(["abc", "de"], ["xy", "zzz"])]
    assert sorted((p.extracted, p.reference) for p in result.pairs) == [(0, 1), (1, 0)]


def test_rule_text():
    assert rule_text({"condition": "c", "action": "a"}) == "c a"
    assert rule_text("free text") == "free text"
    with pytest.raises(ValueError, match="neither condition nor action"):
        rule_text({"modality": "required"})


def test_pooled_inventories_match_across_skills_per_skill_does_not():
    # SKILL a extracted "refund order"; its reference was filed under SKILL b, and b's
    # extracted "greet customer" has its reference under a. Exact text similarity.
    from workbench.annotation.matching import match_pooled

    def exact(left, right):
        return np.array([[float(x == y) for y in right] for x in left]).reshape(len(left), len(right))

    groups = [(["refund order"], ["greet customer"]), (["greet customer"], ["refund order"])]
    per_skill = match_pooled(groups, pooling="per_skill", similarity=exact)
    assert (per_skill.matched, per_skill.n_extracted, per_skill.n_reference) == (0, 2, 2)
    assert per_skill.unmatched_extracted == (0, 1) and per_skill.unmatched_reference == (0, 1)
    pooled = match_pooled(groups, similarity=exact)  # the first paper's default (B.4)
    # extracted [refund, greet] vs reference [greet, refund]: pairs (0, 1) and (1, 0)
    assert [(p.extracted, p.reference) for p in pooled.pairs] == [(0, 1), (1, 0)]
    assert pooled.precision == pooled.recall == pooled.f1 == 1.0
    # per_skill indices are offsets into the concatenation
    same = match_pooled([(["x"], ["y"]), (["greet customer"], ["greet customer"])],
                        pooling="per_skill", similarity=exact)
    assert [(p.extracted, p.reference) for p in same.pairs] == [(1, 1)]
    with pytest.raises(ValueError, match="unknown pooling"):
        match_pooled(groups, pooling="both")
