"""Violation scores read from the judge's activations, learned from labelled cases.

Two scorers over one layer's last-prompt-token hidden states (``features``), and their
combination with the judge's own probability:

* **whitening** (Rachmil et al., AAAI 2026): fit the mean and covariance of *compliant*
  cases only and score a case by its distance in the whitened space (Mahalanobis norm). The
  covariance of 1,536 dimensions from a few dozen cases is singular, so it is estimated in
  the span of the compliant cases' top principal directions (at most ``n - 1``) with
  Ledoit–Wolf shrinkage; the residual outside that span is added as a scaled squared norm.
* **probe**: an L2-regularised logistic regression on standardised features, fitted on both
  answers.
* **combined**: a two-input logistic regression on the probe's (or whitening's) score and the
  log-odds of the judge's verbal probability, fitted on scores the first stage gave to cases
  it was not fitted on (inner cross-validation), so the second stage does not learn from
  over-confident in-sample scores.

Every scorer is a plain dataclass of numpy arrays: ``to_dict`` / ``from_dict`` round-trip it
through JSON, so it is saved with the decision setting and applied to other traces without
a model. Larger score = more likely a violation, for every kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("whitening", "probe", "combined")
_EPS = 1e-4


def logit(p: float) -> float:
    p = min(1.0 - _EPS, max(_EPS, float(p)))
    return math.log(p / (1.0 - p))


def _arr(x: Any) -> list:
    return np.asarray(x, dtype=float).round(7).tolist()


@dataclass
class Whitening:
    layer: int
    mean: np.ndarray  # [d]
    basis: np.ndarray  # [k, d] orthonormal principal directions of the compliant cases
    inv_var: np.ndarray  # [k] 1 / shrunk variance along each direction
    residual_scale: float  # 1 / mean residual variance per dimension outside the basis

    def score(self, x: np.ndarray) -> np.ndarray:
        centred = np.atleast_2d(x) - self.mean
        proj = centred @ self.basis.T
        inside = (proj ** 2 * self.inv_var).sum(axis=1)
        residual = (centred ** 2).sum(axis=1) - (proj ** 2).sum(axis=1)
        return np.sqrt(inside + np.maximum(residual, 0.0) * self.residual_scale)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "whitening", "layer": self.layer, "mean": _arr(self.mean),
                "basis": _arr(self.basis), "inv_var": _arr(self.inv_var),
                "residual_scale": float(self.residual_scale)}


def fit_whitening(x: np.ndarray, violation: np.ndarray, layer: int,
                  components: int = 32) -> Whitening:
    """Fit on the compliant rows of ``x`` only (the paper's recipe needs no violations)."""
    ok = np.asarray(x)[~np.asarray(violation, dtype=bool)]
    if len(ok) < 3:
        raise ValueError("whitening needs at least 3 compliant cases")
    mean = ok.mean(axis=0)
    centred = ok - mean
    k = max(1, min(components, len(ok) - 1))
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    var = sing[:k] ** 2 / max(1, len(ok) - 1)
    total = (centred ** 2).sum() / max(1, len(ok) - 1)
    d = ok.shape[1]
    residual = max(total - var.sum(), 1e-6) / max(1, d - k)
    # Ledoit–Wolf-style shrinkage of the k variances towards their mean.
    shrink = 0.2
    var = (1 - shrink) * var + shrink * var.mean()
    return Whitening(layer, mean, vt[:k], 1.0 / np.maximum(var, 1e-9), 1.0 / residual)


@dataclass
class Probe:
    layer: int
    centre: np.ndarray  # [d]
    scale: np.ndarray  # [d]
    weights: np.ndarray  # [d]
    bias: float
    c: float  # inverse regularisation strength it was fitted with

    def score(self, x: np.ndarray) -> np.ndarray:
        z = (np.atleast_2d(x) - self.centre) / self.scale
        return z @ self.weights + self.bias

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "probe", "layer": self.layer, "centre": _arr(self.centre),
                "scale": _arr(self.scale), "weights": _arr(self.weights),
                "bias": float(self.bias), "c": self.c}


def fit_probe(x: np.ndarray, violation: np.ndarray, layer: int, c: float,
              weight: np.ndarray | None = None) -> Probe:
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(x, dtype=float)
    y = np.asarray(violation, dtype=int)
    if len(set(y.tolist())) < 2:
        raise ValueError("a probe needs labelled cases of both answers")
    centre = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    z = (x - centre) / scale
    model = LogisticRegression(C=c, max_iter=2000).fit(z, y, sample_weight=weight)
    return Probe(layer, centre, scale, model.coef_[0].copy(), float(model.intercept_[0]), c)


@dataclass
class Combined:
    """``w_score * first.score(x) + w_verbal * logit(p) + bias``."""

    first: Whitening | Probe
    w_score: float
    w_verbal: float
    bias: float

    @property
    def layer(self) -> int:
        return self.first.layer

    def score(self, x: np.ndarray, verbal: Sequence[float | None]) -> np.ndarray:
        v = np.array([logit(p) if p is not None else 0.0 for p in verbal])
        return self.w_score * self.first.score(x) + self.w_verbal * v + self.bias

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "combined", "first": self.first.to_dict(), "w_score": self.w_score,
                "w_verbal": self.w_verbal, "bias": self.bias}


Scorer = Whitening | Probe | Combined


def scorer_from_dict(data: dict[str, Any]) -> Scorer:
    """The scorer saved by ``to_dict`` (ValueError naming what is wrong)."""
    kind = data.get("kind")
    try:
        if kind == "whitening":
            return Whitening(int(data["layer"]), np.array(data["mean"]), np.array(data["basis"]),
                             np.array(data["inv_var"]), float(data["residual_scale"]))
        if kind == "probe":
            return Probe(int(data["layer"]), np.array(data["centre"]), np.array(data["scale"]),
                         np.array(data["weights"]), float(data["bias"]), float(data["c"]))
        if kind == "combined":
            first = scorer_from_dict(data["first"])
            if isinstance(first, Combined):
                raise ValueError("a combined scorer's first stage cannot be combined")
            return Combined(first, float(data["w_score"]), float(data["w_verbal"]),
                            float(data["bias"]))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a saved {kind} scorer is missing {exc}") from None
    raise ValueError(f"unknown scorer kind {kind!r}; one of {', '.join(KINDS)}")


def apply(scorer: Scorer, x: np.ndarray, verbal: Sequence[float | None] | None = None) -> np.ndarray:
    """Scores of the rows of ``x`` (the scorer's layer), larger = more likely a violation."""
    if isinstance(scorer, Combined):
        if verbal is None:
            raise ValueError("the combined scorer needs the judge's probability of each case")
        return scorer.score(x, verbal)
    return scorer.score(x)
