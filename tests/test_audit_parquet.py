"""Bulk import and export: cases and traces as Parquet, lossless and queryable."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.audit import parquet
from workbench.audit.cases import CaseFormatError, load_cases
from workbench.audit.trace import AuditTrace
from workbench.audit.trace_file import read_traces
from workbench.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "audit"
CASES = FIX / "merchant_cases.jsonl"
INDEX = FIX / "merchant_index.json"


def test_cases_round_trip_losslessly_and_their_scalars_are_columns(tmp_path):
    original = load_cases(CASES)
    path = tmp_path / "cases.parquet"
    assert parquet.write_cases(original, path) == len(original)
    again = load_cases(path)  # the one reader dispatches on the extension
    assert [c.to_dict() for c in again] == [c.to_dict() for c in original]
    table = pq.read_table(path, columns=["id", "label"])
    assert table.column("id").to_pylist() == [c.id for c in original]
    assert table.column("label").to_pylist() == [c.label for c in original]


def test_large_files_are_written_in_row_groups_and_keep_their_order(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet, "BATCH_ROWS", 4)
    base = load_cases(CASES)[0].to_dict()
    cases = load_cases_from([dict(base, id=f"c{i:02d}") for i in range(10)], tmp_path)
    path = tmp_path / "many.parquet"
    parquet.write_cases(cases, path)
    assert pq.ParquetFile(path).num_row_groups == 3  # 4 + 4 + 2
    assert [c.id for c in load_cases(path)] == [f"c{i:02d}" for i in range(10)]
    assert not list(tmp_path.glob("*.partial"))


def load_cases_from(rows: list[dict], folder: Path):
    src = folder / "src.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return load_cases(src)


def _bad(tmp_path: Path, rows: list[dict], column: str = parquet.CASE_COLUMN) -> Path:
    path = tmp_path / "bad.parquet"
    schema = pa.schema([("id", pa.string()), (column, pa.string())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def test_bad_files_are_refused_with_the_row_and_what_to_do(tmp_path):
    good = json.dumps(load_cases(CASES)[0].to_dict())
    with pytest.raises(CaseFormatError, match=r"row 2: 'case_json' is not valid JSON"):
        load_cases(_bad(tmp_path, [{"id": "a", "case_json": good}, {"id": "b", "case_json": "{nope"}]))
    with pytest.raises(CaseFormatError, match=r"row 2: duplicate case id .* \(first in row 1\)"):
        load_cases(_bad(tmp_path, [{"id": "a", "case_json": good}, {"id": "a", "case_json": good}]))
    no_column = r"no 'case_json' column \(columns: id, other\).*workbench convert"
    with pytest.raises(CaseFormatError, match=no_column):
        load_cases(_bad(tmp_path, [{"id": "a", "other": good}], column="other"))
    with pytest.raises(CaseFormatError, match=r"row 1"):
        load_cases(_bad(tmp_path, [{"id": "a", "case_json": json.dumps({"no": "case"})}]))
    junk = tmp_path / "junk.parquet"
    junk.write_text("id,label\n1,x\n")
    with pytest.raises(CaseFormatError, match="not a readable Parquet file"):
        load_cases(junk)
    with pytest.raises(FileNotFoundError):
        load_cases(tmp_path / "missing.parquet")


def test_cli_converts_cases_and_audits_from_parquet(tmp_path, capsys):
    pq_cases, back = tmp_path / "c.parquet", tmp_path / "c.jsonl"
    assert main(["convert", "cases", str(CASES), str(pq_cases)]) == 0
    assert main(["convert", "cases", str(pq_cases), str(back)]) == 0
    assert [c.to_dict() for c in load_cases(back)] == [c.to_dict() for c in load_cases(CASES)]
    out = tmp_path / "traces.jsonl"
    assert main(["audit", "--index", str(INDEX), "--cases", str(pq_cases), "--strategy", "cdg",
                 "--no-judge", "--out", str(out)]) == 0
    traces, _ = read_traces(out)
    assert sorted(t.id for t in traces) == sorted(c.id for c in load_cases(CASES))

    pq_traces, jsonl_again = tmp_path / "t.parquet", tmp_path / "t.jsonl"
    assert main(["convert", "traces", str(out), str(pq_traces)]) == 0
    assert main(["convert", "traces", str(pq_traces), str(jsonl_again)]) == 0
    assert read_traces(jsonl_again) == (traces, [])
    table = pq.read_table(pq_traces, columns=["id", "strategy", "context_tokens", "violation"])
    assert table.column("strategy").to_pylist() == ["cdg"] * len(traces)
    assert table.column("context_tokens").to_pylist() == [t.context_tokens for t in traces]
    assert table.column("violation").to_pylist() == [None] * len(traces)  # no judge, no verdict

    assert main(["convert", "cases", str(CASES), str(back)]) == 2  # neither side is Parquet
    assert "exactly one of the two must end in .parquet" in capsys.readouterr().err


def test_traces_from_jsonl_keep_the_newest_per_case_and_import_into_the_store(tmp_path, capsys):
    first = {"id": "a", "strategy": "cdg", "error": {"kind": "ModelCallError", "message": "x"}}
    retried = {"id": "a", "strategy": "cdg", "verdict": {"violation": True, "reason": "r",
                                                          "violated_rules": []}}
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(first) + "\n" + json.dumps(retried) + "\n{half a li")
    target = tmp_path / "t.parquet"
    assert main(["convert", "traces", str(src), str(target)]) == 0
    assert parquet.read_traces(target) == [AuditTrace.from_dict(retried)]
    assert pq.read_table(target).column("violation").to_pylist() == [True]
    db = f"sqlite:///{tmp_path / 'wb.db'}"
    assert main(["import-traces", str(target), "--dataset", "d", "--run-id", "R", "--db", db]) == 0
    assert "R: 1 new trace(s)" in capsys.readouterr().out
