"""Training records from audit cases: the exact audit prompts, targets, pseudonyms, export;
and ``scaling select`` taking audit cases as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.audit_data import DEMO, merchant_cases, merchant_index
from workbench.audit import AuditOptions, audit_case
from workbench.audit.judge import judge_messages
from workbench.audit.keywords import keyword_messages
from workbench.audit.policy_context import ContextOptions
from workbench.cli import main
from workbench.scaling.distill import load_cases as load_selection_cases
from workbench.train.data import (
    TrainingDataError,
    materialise,
    read_jsonl,
    to_hf_dataset,
    write_jsonl,
)


@pytest.fixture(scope="module")
def merchant():
    return merchant_index(), merchant_cases()


def test_records_carry_the_audit_prompts_and_targets(merchant):
    index, cases = merchant
    records = materialise(cases, index, "cdg", salt="s3cret")
    assert [r.id for r in records] == [c.id for c in cases]
    case, rec = cases[0], records[0]
    # The judge prompt is the pipeline's own rendering of the cdg closure for this case.
    trace = audit_case(case, index, "cdg", None, AuditOptions(judge_mode="none"))
    assert rec.prompt == judge_messages(case, trace.context)
    assert rec.closure == trace.closure and "C050" in rec.closure["merchant-order-refund"]
    assert rec.keyword_prompt == keyword_messages(case, 4)
    assert case.session not in json.dumps(rec.to_dict())
    assert rec.session == materialise([case], index, salt="s3cret")[0].session
    assert rec.session != materialise([case], index, salt="other")[0].session
    target = json.loads(rec.completion)
    assert target == {"violation": True, "violated_rules": ["C032"],
                      "evidence": [], "reason": "The reply breaks [C032]."}
    assert json.loads(records[1].completion)["violation"] is False
    assert rec.complexity > 0 and rec.skills == ["merchant-order-refund"]
    row = rec.to_dict()
    assert row["instance"] == case.id and row["violation"] is True


def test_a_case_without_context_keeps_its_keyword_prompt(merchant):
    index, cases = merchant
    case = cases[0]
    odd = type(case)(id="odd", model_response="zzz qqq", skills=case.skills, context=[])
    # keyword seeding finds no rule for words no rule has (scored seeding always ranks some)
    opts = AuditOptions(context=ContextOptions(seeding="keywords"))
    rec = materialise([odd], index, options=opts)[0]
    assert rec.prompt is None and rec.completion is None
    assert rec.error.startswith("EmptySeed") and rec.keyword_prompt


def test_jsonl_and_hf_export_round_trip(merchant, tmp_path):
    index, cases = merchant
    records = materialise(cases, index)
    path = write_jsonl(records, tmp_path / "r.jsonl")
    rows = read_jsonl(path)
    assert rows[0]["prompt"] == records[0].prompt and rows[0]["gold_rules"] == []
    ds = to_hf_dataset(records)
    assert ds.num_rows == 4 and ds[0]["prompt"] == records[0].prompt
    assert json.loads(ds[0]["closure"]) == records[0].closure
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(TrainingDataError, match="line 1: missing session"):
        read_jsonl(bad)


def test_selection_reads_audit_cases_by_id():
    cases = load_selection_cases(DEMO / "cases.jsonl")
    assert cases[0]["instance"] == cases[0]["id"]


def _demo_outcomes(path: Path) -> None:
    from workbench.scaling import simulate_outcomes

    params = {"gamma_A": -0.4, "eta": 0.7, "beta": 3.0, "rho": 0.5, "alpha": 0.7, "lambda": 0.4}
    frame = simulate_outcomes("nested", params, datasets=["A"], sizes=[1.0, 4.0, 9.0],
                              sessions_per_dataset=7, instances_per_session=3, seed=3)
    ids = [json.loads(line)["id"] for line in (DEMO / "cases.jsonl").read_text().splitlines()]
    names = dict(zip(sorted(frame["instance"].unique()), ids, strict=True))
    frame.assign(instance=frame["instance"].map(names)).to_csv(path, index=False)


def test_scaling_select_materialises_audit_cases(tmp_path, capsys):
    outcomes = tmp_path / "outcomes.csv"
    _demo_outcomes(outcomes)
    base = ["scaling", "select", str(outcomes), "--teacher", "9", "--student", "1", "--n", "6",
            "--model", "nested", "--maxiter", "30", "--cases", str(DEMO / "cases.jsonl")]
    # Audit cases without --index would get a generic prompt: refused, with the fix named.
    assert main(base + ["--out", str(tmp_path / "x")]) == 2
    assert "pass --index" in capsys.readouterr().err
    out = tmp_path / "sets"
    assert main(base + ["--out", str(out), "--index", str(DEMO / "index.json")]) == 0
    rows = [json.loads(line) for line in (out / "headroom.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    row = rows[0]
    assert row["prompt"][0]["role"] == "system" and "<policy>" in row["prompt"][1]["content"]
    assert row["keyword_prompt"] and "violation" in json.loads(row["completion"])
    assert row["selection"] == "headroom"


def test_selection_keeps_a_record_without_judge_prompt_empty():
    import pandas as pd

    from workbench.scaling import training_records

    record = {"id": "a", "instance": "a", "prompt": None, "keyword_prompt": [{"role": "user",
              "content": "k"}], "closure": {}, "completion": None, "label": "negative"}
    row = pd.DataFrame([{"instance": "a", "dataset": "d", "session": "s", "label": "negative",
                         "complexity": 1.0, "headroom": 0.1, "p_teacher": 0.6, "p_student": 0.5}])
    out = training_records(row, [record], "uniform")[0]
    assert out["prompt"] is None and out["completion"] is None and out["keyword_prompt"]


def test_records_are_read_through_the_input_layer(tmp_path):
    from workbench.train.data import TrainingDataError, read_jsonl

    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "id": "b"}\n', encoding="utf-8")
    with pytest.raises(TrainingDataError, match=r"dup\.jsonl:1: key .id. appears twice"):
        read_jsonl(dup, require=("id",))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"id": "caf\u00e9"}\n'.encode("latin-1"))
    with pytest.raises(TrainingDataError, match="UTF-8"):
        read_jsonl(latin, require=("id",))
