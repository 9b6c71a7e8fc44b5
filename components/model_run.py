"""A model job on a page, told honestly: the model's start-up as a step of its own, then a
progress bar that moves with the calls made and the time spent against a measured estimate
(issue #35: "starting the model…" over an empty bar for four minutes, and a bare spinner for
a 325 s judge re-run).

The job runs in a worker thread; this (the script's) thread redraws the bar about twice a
second. The bar never claims more than it knows: calls done out of calls planned, or the
time spent against the estimate, whichever is further, held below 100 % until the job ends;
its text says "about" and where the estimate comes from.

Usage::

    result = run_steps(
        [Step("Starting the model", start_model, about_s=95.0)],
        Step("Judging with cdg", job, about_s=40.0, calls=2, calls_done=lambda: n_done()),
    )
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from components.safe import md
from workbench.llm.speed import describe_duration

TICK_S = 0.5
MAX_SHARE = 0.95  # an estimate is not a finish line: the bar waits there for the job


@dataclass(frozen=True)
class Step:
    """One step of a model job: a label, the work, its estimate (None: unknown), and for a
    step of several model calls how many are planned and how many are done so far."""

    label: str
    work: Callable[[], Any]
    about_s: float | None = None
    calls: int = 0
    calls_done: Callable[[], int] | None = None
    source: str = ""  # where the estimate comes from, e.g. "measured on this machine"


def share(elapsed: float, about_s: float | None, calls: int, done: int) -> float:
    """How far a step is, for the bar: the further of calls done / planned and time spent /
    estimate, kept under :data:`MAX_SHARE` (the step is not over until it returns)."""
    by_calls = done / calls if calls else 0.0
    by_time = elapsed / about_s if about_s else 0.0
    return min(MAX_SHARE, max(by_calls, by_time))


def step_text(step: Step, elapsed: float, done: int) -> str:
    parts = [step.label]
    if step.calls:
        parts.append(f"model call {min(done + 1, step.calls)} of {step.calls}")
    spent = f"{elapsed:.0f} s"
    if step.about_s:
        spent += f" of {describe_duration(step.about_s)}"
        if step.source:
            spent += f" ({step.source})"
        if elapsed > step.about_s * 1.5:
            spent += "; slower than measured, still working"
    parts.append(spent)
    return " · ".join(parts)


def _run_one(step: Step, bar) -> Any:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = step.work()
        except BaseException as exc:  # handed to the script thread, raised there
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"model-step:{step.label}", daemon=True)
    start = time.monotonic()
    worker.start()
    while worker.is_alive():
        elapsed = time.monotonic() - start
        done = step.calls_done() if step.calls_done else 0
        bar.progress(share(elapsed, step.about_s, step.calls, done),
                     text=md(step_text(step, elapsed, done)))
        worker.join(TICK_S)
    if "error" in outcome:
        raise outcome["error"]
    bar.progress(1.0, text=md(f"{step.label} · done in {time.monotonic() - start:.0f} s"))
    return outcome.get("value")


def run_steps(before: Sequence[Step], main: Step) -> Any:
    """Run ``before`` (e.g. the model's start-up) and then ``main``, each with its own bar;
    returns what ``main.work()`` returns. An exception of a step is raised here."""
    for step in before:
        _run_one(step, st.progress(0.0, text=md(step.label)))
    return _run_one(main, st.progress(0.0, text=md(main.label)))
