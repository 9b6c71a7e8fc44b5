"""Inter-annotator agreement on nominal labels: percent agreement, Cohen's kappa, Fleiss'
kappa and Krippendorff's alpha.

Every function takes ``rows``: an iterable of ``(item, annotator, label)`` triples. A label that
is ``None``, an empty or blank string, or a float NaN is *missing*: the row says the annotator
was asked but gave no label, and it is ignored by every statistic. Items, annotators and labels
may be any hashable values; labels are compared with ``==``.

Each statistic returns ``None`` where it does not apply (too few annotators, no shared items,
an unbalanced design for Fleiss) and a float otherwise, never NaN. Arithmetic is exact
(integers and ``Fraction``) until the final ``float``, so hand-computed values compare equal.

Convention for one category only: when every label is the same category the chance
agreement is 1 and the usual formulas read 0/0. Observed agreement is then perfect too, so
this module returns **1.0** (perfect agreement) for all three coefficients in that case.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable
from fractions import Fraction
from typing import Any

Row = tuple[Hashable, Hashable, Any]
LabelTable = dict[Hashable, dict[Hashable, Hashable]]


def is_missing(label: object) -> bool:
    """True for ``None``, blank strings and float NaN: a cell without a label."""
    if label is None:
        return True
    if isinstance(label, str):
        return not label.strip()
    if isinstance(label, float):
        return math.isnan(label)
    return False


def label_table(rows: Iterable[Row]) -> LabelTable:
    """``{item: {annotator: label}}`` with missing labels dropped, items in first-seen order.

    Items whose labels are all missing do not appear. Raises ``ValueError`` when a row is not
    a triple or when one annotator gives the same item two labels (keep the latest label per
    annotator and item before computing agreement).
    """
    table: LabelTable = {}
    for position, row in enumerate(rows):
        try:
            item, annotator, label = row
        except (TypeError, ValueError):
            raise ValueError(
                f"row {position}: expected (item, annotator, label), got {row!r}"
            ) from None
        if is_missing(label):
            continue
        labels = table.setdefault(item, {})
        if annotator in labels:
            raise ValueError(
                f"row {position}: annotator {annotator!r} labelled item {item!r} twice "
                f"({labels[annotator]!r} and {label!r}); keep one label per annotator and item"
            )
        labels[annotator] = label
    return table


def _annotators(table: LabelTable) -> list[Hashable]:
    return list(dict.fromkeys(annotator for labels in table.values() for annotator in labels))


def _table(rows: Iterable[Row] | LabelTable) -> LabelTable:
    # Accept an already-built table so agreement_report builds it once.
    return rows if isinstance(rows, dict) else label_table(rows)


def _pairable(rows: Iterable[Row] | LabelTable) -> list[tuple[int, Counter]]:
    """``(m, label count per category)`` of every item with ``m >= 2`` labels."""
    return [(len(labels), Counter(labels.values())) for labels in _table(rows).values() if len(labels) >= 2]


def percent_agreement(rows: Iterable[Row]) -> float | None:
    """Mean, over items with at least two labels, of the share of agreeing annotator pairs.

    For two annotators this is the share of shared items they labelled alike. An item with
    ``m`` labels of which ``n_c`` are category ``c`` agrees on ``sum n_c (n_c - 1)`` of its
    ``m (m - 1)`` ordered pairs. ``None`` when no item has two labels.
    """
    shares = [Fraction(sum(n * (n - 1) for n in counts.values()), m * (m - 1))
              for m, counts in _pairable(rows)]
    if not shares:
        return None
    return float(sum(shares) / len(shares))


def cohen_kappa(rows: Iterable[Row]) -> float | None:
    """Cohen's kappa for exactly two annotators, over the items both labelled.

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed share of agreements and
    ``p_e = sum_c p_1c * p_2c`` from each annotator's own label distribution on those items.

    Returns ``None`` when the labels do not come from exactly two annotators (one annotator,
    three or more) or when no item was labelled by both. If both annotators used one and the
    same category for every shared item, ``p_e = 1`` and ``p_o = 1``; kappa is then defined
    as 1.0 (perfect agreement) instead of 0/0.
    """
    table = _table(rows)
    annotators = _annotators(table)
    if len(annotators) != 2:
        return None
    first, second = annotators
    pairs = [(lab[first], lab[second]) for lab in table.values() if first in lab and second in lab]
    n = len(pairs)
    if n == 0:
        return None
    agree = sum(1 for a, b in pairs if a == b)
    first_counts = Counter(a for a, _ in pairs)
    second_counts = Counter(b for _, b in pairs)
    # In counts: p_o = agree / n and p_e = chance / n^2, so
    # kappa = (agree * n - chance) / (n^2 - chance).
    chance = sum(count * second_counts[c] for c, count in first_counts.items())
    if chance == n * n:
        return 1.0
    return float(Fraction(agree * n - chance, n * n - chance))


def fleiss_kappa(rows: Iterable[Row]) -> float | None:
    """Fleiss' kappa: every labelled item carries the same number ``m >= 2`` of labels.

    The annotators may differ from item to item; only the count per item must be constant.
    ``P_i = (sum_c n_ic^2 - m) / (m (m - 1))``, ``P = mean P_i``, ``p_c`` = share of all labels
    in category ``c``, ``P_e = sum_c p_c^2``, ``kappa = (P - P_e) / (1 - P_e)``.

    Items without any label are ignored. Returns ``None`` for no labelled items, for items
    with different label counts, or for one label per item (a single annotator). With one
    category only, ``P_e = 1`` and ``P = 1``: kappa is defined as 1.0.
    """
    table = _table(rows)
    if not table:
        return None
    sizes = {len(labels) for labels in table.values()}
    if len(sizes) != 1:
        return None
    (m,) = sizes
    if m < 2:
        return None
    n_items = len(table)
    totals: Counter = Counter()
    squares = 0
    for labels in table.values():
        counts = Counter(labels.values())
        totals.update(counts)
        squares += sum(n * n for n in counts.values())
    total_labels = n_items * m
    p_observed = Fraction(squares - total_labels, total_labels * (m - 1))
    p_chance = Fraction(sum(t * t for t in totals.values()), total_labels * total_labels)
    if p_chance == 1:
        return 1.0
    return float((p_observed - p_chance) / (1 - p_chance))


def krippendorff_alpha(rows: Iterable[Row]) -> float | None:
    """Krippendorff's alpha for nominal labels, any number of annotators, missing labels allowed.

    Only items with at least two labels are *pairable* and count. With ``n_c`` the number of
    pairable labels in category ``c`` and ``n = sum n_c``, an item with ``m`` labels adds
    ``1 / (m - 1)`` per ordered pair of its labels to the coincidence matrix ``o``, and
    ``alpha = 1 - D_o / D_e = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k``.

    Returns ``None`` when no item has two labels (empty input, a single annotator). With one
    category only, expected disagreement ``D_e`` is 0 and so is observed ``D_o``; alpha is
    then defined as 1.0 (perfect agreement) instead of 0/0.
    """
    category_totals: Counter = Counter()
    # Disagreeing ordered pairs grouped by item size m, divided by (m - 1) once per group.
    disagreements_by_size: Counter = Counter()
    for m, counts in _pairable(rows):
        category_totals.update(counts)
        disagreements_by_size[m] += m * m - sum(n * n for n in counts.values())
    n = sum(category_totals.values())
    if n == 0:
        return None
    observed = sum(Fraction(d, m - 1) for m, d in disagreements_by_size.items())
    expected = n * n - sum(t * t for t in category_totals.values())
    if expected == 0:
        return 1.0
    return float(1 - (n - 1) * observed / expected)


def agreement_report(rows: Iterable[Row]) -> dict[str, Any]:
    """All statistics for one set of labels, as a JSON-ready dict.

    Keys: ``n_items`` and ``n_annotators`` (those with at least one label), ``n_labels``
    (non-missing labels), ``percent_agreement``, ``cohen_kappa``, ``fleiss_kappa``,
    ``krippendorff_alpha``; a statistic that does not apply is ``None``.
    Raises ``ValueError`` as :func:`label_table` does.
    """
    table = label_table(rows)
    return {
        "n_items": len(table),
        "n_annotators": len(_annotators(table)),
        "n_labels": sum(len(labels) for labels in table.values()),
        "percent_agreement": percent_agreement(table),
        "cohen_kappa": cohen_kappa(table),
        "fleiss_kappa": fleiss_kappa(table),
        "krippendorff_alpha": krippendorff_alpha(table),
    }
