"""The correctness-vs-scale laws: the families of curves a fit chooses among, and their
linear predictors.

Named ``laws`` (it was ``models``): in this product "model" means the language model (the
judge, the extractor, ``workbench.llm``). What the statistics call a scaling *model* is
here a law family (``LawFamily``, ``LAWS``, ``get_law``); the name a fit keeps of its family
(``ScalingFit.model``, the ``--model`` option, saved reports) is unchanged.

Every family predicts ``logit P`` for one judgment from the dataset, the judge size
``N`` (``params_b``, billions) and the scaled complexity ``Ct = C / median C`` (median taken
over the training rows):

- ``full``:     logit P = gamma_d - eta*Ct + beta*(1 - exp(-rho*N**alpha)) * exp(-lambda*Ct)
- ``nested``:   the same with lambda = 0
- ``additive``: logit P = gamma_d + a*ln N + b*Ct

With outcomes of a single judge size the scale terms cannot be estimated; two size-free
families then answer the question one judge can: does correctness fall with complexity?

- ``intercept``:  logit P = gamma_d
- ``complexity``: logit P = gamma_d + b*Ct
When complexity cannot be identified (C nearly constant, or a complexity coefficient at its
search bound: ``workbench.scaling.identify``), the analysis reports the size-only family:
- ``size``:       logit P = gamma_d + a*ln N

A parameter vector is ``[gamma_<d> for each dataset in sorted order] + family parameters``.
Functions accept a vector of shape ``(P,)`` or a population of shape ``(P, S)`` (what
``scipy.optimize.differential_evolution(vectorized=True)`` passes) and then return ``(n, S)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# Search box for the global optimiser (differential evolution needs a finite box; L-BFGS-B
# refines inside it). The first paper leaves eta and lambda free: here they are boxed for the
# search only, wide on the logit scale (Ct = C / median C is near 1, so eta = 10 moves P from
# 0.5 to 0.99995 across one median of complexity), and a fit that ends on any bound is not
# trusted: ``ScalingFit.at_bounds`` names the parameter and the analysis says in words that
# the data do not pin it, then reports the size-only model (``workbench.scaling.identify``).
# beta, rho, alpha must be > 0; the lower bounds keep them strictly positive. lambda may be
# slightly negative so the data, not the box, decides whether scale helps less on complex cases.
GAMMA_BOUNDS = (-10.0, 10.0)
FAMILY_BOUNDS: dict[str, tuple[float, float]] = {
    "eta": (-10.0, 10.0),
    "beta": (1e-6, 20.0),
    "rho": (1e-6, 20.0),
    "alpha": (1e-3, 3.0),
    "lambda": (-3.0, 10.0),
    "a": (-10.0, 10.0),
    "b": (-10.0, 10.0),
}


@dataclass(frozen=True)
class Design:
    """Covariates of the rows (or collapsed covariate patterns) a model is evaluated on."""

    dataset_code: np.ndarray  # int index into the sorted dataset list
    n: np.ndarray  # judge size in billions, > 0
    ct: np.ndarray  # complexity / training median
    n_unique: np.ndarray = field(init=False, repr=False)
    n_index: np.ndarray = field(init=False, repr=False)
    ct_unique: np.ndarray = field(init=False, repr=False)
    ct_index: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # The scale term depends on N only and the damping on Ct only: evaluating them on the
        # few distinct values and indexing back saves most of the exp() calls in the search.
        n_unique, n_index = np.unique(self.n, return_inverse=True)
        ct_unique, ct_index = np.unique(self.ct, return_inverse=True)
        object.__setattr__(self, "n_unique", n_unique)
        object.__setattr__(self, "n_index", n_index.ravel())
        object.__setattr__(self, "ct_unique", ct_unique)
        object.__setattr__(self, "ct_index", ct_index.ravel())

    @property
    def log_n(self) -> np.ndarray:
        return np.log(self.n)


def _col(v: np.ndarray) -> np.ndarray:
    """A parameter row as a broadcastable column: scalar -> scalar, (S,) -> (1, S)."""
    return v if np.ndim(v) == 0 else v[np.newaxis, :]


def _data(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """A per-row covariate shaped to broadcast against a population ``theta`` (P, S)."""
    return x if theta.ndim == 1 else x[:, np.newaxis]


def _gamma(theta: np.ndarray, design: Design) -> np.ndarray:
    return theta[design.dataset_code]


def _additive_logit(theta: np.ndarray, design: Design, nd: int) -> np.ndarray:
    a, b = theta[nd], theta[nd + 1]
    return _gamma(theta, design) + _data(design.log_n, theta) * _col(a) + _data(design.ct, theta) * _col(b)


def _intercept_logit(theta: np.ndarray, design: Design, nd: int) -> np.ndarray:
    return _gamma(theta, design).copy()


def _size_logit(theta: np.ndarray, design: Design, nd: int) -> np.ndarray:
    return _gamma(theta, design) + _data(design.log_n, theta) * _col(theta[nd])


def _complexity_logit(theta: np.ndarray, design: Design, nd: int) -> np.ndarray:
    return _gamma(theta, design) + _data(design.ct, theta) * _col(theta[nd])


def _saturating(theta: np.ndarray, design: Design, nd: int) -> tuple[np.ndarray, ...]:
    """N**alpha, exp(-rho N**alpha) and 1 - exp(-rho N**alpha), one row per distinct N."""
    rho, alpha = theta[nd + 2], theta[nd + 3]
    n_alpha = np.exp(_data(np.log(design.n_unique), theta) * _col(alpha))
    decay = np.exp(-_col(rho) * n_alpha)
    return n_alpha, decay, 1.0 - decay


def _scale_logit(theta: np.ndarray, design: Design, nd: int, with_lambda: bool) -> np.ndarray:
    eta, beta = theta[nd], theta[nd + 1]
    _, _, gain = _saturating(theta, design, nd)
    # In-place updates: the global search evaluates (rows x population) arrays every step.
    z = _gamma(theta, design)
    z -= _col(eta) * _data(design.ct, theta)
    scale_term = (_col(beta) * gain)[design.n_index]
    if with_lambda:
        damp = np.exp(-_col(theta[nd + 4]) * _data(design.ct_unique, theta))
        scale_term *= damp[design.ct_index]
    z += scale_term
    return z


def _linear_jac(theta: np.ndarray, design: Design, nd: int, *columns: np.ndarray) -> np.ndarray:
    """Jacobian of a predictor linear in its parameters: a 1 at the row's gamma, then ``columns``."""
    jac = np.zeros((design.n.size, nd + len(columns)))
    jac[np.arange(design.n.size), design.dataset_code] = 1.0
    for i, column in enumerate(columns):
        jac[:, nd + i] = column
    return jac


