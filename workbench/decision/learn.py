"""Choosing and fitting a scorer from labelled cases, every choice by cross-validation grouped
by conversation, every reported figure out of fold.

:func:`choose` tries each scorer kind at each captured layer (and, for the probe, each
regularisation strength) and keeps the one whose out-of-fold AUROC is best on the cases it is
given; :func:`nested_scores` gives every case a score from a scorer that was chosen *and*
fitted without its conversation (the choice is made again inside each outer fold), which is
what the figures of a policy are computed from. :func:`fit_chosen` fits the chosen scorer on
all the cases, for cases to come.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.decision.scorers import (
    Combined,
    Scorer,
    apply,
    fit_probe,
    fit_whitening,
    logit,
)

PROBE_CS = (0.001, 0.01, 0.1)
DEFAULT_FOLDS = 5
MIN_PER_ANSWER = 4


@dataclass
class Labelled:
    """Labelled cases with their features: ``x[i]`` is ``[layers, hidden]`` of ``ids[i]``."""

    ids: list[str]
    groups: list[str]
    violation: np.ndarray  # bool [n]
    verbal: list[float | None]  # the judge's P(violation), None when unknown
    x: np.ndarray  # [n, layers, hidden]
    layers: tuple[int, ...]

    def take(self, idx: Sequence[int]) -> Labelled:
        idx = list(idx)
        return Labelled([self.ids[i] for i in idx], [self.groups[i] for i in idx],
                        self.violation[idx], [self.verbal[i] for i in idx], self.x[idx],
                        self.layers)

    def at(self, layer: int) -> np.ndarray:
        return self.x[:, self.layers.index(layer), :]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Config:
    kind: str  # whitening | probe | combined
    layer: int
    c: float = 0.0  # the probe's C (probe and combined)

    def label(self) -> str:
        """"probe at layer 20, C=0.1" (the last prompt token), "probe at layer 20, the max
        over the reply, C=0.1" (``layer`` is a feature id: ``features.feature_id``)."""
        from workbench.decision.features import POOLING_WORDS, split_feature

        pooling, layer = split_feature(self.layer)
        how = "" if pooling == "last" else f", {POOLING_WORDS[pooling]}"
        extra = f", C={self.c:g}" if self.kind != "whitening" else ""
        return f"{self.kind} at layer {layer}{how}{extra}"


@dataclass
class Choice:
    config: Config
    auroc: float  # inner out-of-fold AUROC that chose it
    tried: dict[str, float] = field(default_factory=dict)


