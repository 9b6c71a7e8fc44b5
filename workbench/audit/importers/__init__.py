"""Audit cases from the files teams already have: the case schema, OpenAI chat logs,
tau2-bench results, OpenTelemetry GenAI spans, or any CSV/JSONL with a column mapping.

    from workbench.audit.importers import ImportOptions, read_cases_file
    result = read_cases_file("runs.json", ImportOptions("tau2", policies=["airline=airline-policy"]))
    result.cases, result.notes

Every format is validated as it is read, through the input layer (decoding, bounds,
duplicate keys): a bad record raises
:class:`~workbench.audit.importers.common.ImportFormatError` (a ``CaseFormatError``) naming
the file, the line (or the JSON path inside one document) and the fix. ``notes`` are
warnings (skipped records, policies that name no SKILL).

Reading streams (issue 45 item 6): ``stream_cases_file`` hands out cases one at a time,
reading line-based files (the case schema, OpenAI JSONL, CSV/JSONL by ``--map``) a line at a
time, so memory follows the largest case, not the file; a caller that stops early (``audit
--limit``) reads no further. A conversation's cases keep a bounded history
(``ImportOptions.history_chars``, the latest turns; the cut is stated in the case), so n
messages cost O(n), not O(n^2). A caller that must store all or nothing reads the stream
once to check it and again to store it (``workbench import-cases``). tau2 results and
OTel spans are one JSON document: that document is read whole, its cases handed out one by
one.

CompliBench's conversations come in otherwise (``complibench``, ``workbench
import-complibench``): as SKILLs, a policy index and cases at once, not as a format here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from workbench.audit import parquet
from workbench.audit.cases import AuditCase, CaseFormatError, iter_cases, read_bytes_or_fail
from workbench.audit.importers.column_map import parse_mapping, read_mapped
from workbench.audit.importers.common import (
    HISTORY_CHARS,
    HistoryBound,
    ImportFormatError,
    Notes,
    PolicyNames,
)
from workbench.audit.importers.openai_chat import read_openai
from workbench.audit.importers.otel import read_otel
from workbench.audit.importers.tau2 import read_tau2
from workbench.inputs import InputError, decode_text, iter_bytes_lines, iter_input_lines

CASES, OPENAI, TAU2, OTEL, MAP = "cases", "openai", "tau2", "otel", "map"
FORMATS = (CASES, OPENAI, TAU2, OTEL, MAP)
FORMAT_HELP = {
    CASES: "the workbench's case schema (JSONL, or .parquet)",
    OPENAI: "OpenAI chat messages: JSONL of {\"messages\": [...]}, tool calls included",
    TAU2: "a tau2-bench results file (simulations with their messages)",
    OTEL: "OpenTelemetry GenAI spans exported as JSON (OTLP/JSON or the SDK's span JSON)",
    MAP: "any CSV or JSONL, with --map reply=COLUMN,history=COLUMN,...",
}
# A reader: (text or its lines, origin, policies, notes, history=HistoryBound) -> cases, one
# at a time. Those of WHOLE_DOCUMENT get the text (one JSON document), the others its lines.
READERS = {OPENAI: read_openai, TAU2: read_tau2, OTEL: read_otel}
WHOLE_DOCUMENT = frozenset({TAU2, OTEL})

__all__ = ["FORMATS", "FORMAT_HELP", "HISTORY_CHARS", "CaseStream", "ImportFormatError",
           "ImportOptions", "ImportResult", "parse_cases_upload", "read_cases_file",
           "stream_cases_file"]


@dataclass(frozen=True)
class ImportOptions:
    """How to read a cases file: its ``format``, the ``column_map`` of ``map``
    (``reply=output,...``), and ``policies`` (``--policy`` values: ``SKILL`` or
    ``FILE_NAME=SKILL``) with the SKILL names that exist (``known``; None: not known here)."""

    format: str = CASES
    column_map: str | None = None
    policies: tuple[str, ...] = ()
    known: Iterable[str] | None = None
    history_chars: int = HISTORY_CHARS  # characters of history a case keeps (latest turns)

    def __post_init__(self) -> None:
        HistoryBound(self.history_chars)  # in range, or ImportFormatError
        if self.format not in FORMATS:
            raise ImportFormatError(f"unknown cases format {self.format!r}",
                                    f"choose one of {', '.join(FORMATS)}")
        if self.policies and self.format == CASES:
            raise ImportFormatError("--policy is for the other formats: the case schema names "
                                    "its SKILLs in each case's 'skills'",
                                    "drop --policy, or set 'skills' in the cases file")
        if self.column_map and self.format != MAP:
            raise ImportFormatError(f"--map is for --format map, not {self.format}",
                                    "drop --map, or use --format map")


@dataclass
class ImportResult:
    cases: list[AuditCase]
    notes: list[str] = field(default_factory=list)


class CaseStream:
    """The cases of a file (``path``) or an upload (``data``), read while they are iterated;
    each iteration reads again from the start. ``notes`` are those of the latest iteration
    (complete once it ran to the end). A bad record raises CaseFormatError where it is met,
    so a caller that must not act on half a file iterates once to check first."""

    def __init__(self, origin: str, options: ImportOptions, *, path: Path | None = None,
                 data: bytes | None = None) -> None:
        self.origin, self.options, self.path, self.data = origin, options, path, data
        self._notes = Notes()

    @property
    def notes(self) -> list[str]:
        return self._notes.items

    def head(self, limit: int | None) -> list[AuditCase]:
        """The first ``limit`` cases (all for None); nothing after them is read."""
        return list(self if limit is None else islice(self, max(limit, 0)))

    def __iter__(self) -> Iterator[AuditCase]:
        self._notes = Notes()
        options = self.options
        if options.format == CASES and self.path is not None and parquet.is_parquet(self.path):
            from workbench.audit.cases import read_parquet_cases

            yield from read_parquet_cases(self.path)
            return
        if options.format == CASES:
            try:
                yield from iter_cases(self._lines(), self.origin)
            except InputError as exc:
                raise CaseFormatError(str(exc)) from None
            return
        yield from self._foreign(options)

    def _foreign(self, options: ImportOptions) -> Iterator[AuditCase]:
        policies = PolicyNames.parse(options.policies, options.known)
        history = HistoryBound(options.history_chars)
        if options.format == MAP:  # checks repeated ids itself, naming both lines
            cases = read_mapped(self._lines(), self.origin, parse_mapping(options.column_map),
                                policies, self._notes, history)
        elif options.format in WHOLE_DOCUMENT:
            cases = READERS[options.format](self._text(), self.origin, policies, self._notes,
                                            history)
        else:
            cases = _unique_ids(READERS[options.format](self._lines(), self.origin, policies,
                                                        self._notes, history), self.origin)
        n = 0
        for case in cases:
            n += 1
            yield case
        if not n:
            notes = self._notes.items
            raise ImportFormatError(f"{self.origin}: no reply to audit in this {options.format} file",
                                    f"check that it is {FORMAT_HELP[options.format]}"
                                    + (f" ({'; '.join(notes[:3])})" if notes else ""))

    def _lines(self) -> Iterator[str]:
        if self.data is not None:
            return iter_bytes_lines(self.data, self.origin)
        return iter_input_lines(self.path, "cases file")

    def _text(self) -> str:
        try:
            data = self.data if self.data is not None else read_bytes_or_fail(self.path)
            return decode_text(data, self.origin)[0]
        except InputError as exc:
            raise CaseFormatError(str(exc)) from None


def _unique_ids(cases: Iterable[AuditCase], origin: str) -> Iterator[AuditCase]:
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise ImportFormatError(f"{origin}: two records make case id {c.id!r}",
                                    "give every conversation (simulation, span) its own id")
        seen.add(c.id)
        yield c


def stream_cases_file(path: str | Path, options: ImportOptions | None = None) -> CaseStream:
    """The cases of ``path`` in ``options.format``, read as they are iterated. Raises
    FileNotFoundError for a missing file; iterating raises CaseFormatError (an
    ImportFormatError for the foreign formats) at the first bad record."""
    options = options or ImportOptions()
    p = Path(path)
    if not (options.format == CASES and parquet.is_parquet(p)) and not p.exists():
        # a folder or FIFO is refused by the reader with what it is
        raise FileNotFoundError(f"{p}: no such cases file")
    return CaseStream(str(p), options, path=p)


def read_cases_file(path: str | Path, options: ImportOptions | None = None) -> ImportResult:
    """Read a whole cases file in ``options.format``. Raises FileNotFoundError for a missing
    file and CaseFormatError (an ImportFormatError for the foreign formats) for a bad one.
    A big file is better iterated (``stream_cases_file``)."""
    stream = stream_cases_file(path, options)
    return ImportResult(list(stream), stream.notes)


def parse_cases_upload(data: bytes, origin: str, options: ImportOptions | None = None) -> ImportResult:
    """Cases from the bytes of a file or an upload named ``origin``, in ``options.format``."""
    stream = CaseStream(origin, options or ImportOptions(), data=data)
    return ImportResult(list(stream), stream.notes)
