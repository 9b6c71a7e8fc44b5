"""Audit cases from the files teams already have: the case schema, OpenAI chat logs,
tau2-bench results, OpenTelemetry GenAI spans, or any CSV/JSONL with a column mapping.

    from workbench.audit.importers import ImportOptions, read_cases_file
    result = read_cases_file("runs.json", ImportOptions("tau2", policies=["airline=airline-policy"]))
    result.cases, result.notes

Every format is read whole through the input layer (decoding, bounds, duplicate keys) and
validated before the first case is handed out: a bad record raises
:class:`~workbench.audit.importers.common.ImportFormatError` (a ``CaseFormatError``) naming
the file, the line (or the JSON path inside one document) and the fix, so nothing is ever
half-imported. ``notes`` are warnings (skipped records, policies that name no SKILL).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from workbench.audit import parquet
from workbench.audit.cases import AuditCase, CaseFormatError, iter_cases, read_bytes_or_fail
from workbench.audit.importers.column_map import parse_mapping, read_mapped
from workbench.audit.importers.common import ImportFormatError, Notes, PolicyNames
from workbench.audit.importers.openai_chat import read_openai
from workbench.audit.importers.otel import read_otel
from workbench.audit.importers.tau2 import read_tau2
from workbench.inputs import InputError, decode_text

CASES, OPENAI, TAU2, OTEL, MAP = "cases", "openai", "tau2", "otel", "map"
FORMATS = (CASES, OPENAI, TAU2, OTEL, MAP)
FORMAT_HELP = {
    CASES: "the workbench's case schema (JSONL, or .parquet)",
    OPENAI: "OpenAI chat messages: JSONL of {\"messages\": [...]}, tool calls included",
    TAU2: "a tau2-bench results file (simulations with their messages)",
    OTEL: "OpenTelemetry GenAI spans exported as JSON (OTLP/JSON or the SDK's span JSON)",
    MAP: "any CSV or JSONL, with --map reply=COLUMN,history=COLUMN,...",
}
READERS = {OPENAI: read_openai, TAU2: read_tau2, OTEL: read_otel}

__all__ = ["FORMATS", "FORMAT_HELP", "ImportFormatError", "ImportOptions", "ImportResult",
           "parse_cases_upload", "read_cases_file"]


@dataclass(frozen=True)
class ImportOptions:
    """How to read a cases file: its ``format``, the ``column_map`` of ``map``
    (``reply=output,...``), and ``policies`` (``--policy`` values: ``SKILL`` or
    ``FILE_NAME=SKILL``) with the SKILL names that exist (``known``; None: not known here)."""

    format: str = CASES
    column_map: str | None = None
    policies: tuple[str, ...] = ()
    known: Iterable[str] | None = None

    def __post_init__(self) -> None:
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


def read_cases_file(path: str | Path, options: ImportOptions | None = None) -> ImportResult:
    """Read a cases file in ``options.format``. Raises FileNotFoundError for a missing file
    and CaseFormatError (an ImportFormatError for the foreign formats) for a bad one."""
    options = options or ImportOptions()
    p = Path(path)
    if options.format == CASES and parquet.is_parquet(p):
        from workbench.audit.cases import read_parquet_cases

        return ImportResult(read_parquet_cases(p))
    if not p.exists():  # a folder or FIFO is refused by the reader with what it is
        raise FileNotFoundError(f"{p}: no such cases file")
    return parse_cases_upload(read_bytes_or_fail(p), str(p), options)


def parse_cases_upload(data: bytes, origin: str, options: ImportOptions | None = None) -> ImportResult:
    """Cases from the bytes of a file or an upload named ``origin``, in ``options.format``."""
    options = options or ImportOptions()
    try:
        text, _ = decode_text(data, origin)
    except InputError as exc:
        raise CaseFormatError(str(exc)) from None
    if options.format == CASES:
        return ImportResult(list(iter_cases(text, origin)))
    notes = Notes()
    policies = PolicyNames.parse(options.policies, options.known)
    if options.format == MAP:
        cases = read_mapped(text, origin, parse_mapping(options.column_map), policies, notes)
    else:
        cases = READERS[options.format](text, origin, policies, notes)
    if not cases:
        raise ImportFormatError(f"{origin}: no reply to audit in this {options.format} file",
                                f"check that it is {FORMAT_HELP[options.format]}"
                                + (f" ({'; '.join(notes.items[:3])})" if notes.items else ""))
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise ImportFormatError(f"{origin}: two records make case id {c.id!r}",
                                    "give every conversation (simulation, span) its own id")
        seen.add(c.id)
    return ImportResult(cases, notes.items)
