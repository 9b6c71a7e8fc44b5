"""Maximum-likelihood fitting: differential evolution, then L-BFGS-B refinement.

The Bernoulli likelihood only depends on the covariate pattern ``(dataset, N, C)``, so rows
are collapsed into patterns with success/failure weights. The session bootstrap then only
changes those weights (a session drawn twice counts twice) instead of copying rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import differential_evolution, minimize
from scipy.special import expit

from workbench.errors import WorkbenchError
from workbench.scaling.laws import Design, LawFamily, get_law


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the block with one BLAS thread when ``threadpoolctl`` is installed.

    scipy's L-BFGS-B makes many tiny LAPACK calls; on a loaded machine OpenBLAS waking its
    worker threads for each made fits up to ~10x slower. Without threadpoolctl this is a no-op.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional speed-up only
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


class FitError(WorkbenchError, RuntimeError):
    """A model could not be fitted to the data given (too little or degenerate data)."""


@dataclass(frozen=True)
class FitOptions:
    """Optimiser settings. ``global_search=False`` skips differential evolution and refines
    from ``start`` only (what bootstrap replicates do, starting at the full-data estimate)."""

    maxiter: int = 300
    popsize: int = 15
    tol: float = 1e-6
    seed: int = 2027
    global_search: bool = True


@dataclass
class ScalingFit:
    """A fitted model: parameters, the complexity scale it used, and its log-likelihood."""

    model: str
    datasets: list[str]
    theta: np.ndarray
    c_median: float
    loglik: float
    n_obs: float
    at_bounds: list[str] = field(default_factory=list)

    @property
    def family(self) -> LawFamily:
        return get_law(self.model)

    @property
    def param_names(self) -> list[str]:
        return self.family.param_names(self.datasets)

    @property
    def params(self) -> dict[str, float]:
        return {k: float(v) for k, v in zip(self.param_names, self.theta, strict=True)}

    @property
    def n_params(self) -> int:
        return len(self.theta)

    def predict(self, dataset, params_b, complexity) -> np.ndarray:
        """P(correct) for broadcastable arrays of dataset names, sizes (B) and complexities.

        Raises ``ValueError`` for a dataset the model was not fitted on (no gamma for it).
        """
        ds, n, c = np.broadcast_arrays(
            np.asarray(dataset, dtype=object),
            np.asarray(params_b, dtype=float),
            np.asarray(complexity, dtype=float),
        )
        index = {d: i for i, d in enumerate(self.datasets)}
        unknown = sorted({str(d) for d in ds.ravel() if d not in index})
        if unknown:
            raise ValueError(
                f"the {self.model} fit has no intercept for dataset(s) {unknown}; it was fitted "
                f"on {self.datasets}. Fit on data that includes them."
            )
        codes = np.array([index[d] for d in ds.ravel()], dtype=int)
        design = Design(codes, n.ravel(), c.ravel() / self.c_median)
        z = self.family.logit(self.theta, design, len(self.datasets))
        return expit(z).reshape(ds.shape)


def softplus(z: np.ndarray) -> np.ndarray:
    """log(1 + exp(z)) without overflow; faster than ``np.logaddexp(0, z)`` on big arrays."""
    out = np.abs(z)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(z, 0)
    return out


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The median of ``values`` repeated ``weights`` times (``np.median`` of the expansion
    for integer weights: the mean of the two middle elements when the total is even)."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    keep = w > 0
    v, w = v[keep], w[keep]
    cum = np.cumsum(w)
    total = cum[-1]
    lower = v[np.searchsorted(cum, total / 2.0, side="left")]
    upper = v[np.searchsorted(cum, total / 2.0, side="right")] if total % 2 == 0 else lower
    return float((lower + upper) / 2.0)


class Problem:
    """Rows of an outcomes table collapsed to covariate patterns, ready to fit repeatedly.

    ``datasets`` fixes the gamma order (default: sorted datasets present). Row weights (e.g.
    bootstrap session multiplicities) are applied per fit without rebuilding the patterns.
    """

    def __init__(self, outcomes: pd.DataFrame, datasets: list[str] | None = None):
        if outcomes.empty:
            raise FitError("no outcome rows to fit; the training data is empty")
        self.datasets = sorted(outcomes["dataset"].unique()) if datasets is None else datasets
        index = {d: i for i, d in enumerate(self.datasets)}
        codes = outcomes["dataset"].map(index)
        if codes.isna().any():
            raise FitError("the outcomes contain datasets outside the requested dataset list")
        keys = pd.DataFrame(
            {
                "d": codes.to_numpy(dtype=int),
                "n": outcomes["params_b"].to_numpy(dtype=float),
                "c": outcomes["complexity"].to_numpy(dtype=float),
            }
        )
        self.row_pattern = keys.groupby(["d", "n", "c"], sort=True).ngroup().to_numpy()
        patterns = keys.groupby(["d", "n", "c"], sort=True).size().reset_index()
        self.code = patterns["d"].to_numpy(dtype=int)
        self.n = patterns["n"].to_numpy(dtype=float)
        self.c = patterns["c"].to_numpy(dtype=float)
        self.row_correct = outcomes["correct"].to_numpy(dtype=float)
        self.n_rows = len(outcomes)

    def fit(
        self,
        model: str,
        options: FitOptions | None = None,
        *,
        row_weights: np.ndarray | None = None,
        start: np.ndarray | None = None,
    ) -> ScalingFit:
        """Fit ``model`` by maximum (weighted) Bernoulli likelihood; see :class:`FitOptions`."""
        options = options or FitOptions()
        family = get_law(model)
        nd = len(self.datasets)
        w = np.ones(self.n_rows) if row_weights is None else np.asarray(row_weights, float)
        npat = self.code.size
        w1 = np.bincount(self.row_pattern, weights=w * self.row_correct, minlength=npat)
        w0 = np.bincount(self.row_pattern, weights=w * (1 - self.row_correct), minlength=npat)
        used = (w1 + w0) > 0
        if family.uses_size and len(np.unique(self.n[used])) < 2:
            raise FitError(
                "the data has fewer than two judge sizes; the scale terms cannot be estimated. "
                "Add outcomes from judges of at least two sizes, or fit the size-free "
                "'intercept' and 'complexity' models (what `workbench scaling fit` does with "
                "one size)."
            )
        missing = [self.datasets[i] for i in range(nd) if not used[self.code == i].any()]
        if missing:
            raise FitError(
                f"no training rows for dataset(s) {missing}; their intercepts cannot be "
                "estimated. Give every dataset at least two sessions."
            )
        c_median = weighted_median(self.c, w1 + w0)
        if c_median <= 0:
            raise FitError(
                "the median complexity of the training rows is 0, so C / median is undefined; "
                "check the complexity column (most instances should have C > 0)"
            )
        design = Design(self.code[used], self.n[used], self.c[used] / c_median)
        w1, w0 = w1[used], w0[used]
        wt = w1 + w0
        bounds = family.bounds(nd)

        def population_nll(pop: np.ndarray) -> np.ndarray:
            z = family.logit(pop, design, nd)
            # w1*softplus(-z) + w0*softplus(z) == (w0 + w1)*softplus(z) - w1*z. einsum, not
            # matmul: OpenBLAS threads waking for these products slowed fits on busy machines.
            return np.einsum("i,ij->j", wt, softplus(z)) - np.einsum("i,ij->j", w1, z)

        def nll_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
            z = family.logit(theta, design, nd)
            loss = float(np.sum(wt * softplus(z) - w1 * z))
            residual = wt * expit(z) - w1
            return loss, np.einsum("ij,i->j", family.jacobian(theta, design, nd), residual)

        candidates: list[np.ndarray] = []
        if start is not None:
            candidates.append(np.clip(np.asarray(start, float), *np.array(bounds).T))
        if options.global_search or not candidates:
            de = differential_evolution(
                population_nll,
                bounds,
                maxiter=options.maxiter,
                popsize=options.popsize,
                tol=options.tol,
                seed=options.seed,
                polish=False,
                vectorized=True,
                updating="deferred",
            )
            candidates.append(np.asarray(de.x, float))
        best: tuple[float, np.ndarray] | None = None
        for x0 in candidates:
            res = minimize(
                nll_and_grad,
                x0,
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options={"maxiter": 5000, "ftol": 1e-13, "gtol": 1e-9},
            )
            value = float(res.fun)
            if np.isfinite(value) and (best is None or value < best[0]):
                best = (value, np.asarray(res.x, float))
        if best is None:
            raise FitError(f"the {model} fit did not converge to a finite likelihood")
        nll, theta = best
        lo, hi = np.array(bounds).T
        near = 1e-6 * (hi - lo)
        names = family.param_names(self.datasets)
        at_bounds = [
            n for n, t, a, b, e in zip(names, theta, lo, hi, near, strict=True) if t - a <= e or b - t <= e
        ]
        return ScalingFit(
            model=model,
            datasets=list(self.datasets),
            theta=theta,
            c_median=c_median,
            loglik=-nll,
            n_obs=float(w.sum()),
            at_bounds=at_bounds,
        )


def fit_model(
    outcomes: pd.DataFrame,
    model: str,
    options: FitOptions | None = None,
    *,
    datasets: list[str] | None = None,
) -> ScalingFit:
    """Fit one law family (``workbench.scaling.laws``) to an outcomes table (see
    :mod:`workbench.scaling.outcomes`)."""
    with single_threaded_blas():
        return Problem(outcomes, datasets).fit(model, options)


def log_loss(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-row Bernoulli log loss, with probabilities clipped away from 0 and 1."""
    p = np.clip(np.asarray(p, float), 1e-12, 1 - 1e-12)
    y = np.asarray(y, float)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))
