"""Simulated outcome tables for the scaling tests, in the design most of them use."""

from __future__ import annotations

import pandas as pd

from workbench.scaling import simulate_outcomes


def two_datasets(model: str, truth: dict[str, float], sizes: list[float], *, sessions: int,
                 instances: int, seed: int, session_sd: float = 0.0,
                 datasets: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """``simulate_outcomes`` for two datasets (A and B unless named): ``sessions`` sessions per
    dataset of ``instances`` instances each, every instance judged at every size."""
    return simulate_outcomes(model, truth, datasets=list(datasets), sizes=sizes,
                             sessions_per_dataset=sessions, instances_per_session=instances,
                             session_sd=session_sd, seed=seed)
