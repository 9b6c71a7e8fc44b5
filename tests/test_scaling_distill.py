"""Distillation sample selection: identical quotas, seeded uniform draw, highest headroom."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.scaling_data import two_datasets
from workbench.errors import WorkbenchError
from workbench.scaling import FitOptions, distill, fit_model

FULL = {"gamma_A": -0.4, "gamma_B": 0.3, "eta": 0.7, "beta": 3.0, "rho": 0.5, "alpha": 0.7, "lambda": 0.4}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    frame = two_datasets("full", FULL, [1.0, 4.0, 9.0, 27.0], sessions=10, instances=6, seed=21)
    rng = np.random.default_rng(0)
    labels = {i: ("violation" if rng.random() < 0.3 else "ok") for i in frame["instance"].unique()}
    return frame.assign(label=frame["instance"].map(labels))


@pytest.fixture(scope="module")
def fit(data):
    return fit_model(data, "nested", FitOptions(maxiter=60))


def test_recovery_hand_values():
    # (0.70 - 0.50) / (0.90 - 0.50) = 0.5
    assert distill.recovery(0.70, 0.50, 0.90) == pytest.approx(0.5)
    assert distill.recovery(0.90, 0.50, 0.90) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="undefined"):
        distill.recovery(0.7, 0.6, 0.6)


def test_recovery_rows_per_distilled_set():
    # base 0.4, teacher 0.8: uniform (0.5 - 0.4) / 0.4 = 0.25; headroom (0.9 - 0.4) / 0.4 = 1.25
    rows = distill.recovery_rows(0.4, 0.8, {"uniform": 0.5, "headroom": 0.9})
    assert [r["model"] for r in rows] == ["uniform", "headroom"]
    assert [r["recovery"] for r in rows] == pytest.approx([0.25, 1.25])
    with pytest.raises(ValueError, match="F1 of teacher must be a number in"):
        distill.recovery_rows(0.4, float("nan"), {"uniform": 0.5})
    with pytest.raises(ValueError, match="both have F1 0.4"):
        distill.recovery_rows(0.4, 0.4, {"uniform": 0.5})


def test_stratum_quotas_largest_remainder():
    # 10 of 20: exact 5.0, 3.5, 1.5 -> floors 5, 3, 1 and the tie of remainders goes by key
    quotas = distill.stratum_quotas({("A", "ok"): 10, ("A", "v"): 7, ("B", "ok"): 3}, 10)
    assert quotas == {("A", "ok"): 5, ("A", "v"): 4, ("B", "ok"): 1}
    assert sum(distill.stratum_quotas({("A", "x"): 3, ("B", "x"): 3, ("C", "x"): 3}, 7).values()) == 7
    with pytest.raises(distill.SelectionError, match="only 20 instances"):
        distill.stratum_quotas({("A", "ok"): 20}, 21)


def test_selections_share_quotas_and_differ_by_rule(data, fit):
    sel = distill.select_distillation(data, fit, teacher_b=9, student_b=4, n=40)
    pool = data.drop_duplicates(["dataset", "instance"])
    for frame in (sel.uniform, sel.headroom):
        assert len(frame) == 40 and frame["instance"].is_unique
        counts = frame.groupby(["dataset", "label"]).size().to_dict()
        assert counts == {k: v for k, v in sel.quotas.items() if v}
    # headroom: within each stratum, no left-out instance has more headroom than a picked one
    p_t = fit.predict(pool["dataset"], 9, pool["complexity"])
    p_s = fit.predict(pool["dataset"], 4, pool["complexity"])
    pool = pool.assign(g=p_t - p_s)
    for (dataset, label), group in pool.groupby(["dataset", "label"]):
        picked = sel.headroom[(sel.headroom["dataset"] == dataset) & (sel.headroom["label"] == label)]
        rest = group[~group["instance"].isin(picked["instance"])]
        if len(rest) and len(picked):
            assert rest["g"].max() <= picked["headroom"].min() + 1e-12
    np.testing.assert_allclose(
        sel.headroom["headroom"], sel.headroom["p_teacher"] - sel.headroom["p_student"]
    )
    assert sel.headroom["headroom"].mean() >= sel.uniform["headroom"].mean()
    # the uniform draw is fixed by its seed (17) and changes with it
    again = distill.select_distillation(data, fit, teacher_b=9, student_b=4, n=40)
    assert again.uniform["instance"].tolist() == sel.uniform["instance"].tolist()
    other = distill.select_distillation(data, fit, teacher_b=9, student_b=4, n=40, seed=18)
    assert other.uniform["instance"].tolist() != sel.uniform["instance"].tolist()


def test_labels_from_cases_and_notes(data, fit):
    unlabeled = data.drop(columns="label")
    sel = distill.select_distillation(unlabeled, fit, 9, 4, 10)
    assert any("no labels found" in n for n in sel.notes)
    cases = [
        {"instance": i, "dataset": d, "violation": bool(k % 2)}
        for k, (d, i) in enumerate(unlabeled[["dataset", "instance"]].drop_duplicates().values)
    ]
    sel = distill.select_distillation(unlabeled, fit, 9, 4, 10, cases=cases)
    assert set(sel.uniform["label"]) <= {"true", "false"} and not sel.notes
    extrapolated = distill.select_distillation(unlabeled, fit, 70, 4, 10, cases=cases)
    assert any("outside the observed sizes" in n for n in extrapolated.notes)


def test_build_prompt_prefers_materialised_prompt():
    assert distill.build_prompt({"instance": "x", "prompt": "RENDERED CONTEXT", "history": "h"}) == (
        "RENDERED CONTEXT"
    )
    text = distill.build_prompt(
        {"instance": "x", "response": "R", "policy": "P", "violation": True, "extra": [1]})
    assert text.index("## Policy\nP") < text.index("## Response\nR") < text.index("## Extra")
    assert "True" not in text and "violation" not in text.lower().split("## policy")[1]


def test_training_sets_written_as_jsonl(data, fit, tmp_path):
    pool = data.drop_duplicates(["dataset", "instance"])
    cases_path = tmp_path / "cases.jsonl"
    with cases_path.open("w") as handle:
        for d, i in pool[["dataset", "instance"]].values:
            case = {
                "instance": i,
                "dataset": d,
                "history": f"h-{i}",
                "response": "r",
                "violation": i.endswith("1"),
                "reason": "why",
                "violated_rules": ["R1"],
            }
            handle.write(json.dumps(case) + "\n")
    cases = distill.load_cases(cases_path)
    sel = distill.select_distillation(data, fit, 9, 4, 12, cases=cases)
    paths = distill.write_training_sets(sel, tmp_path / "out", cases)
    rows = [json.loads(line) for line in paths["headroom"].read_text().splitlines()]
    assert len(rows) == 12 and {r["selection"] for r in rows} == {"headroom"}
    first = rows[0]
    assert f"h-{first['instance']}" in first["prompt"]
    assert json.loads(first["completion"]) == {
        "violation": first["violation"],
        "reason": "why",
        "violated_rules": ["R1"],
    }
    summary = json.loads(paths["summary"].read_text())
    assert summary["n"] == 12 and summary["teacher_params_b"] == 9
    uniform = [json.loads(line) for line in paths["uniform"].read_text().splitlines()]
    assert len(uniform) == 12
    with pytest.raises(distill.SelectionError, match="have no case"):
        distill.training_records(sel.uniform, cases[:3], "uniform")
    bare = distill.write_training_sets(sel, tmp_path / "bare")
    row = json.loads(bare["uniform"].read_text().splitlines()[0])
    assert row["prompt"] is None and "no cases file" in bare["summary"].read_text()


def test_inconsistent_labels_rejected(data, fit):
    broken = data.copy()
    broken.loc[broken.index[0], "label"] = "something else"
    with pytest.raises(distill.SelectionError, match="different labels"):
        distill.select_distillation(broken, fit, 9, 4, 10)


@pytest.mark.parametrize("raw, problem", [
    (b'{"instance": "caf\xe9"}\n', "not UTF-8"),  # Latin-1: was a bare UnicodeDecodeError
    (b'{"instance": "a"}\n{"instance": "b", "instance": "c"}\n', "appears twice"),  # was: last wins
    (b'{"instance": "a"}\n{"instance": \n', "not valid JSON"),
])
def test_cases_file_problems_name_the_line_and_the_fix(tmp_path, raw, problem):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(raw)
    with pytest.raises(WorkbenchError) as caught:
        distill.load_cases(path)
    assert problem in str(caught.value) and str(path) in str(caught.value)
    assert caught.value.hint  # what to do: re-save as UTF-8, keep one key, fix the syntax
