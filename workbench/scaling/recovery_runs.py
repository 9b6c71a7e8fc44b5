"""Recovery (first paper, Eq. 6) from the runs' own evaluations, not typed-in F1 values.

Each of the four judges of a distillation comparison — the student before distillation
(``base``), the ``teacher``, and the students trained on the ``uniform`` and ``headroom``
sets — is evaluated by ``workbench audit`` on the same held-out cases. Its violation-F1 is
read here from what that evaluation left:

- a traces file (``workbench audit --out``, JSONL): the F1 is computed as ``workbench audit
  metrics`` computes it (newest trace per case; labels from the traces, or from ``labels``),
  and the labelled case ids are kept, so the runs can be checked to score the same cases;
- a metrics file (``workbench metrics --json``): the F1 of its one row (or of the row of
  ``group``, a strategy), and its count of labelled cases.

Recovery compares F1 values on one set of cases: runs that scored different cases (ids of
traces files, or labelled counts of metrics files) are refused, naming the difference.

F1 alone can mislead here: a student that learns to say "violation" more often raises its F1
on a balanced sample without telling violations from compliant replies any better (the real
1.5B -> 0.5B runs of issue 31 did exactly that). So each row also carries the run's accuracy,
AUROC of its P(violation) and share of cases flagged, and a ``caution`` when Recovery is
positive while accuracy or AUROC fell below the student's own before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import WorkbenchError
from workbench.scaling.distill import recovery_rows
from workbench.scaling.recovery_bootstrap import CaseVerdict

if TYPE_CHECKING:
    from workbench.audit.trace import AuditTrace

ROLES = ("base", "teacher", "uniform", "headroom")


class RunEvaluationError(WorkbenchError, ValueError):
    """An evaluation file cannot give an F1, or the runs scored different cases."""


@dataclass(frozen=True)
class RunF1:
    """The violation-F1 one run's evaluation gives, and what it was measured on."""

    name: str  # base | teacher | uniform | headroom (or any label)
    source: str  # the file it was read from, or "typed in"
    f1: float
    labelled: int  # labelled cases the F1 was measured on
    group: str = ""  # strategy (and judge mode / keyword method) of the row
    # beside F1, when the evaluation has them (None for typed-in figures)
    acc: float | None = None
    auroc: float | None = None  # of P(violation); None without probabilities
    flagged: float | None = None  # share of judged cases said to be a violation
    # per labelled case, when read from traces: what a conversation bootstrap resamples
    verdicts: tuple[CaseVerdict, ...] | None = None

    @property
    def cases(self) -> frozenset[str] | None:
        """The labelled cases' ids, when the file has them (traces)."""
        return None if self.verdicts is None else frozenset(v.case for v in self.verdicts)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "f1": self.f1,
                "labelled": self.labelled, "group": self.group, "acc": self.acc,
                "auroc": self.auroc, "flagged": self.flagged}


def typed_f1(name: str, value: float) -> RunF1:
    """An F1 measured elsewhere (an outside figure): no case ids to check."""
    return RunF1(name, "typed in", float(value), 0)


def run_f1(path: str | Path, name: str, *, labels: Mapping[str, str | None] | None = None,
           group: str | None = None) -> RunF1:
    """The F1 of the run evaluated in ``path`` (a traces JSONL or a metrics JSON, told apart
    by their content). ``group``: the strategy whose row counts when the file has several.
    Raises :class:`RunEvaluationError` saying what is wrong and what to pass instead."""
    p = Path(path)
    if not p.is_file():
        raise RunEvaluationError(f"{name} evaluation {p}: no such file",
                                 "give the traces `workbench audit --out` wrote, or the output "
                                 "of `workbench metrics --json`")
    from workbench.inputs import read_input_text

    return run_f1_text(read_input_text(p), str(p), name, labels=labels, group=group)


def run_f1_text(text: str, origin: str, name: str, *, labels: Mapping[str, str | None] | None = None,
                group: str | None = None) -> RunF1:
    """:func:`run_f1` of an evaluation already read (an upload), ``origin`` naming it."""
    from workbench.inputs import loads_json

    p = Path(origin)
    if text.lstrip().startswith("["):  # a JSON list: metrics; a traces line is an object
        return _from_metrics(loads_json(text, origin), p, name, group)
    return _from_traces(text, p, name, labels, group)


def _from_metrics(rows: Any, path: Path, name: str, group: str | None) -> RunF1:
    def well_formed(r: Any) -> bool:
        labelled = r.get("labelled") if isinstance(r, dict) else None
        return (isinstance(r, dict) and "f1" in r and isinstance(r.get("group"), str)
                and isinstance(labelled, int) and not isinstance(labelled, bool) and labelled >= 0)

    if not isinstance(rows, list) or not rows or not all(well_formed(r) for r in rows):
        raise RunEvaluationError(f"{name} evaluation {path}: not the output of `workbench metrics "
                                 "--json` (a list of rows with group, labelled and f1)",
                                 "write it again with that command, or give the audit's traces")
    return _pick(rows, path, name, group)


