"""The outcomes table: one row per (instance, judge) with the judge's size and correctness.

Columns: ``instance, dataset, session, params_b, complexity, correct``. Extra columns (for
example ``label``, the gold verdict, used by distillation selection) are kept as text.
Every problem is reported with the row and column it was found in, and what to do.
"""

from __future__ import annotations

import io
import math
import numbers
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.inputs import InputError, loads_json, read_input_text, split_jsonl_lines

REQUIRED_COLUMNS: tuple[str, ...] = (
    "instance",
    "dataset",
    "session",
    "params_b",
    "complexity",
    "correct",
)
_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no"}


class OutcomesError(WorkbenchError, ValueError):
    """The outcomes table is malformed. The message names the row, the column and the fix."""


def _text(value: Any, where: str, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise OutcomesError(f"{where}, column {column!r}: value is missing; fill it in")
    if isinstance(value, (dict, list)):
        raise OutcomesError(
            f"{where}, column {column!r}: expected a text or number id, got {type(value).__name__}"
        )
    text = str(value).strip()
    if not text:
        raise OutcomesError(f"{where}, column {column!r}: value is empty; fill it in")
    return text


def _number(value: Any, where: str, column: str, *, positive: bool) -> float:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise OutcomesError(f"{where}, column {column!r}: expected a number, got {value!r}")
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise OutcomesError(f"{where}, column {column!r}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise OutcomesError(f"{where}, column {column!r}: expected a finite number, got {value!r}")
    if positive and number <= 0:
        raise OutcomesError(
            f"{where}, column {column!r}: judge size must be > 0 billion parameters, got {value!r}"
        )
    if not positive and number < 0:
        raise OutcomesError(f"{where}, column {column!r}: complexity must be >= 0, got {value!r}")
    return number


def _binary(value: Any, where: str, column: str) -> int:
    # numbers.Real covers bool and numpy scalars as well as int/float.
    if isinstance(value, numbers.Real) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        token = value.strip().lower()
        if token in _TRUE or token in {"1.0"}:
            return 1
        if token in _FALSE or token in {"0.0"}:
            return 0
    raise OutcomesError(f"{where}, column {column!r}: expected 0 or 1 (or true/false), got {value!r}")


def _validate(rows: Iterable[tuple[str, Any]]) -> pd.DataFrame:
    """Validate ``(location, row dict)`` pairs into a typed DataFrame."""
    clean: list[dict[str, Any]] = []
    for where, row in rows:
        if not isinstance(row, dict):
            raise OutcomesError(
                f"{where}: expected an object with columns {', '.join(REQUIRED_COLUMNS)}, "
                f"got {type(row).__name__}"
            )
        missing = [c for c in REQUIRED_COLUMNS if c not in row]
        if missing:
            raise OutcomesError(
                f"{where}: missing column(s) {', '.join(map(repr, missing))}; every row needs "
                f"{', '.join(REQUIRED_COLUMNS)}"
            )
        out = {k: v for k, v in row.items() if k not in REQUIRED_COLUMNS}
        for column in ("instance", "dataset", "session"):
            out[column] = _text(row[column], where, column)
        out["params_b"] = _number(row["params_b"], where, "params_b", positive=True)
        out["complexity"] = _number(row["complexity"], where, "complexity", positive=False)
        out["correct"] = _binary(row["correct"], where, "correct")
        out["_where"] = where
        clean.append(out)
    if not clean:
        raise OutcomesError(
            "the outcomes table has no rows; it needs one row per (instance, judge) with "
            f"columns {', '.join(REQUIRED_COLUMNS)}"
        )
    frame = pd.DataFrame(clean)
    _check_consistency(frame)
    frame = frame.drop(columns="_where")
    ordered = list(REQUIRED_COLUMNS) + [c for c in frame.columns if c not in REQUIRED_COLUMNS]
    types = {"params_b": float, "complexity": float, "correct": int}
    return frame[ordered].reset_index(drop=True).astype(types)


def _check_consistency(frame: pd.DataFrame) -> None:
    """An instance has one session and one complexity whichever judge scored it."""
    for column in ("session", "complexity"):
        counts = frame.groupby(["dataset", "instance"])[column].nunique()
        bad = counts[counts > 1]
        if len(bad):
            dataset, instance = bad.index[0]
            rows = frame[(frame["dataset"] == dataset) & (frame["instance"] == instance)]
            values = sorted(set(rows[column].tolist()), key=str)
            raise OutcomesError(
                f"{rows['_where'].iloc[0]}, column {column!r}: instance {instance!r} of dataset "
                f"{dataset!r} has {len(values)} different values {values[:4]} across its rows; "
                f"an instance's {column} must not depend on the judge. Fix the table."
            )


def outcomes_from_records(records: Iterable[dict]) -> pd.DataFrame:
    """Validate dict rows (e.g. built from stored audit runs) into an outcomes DataFrame.

    Each record needs the six columns of :data:`REQUIRED_COLUMNS`; extra keys are kept.
    Raises :class:`OutcomesError` naming the record (1-based) and column of the first problem.
    """
    return _validate((f"record {i}", r) for i, r in enumerate(records, start=1))


def _jsonl_rows(handle: IO[str]) -> Iterator[tuple[str, Any]]:
    for lineno, line in enumerate(split_jsonl_lines(handle.read()), start=1):
        if not line.strip():
            continue
        try:
            value = loads_json(line, f"line {lineno}")
        except InputError as exc:
            raise OutcomesError(
                f"line {lineno}: {exc.problem}; each line of a JSONL outcomes file must be one "
                "JSON object"
            ) from None
        yield f"line {lineno}", value


def _csv_rows(handle: IO[str]) -> Iterator[tuple[str, Any]]:
    try:
        table = pd.read_csv(handle, dtype=str, keep_default_na=False, skip_blank_lines=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise OutcomesError(f"could not parse the CSV outcomes file: {exc}") from None
    table.columns = [str(c).strip() for c in table.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise OutcomesError(
            f"header: missing column(s) {', '.join(map(repr, missing))}; found "
            f"{', '.join(map(repr, table.columns))}. The header must name "
            f"{', '.join(REQUIRED_COLUMNS)}"
        )
    for i, row in enumerate(table.to_dict(orient="records"), start=1):
        row = {k: (None if v == "" else v) for k, v in row.items()}
        yield f"row {i} (line {i + 1})", row


def read_outcomes(source: str | IO[str], fmt: str) -> pd.DataFrame:
    """Parse outcomes text (or a text stream) in ``fmt`` = ``"csv"`` or ``"jsonl"``."""
    handle = io.StringIO(source) if isinstance(source, str) else source
    if fmt == "csv":
        return _validate(_csv_rows(handle))
    if fmt == "jsonl":
        return _validate(_jsonl_rows(handle))
    raise OutcomesError(f"unknown outcomes format {fmt!r}; use 'csv' or 'jsonl'")


def outcomes_format(name: str) -> str:
    """``"csv"`` or ``"jsonl"`` from a file name's extension."""
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    raise OutcomesError(
        f"{name}: cannot tell the format from the extension {suffix or '(none)'!r}; "
        "name the file .csv or .jsonl"
    )


def load_outcomes(path: str | Path) -> pd.DataFrame:
    """Read and validate an outcomes file (``.csv`` or ``.jsonl``/``.ndjson``)."""
    path = Path(path)
    fmt = outcomes_format(path.name)
    if not path.is_file():
        raise OutcomesError(f"{path}: no such file; give the path to a .csv or .jsonl table")
    try:
        text = read_input_text(path, "outcomes file")
    except InputError as exc:
        raise OutcomesError(str(exc)) from None
    try:
        return read_outcomes(io.StringIO(text, newline=""), fmt)
    except OutcomesError as exc:
        raise OutcomesError(f"{path}: {exc}") from None
