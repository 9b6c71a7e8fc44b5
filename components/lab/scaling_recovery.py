"""Distillation Recovery (first paper, Eq. 6): from the judges' own evaluations, or from F1 typed in."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components.errors import show_error
from components.safe import md
from workbench.errors import WorkbenchError
from workbench.inputs import decode_text, read_json
from workbench.scaling import recovery_rows
from workbench.scaling.recovery_bootstrap import recovery_intervals
from workbench.scaling.recovery_runs import recovery_from_runs, run_f1, run_f1_text

_JUDGES = (
    ("base", "The student before distillation"),
    ("teacher", "The teacher judge"),
    ("uniform", "The student trained on uniform.jsonl"),
    ("headroom", "The student trained on headroom.jsonl"),
)
# The real OPD runs 1.5B -> 0.5B (issue 31): each judge's `workbench metrics --json` on the
# same 30 held-out CompliBench airline cases.
_BUNDLED_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "scaling" / "two_sizes" / "opd"
BUNDLED = "Real distillation 1.5B → 0.5B, CompliBench airlines"
UPLOAD, TYPED = "Upload evaluations", "Type in F1"

_COLUMNS = {
    "model": ("Student", "Which training set the distilled student learned from"),
    "f1": ("Violation-F1", "F1 of the 'violation' verdicts on the held-out cases"),
    "recovery": ("Recovery", "Share of the teacher's F1 gain over the student that distillation "
                 "recovered: 0 = no better than before, 1 = as good as the teacher"),
    "recovery_ci": ("Recovery, 95 % interval", "Range of Recovery over bootstrap draws of whole "
                    "conversations: how far the figure could move on other cases like these"),
    "acc": ("Accuracy", "Share of held-out cases the student judged right"),
    "auroc": ("AUROC", "How well the student's violation probability ranks violations above "
              "compliant replies: 0.5 is chance, 1 is perfect"),
    "flagged": ("Share flagged", "Share of judged cases the student called a violation"),
    "labelled": ("Cases", "Labelled held-out cases the figures were measured on"),
}


def recovery_panel() -> None:
    """Recovery of each distilled student, read from evaluations (bundled or uploaded) or
    computed from F1 values typed in."""
    st.subheader("Distillation recovery")
    st.caption(
        "Recovery = (F1(distilled) − F1(base)) / (F1(teacher) − F1(base)): the share of the "
        "teacher's gain a distilled student recovers (1 = as good as the teacher). Each judge "
        "is evaluated on the same held-out cases (`workbench audit --out` traces or "
        "`workbench metrics --json`); the training sets come from `workbench scaling select`."
    )
    source = st.radio("Figures from", (BUNDLED, UPLOAD, TYPED), key="scaling_recovery_source",
                      horizontal=True)
    if source == TYPED:
        _typed()
        return
    try:
        runs = _bundled() if source == BUNDLED else _uploaded()
        if runs is None:
            return
        rows = recovery_from_runs(runs["base"], runs["teacher"],
                                  [runs[n] for n in ("uniform", "headroom") if n in runs])
        intervals = _intervals(source, runs)
    except (WorkbenchError, ValueError) as exc:
        show_error(exc, "Recovery cannot be read from these evaluations:")
        return
    if intervals:
        rows = [{**row, "recovery_ci": _span(intervals["recovery"].get(row["model"]))} for row in rows]
    st.caption(md(f"Before: F1 {runs['base'].f1:.3f}, accuracy {_fmt(runs['base'].acc)}, "
                  f"AUROC {_fmt(runs['base'].auroc)}. Teacher: F1 {runs['teacher'].f1:.3f}, "
                  f"accuracy {_fmt(runs['teacher'].acc)}, AUROC {_fmt(runs['teacher'].auroc)}."))
    _table(rows)
    if intervals:
        st.caption(f"95 % intervals: {intervals['draws']} bootstrap draws of whole conversations "
                   f"({intervals['conversations']} conversations, {intervals['cases']} cases).")
    elif source == UPLOAD:
        st.caption("Upload `workbench audit --out` traces for every judge to see 95 % intervals "
                   "(a metrics JSON has no per-case verdicts to resample).")
    for row in rows:
        if row["caution"]:
            st.warning(md(f"Student of the {_SETS.get(row['model'], row['model'])}: {row['caution']}."))


def _intervals(source: str, runs: dict) -> dict | None:
    """Conversation-bootstrap intervals: stored with the bundled runs; computed for uploads
    when every judge came as traces (a metrics JSON has no per-case verdicts)."""
    if source == BUNDLED:
        return read_json(_BUNDLED_DIR / "bootstrap.json")
    if any(run.verdicts is None for run in runs.values()):
        return None
    return recovery_intervals({name: list(run.verdicts) for name, run in runs.items()}, draws=1000)


def _span(interval: list[float] | None) -> str:
    return "" if interval is None else f"{interval[0]:.2f} to {interval[1]:.2f}"


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _bundled():
    return {name: run_f1(_BUNDLED_DIR / f"eval_{name}.json", name) for name, _ in _JUDGES}


def _uploaded():
    columns = st.columns(len(_JUDGES))
    files = {name: column.file_uploader(label, type=["jsonl", "json"], key=f"scaling_eval_{name}")
             for column, (name, label) in zip(columns, _JUDGES, strict=True)}
    given = {name: f for name, f in files.items() if f is not None}
    if "base" not in given or "teacher" not in given or not {"uniform", "headroom"} & given.keys():
        st.caption("Upload the base and teacher evaluations and at least one distilled "
                   "student's to see Recovery.")
        return None
    return {name: run_f1_text(decode_text(f.getvalue(), f.name)[0], f.name, name)
            for name, f in given.items()}


def _typed() -> None:
    columns = st.columns(len(_JUDGES))
    values = {
        name: column.number_input(f"F1: {label[0].lower()}{label[1:]}", 0.0, 1.0, value=None,
                                  step=0.01, format="%.3f", key=f"scaling_f1_{name}")
        for column, (name, label) in zip(columns, _JUDGES, strict=True)
    }
    distilled = {n: values[n] for n in ("uniform", "headroom") if values[n] is not None}
    if values["base"] is None or values["teacher"] is None or not distilled:
        st.caption("Give the base and teacher F1 and at least one distilled F1 to see Recovery.")
        return
    try:
        rows = recovery_rows(values["base"], values["teacher"], distilled)
    except ValueError as exc:
        st.warning(str(exc))  # our own message about the numbers typed in, no user text
        return
    _table(rows)


_SETS = {"uniform": "uniform set", "headroom": "headroom-selected set"}


def _table(rows: list[dict]) -> None:
    frame = pd.DataFrame(rows).assign(model=lambda f: f["model"].map(lambda m: _SETS.get(m, m)))
    keep = [c for c in _COLUMNS if c in frame.columns and frame[c].notna().any()]
    frame = frame[keep].round(3).rename(columns={c: _COLUMNS[c][0] for c in keep})
    config = {_COLUMNS[c][0]: st.column_config.Column(help=_COLUMNS[c][1]) for c in keep}
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key="scaling_recovery")