def _scale_jac(theta: np.ndarray, design: Design, nd: int, with_lambda: bool) -> np.ndarray:
    beta, rho = theta[nd + 1], theta[nd + 2]
    n_alpha, decay, gain = (v[design.n_index] for v in _saturating(theta, design, nd))
    damp = np.exp(-theta[nd + 4] * design.ct) if with_lambda else np.ones_like(design.ct)
    # d/d rho [1 - exp(-rho N^a)] = N^a exp(-rho N^a); d/d alpha adds rho ln N.
    d_rho = beta * damp * n_alpha * decay
    columns = [-design.ct, gain * damp, d_rho, d_rho * rho * design.log_n]  # eta, beta, rho, alpha
    if with_lambda:
        columns.append(-beta * gain * damp * design.ct)
    return _linear_jac(theta, design, nd, *columns)


@dataclass(frozen=True)
class LawFamily:
    """One law family: its parameter names (after the gammas) and its linear predictor."""

    name: str
    family_params: tuple[str, ...]
    _logit: Callable[[np.ndarray, Design, int], np.ndarray]
    _jac: Callable[[np.ndarray, Design, int], np.ndarray]
    uses_size: bool = True  # False: the family ignores N and can be fitted to one judge size
    uses_complexity: bool = True  # False: P does not depend on C (the intercept-only family)

    def param_names(self, datasets: list[str]) -> list[str]:
        return [f"gamma_{d}" for d in datasets] + list(self.family_params)

    def bounds(self, n_datasets: int) -> list[tuple[float, float]]:
        return [GAMMA_BOUNDS] * n_datasets + [FAMILY_BOUNDS[p] for p in self.family_params]

    def logit(self, theta: np.ndarray, design: Design, n_datasets: int) -> np.ndarray:
        """Linear predictor: ``(n,)`` for a vector ``theta``, ``(n, S)`` for a population."""
        return self._logit(np.asarray(theta, dtype=float), design, n_datasets)

    def jacobian(self, theta: np.ndarray, design: Design, n_datasets: int) -> np.ndarray:
        """d logit / d theta, shape ``(n, P)``, for a single parameter vector."""
        return self._jac(np.asarray(theta, dtype=float), design, n_datasets)


LAWS: dict[str, LawFamily] = {
    "intercept": LawFamily(
        "intercept", (), _intercept_logit, _linear_jac, uses_size=False, uses_complexity=False
    ),
    "complexity": LawFamily(
        "complexity", ("b",), _complexity_logit, lambda t, d, nd: _linear_jac(t, d, nd, d.ct), uses_size=False
    ),
    "size": LawFamily(
        "size", ("a",), _size_logit, lambda t, d, nd: _linear_jac(t, d, nd, d.log_n),
        uses_complexity=False,
    ),
    "additive": LawFamily(
        "additive", ("a", "b"), _additive_logit, lambda t, d, nd: _linear_jac(t, d, nd, d.log_n, d.ct)
    ),
    "nested": LawFamily(
        "nested",
        ("eta", "beta", "rho", "alpha"),
        lambda t, d, nd: _scale_logit(t, d, nd, with_lambda=False),
        lambda t, d, nd: _scale_jac(t, d, nd, with_lambda=False),
    ),
    "full": LawFamily(
        "full",
        ("eta", "beta", "rho", "alpha", "lambda"),
        lambda t, d, nd: _scale_logit(t, d, nd, with_lambda=True),
        lambda t, d, nd: _scale_jac(t, d, nd, with_lambda=True),
    ),
}

# Simplest first: the one-standard-error rule walks this order (parameter count).
SIMPLICITY_ORDER: tuple[str, ...] = ("additive", "nested", "full")
# The families compared when the outcomes hold a single judge size.
SINGLE_SIZE_ORDER: tuple[str, ...] = ("intercept", "complexity")
# What is reported when complexity cannot be identified: by the number of judge sizes.
SIZE_ONLY, NO_TERMS = "size", "intercept"


def get_law(name: str) -> LawFamily:
    """The family called ``name``; ``ValueError`` naming the valid choices otherwise."""
    try:
        return LAWS[name]
    except KeyError:
        raise ValueError(
            f"unknown scaling model {name!r}; choose one of "
            f"{', '.join(SIMPLICITY_ORDER + SINGLE_SIZE_ORDER + (SIZE_ONLY,))}"
        ) from None