def grouped_splits(groups: Sequence[str], folds: int, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """(train, test) index lists with no group on both sides; groups dealt to folds in a
    seeded random order (so folds do not follow the input's order)."""
    uniq = sorted(set(groups))
    rng = np.random.default_rng(seed)
    order = [uniq[i] for i in rng.permutation(len(uniq))]
    k = min(folds, len(uniq))
    if k < 2:
        raise ValueError("cross-validation needs cases from at least two conversations")
    fold_of = {g: i % k for i, g in enumerate(order)}
    out = []
    for f in range(k):
        test = [i for i, g in enumerate(groups) if fold_of[g] == f]
        train = [i for i, g in enumerate(groups) if fold_of[g] != f]
        out.append((train, test))
    return out


def auroc(scores: Sequence[float], truth: Sequence[bool]) -> float:
    y = np.asarray(truth, dtype=bool)
    if y.all() or not y.any():
        return float("nan")
    s = np.asarray(scores, dtype=float)
    # rank-based (Mann–Whitney), ties counted half
    from scipy.stats import rankdata

    r = rankdata(s)
    n1 = int(y.sum())
    n0 = len(y) - n1
    return float((r[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _usable(data: Labelled) -> bool:
    v = int(data.violation.sum())
    return v >= MIN_PER_ANSWER and len(data) - v >= MIN_PER_ANSWER


def fit_config(data: Labelled, cfg: Config, folds: int = DEFAULT_FOLDS) -> Scorer:
    from workbench.decision.features import finite_rows

    ok = finite_rows(data.at(cfg.layer))
    if not ok.all():  # a reply pooling of a case whose reply was not found: left out
        data = data.take(np.flatnonzero(ok))
    x = data.at(cfg.layer)
    if cfg.kind == "whitening":
        return fit_whitening(x, data.violation, cfg.layer)
    if cfg.kind == "probe":
        return fit_probe(x, data.violation, cfg.layer, cfg.c)
    if cfg.kind == "combined":
        return _fit_combined(data, cfg, folds)
    raise ValueError(f"unknown scorer kind {cfg.kind!r}")


def _fit_combined(data: Labelled, cfg: Config, folds: int) -> Combined:
    from sklearn.linear_model import LogisticRegression

    first_cfg = Config("probe", cfg.layer, cfg.c)
    inner = np.zeros(len(data))
    for tr, te in grouped_splits(data.groups, min(folds, 4), seed=1):
        part = data.take(tr)
        if not _usable(part):
            inner[te] = 0.0
            continue
        inner[te] = apply(fit_config(part, first_cfg), data.at(cfg.layer)[te])
    verbal = np.array([logit(p) if p is not None else 0.0 for p in data.verbal])
    z = np.column_stack([inner, verbal])
    model = LogisticRegression(C=1.0, max_iter=1000).fit(z, data.violation.astype(int))
    first = fit_config(data, first_cfg)
    return Combined(first, float(model.coef_[0][0]), float(model.coef_[0][1]),
                    float(model.intercept_[0]))


def score_config(scorer: Scorer, data: Labelled) -> np.ndarray:
    """Scores of ``data``'s cases; NaN for a case whose feature is missing."""
    x = data.at(scorer.layer)
    with np.errstate(invalid="ignore"):
        return apply(scorer, np.nan_to_num(x, nan=0.0), data.verbal) + np.where(
            np.isfinite(x).all(axis=1), 0.0, np.nan)


def oof_scores(data: Labelled, cfg: Config, folds: int = DEFAULT_FOLDS, seed: int = 0) -> np.ndarray:
    """Each case scored by ``cfg`` fitted without its conversation."""
    out = np.full(len(data), np.nan)
    for tr, te in grouped_splits(data.groups, folds, seed):
        part = data.take(tr)
        if not _usable(part):
            continue
        out[te] = score_config(fit_config(part, cfg, folds), data.take(te))
    return out


def candidates(layers: Sequence[int], kinds: Sequence[str]) -> list[Config]:
    """The first-stage configurations: whitening and the probe at every layer."""
    out = []
    for layer in layers:
        if "whitening" in kinds:
            out.append(Config("whitening", layer))
        if "probe" in kinds or "combined" in kinds:
            out += [Config("probe", layer, c) for c in PROBE_CS]
    return out


def choose(data: Labelled, kinds: Sequence[str] = ("whitening", "probe", "combined"),
           layers: Sequence[int] | None = None, folds: int = DEFAULT_FOLDS) -> Choice:
    """The configuration with the best out-of-fold AUROC on ``data`` (ties: the earlier
    candidate: whitening before probe, smaller C first, shallower layer first). The
    combination with the judge's probability is tried on the best probe only (its layer and
    C), which keeps the search to one pass over the layers."""
    verbal_known = all(p is not None for p in data.verbal)
    tried: dict[str, float] = {}
    best: tuple[float, Config] | None = None
    best_probe: tuple[float, Config] | None = None

    def consider(cfg: Config) -> float:
        nonlocal best
        s = oof_scores(data, cfg, folds)
        ok = ~np.isnan(s)
        a = auroc(s[ok], data.violation[ok]) if ok.sum() > 2 else float("nan")
        tried[cfg.label()] = a
        if not np.isnan(a) and cfg.kind in kinds and (best is None or a > best[0]):
            best = (a, cfg)
        return a

    for cfg in candidates(layers or data.layers, kinds):
        a = consider(cfg)
        if cfg.kind == "probe" and not np.isnan(a) and (best_probe is None or a > best_probe[0]):
            best_probe = (a, cfg)
    if "combined" in kinds and verbal_known and best_probe is not None:
        consider(Config("combined", best_probe[1].layer, best_probe[1].c))
    if best is None:
        raise ValueError(
            f"too few labelled cases to choose a scorer ({int(data.violation.sum())} violations, "
            f"{int((~data.violation).sum())} compliant; at least {MIN_PER_ANSWER} of each in "
            "every training fold)"
        )
    return Choice(best[1], best[0], tried)


def nested_scores(data: Labelled, kinds: Sequence[str] = ("whitening", "probe", "combined"),
                  layers: Sequence[int] | None = None, folds: int = DEFAULT_FOLDS,
                  seed: int = 0) -> tuple[np.ndarray, list[Config]]:
    """Each case scored by a scorer chosen and fitted without its conversation; the configs
    chosen in each outer fold."""
    out = np.full(len(data), np.nan)
    chosen = []
    for tr, te in grouped_splits(data.groups, folds, seed):
        part = data.take(tr)
        if not _usable(part):
            continue
        ch = choose(part, kinds, layers, folds=min(folds, 4))
        chosen.append(ch.config)
        out[te] = score_config(fit_config(part, ch.config), data.take(te))
    return out, chosen


def calibrated_oof(scores: np.ndarray, truth: np.ndarray, groups: Sequence[str],
                   folds: int = DEFAULT_FOLDS, seed: int = 0) -> np.ndarray:
    """Out-of-fold calibrated P(violation) of out-of-fold ``scores``: each fold's monotone
    calibration is fitted on the other folds' scores (nan where a fold could not be fitted)."""
    from workbench.decision._calibration import fit_monotone

    out = np.full(len(scores), np.nan)
    for tr, te in grouped_splits(groups, folds, seed):
        tr = [i for i in tr if not np.isnan(scores[i])]
        cal = fit_monotone(scores[tr], truth[tr])
        if cal is None:
            continue
        out[te] = [cal(s) if not np.isnan(s) else np.nan for s in scores[te]]
    return out


def learning_curve(data: Labelled, sizes: Sequence[int], kinds: Sequence[str] = ("probe",),
                   layer: int | None = None, repeats: int = 5, seed: int = 0,
                   layers: Sequence[int] | None = None) -> list[dict]:
    """AUROC on held-out conversations of a scorer fitted on ``n`` labelled cases, for each
    ``n`` in ``sizes``: the conversations are split in two halves (``repeats`` times); the
    scorer is fitted on ``n`` cases drawn from one half (whole conversations, balanced as
    drawn) and scored on the other. The layer and C are chosen inside each draw (among
    ``layers``, default all), or fixed with ``layer`` (the curve then shows how many labels a
    policy needs once the recipe is set)."""
    rng = np.random.default_rng(seed)
    uniq = sorted(set(data.groups))
    rows = []
    for n in sizes:
        values = []
        for _ in range(repeats):
            perm = [uniq[i] for i in rng.permutation(len(uniq))]
            half = set(perm[: len(perm) // 2])
            train_pool = [i for i, g in enumerate(data.groups) if g in half]
            test = [i for i, g in enumerate(data.groups) if g not in half]
            if n > len(train_pool):
                continue
            pick = list(rng.permutation(train_pool)[:n])
            part = data.take(pick)
            if not _usable(part):
                continue
            if layer is None:
                try:
                    cfg = choose(part, kinds, layers=layers,
                                 folds=min(4, len(set(part.groups)))).config
                except ValueError:  # a draw too lopsided to cross-validate: not counted
                    continue
            else:
                cfg = Config(kinds[0], layer, PROBE_CS[1])
            s = score_config(fit_config(part, cfg), data.take(test))
            values.append(auroc(s, data.violation[test]))
        if values:
            rows.append({"labelled": n, "auroc": float(np.mean(values)),
                         "low": float(np.min(values)), "high": float(np.max(values)),
                         "repeats": len(values)})
    return rows
