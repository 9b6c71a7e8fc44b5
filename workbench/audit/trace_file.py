"""The one reader (and line writer) of audit trace JSONL: files from ``workbench audit
--out``, uploads on the Review page, resume, ``metrics``, ``import-traces`` and inspection.

Traces come back from files that may be damaged (a write cut short by ``kill -9`` or a full
disk), hand-edited or written by another tool: every line is decoded and validated on its
own (``AuditTrace.from_dict``), so a bad line costs that line only and is reported as
``origin:line: what is wrong``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench.audit.trace import AuditTrace, TraceFormatError
from workbench.inputs import InputError, dumps_utf8, loads_json, read_input_bytes, split_jsonl_lines


def json_lines(path: str | Path | None = None, *, text: str | bytes | None = None,
               origin: str | None = None) -> Iterator[tuple[str, Any] | str]:
    """Each non-blank line of a JSONL file (``path``) or of ``text``, decoded: ``(where,
    value)`` for a JSON line, or a problem ``"where: why"`` for a damaged one. A missing
    file has no lines (a run that has not written yet)."""
    if (path is None) == (text is None):
        raise TypeError("json_lines takes a path or text=, not both")
    if path is not None:
        p = Path(path)
        if not p.exists():  # a FIFO or folder is refused by the reader, never waited on
            return
        text, origin = read_input_bytes(p, "traces file"), origin or str(p)
    origin = origin or "traces"
    for number, raw in _numbered_lines(text):
        if raw is not None and not raw.strip():
            continue
        where = f"{origin}:{number}"
        if raw is None:
            yield f"{where}: not UTF-8 (a torn or damaged line); re-save the file as UTF-8"
            continue
        try:
            yield where, loads_json(raw, origin, number, allow_surrogates=True)
        except InputError as exc:
            yield str(exc)


def _numbered_lines(text: str | bytes) -> Iterator[tuple[int, str | None]]:
    """``(line number, line)``; bytes are decoded line by line (a torn write can end inside
    a multi-byte character: that must cost the torn line only), ``None`` when one is not
    UTF-8. Lines split at ``\n`` only: U+2028 is legal inside JSON strings."""
    if isinstance(text, str):
        yield from enumerate(split_jsonl_lines(text.removeprefix("\ufeff")), 1)
        return
    for number, raw in enumerate(text.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
        try:
            yield number, raw.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError:
            yield number, None


def read_traces(path: str | Path | None = None, *, text: str | bytes | None = None,
                origin: str | None = None) -> tuple[list[AuditTrace], list[str]]:
    """``(traces, problems)`` from a JSONL file (``path``; a missing file has none) or from
    JSONL ``text`` (an upload; ``origin`` names it in problems). Every line that is not a
    usable trace is left out and described in ``problems`` as ``origin:line: why``.
    Raises ``InputError`` only when the file itself cannot be read (too big, unreadable)."""
    traces, problems = [], []
    for line in json_lines(path, text=text, origin=origin):
        if isinstance(line, str):
            problems.append(line)
            continue
        where, data = line
        try:
            traces.append(AuditTrace.from_dict(data, where))
        except TraceFormatError as exc:
            problems.append(str(exc))
    return traces, problems


def no_valid_trace(origin: str | Path, problems: list[str]) -> str:
    """What to say of a traces file of which no line was a usable trace."""
    if not problems:
        return f"{origin}: holds no trace (the file is empty)"
    return (f"{origin}: no line is a valid trace ({len(problems)} skipped; the first: "
            f"{problems[0][:300]})")


def encode_trace(trace: AuditTrace) -> str:
    """One JSON line. Text that is not valid Unicode (a lone surrogate from a case built in
    code) is written as a JSON escape instead of crashing the UTF-8 file write."""
    return dumps_utf8(trace.to_dict())
