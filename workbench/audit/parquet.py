"""Cases and traces as Parquet, for bulk import and export of large runs.

One row per case or trace. The whole record is kept losslessly as JSON text in one column
(``case_json`` / ``trace_json``): nested parts (turns, background, closures, verdicts) vary
in shape from record to record, and the JSON form is the one every other reader of the
workbench already validates. Beside it, the scalar fields analysts filter and group by are
plain typed columns (id, label, strategy, violation, tokens, latency, error kind...), so
DuckDB, pandas or Spark can query a day's run without decoding a single JSON value.

Files are written and read in row groups of ``BATCH_ROWS``, so memory stays bounded by one
group however long the run. pyarrow is imported lazily (it is heavy, and only these
commands need it); a missing pyarrow fails with a message naming the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from workbench.audit.trace import AuditTrace, TraceFormatError
from workbench.errors import WorkbenchError
from workbench.inputs import InputError, open_regular

BATCH_ROWS = 5000
CASE_COLUMN = "case_json"
TRACE_COLUMN = "trace_json"


class ParquetFormatError(WorkbenchError, ValueError):
    """A Parquet file is not a cases or traces file the workbench wrote; the message names
    the file, the row and the fix. (``audit.cases`` reports it as its ``CaseFormatError``.)"""


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() in (".parquet", ".pq")


def _pa() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a locked dependency
        raise RuntimeError(
            "Parquet needs pyarrow: install it with `pip install pyarrow` (it is in requirements.lock)"
        ) from None
    return pa, pq


def _case_schema(pa: Any) -> Any:
    return pa.schema([
        ("id", pa.string()),
        ("session", pa.string()),
        ("label", pa.string()),
        ("skills", pa.list_(pa.string())),
        (CASE_COLUMN, pa.string()),
    ])


def _trace_schema(pa: Any) -> Any:
    return pa.schema([
        ("id", pa.string()),
        ("strategy", pa.string()),
        ("judge_mode", pa.string()),
        ("keywords_method", pa.string()),
        ("label", pa.string()),
        ("violation", pa.bool_()),
        ("probability", pa.float64()),  # P(violation) as the judge gave it
        ("probability_source", pa.string()),
        ("threshold", pa.float64()),  # the decision threshold applied, when one was given
        ("decided_violation", pa.bool_()),  # the decided record's score outcome (else the verdict)
        ("decided_label", pa.string()),  # the decided record: violation | compliant | review
        ("score", pa.float64()),  # its calibrated P(violation)
        ("score_source", pa.string()),  # judge | activations
        ("rules", pa.list_(pa.string())),  # the closure's rules behind the label
        ("error_kind", pa.string()),
        ("context_tokens", pa.int64()),
        ("online_tokens", pa.int64()),
        ("latency_ms", pa.float64()),
        (TRACE_COLUMN, pa.string()),
    ])


# Cases are typed Any here: ``audit.cases`` reads Parquet through this module, so importing
# its AuditCase back would close an import cycle; anything with ``to_dict()`` will do.
def _case_row(case: Any) -> dict[str, Any]:
    data = case.to_dict()
    skills = data.get("skills")
    return {
        "id": str(data.get("id", "")),
        "session": _text(data.get("session")),
        "label": _text(data.get("label")),
        "skills": [str(s) for s in skills] if isinstance(skills, list) else None,
        CASE_COLUMN: json.dumps(data, ensure_ascii=False),
    }


def _trace_row(t: AuditTrace, threshold: Any = None, record: Any = None) -> dict[str, Any]:
    trace = t.to_dict()
    verdict = trace.get("verdict") if isinstance(trace.get("verdict"), dict) else None
    error = trace.get("error") if isinstance(trace.get("error"), dict) else None
    record = record if record is not None else _record(t, threshold)
    return {
        "id": str(trace.get("id", "")),
        "strategy": _text(trace.get("strategy")),
        "judge_mode": _text(trace.get("judge_mode")),
        "keywords_method": _text(trace.get("keywords_method")),
        "label": _text(trace.get("label")),
        "violation": bool(verdict["violation"]) if verdict and "violation" in verdict else None,
        "probability": _float(verdict.get("probability")) if verdict else None,
        "probability_source": _text(verdict.get("probability_source")) if verdict else None,
        "threshold": getattr(threshold, "threshold", threshold),
        "decided_violation": None if record is None else record.outcome_violation,
        "decided_label": None if record is None or record.decided is None else record.label,
        "score": None if record is None else record.score,
        "score_source": None if record is None else record.score_source,
        "rules": None if record is None else list(record.rules),
        "error_kind": _text(error.get("kind")) if error else None,
        "context_tokens": _int(trace.get("context_tokens")),
        "online_tokens": _int(trace.get("online_tokens")),
        "latency_ms": _float(trace.get("latency_ms")),
        TRACE_COLUMN: json.dumps(trace, ensure_ascii=False),
    }


def _record(trace: AuditTrace, threshold: Any) -> Any:
    """The decided record of ``trace`` under ``threshold`` (a number, or a saved
    ``DecisionSetting`` with its case scores attached; None: the default setting)."""
    from workbench.decision import DecisionSetting, decided_verdict

    if threshold is None:
        return decided_verdict(trace)
    setting = threshold if isinstance(threshold, DecisionSetting) else DecisionSetting(float(threshold))
    return decided_verdict(trace, saved=(0, setting))


def write_cases(cases: Iterable[Any], path: str | Path) -> int:
    """Write cases to a Parquet file; returns how many."""
    return _write((_case_row(c) for c in cases), path, "cases")


def write_traces(traces: Iterable[AuditTrace], path: str | Path, threshold: Any = None,
                 verdicts: Any = None) -> int:
    """Write traces to Parquet (their JSON form in one column); returns how many. Each row
    also holds its decided record (``workbench.decision.DecidedVerdict``: label, score and
    its source, the rules): ``verdicts`` by (case id, strategy) when the caller has them, else
    read under ``threshold`` (a number, or a saved setting with its activation scores
    attached: an activation setting decides the cases whose scores it holds)."""
    return _write((_trace_row(t, threshold, (verdicts or {}).get((t.id, t.strategy)))
                   for t in traces), path, "traces")


def _write(rows: Iterable[dict[str, Any]], path: str | Path, kind: str) -> int:
    pa, pq = _pa()
    schema = _case_schema(pa) if kind == "cases" else _trace_schema(pa)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")  # never a half-written file at `path`
    n, pending = 0, iter(rows)
    with pq.ParquetWriter(partial, schema, compression="zstd") as writer:
        # Full row groups while they last, then the rest (an empty run: one empty group).
        while (batch := list(islice(pending, BATCH_ROWS))) or n == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
            if len(batch) < BATCH_ROWS:
                break
    partial.replace(target)
    return n


def json_rows(path: str | Path, column: str, what: str) -> Iterator[tuple[int, Any]]:
    """(row number from 1, decoded JSON) per row; ParquetFormatError names file, row and fix."""
    _, pq = _pa()
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such {what} file")
    try:  # a FIFO or device is refused, not waited on
        with open_regular(p, f"{what} file"):
            pass
    except InputError as exc:
        raise ParquetFormatError(str(exc)) from None
    try:
        reader = pq.ParquetFile(p)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid for non-Parquet bytes
        raise ParquetFormatError(f"{p}: not a readable Parquet file ({exc})") from None
    if column not in reader.schema_arrow.names:
        raise ParquetFormatError(
            f"{p}: no '{column}' column (columns: {', '.join(reader.schema_arrow.names)}); "
            f"{what} Parquet files are the ones `workbench convert` writes"
        )
    row = 0
    for batch in reader.iter_batches(batch_size=BATCH_ROWS, columns=[column]):
        for text in batch.column(0).to_pylist():
            row += 1
            if text is None:
                raise ParquetFormatError(f"{p} row {row}: '{column}' is empty")
            try:
                yield row, json.loads(text)
            except json.JSONDecodeError as exc:
                raise ParquetFormatError(f"{p} row {row}: '{column}' is not valid JSON ({exc.msg})") from None


def read_traces(path: str | Path) -> list[AuditTrace]:
    """Traces from a Parquet file. Raises FileNotFoundError or ParquetFormatError (a
    ValueError) naming the row and the field of a record that is not a trace."""
    out = []
    for row, data in json_rows(path, TRACE_COLUMN, "traces"):
        try:
            out.append(AuditTrace.from_dict(data, f"{path} row {row}"))
        except TraceFormatError as exc:
            raise ParquetFormatError(str(exc)) from None
    return out


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