def _from_traces(text: str, path: Path, name: str, labels: Mapping[str, str | None] | None,
                 group: str | None) -> RunF1:
    from workbench.audit.metrics import compute_metrics
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import read_traces
    from workbench.vocabulary import label_violation

    traces, problems = read_traces(text=text, origin=str(path))
    if not traces:
        first = f" ({problems[0]})" if problems else ""
        raise RunEvaluationError(f"{name} evaluation {path}: holds no audit traces{first}",
                                 "give the JSONL `workbench audit --out` wrote, or a metrics JSON")
    traces = latest_per_case(traces, key=trace_key)
    if labels is not None:  # the held-out cases: only their traces count
        traces = [t for t in traces if t.id in labels]
        if not traces:
            raise RunEvaluationError(f"{name} evaluation {path}: no trace of the given cases",
                                     "evaluate the judge on the held-out cases (--runs-cases)")
    rows = [r.as_dict() for r in compute_metrics(traces, labels)]
    picked = _pick(rows, path, name, group)
    chosen = [t for t in traces if _group_of(t, rows) == picked.group]

    def label(t) -> str | None:
        return labels.get(t.id) if labels is not None and t.id in labels else t.label

    verdicts = tuple(
        CaseVerdict(t.id, t.session or t.id, gold, t.verdict.violation if t.verdict else None)
        for t in chosen if (gold := label_violation(label(t))) is not None)
    return replace(picked, verdicts=verdicts)


def _group_of(trace: AuditTrace, rows: list[dict]) -> str:
    from workbench.audit.metrics import group_name

    with_mode = any("/" in r["group"] for r in rows)
    return group_name(trace, with_mode)


def _pick(rows: list[dict], path: Path, name: str, group: str | None) -> RunF1:
    if group is not None:
        rows = [r for r in rows if r["group"] == group or str(r["group"]).split("/")[0] == group]
    if len(rows) != 1:
        found = ", ".join(str(r.get("group")) for r in rows) or "none"
        raise RunEvaluationError(
            f"{name} evaluation {path}: {len(rows)} strategy rows ({found}) where one is needed",
            "pick one with --runs-strategy (command line), or evaluate one strategy per file")
    row = rows[0]
    f1 = _number(row["f1"])
    if f1 is None:
        raise RunEvaluationError(
            f"{name} evaluation {path}: its F1 is undefined (no violation among its "
            f"{row.get('labelled', 0)} labelled cases, and none flagged)",
            "evaluate on held-out cases with violations and compliant replies both")
    return RunF1(name, str(path), f1, int(row.get("labelled") or 0), str(row["group"]),
                 _number(row.get("acc")), _number(row.get("auroc")), _flagged_share(row))


def _number(value: Any) -> float | None:
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(float(value)):
        return None
    return float(value)


def _flagged_share(row: dict) -> float | None:
    counts = [row.get(k) for k in ("tp", "fp", "fn", "tn")]
    if not all(isinstance(c, int) for c in counts) or not sum(counts):
        return None
    tp, fp, fn, tn = counts
    return (tp + fp) / (tp + fp + fn + tn)


def check_same_cases(runs: list[RunF1]) -> None:
    """Refuse runs measured on different cases (among those read from files)."""
    measured = [r for r in runs if r.source != "typed in"]
    with_ids = [r for r in measured if r.cases is not None]
    if len(with_ids) > 1:
        first = with_ids[0]
        for other in with_ids[1:]:
            if other.cases != first.cases:
                only_a = sorted(first.cases - other.cases)[:3]
                only_b = sorted(other.cases - first.cases)[:3]
                raise RunEvaluationError(
                    f"the {first.name} and {other.name} runs scored different cases "
                    f"({len(first.cases)} vs {len(other.cases)} labelled; only in {first.name}: "
                    f"{only_a}, only in {other.name}: {only_b})",
                    "evaluate every judge on the same held-out cases (the same cases file)")
    counts = {r.labelled for r in measured}
    if len(counts) > 1:
        named = ", ".join(f"{r.name} {r.labelled}" for r in measured)
        raise RunEvaluationError(f"the runs scored different numbers of labelled cases ({named})",
                                 "evaluate every judge on the same held-out cases")


def recovery_from_runs(base: RunF1, teacher: RunF1, distilled: list[RunF1]) -> list[dict]:
    """Recovery rows ``{"model", "f1", "recovery", "source", "labelled", "acc", "auroc",
    "flagged", "caution"}`` of each distilled run, after checking that the measured runs
    scored the same cases. ``caution`` is "" or says why the F1 gain is not a better judge."""
    if not distilled:
        raise RunEvaluationError("recovery needs a distilled student's evaluation",
                                 "add --uniform-run and/or --headroom-run (or --f1-uniform/--f1-headroom)")
    check_same_cases([base, teacher, *distilled])
    try:
        rows = recovery_rows(base.f1, teacher.f1, {r.name: r.f1 for r in distilled})
    except ValueError as exc:
        raise RunEvaluationError(str(exc), "check the base and teacher evaluations") from None
    by_name = {r.name: r for r in distilled}
    out = []
    for row in rows:
        run = by_name[row["model"]]
        out.append({**row, "source": run.source, "labelled": run.labelled, "acc": run.acc,
                    "auroc": run.auroc, "flagged": run.flagged,
                    "caution": f1_gain_caution(base, run, row["recovery"])})
    return out


def f1_gain_caution(base: RunF1, student: RunF1, recovery: float) -> str:
    """Why a positive Recovery may not be a better judge: the student's F1 rose while its
    accuracy or AUROC fell below its own before, so it flags more without telling cases apart
    better. (A teacher below the base makes Recovery positive for a falling F1: not this.)"""
    if not (recovery > 0 and student.f1 > base.f1):
        return ""
    fell = [f"{what} {before:.3f} -> {after:.3f}"
            for what, before, after in (("accuracy", base.acc, student.acc),
                                        ("AUROC", base.auroc, student.auroc))
            if before is not None and after is not None and after < before]
    if not fell:
        return ""
    more = ""
    if base.flagged is not None and student.flagged is not None and student.flagged > base.flagged:
        more = f"; it flags {student.flagged:.0%} of cases where it flagged {base.flagged:.0%}"
    return (f"F1 rose but {' and '.join(fell)}{more}: the gain comes from saying 'violation' "
            "more often, not from telling violations apart any better")
