"""A scorer that decides from the first case, and labels that only ever help.

The **built-in scorer** (``builtin_scorer.json`` beside this module, refitted by
``bench/builtin_scorer.py``) is a linear probe on one feature of the judge's activations,
fitted on every labelled case the project holds, from more than one source (CompliBench
airlines, the demo's and the hand-written cases of the bundled SKILLs). It ships with the
product (a few tens of KB) and decides any dataset whose activations exist before anyone has
labelled a case there (:func:`builtin_setting`).

As a policy's labels arrive, its scorer may **adapt** from the built-in one
(:func:`fit_prior_probe`): a logistic regression in the built-in probe's own standardised
space whose weights are pulled towards the built-in weights, not towards zero — the penalty
``||w - w_prior||^2 / (2C)`` — so a few labels can only move it a little, and many labels as
far as they justify. Which scorer decides is chosen by :func:`adapt`: the adapted one
replaces the built-in only where cross-validation grouped by conversation says it ranks the
policy's own labelled cases better, by a margin a conversation bootstrap supports (``P(better)
>= SURE``); otherwise the built-in stays, recalibrated on the labels (which cannot change how
it ranks). With 20 labels that test almost never passes, so 20 labels do not make a policy's
scorer rank worse than 0 labels did (measured in ``docs/evaluations``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from workbench.decision.scorers import Probe, scorer_from_dict

BUILTIN_FILE = Path(__file__).with_name("builtin_scorer.json")
ADAPT_CS = (0.003, 0.03, 0.3)  # how far labels may pull (C of the penalty around the prior)
SURE = 0.9  # the bootstrap probability that the adapted scorer ranks better, to replace
BOOTSTRAP = 400


@lru_cache(maxsize=1)
def _builtin_data() -> dict[str, Any] | None:
    if not BUILTIN_FILE.is_file():
        return None
    return json.loads(BUILTIN_FILE.read_text(encoding="utf-8"))


def builtin_setting() -> Any:
    """The built-in scorer's decision setting (a fresh copy), or None when the product was
    built without one. Its version is :data:`BUILTIN_VERSION`."""
    from workbench.decision._decide import DecisionSetting

    data = _builtin_data()
    return None if data is None else DecisionSetting.from_dict(data["setting"])


def builtin_about() -> dict[str, Any]:
    """What the built-in scorer was fitted on and how it transfers (for the pages)."""
    data = _builtin_data() or {}
    return dict(data.get("about") or {})


BUILTIN_VERSION = 0  # the built-in setting's version (saved settings count from 1)


def builtin_layer() -> int | None:
    """The feature id the built-in scorer reads (None without a built-in scorer)."""
    data = _builtin_data()
    if data is None:
        return None
    return int(scorer_from_dict(data["setting"]["scorer"]).layer)


def default_setting(saved: tuple[int, Any] | None,
                    holds: Callable[[int], bool]) -> tuple[int, Any] | None:
    """Which setting decides a dataset or a run: the one saved for it, else the built-in
    scorer (version :data:`BUILTIN_VERSION`) where its activations hold the feature it reads
    (``holds(feature_id)``), else None — the judge's words at 0.5. The one place that makes
    the built-in scorer the default; ``store.verdicts.saved_setting`` and the commands that
    read runs from files ask it."""
    if saved is not None:
        return saved
    layer = builtin_layer()
    if layer is None or not holds(layer):
        return None
    return BUILTIN_VERSION, builtin_setting()


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


def fit_prior_probe(x: np.ndarray, violation: Sequence[bool], prior: Probe, c: float,
                    weight: np.ndarray | None = None) -> Probe:
    """A probe on the same feature as ``prior``, in ``prior``'s standardised space, fitted on
    ``x`` (``[cases, hidden]``) with the penalty ``||w - prior.weights||^2 / (2c)`` (the bias is
    free). ``c`` -> 0 gives ``prior``'s weights back (with a refitted bias)."""
    from scipy.optimize import minimize

    z = (np.atleast_2d(np.asarray(x, dtype=float)) - prior.centre) / prior.scale
    y = np.asarray(violation, dtype=float)
    w0 = np.asarray(prior.weights, dtype=float)
    sw = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=float)
    lam = 1.0 / max(float(c), 1e-12)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d, b = theta[:-1], theta[-1]
        m = z @ (w0 + d) + b
        p = _sigmoid(m)
        eps = 1e-12
        nll = -np.sum(sw * (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
        g = sw * (p - y)
        grad = np.concatenate([z.T @ g + lam * d, [g.sum()]])
        return nll + 0.5 * lam * float(d @ d), grad

    start = np.zeros(len(w0) + 1)
    start[-1] = float(prior.bias)
    res = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    d, b = res.x[:-1], float(res.x[-1])
    return Probe(prior.layer, prior.centre.copy(), prior.scale.copy(), w0 + d, b, float(c))


@dataclass
class Adapted:
    """What :func:`adapt` chose for a policy with its labels."""

    scorer: Probe  # the scorer that decides (the built-in probe itself when it stays)
    replaced: bool  # the adapted scorer replaced the built-in one
    c: float | None  # the adaptation's C (None: the built-in stays)
    builtin_auroc: float  # the built-in scorer on the labelled cases (no fitting: out of sample)
    adapted_auroc: float  # the best adapted scorer, out of fold
    p_better: float  # bootstrap share of draws where the adapted one ranks better
    tried: dict[str, float] = field(default_factory=dict)


def adapt(x: np.ndarray, violation: Sequence[bool], groups: Sequence[str], prior: Probe, *,
          folds: int = 5, seed: int = 0) -> Adapted:
    """Choose between the built-in probe and probes adapted from it (see the module doc).
    ``x``: the labelled cases' values of ``prior``'s feature."""
    from workbench.decision.learn import auroc, grouped_splits

    y = np.asarray(violation, dtype=bool)
    base = prior.score(x)
    base_auc = auroc(base, y)
    groups = list(groups)
    tried: dict[str, float] = {"built-in": base_auc}
    best: tuple[float, float, np.ndarray] | None = None
    enough = y.sum() >= 4 and (~y).sum() >= 4 and len(set(groups)) >= 3
    if enough:
        splits = grouped_splits(groups, folds, seed)
        for c in ADAPT_CS:
            oof = np.full(len(y), np.nan)
            for tr, te in splits:
                if len(set(y[tr].tolist())) < 2:
                    continue
                oof[te] = fit_prior_probe(x[tr], y[tr], prior, c).score(x[te])
            ok = ~np.isnan(oof)
            a = auroc(oof[ok], y[ok]) if ok.sum() > 2 else float("nan")
            tried[f"adapted, C={c:g}"] = a
            if not np.isnan(a) and (best is None or a > best[0]):
                best = (a, c, oof)
    if best is None:
        return Adapted(prior, False, None, base_auc, float("nan"), 0.0, tried)
    p = _p_better(best[2], base, y, groups, seed)
    if p >= SURE and best[0] > base_auc:
        return Adapted(fit_prior_probe(x, y, prior, best[1]), True, best[1], base_auc, best[0],
                       p, tried)
    return Adapted(prior, False, None, base_auc, best[0], p, tried)


def _p_better(new: np.ndarray, old: np.ndarray, y: np.ndarray, groups: Sequence[str],
              seed: int) -> float:
    """Share of conversation-bootstrap draws in which ``new`` ranks ``y`` better than ``old``
    (draws with one answer only are skipped)."""
    from workbench.decision.learn import auroc

    rng = np.random.default_rng(seed)
    uniq = sorted(set(groups))
    members = {g: [i for i, x in enumerate(groups) if x == g] for g in uniq}
    ok = ~np.isnan(new)
    wins = draws = 0
    for _ in range(BOOTSTRAP):
        pick = [i for g in rng.choice(uniq, len(uniq)) for i in members[g] if ok[i]]
        yy = y[pick]
        if yy.all() or not yy.any():
            continue
        draws += 1
        wins += auroc(new[pick], yy) > auroc(old[pick], yy)
    return wins / draws if draws else 0.0


def prior_probe(setting: Any) -> Probe | None:
    """The probe of a setting's scorer (the built-in's), or None when it is not a probe."""
    if setting is None or setting.scorer is None:
        return None
    scorer = scorer_from_dict(setting.scorer)
    return scorer if isinstance(scorer, Probe) else None
