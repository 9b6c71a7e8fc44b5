"""Rule-set agreement: match an extracted rule inventory one-to-one to a reference inventory.

A similarity function scores every (extracted, reference) pair; a maximum-weight bipartite
matching (``scipy.optimize.linear_sum_assignment``) over the pairs scoring at least
``threshold`` pairs rules up, each rule at most once. Then

    precision = matched / |extracted|    recall = matched / |reference|
    F1 = 2 P R / (P + R)                 (the agreement between the two inventories)

Similarity is pluggable: any ``(extracted_texts, reference_texts) -> matrix`` callable with
values in [0, 1]. Two deterministic lexical ones work offline: token-set Jaccard (default)
and TF-IDF cosine. An embedding model can be plugged in later with the same signature.

Over several SKILLs there are two ways to pool (:data:`POOLING_MODES`, :func:`match_pooled`):

- ``"inventories"`` (the first paper's B.4, the default): concatenate every SKILL's extracted rules
  and every SKILL's reference rules, then match once; a rule filed under a neighbouring SKILL
  can still find its counterpart;
- ``"per_skill"``: match within each SKILL and sum the counts (stricter: a match must also
  agree on the SKILL).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

Similarity = Callable[[Sequence[str], Sequence[str]], np.ndarray]

# Function words that carry no rule meaning. Negations and modal verbs are kept on purpose:
# "must refund" and "must not refund" are different rules.
STOPWORDS = frozenset(
    "a an the of to in on at for by with and or is are be been it its this that these those "
    "as from into any".split()
)
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without :data:`STOPWORDS`."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def rule_text(rule: object) -> str:
    """``"condition action"`` of a rule given as an object or a mapping with those fields."""
    if isinstance(rule, str):
        return rule
    if isinstance(rule, Mapping):
        condition, action = rule.get("condition", ""), rule.get("action", "")
    else:
        condition, action = getattr(rule, "condition", ""), getattr(rule, "action", "")
    if not condition and not action:
        raise ValueError(
            f"rule {rule!r} has neither condition nor action; pass rules with those fields"
        )
    return f"{condition or ''} {action or ''}".strip()


def jaccard_similarity(left: Sequence[str], right: Sequence[str]) -> np.ndarray:
    """``|A & B| / |A | B|`` of the token sets; two texts without tokens score 0."""
    left_sets = [set(tokens(t)) for t in left]
    right_sets = [set(tokens(t)) for t in right]
    matrix = np.zeros((len(left_sets), len(right_sets)))
    for i, a in enumerate(left_sets):
        for j, b in enumerate(right_sets):
            union = len(a | b)
            matrix[i, j] = len(a & b) / union if union else 0.0
    return matrix


def tfidf_cosine_similarity(left: Sequence[str], right: Sequence[str]) -> np.ndarray:
    """Cosine of TF-IDF vectors, IDF fitted on both inventories together.

    ``idf(t) = ln((1 + N) / (1 + df(t))) + 1`` (smoothed, so shared words still count).
    """
    docs = [Counter(tokens(t)) for t in [*left, *right]]
    vocabulary = sorted({t for doc in docs for t in doc})
    if not docs or not vocabulary:
        return np.zeros((len(left), len(right)))
    column = {t: k for k, t in enumerate(vocabulary)}
    df = Counter(t for doc in docs for t in doc)
    idf = np.array([math.log((1 + len(docs)) / (1 + df[t])) + 1 for t in vocabulary])
    vectors = np.zeros((len(docs), len(vocabulary)))
    for row, doc in enumerate(docs):
        for t, count in doc.items():
            vectors[row, column[t]] = count
    vectors *= idf
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return vectors[: len(left)] @ vectors[len(left):].T


def f1_of(precision: float | None, recall: float | None) -> float | None:
    """Harmonic mean of precision and recall; None when either is undefined, 0 when both are 0."""
    if precision is None or recall is None:
        return None
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@dataclass(frozen=True)
class MatchedPair:
    extracted: int  # index into the extracted inventory
    reference: int  # index into the reference inventory
    similarity: float


@dataclass(frozen=True)
class InventoryAgreement:
    """Matched pairs (for review) and the set-level scores; a score is None when undefined."""

    pairs: tuple[MatchedPair, ...]
    n_extracted: int
    n_reference: int
    unmatched_extracted: tuple[int, ...]
    unmatched_reference: tuple[int, ...]
    threshold: float

    @property
    def matched(self) -> int:
        return len(self.pairs)

    @property
    def precision(self) -> float | None:
        return self.matched / self.n_extracted if self.n_extracted else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.n_reference if self.n_reference else None

    @property
    def f1(self) -> float | None:
        return f1_of(self.precision, self.recall)

    def as_dict(self) -> dict:
        return {
            "n_extracted": self.n_extracted,
            "n_reference": self.n_reference,
            "matched": self.matched,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "threshold": self.threshold,
            "pairs": [asdict(p) for p in self.pairs],
        }


def match_by_similarity(similarity: np.ndarray, threshold: float) -> InventoryAgreement:
    """One-to-one matching on a precomputed ``(n_extracted, n_reference)`` similarity matrix.

    Pairs below ``threshold`` are not allowed; among the allowed pairs the matching maximises
    total similarity. ``threshold`` must be in (0, 1]. Raises ``ValueError`` for a matrix that
    is not 2-D or holds NaN or infinity. Pairs are returned in extracted-index order.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold {threshold!r} must be in (0, 1]")
    matrix = np.asarray(similarity, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"similarity must be a 2-D matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("similarity matrix holds NaN or infinity; check the similarity function")
    n_extracted, n_reference = matrix.shape
    pairs: list[MatchedPair] = []
    if matrix.size:
        from scipy.optimize import linear_sum_assignment

        allowed = matrix >= threshold
        # Disallowed pairs weigh 0 and allowed ones at least threshold > 0, so the assignment
        # never trades an allowed pair for a disallowed one; the latter are dropped below.
        weights = np.where(allowed, matrix, 0.0)
        rows, cols = linear_sum_assignment(weights, maximize=True)
        pairs = [
            MatchedPair(int(i), int(j), float(matrix[i, j]))
            for i, j in zip(rows, cols, strict=True)
            if allowed[i, j]
        ]
    return _agreement(pairs, n_extracted, n_reference, threshold)


def _agreement(pairs: list[MatchedPair], n_extracted: int, n_reference: int,
               threshold: float) -> InventoryAgreement:
    """The agreement of ``pairs`` (in extracted-index order); every index no pair names is
    unmatched."""
    matched_e = {p.extracted for p in pairs}
    matched_r = {p.reference for p in pairs}
    return InventoryAgreement(
        pairs=tuple(pairs),
        n_extracted=n_extracted,
        n_reference=n_reference,
        unmatched_extracted=tuple(i for i in range(n_extracted) if i not in matched_e),
        unmatched_reference=tuple(j for j in range(n_reference) if j not in matched_r),
        threshold=threshold,
    )


POOLING_MODES = ("inventories", "per_skill")
DEFAULT_POOLING = "inventories"


def match_pooled(groups: Sequence[tuple[Sequence[object], Sequence[object]]], *,
                 pooling: str = DEFAULT_POOLING, similarity: Similarity = jaccard_similarity,
                 threshold: float = 0.5) -> InventoryAgreement:
    """One agreement over several ``(extracted, reference)`` inventories (one per SKILL).

    Indices in the result refer to the concatenation of the groups' inventories in order.
    ``pooling`` is one of :data:`POOLING_MODES`; another value raises ``ValueError``.
    """
    if pooling not in POOLING_MODES:
        raise ValueError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLING_MODES)}")
    if pooling == "inventories":
        extracted = [r for group, _ in groups for r in group]
        reference = [r for _, group in groups for r in group]
        return match_inventories(extracted, reference, similarity=similarity, threshold=threshold)
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold {threshold!r} must be in (0, 1]")
    pairs: list[MatchedPair] = []
    offset_e = offset_r = 0
    for extracted, reference in groups:
        one = match_inventories(extracted, reference, similarity=similarity, threshold=threshold)
        pairs += [MatchedPair(p.extracted + offset_e, p.reference + offset_r, p.similarity)
                  for p in one.pairs]
        offset_e, offset_r = offset_e + len(extracted), offset_r + len(reference)
    return _agreement(pairs, offset_e, offset_r, threshold)


def match_inventories(extracted: Sequence[object], reference: Sequence[object], *,
                      similarity: Similarity = jaccard_similarity,
                      threshold: float = 0.5) -> InventoryAgreement:
    """Match two rule inventories by the similarity of their ``condition + action`` text.

    Rules are objects or mappings with ``condition`` and ``action`` (e.g. ``graph.Rule``,
    ``ReferenceRule``) or plain strings. Raises ``ValueError`` if ``similarity`` returns a
    matrix of the wrong shape.
    """
    left = [rule_text(r) for r in extracted]
    right = [rule_text(r) for r in reference]
    matrix = np.asarray(similarity(left, right), dtype=float)
    if matrix.shape != (len(left), len(right)):
        raise ValueError(
            f"similarity returned shape {matrix.shape}, expected {(len(left), len(right))}"
        )
    return match_by_similarity(matrix, threshold)
