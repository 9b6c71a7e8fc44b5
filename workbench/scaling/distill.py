"""Scaling-guided distillation data: which cases would teach a small judge the most.

Headroom g_i = P_teacher(C_i, d_i) - P_student(C_i, d_i) from a fitted scaling model. Two
selections of the same size with identical (dataset, label) quotas are drawn from the
instances: ``uniform`` (random within each stratum, seed 17) and ``headroom`` (highest g
within each stratum), so a difference in the distilled judge comes from which cases were
picked, not from their mix. Each is exported as a JSONL training set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.inputs import iter_jsonl, read_input_text
from workbench.scaling.fit import ScalingFit

SELECTION_SEED = 17
# Fields of a case that are the expected judge output, kept as training targets.
TARGET_FIELDS: tuple[str, ...] = ("label", "violation", "reason", "violated_rules", "verdict")
_ID_FIELDS = ("instance", "dataset", "session", "id", "prompt")
# Columns of the selected table copied into each training record, in this order.
_ROW_FIELDS = ("instance", "dataset", "session", "label", "complexity", "headroom", "p_teacher", "p_student")
_RECORD_FIELDS = ("completion", "keyword_prompt", "gold_rules", "strategy", "skills", "closure",
                  "context_tokens")
_PROMPT_ORDER = ("policy", "context", "closure", "history", "state", "response")
_JUDGE_HEADER = (
    "You are a compliance judge. Using only the policy rules given, decide whether the "
    "agent's response violates them. Answer in JSON with the fields of the verdict."
)


class SelectionError(WorkbenchError, ValueError):
    """The selection cannot be made as asked; the message says why and what to do."""


def recovery(f1_model: float, f1_base: float, f1_teacher: float) -> float:
    """Share of the teacher's F1 gain over the base that a distilled model recovers:
    ``(F1(M) - F1(base)) / (F1(teacher) - F1(base))``. 1 = as good as the teacher."""
    gap = f1_teacher - f1_base
    if gap == 0:
        raise ValueError("recovery is undefined when the teacher's F1 equals the base model's")
    return (f1_model - f1_base) / gap


def recovery_rows(f1_base: float, f1_teacher: float, distilled: dict[str, float]) -> list[dict]:
    """Recovery (first paper, Eq. 6) of each distilled model, e.g. ``{"uniform": 0.61, "headroom": 0.66}``:
    rows ``{"model", "f1", "recovery"}`` in the given order.

    Raises ``ValueError`` naming the value when an F1 is outside [0, 1] or not a number, or
    when teacher and base have the same F1 (no gap to recover).
    """
    named = {"base": f1_base, "teacher": f1_teacher, **distilled}
    for name, value in named.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ValueError(f"F1 of {name} must be a number in [0, 1], got {value!r}")
    if f1_teacher == f1_base:
        raise ValueError(
            f"recovery is undefined: teacher and base both have F1 {f1_base:g}; give the "
            "base (student before distillation) and teacher F1 measured on the same cases"
        )
    return [
        {"model": name, "f1": float(f1), "recovery": recovery(f1, f1_base, f1_teacher)}
        for name, f1 in distilled.items()
    ]


def _label_text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip() or None


def load_cases(path: str | Path) -> list[dict]:
    """Read a cases JSONL: one object per line with an ``instance`` id, or an audit case's /
    training record's ``id`` (and optionally ``dataset``, ``prompt``, target fields such as
    ``violation``/``reason``)."""
    path = Path(path)
    if not path.is_file():
        raise SelectionError(f"{path}: no such cases file; give a JSONL of cases")
    cases = []
    # Through the input layer like every other file the CLI reads: a file that is not UTF-8,
    # too big, or holds a key twice is refused with its line and what to do.
    for lineno, case in iter_jsonl(read_input_text(path, "cases file"), str(path)):
        if not isinstance(case, dict) or ("instance" not in case and "id" not in case):
            raise SelectionError(
                f"{path}: line {lineno}: each case must be an object with an 'instance' "
                "(or audit case 'id') matching the outcomes table"
            )
        # Audit cases and training records are keyed by 'id', which is what
        # scaling-outcomes writes as 'instance'.
        case.setdefault("instance", case.get("id"))
        cases.append(case)
    return cases


class _CaseIndex:
    """Cases looked up by (dataset, instance), falling back to instance alone."""

    def __init__(self, cases: list[dict]):
        self.by_pair: dict[tuple[str, str], dict] = {}
        self.by_instance: dict[str, list[dict]] = {}
        for case in cases:
            instance = str(case["instance"])
            if "dataset" in case:
                self.by_pair[(str(case["dataset"]), instance)] = case
            else:
                self.by_instance.setdefault(instance, []).append(case)

    def get(self, dataset: str, instance: str) -> dict | None:
        if (dataset, instance) in self.by_pair:
            return self.by_pair[(dataset, instance)]
        found = self.by_instance.get(instance, [])
        if len(found) > 1:
            raise SelectionError(
                f"{len(found)} cases have instance id {instance!r} and no dataset; add a "
                "'dataset' field to the cases so they can be told apart"
            )
        return found[0] if found else None


def build_prompt(case: dict) -> str | list[dict[str, str]]:
    """The judgment input of a case: its ``prompt`` when it has one (the materialised
    closure context: text, or the judge's chat messages from ``workbench.train.data``),
    else a simple rendering of its non-target fields."""
    prompt = case.get("prompt")
    if (isinstance(prompt, str) and prompt.strip()) or (isinstance(prompt, list) and prompt):
        return prompt
    skip = set(TARGET_FIELDS) | set(_ID_FIELDS) | {"gold"}  # gold would leak the answer
    keys = [k for k in _PROMPT_ORDER if k in case]
    keys += sorted(k for k in case if k not in skip and k not in keys)
    parts = [_JUDGE_HEADER]
    for key in keys:
        value = case[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
        parts.append(f"## {key.replace('_', ' ').title()}\n{text}")
    return "\n\n".join(parts)


def instance_table(outcomes: pd.DataFrame, cases: list[dict] | None = None) -> pd.DataFrame:
    """One row per (dataset, instance) with session, complexity and label.

    The label comes from an outcomes ``label`` column, else from the case's ``label`` or
    ``violation`` field; it is ``None`` when neither exists.
    """
    first = outcomes.drop_duplicates(["dataset", "instance"])
    table = first[["dataset", "instance", "session", "complexity"]].reset_index(drop=True)
    if "label" in outcomes.columns:
        labels = outcomes.groupby(["dataset", "instance"])["label"].nunique(dropna=False)
        if (labels > 1).any():
            dataset, instance = labels[labels > 1].index[0]
            raise SelectionError(
                f"instance {instance!r} of dataset {dataset!r} has different labels across "
                "its rows; the gold label must not depend on the judge"
            )
        table["label"] = [_label_text(v) for v in first["label"]]
    elif cases:
        index = _CaseIndex(cases)
        found = (index.get(d, i) or {} for d, i in zip(table["dataset"], table["instance"], strict=True))
        table["label"] = [_label_text(case.get("label", case.get("violation"))) for case in found]
    else:
        table["label"] = None
    return table


def stratum_quotas(strata_sizes: dict[tuple[str, Any], int], n: int) -> dict[tuple, int]:
    """Split ``n`` over strata in proportion to their sizes (largest remainder, ties by key).

    Raises :class:`SelectionError` when ``n`` exceeds the pool or is not positive.
    """
    total = sum(strata_sizes.values())
    if n <= 0:
        raise SelectionError(f"the selection size must be positive, got {n}")
    if n > total:
        raise SelectionError(f"asked for {n} samples but only {total} instances are available; lower --n")
    keys = sorted(strata_sizes, key=lambda k: (str(k[0]), str(k[1])))
    exact = {k: n * strata_sizes[k] / total for k in keys}
    quotas = {k: int(np.floor(exact[k])) for k in keys}
    left = n - sum(quotas.values())
    by_remainder = sorted(keys, key=lambda k: -(exact[k] - quotas[k]))
    for k in by_remainder:
        if left == 0:
            break
        if quotas[k] < strata_sizes[k]:
            quotas[k] += 1
            left -= 1
    return quotas


@dataclass
class DistillationSelection:
    """Two same-size selections with identical (dataset, label) quotas."""

    teacher_b: float
    student_b: float
    model: str
    quotas: dict[tuple, int]
    uniform: pd.DataFrame
    headroom: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "teacher_params_b": self.teacher_b,
            "student_params_b": self.student_b,
            "model": self.model,
            "n": int(len(self.uniform)),
            "quotas": [{"dataset": d, "label": lab, "n": q} for (d, lab), q in self.quotas.items()],
            "mean_headroom": {
                "uniform": float(self.uniform["headroom"].mean()),
                "headroom": float(self.headroom["headroom"].mean()),
            },
            "notes": self.notes,
        }


def select_distillation(
    outcomes: pd.DataFrame,
    fit: ScalingFit,
    teacher_b: float,
    student_b: float,
    n: int,
    *,
    cases: list[dict] | None = None,
    seed: int = SELECTION_SEED,
) -> DistillationSelection:
    """Rank instances by headroom under ``fit`` and draw the two selections of size ``n``."""
    if not fit.family.uses_size:
        raise SelectionError(
            f"the {fit.model} model has no judge-size term, so teacher and student get the same "
            "probability everywhere; fit additive, nested or full on outcomes of two or more sizes"
        )
    pool = instance_table(outcomes, cases)
    notes = []
    if pool["label"].isna().all():
        notes.append(
            "no labels found (no 'label' column in the outcomes, no label/violation in cases): "
            "quotas are per dataset only"
        )
    elif pool["label"].isna().any():
        notes.append(f"{int(pool['label'].isna().sum())} instances have no label")
    sizes = sorted(outcomes["params_b"].unique())
    for role, size in (("teacher", teacher_b), ("student", student_b)):
        if not sizes[0] <= size <= sizes[-1]:
            notes.append(
                f"{role} size {size:g}B is outside the observed sizes "
                f"{sizes[0]:g}-{sizes[-1]:g}B: its probabilities are extrapolated"
            )
    p_teacher = fit.predict(pool["dataset"], teacher_b, pool["complexity"])
    p_student = fit.predict(pool["dataset"], student_b, pool["complexity"])
    pool = pool.assign(p_teacher=p_teacher, p_student=p_student, headroom=p_teacher - p_student)
    pool["_stratum"] = list(zip(pool["dataset"], pool["label"], strict=True))
    counts: dict[tuple, int] = pool.groupby("_stratum", sort=False).size().to_dict()
    quotas = stratum_quotas(counts, n)
    rng = np.random.default_rng(seed)
    uniform_parts, headroom_parts = [], []
    for key in quotas:
        members = pool[pool["_stratum"].map(lambda s, key=key: s == key)]
        members = members.sort_values(["instance"], kind="stable")
        q = quotas[key]
        uniform_parts.append(members.iloc[np.sort(rng.choice(len(members), q, replace=False))])
        ranked = members.sort_values(["headroom", "instance"], ascending=[False, True])
        headroom_parts.append(ranked.head(q))
    drop = ["_stratum"]
    return DistillationSelection(
        teacher_b=float(teacher_b),
        student_b=float(student_b),
        model=fit.model,
        quotas=quotas,
        uniform=pd.concat(uniform_parts).drop(columns=drop).reset_index(drop=True),
        headroom=pd.concat(headroom_parts).drop(columns=drop).reset_index(drop=True),
        notes=notes,
    )


def training_records(
    selected: pd.DataFrame, cases: list[dict] | None, selection: str
) -> list[dict[str, Any]]:
    """JSONL rows: ``prompt`` (judgment input) and ``completion`` (JSON of the target fields)
    for prompt-completion trainers, the target fields themselves, and selection metadata.
    Without cases, ``prompt``/``completion`` are null. Raises when a case is missing."""
    index = _CaseIndex(cases) if cases is not None else None
    records = []
    missing = []
    for row in selected.to_dict(orient="records"):
        record: dict[str, Any] = {key: row[key] for key in _ROW_FIELDS}
        record.update(selection=selection, prompt=None, completion=None)
        if index is not None:
            case = index.get(row["dataset"], row["instance"])
            if case is None:
                missing.append(row["instance"])
                continue
            targets = {k: case[k] for k in TARGET_FIELDS if k in case}
            record.update(targets)
            record["prompt"] = build_prompt(case)
            record["completion"] = json.dumps(targets, ensure_ascii=False, sort_keys=True)
            # Training records (workbench.train.data) carry their own verdict target and the
            # keyword-stage fields; keep them so the set feeds `workbench train` as is.
            record.update({key: case[key] for key in _RECORD_FIELDS if key in case})
            if "keyword_prompt" in case:  # a training record: its prompt as is, even None
                record["prompt"] = case.get("prompt")
        records.append(record)
    if missing:
        raise SelectionError(
            f"{len(missing)} selected instances have no case in the cases file (first: "
            f"{missing[:3]}); the cases must cover every instance of the outcomes table"
        )
    return records


def write_training_sets(
    selection: DistillationSelection, out_dir: str | Path, cases: list[dict] | None = None
) -> dict[str, Path]:
    """Write ``uniform.jsonl``, ``headroom.jsonl`` and ``selection.json`` (the summary) into
    ``out_dir`` (created if needed). Returns the written paths by name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, frame in (("uniform", selection.uniform), ("headroom", selection.headroom)):
        path = out / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for record in training_records(frame, cases, name):
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        paths[name] = path
    summary = selection.summary()
    if cases is None:
        summary["notes"] = summary["notes"] + [
            "no cases file: prompt and completion are null; pass the cases to fill them"
        ]
    paths["summary"] = out / "selection.json"
    paths["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return paths
