"""Model selection and validation: session-grouped K-fold CV with the one-standard-error rule,
and leave-one-scale-out (refit without one judge size, predict it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.scaling.fit import FitError, FitOptions, Problem, log_loss, single_threaded_blas
from workbench.scaling.laws import SIMPLICITY_ORDER, SINGLE_SIZE_ORDER, get_law


def session_keys(outcomes: pd.DataFrame) -> pd.Series:
    """The cluster of each row: its session, qualified by dataset (ids may repeat across
    datasets). All rows of one session, whichever judge produced them, share a key."""
    return outcomes["dataset"].astype(str) + "\x1f" + outcomes["session"].astype(str)


def session_folds(outcomes: pd.DataFrame, k: int = 5, seed: int = 2027) -> np.ndarray:
    """Assign each row a fold in ``0..k-1`` so that no session is in two folds.

    Within each dataset the sessions are shuffled (``seed``), then placed largest first into
    the fold holding the fewest of that dataset's rows, so every dataset is spread over the
    folds and every training fold keeps each dataset. Raises ``ValueError`` when there are
    fewer sessions than folds or a dataset has a single session.
    """
    keys = session_keys(outcomes)
    sessions = pd.DataFrame({"key": keys, "dataset": outcomes["dataset"]})
    sizes = sessions.groupby(["dataset", "key"], sort=True).size().reset_index(name="rows")
    if sizes["key"].nunique() < k:
        raise ValueError(
            f"{k}-fold cross-validation needs at least {k} sessions; the data has "
            f"{sizes['key'].nunique()}. Add sessions or lower the number of folds."
        )
    rng = np.random.default_rng(seed)
    fold_of: dict[str, int] = {}
    total = np.zeros(k)
    for dataset, group in sizes.groupby("dataset", sort=True):
        if len(group) < 2:
            raise ValueError(
                f"dataset {dataset!r} has a single session; cross-validation would leave a "
                "fold without it. Add a session or drop the dataset."
            )
        group = group.iloc[rng.permutation(len(group))]
        group = group.sort_values("rows", ascending=False, kind="stable")
        per_dataset = np.zeros(k)
        for key, rows in zip(group["key"], group["rows"], strict=True):
            fold = int(np.lexsort((np.arange(k), total, per_dataset))[0])
            fold_of[key] = fold
            per_dataset[fold] += rows
            total[fold] += rows
    return keys.map(fold_of).to_numpy(dtype=int)


def clustered_mean_se(values: np.ndarray, clusters: np.ndarray) -> tuple[float, float]:
    """Mean of per-row values and its standard error with rows clustered by session.

    SE = sqrt(G/(G-1) * sum_g (sum_{i in g} (v_i - mean))^2) / n: rows of one session are
    not independent, so the plain SE would be too small.
    """
    values = np.asarray(values, float)
    mean = float(values.mean())
    _, inverse = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inverse, weights=values - mean)
    g = sums.size
    if g < 2:
        return mean, float("nan")
    return mean, float(np.sqrt(g / (g - 1) * np.sum(sums**2)) / values.size)


@dataclass
class CrossValidation:
    """Out-of-fold results of one model."""

    model: str
    cv_logloss: float
    cv_se: float
    fold_logloss: list[float]
    oof_prob: np.ndarray


@single_threaded_blas()
def cross_validate(
    outcomes: pd.DataFrame,
    models: Iterable[str] = SIMPLICITY_ORDER,
    *,
    k: int = 5,
    options: FitOptions | None = None,
    seed: int = 2027,
) -> dict[str, CrossValidation]:
    """Session-grouped K-fold CV: each model is refitted (global search included) on K-1
    folds with its own complexity median, and scored by log loss on the held-out fold."""
    folds = session_folds(outcomes, k, seed)
    clusters = session_keys(outcomes).to_numpy()
    y = outcomes["correct"].to_numpy(float)
    datasets = sorted(outcomes["dataset"].unique())
    results = {}
    for model in models:
        get_law(model)
        oof = np.full(len(outcomes), np.nan)
        for fold in range(k):
            test = folds == fold
            fit = Problem(outcomes[~test], datasets).fit(model, options)
            rows = outcomes[test]
            oof[test] = fit.predict(rows["dataset"], rows["params_b"], rows["complexity"])
        losses = log_loss(oof, y)
        mean, se = clustered_mean_se(losses, clusters)
        fold_losses = [float(losses[folds == f].mean()) for f in range(k)]
        results[model] = CrossValidation(model, mean, se, fold_losses, oof)
    return results


def one_se_select(cv: dict[str, CrossValidation]) -> str:
    """The simplest model whose CV log loss is within one SE of the best model's.

    Simplicity is the parameter count (intercept < complexity; additive < nested < full); the SE is the best
    model's clustered standard error.
    """
    if not cv:
        raise ValueError("no cross-validation results to select from")
    best = min(cv.values(), key=lambda r: r.cv_logloss)
    threshold = best.cv_logloss + (best.cv_se if np.isfinite(best.cv_se) else 0.0)
    for name in SINGLE_SIZE_ORDER + SIMPLICITY_ORDER:
        if name in cv and cv[name].cv_logloss <= threshold:
            return name
    return best.model


def calibration_error(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: row-weighted mean |observed - predicted| over equal-width
    probability bins."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    which = np.minimum((p * bins).astype(int), bins - 1)
    err = 0.0
    for b in np.unique(which):
        sel = which == b
        err += sel.sum() * abs(y[sel].mean() - p[sel].mean())
    return float(err / p.size)


@single_threaded_blas()
def leave_one_scale_out(
    outcomes: pd.DataFrame,
    models: Iterable[str] = SIMPLICITY_ORDER,
    *,
    options: FitOptions | None = None,
) -> list[dict]:
    """For each judge size, refit every model without it and predict its rows.

    Returns one record per (model, size): ``n``, ``log_loss``, ``accuracy`` (threshold 0.5),
    ``mean_predicted``, ``observed`` rate, ``calibration_gap`` (predicted - observed) and
    ``ece``. Empty when there are fewer than three sizes (two must remain to fit scale).
    """
    sizes = sorted(outcomes["params_b"].unique())
    if len(sizes) < 3:
        return []
    datasets = sorted(outcomes["dataset"].unique())
    records = []
    for model in models:
        for size in sizes:
            held = outcomes["params_b"] == size
            train = outcomes[~held]
            usable = [d for d in datasets if d in set(train["dataset"])]
            rows = outcomes[held & outcomes["dataset"].isin(usable)]
            try:
                fit = Problem(train, usable).fit(model, options)
            except FitError:
                continue
            p = fit.predict(rows["dataset"], rows["params_b"], rows["complexity"])
            y = rows["correct"].to_numpy(float)
            records.append(
                {
                    "model": model,
                    "params_b": float(size),
                    "n": int(len(rows)),
                    "log_loss": float(log_loss(p, y).mean()),
                    "accuracy": float(np.mean((p >= 0.5) == (y == 1))),
                    "mean_predicted": float(p.mean()),
                    "observed": float(y.mean()),
                    "calibration_gap": float(p.mean() - y.mean()),
                    "ece": calibration_error(p, y),
                }
            )
    return records
