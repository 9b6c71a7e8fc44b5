"""Simulated outcomes from known parameters: for recovery tests, the coverage study and the
demo fixture. Complexities are integers (rule counts), drawn per instance, shared by judges."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from workbench.scaling.laws import Design, get_law

# Known parameters of each family (datasets A and B) and judge sizes, shared by the recovery
# tests and the coverage benchmark so both study the same truth.
RECOVERY_TRUTH: dict[str, dict[str, float]] = {
    "full": {
        "gamma_A": -0.5,
        "gamma_B": 0.3,
        "eta": 0.6,
        "beta": 3.0,
        "rho": 0.5,
        "alpha": 0.7,
        "lambda": 0.5,
    },
    "nested": {"gamma_A": -0.5, "gamma_B": 0.3, "eta": 0.6, "beta": 2.5, "rho": 0.4, "alpha": 0.8},
    "additive": {"gamma_A": -0.3, "gamma_B": 0.4, "a": 0.5, "b": -0.8},
}
RECOVERY_SIZES: list[float] = [0.5, 1.0, 2.0, 4.0, 9.0, 27.0, 70.0]


def simulate_outcomes(
    model: str,
    params: dict[str, float],
    *,
    datasets: list[str],
    sizes: list[float],
    sessions_per_dataset: int,
    instances_per_session: int,
    c_median: float = 10.0,
    session_sd: float = 0.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Draw an outcomes table in which every judge scores every instance.

    ``params`` uses the output names (``gamma_<dataset>``, ``eta``, ...). Complexity is the
    rounded draw of a log-normal with median ``c_median``; ``Ct`` is taken against
    ``c_median`` (the population median), so ``params`` are the population-level truth.
    ``session_sd`` adds a shared per-session logit shift, which makes outcomes of a session
    correlated (what the session bootstrap is for).
    """
    family = get_law(model)
    rng = np.random.default_rng(seed)
    theta = np.array([params[name] for name in family.param_names(datasets)], dtype=float)
    frames = []
    for code, dataset in enumerate(datasets):
        for s in range(sessions_per_dataset):
            shift = rng.normal(0.0, session_sd) if session_sd > 0 else 0.0
            comp = np.maximum(1.0, np.round(c_median * rng.lognormal(0.0, 0.6, instances_per_session)))
            n_inst = comp.size
            n = np.repeat(np.asarray(sizes, dtype=float), n_inst)
            c = np.tile(comp, len(sizes))
            design = Design(np.full(n.size, code), n, c / c_median)
            p = expit(family.logit(theta, design, len(datasets)) + shift)
            session = f"{dataset}-s{s:03d}"
            frames.append(
                pd.DataFrame(
                    {
                        "instance": [f"{session}-i{i:02d}" for i in range(n_inst)] * len(sizes),
                        "dataset": dataset,
                        "session": session,
                        "params_b": n,
                        "complexity": c,
                        "correct": (rng.random(n.size) < p).astype(int),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def true_probability(
    model: str,
    params: dict[str, float],
    datasets: list[str],
    dataset,
    params_b,
    complexity,
    c_median: float = 10.0,
) -> np.ndarray:
    """P(correct) under the true parameters (population ``Ct = C / c_median``)."""
    family = get_law(model)
    theta = np.array([params[name] for name in family.param_names(datasets)], dtype=float)
    ds, n, c = np.broadcast_arrays(
        np.asarray(dataset, dtype=object), np.asarray(params_b, float), np.asarray(complexity, float)
    )
    codes = np.array([datasets.index(d) for d in ds.ravel()], dtype=int)
    design = Design(codes, n.ravel(), c.ravel() / c_median)
    return expit(family.logit(theta, design, len(datasets))).reshape(ds.shape)
