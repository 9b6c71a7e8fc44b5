"""Evaluate → verdict calibration: a dataset's labelled verdicts (stored case labels and the
reviewers' decisions), their calibration report, and saving its threshold as the dataset's
next version. Page-private: it reads and writes the store."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.calibration_view import show_calibration
from components.errors import show_error
from components.safe import md
from store.labelled import labelled_traces
from store.review import decisions_for
from store.thresholds import save_threshold, scope_name
from workbench.decision import (
    BUILTIN_VERSION,
    DecisionSetting,
    calibration_report,
    score_aurocs,
    scored_traces,
)
from workbench.errors import WorkbenchError

FLASH = "ev_cal_flash"
MIN_CASES = 10


@st.cache_data(show_spinner="Calibrating…", max_entries=16)
def _report(url: str, dataset: str, runs: tuple[str, ...], version: tuple) -> dict | None:
    from store.db import make_engine

    traces, truth = labelled_traces(make_engine(url), dataset, runs or None)
    scored, bare = scored_traces(traces, truth)
    if len(scored) < MIN_CASES or len({s.violation for s in scored}) < 2:
        return {"too_few": len(scored)}
    modes = sorted({t.judge_mode for t in traces if t.id in truth})
    strategies = sorted({t.strategy for t in traces if t.id in truth})
    return calibration_report(scored, bare, judge_mode=",".join(modes), strategy=",".join(strategies))


@st.cache_data(show_spinner=False, max_entries=16)
def _aurocs(url: str, dataset: str, version: tuple, setting_version: int | None,
            _saved) -> dict[str, tuple[float, int]]:
    """One AUROC per score on the dataset's labelled cases, named (``score_aurocs``)."""
    from store.db import make_engine

    traces, truth = labelled_traces(make_engine(url), dataset)
    return score_aurocs(traces, truth, _saved[1] if _saved else None)


def _save(eng: Engine, dataset: str, report: dict, base: int | None) -> None:
    try:
        version = save_threshold(eng, scope_name("dataset", dataset),
                                 DecisionSetting.from_dict(report["setting"]), base_version=base,
                                 actor=identity.actor(), note="saved on the Evaluate page")
    except WorkbenchError as exc:
        queue_nav.leave_flash(FLASH, "error", str(exc))
        return
    queue_nav.leave_flash(FLASH, "success", f"Saved as version {version} of {dataset}'s threshold: "
                          "Review, metrics and exports read probabilities with it now.")


def calibration_section(eng: Engine, datasets: list[str], versions) -> None:
    from pages._thresholds import dataset_setting

    st.subheader("Verdict calibration")
    st.caption("How far the judge's violation probability can be trusted, from the dataset's "
               "labelled cases (gold labels, and reviewers' confirmed or overturned verdicts).")
    if not datasets:
        return
    dataset = st.selectbox("Dataset", datasets, key="ev_cal_dataset")
    try:
        stamp = (versions(eng, dataset), len(decisions_for(eng, dataset)))
        report = _report(str(eng.url), dataset, (), stamp)
        saved = dataset_setting(eng, dataset)
        aurocs = _aurocs(str(eng.url), dataset, stamp, saved[0] if saved else None, saved)
    except (WorkbenchError, ValueError) as exc:
        show_error(exc)
        return
    if report is None or "too_few" in report:
        n = 0 if report is None else report["too_few"]
        st.info(md(f"{n} labelled verdicts with a probability in {dataset}: calibrating needs at "
                   f"least {MIN_CASES}, with both answers. Audit labelled cases with a judge "
                   "(every verdict carries a probability) or review more verdicts."))
        return
    queue_nav.show_flash(FLASH)
    refusal = ("" if identity.allowed("decide reviews") else
               "Saving a threshold decides how verdicts are read: it needs an analyst, reviewer "
               "or admin (sign in on the sidebar).")
    # The built-in scorer (version 0) is no saved version: a first save builds on none.
    base = saved[0] if saved and saved[0] != BUILTIN_VERSION else None
    show_calibration(report, key=f"ev_cal_{dataset}", aurocs=aurocs,
                     saved=(saved[0], saved[1].threshold) if saved else None,
                     on_save=lambda: _save(eng, dataset, report, base),
                     save_refusal=refusal or "")
