"""Agreement statistics against hand-computed values (working in the comments)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

from workbench.annotation import agreement


def two_coders(first: str, second: str) -> list[tuple]:
    """Rows for annotators A and B; one character per item, '.' = missing."""
    rows = []
    for item, (a, b) in enumerate(zip(first, second, strict=True)):
        rows.append((item, "A", None if a == "." else a))
        rows.append((item, "B", None if b == "." else b))
    return rows


# 10 items: both y on 4, A y / B n on 2, A n / B y on 1, both n on 3.
TEN = two_coders("yyyyyynnnn", "yyyynnynnn")


def test_cohen_kappa_two_by_two_table():
    # p_o = (4 + 3) / 10 = 0.7
    # A: y 6, n 4; B: y 5, n 5 -> p_e = (6*5 + 4*5) / 10^2 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert agreement.cohen_kappa(TEN) == pytest.approx(0.4)


def test_fleiss_kappa_with_two_annotators():
    # Every item has m = 2 labels. P_i = 1 on the 7 agreeing items, 0 on the 3 others:
    # P = 7/10. Pooled: y = 6 + 5 = 11, n = 9 of 20 -> P_e = (11^2 + 9^2) / 20^2 = 202/400
    # kappa = (0.7 - 0.505) / (1 - 0.505) = 0.195 / 0.495 = 13/33
    assert agreement.fleiss_kappa(TEN) == pytest.approx(13 / 33)


def test_krippendorff_alpha_two_annotators_no_missing():
    # n = 20 pairable values, n_y = 11, n_n = 9.
    # Each of the 3 disagreeing items adds o_yn + o_ny = 2 pairs / (m - 1 = 1): sum = 6.
    # sum_{c != k} n_c n_k = 20^2 - (11^2 + 9^2) = 198
    # alpha = 1 - (n - 1) * 6 / 198 = 1 - 114/198 = 14/33
    assert agreement.krippendorff_alpha(TEN) == pytest.approx(14 / 33)


def test_percent_agreement_two_annotators():
    # 7 of the 10 items agree.
    assert agreement.percent_agreement(TEN) == pytest.approx(0.7)


def test_cohen_kappa_systematic_disagreement_is_negative():
    # p_o = 0; A: y 2, n 2; B: y 2, n 2 -> p_e = (4 + 4) / 16 = 0.5
    # kappa = (0 - 0.5) / 0.5 = -1
    assert agreement.cohen_kappa(two_coders("ynyn", "nyny")) == pytest.approx(-1.0)


# Three annotators, four items, categories a/b:
#   item 0: a a a   item 1: a a b   item 2: b b b   item 3: a b b
THREE = [
    (item, coder, label)
    for item, labels in enumerate(["aaa", "aab", "bbb", "abb"])
    for coder, label in zip("XYZ", labels, strict=True)
]


def test_fleiss_kappa_three_annotators():
    # sum_c n_ic^2 per item: 9, 4+1=5, 9, 1+4=5 -> S = 28; N = 4, m = 3, N*m = 12
    # P = (S - N m) / (N m (m - 1)) = (28 - 12) / 24 = 2/3
    # pooled a = 3+2+0+1 = 6, b = 6 -> P_e = (36 + 36) / 144 = 1/2
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    assert agreement.fleiss_kappa(THREE) == pytest.approx(1 / 3)


def test_krippendorff_alpha_three_annotators():
    # Disagreeing ordered pairs per item: m^2 - sum n_c^2 = 0, 9-5=4, 0, 4; each / (m-1 = 2)
    # sum_{c != k} o_ck = 8/2 = 4. n = 12, n_a = n_b = 6 -> sum n_c n_k = 144 - 72 = 72
    # alpha = 1 - 11 * 4 / 72 = 1 - 44/72 = 7/18
    assert agreement.krippendorff_alpha(THREE) == pytest.approx(7 / 18)


def test_percent_agreement_three_annotators():
    # Agreeing share of ordered pairs per item: 1, (2*1)/6 = 1/3, 1, 1/3 -> mean = 2/3
    assert agreement.percent_agreement(THREE) == pytest.approx(2 / 3)


def test_cohen_kappa_needs_exactly_two_annotators():
    assert agreement.cohen_kappa(THREE) is None


# Krippendorff's reliability data with missing values (4 coders, 12 units, '.' = missing),
# the standard worked example for nominal alpha.
CODERS = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}
MISSING = [
    (unit, coder, None if value == "." else value)
    for coder, values in CODERS.items()
    for unit, value in enumerate(values.split())
]


def test_krippendorff_alpha_with_missing_labels():
    # Unit 12 has one value and is not pairable. Disagreeing ordered pairs / (m - 1):
    #   unit 2 (2,2,3,2): 16 - (9 + 1) = 6, / 3 = 2
    #   unit 6 (1,2,3,4): 16 - 4 = 12, / 3 = 4
    #   unit 8 (1,1,2,1): 6 / 3 = 2            -> sum_{c != k} o_ck = 8
    # n_c: '1' 9, '2' 13, '3' 10, '4' 5, '5' 3 -> n = 40, sum n_c^2 = 384
    # sum_{c != k} n_c n_k = 40^2 - 384 = 1216
    # alpha = 1 - (n - 1) * 8 / 1216 = 1 - 312/1216 = 0.7434
    assert agreement.krippendorff_alpha(MISSING) == pytest.approx(1 - 312 / 1216)
    assert agreement.krippendorff_alpha(MISSING) == pytest.approx(0.743, abs=5e-4)


def test_missing_labels_leave_fleiss_undefined_and_cohen_uses_shared_items():
    assert agreement.fleiss_kappa(MISSING) is None  # items carry 3, 4, 2 or 1 labels
    # A and B share items 0..3 only (A: y y n n, B: y n n .):
    # shared items 0, 1, 2 -> p_o = 2/3; A: y 2, n 1; B: y 1, n 2 -> p_e = (2 + 2) / 9 = 4/9
    # kappa = (2/3 - 4/9) / (1 - 4/9) = (2/9) / (5/9) = 0.4
    rows = two_coders("yynn", "ynn.")
    assert agreement.cohen_kappa(rows) == pytest.approx(0.4)
    # Fleiss: item 3 has one label, the others two -> unbalanced.
    assert agreement.fleiss_kappa(rows) is None


def test_items_without_any_label_are_ignored_by_fleiss():
    rows = [*THREE, (9, "X", None), (9, "Y", ""), (9, "Z", float("nan"))]
    assert agreement.fleiss_kappa(rows) == pytest.approx(1 / 3)
    assert agreement.agreement_report(rows)["n_items"] == 4


def test_one_category_only_is_perfect_agreement():
    # Expected disagreement is 0 (p_e = P_e = 1) and so is observed: defined as 1.0.
    rows = two_coders("yyyy", "yyyy")
    assert agreement.cohen_kappa(rows) == 1.0
    assert agreement.fleiss_kappa(rows) == 1.0
    assert agreement.krippendorff_alpha(rows) == 1.0
    assert agreement.percent_agreement(rows) == 1.0
    with_missing = [*rows, (7, "A", "y"), (8, "B", None)]
    assert agreement.krippendorff_alpha(with_missing) == 1.0


def test_single_annotator_gives_none_everywhere():
    rows = [(i, "A", label) for i, label in enumerate("yyny")]
    report = agreement.agreement_report(rows)
    assert report == {
        "n_items": 4,
        "n_annotators": 1,
        "n_labels": 4,
        "percent_agreement": None,
        "cohen_kappa": None,
        "fleiss_kappa": None,
        "krippendorff_alpha": None,
    }


def test_empty_input_gives_none_everywhere():
    for rows in ([], [(1, "A", None), (1, "B", "")]):
        report = agreement.agreement_report(rows)
        assert report["n_items"] == 0 and report["n_labels"] == 0
        assert all(report[k] is None for k in
                   ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha"))


def test_two_annotators_without_shared_items_have_no_cohen_kappa():
    rows = [(1, "A", "y"), (2, "B", "y"), (3, "A", "n"), (4, "B", "n")]
    assert agreement.cohen_kappa(rows) is None
    assert agreement.krippendorff_alpha(rows) is None


def test_report_counts_and_values():
    report = agreement.agreement_report(THREE)
    assert report["n_items"] == 4 and report["n_annotators"] == 3 and report["n_labels"] == 12
    assert report["cohen_kappa"] is None
    assert report["fleiss_kappa"] == pytest.approx(1 / 3)
    assert report["krippendorff_alpha"] == pytest.approx(7 / 18)


def test_duplicate_label_for_one_annotator_and_item_is_an_error():
    with pytest.raises(ValueError, match="labelled item 'i1' twice"):
        agreement.label_table([("i1", "A", "y"), ("i1", "A", "n")])
    # A missing row next to a real label is not a duplicate.
    assert agreement.label_table([("i1", "A", None), ("i1", "A", "y")]) == {"i1": {"A": "y"}}


def test_malformed_row_is_an_error():
    with pytest.raises(ValueError, match="expected \\(item, annotator, label\\)"):
        agreement.agreement_report([("i1", "A")])


def test_is_missing():
    assert all(agreement.is_missing(v) for v in (None, "", "  ", math.nan))
    assert not any(agreement.is_missing(v) for v in ("0", 0, False))


# ---- cross-checks on random data against brute-force computations ----------------------


def random_rows(rng: random.Random, annotators: int, items: int, categories: str,
                missing: float) -> list[tuple]:
    return [
        (item, f"coder{c}", None if rng.random() < missing else rng.choice(categories))
        for item in range(items)
        for c in range(annotators)
    ]


def brute_cohen(rows: list[tuple]) -> float:
    table = agreement.label_table(rows)
    shared = [(lab["coder0"], lab["coder1"]) for lab in table.values() if len(lab) == 2]
    p_o = sum(a == b for a, b in shared) / len(shared)
    # Chance agreement: A's label on one shared item vs B's on any shared item, all n^2 pairs.
    p_e = sum(a == b for (a, _), (_, b) in itertools.product(shared, shared)) / len(shared) ** 2
    return (p_o - p_e) / (1 - p_e)


def brute_fleiss(rows: list[tuple]) -> float:
    units = [list(lab.values()) for lab in agreement.label_table(rows).values()]
    per_item = []
    for values in units:
        pairs = list(itertools.permutations(values, 2))
        per_item.append(sum(a == b for a, b in pairs) / len(pairs))
    pooled = [v for values in units for v in values]
    p_e = sum(a == b for a, b in itertools.product(pooled, pooled)) / len(pooled) ** 2
    p = sum(per_item) / len(per_item)
    return (p - p_e) / (1 - p_e)


def brute_alpha(rows: list[tuple]) -> float:
    # Coincidence matrix by explicit enumeration of ordered pairs of distinct coders.
    coincidences: Counter = Counter()
    for labels in agreement.label_table(rows).values():
        values = list(labels.values())
        if len(values) < 2:
            continue
        for a, b in itertools.permutations(values, 2):
            coincidences[a, b] += 1 / (len(values) - 1)
    totals: Counter = Counter()
    for (a, _b), weight in coincidences.items():
        totals[a] += weight
    n = sum(totals.values())
    d_o = sum(w for (a, b), w in coincidences.items() if a != b) / n
    d_e = sum(totals[a] * totals[b] for a in totals for b in totals if a != b) / (n * (n - 1))
    return 1 - d_o / d_e


@pytest.mark.parametrize("seed", range(8))
def test_cohen_kappa_matches_brute_force(seed):
    rng = random.Random(seed)
    rows = random_rows(rng, annotators=2, items=40, categories="abc", missing=0.15)
    assert agreement.cohen_kappa(rows) == pytest.approx(brute_cohen(rows), abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_kappa_matches_brute_force(seed):
    rng = random.Random(seed)
    rows = random_rows(rng, annotators=2 + seed % 3, items=30, categories="abcd", missing=0.0)
    assert agreement.fleiss_kappa(rows) == pytest.approx(brute_fleiss(rows), abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_krippendorff_alpha_matches_brute_force(seed):
    rng = random.Random(seed)
    rows = random_rows(rng, annotators=3 + seed % 3, items=30, categories="abc", missing=0.3)
    assert agreement.krippendorff_alpha(rows) == pytest.approx(brute_alpha(rows), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_alpha_and_fleiss_relation_for_two_complete_coders(seed):
    # With two coders and no missing labels Fleiss' kappa is Scott's pi, and
    # alpha = 1 - (n - 1) / n * (1 - pi) with n = 2 * items pairable values.
    rng = random.Random(100 + seed)
    rows = random_rows(rng, annotators=2, items=25, categories="abc", missing=0.0)
    n = 50
    expected = 1 - (n - 1) / n * (1 - agreement.fleiss_kappa(rows))
    assert agreement.krippendorff_alpha(rows) == pytest.approx(expected, abs=1e-12)
