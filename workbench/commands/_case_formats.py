"""``--format``, ``--map`` and ``--policy`` of every command that reads cases (``audit``,
``import-cases``, ``convert cases``): one declaration and one loader, so the formats read
the same wherever cases come in. Not a command (``workbench.cli`` skips ``_*`` modules)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

FORMAT_CHOICES = ("cases", "openai", "tau2", "otel", "map")  # workbench.audit.importers.FORMATS


def add_case_format_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("cases file format")
    g.add_argument("--format", dest="cases_format", choices=FORMAT_CHOICES, default=None,
                   help="how the cases file is written: cases (the workbench's schema, JSONL or "
                   ".parquet; the default), openai (JSONL of {\"messages\": [...]}), tau2 "
                   "(a tau2-bench results file), otel (OpenTelemetry GenAI spans as JSON), map "
                   "(any CSV/JSONL, with --map). One case per assistant reply.")
    g.add_argument("--map", dest="cases_map", default=None, metavar="FIELD=COLUMN,...",
                   help="with --format map: which column holds what, e.g. "
                   "reply=output,history=messages,id=ticket,label=qa,skills=policy,state=state "
                   "(reply is required; implies --format map)")
    g.add_argument("--policy", dest="cases_policy", action="append", default=[],
                   metavar="SKILL|NAME=SKILL",
                   help="the SKILL the imported cases are audited against: a SKILL name (all "
                   "cases), or NAME=SKILL to map the policy a file names (a tau2 domain, an "
                   "agent name) to a SKILL; repeatable. Unmapped names that are no SKILL leave "
                   "the cases routed by keywords (reported)")
    g.add_argument("--history-chars", dest="cases_history_chars", type=int, default=None,
                   metavar="N",
                   help="how much conversation a case of the other formats keeps: the latest "
                   "turns within N characters (default 32000, about 8,000 tokens; 1000 to "
                   "4000000). Older turns are left out and the case says so; each reply used "
                   "to carry a full copy of everything before it")


def import_options(args: argparse.Namespace, known: Iterable[str] | None = None):
    """The ``ImportOptions`` the command line asks for (``known``: SKILL names that exist)."""
    from workbench.audit.importers import ImportOptions

    fmt = getattr(args, "cases_format", None)
    column_map = getattr(args, "cases_map", None)
    if fmt is None:
        fmt = "map" if column_map else "cases"
    history = getattr(args, "cases_history_chars", None)
    if history is not None and fmt == "cases":
        from workbench.commands._common import CliError

        raise CliError("--history-chars is for the other formats: a case of the case schema "
                       "keeps the history its file gives", "drop --history-chars")
    extra = {} if history is None else {"history_chars": history}
    return ImportOptions(fmt, column_map, tuple(getattr(args, "cases_policy", []) or ()),
                         None if known is None else list(known), **extra)


def open_cases_arg(args: argparse.Namespace, path: str, known: Iterable[str] | None = None):
    """The cases of ``path`` as a ``CaseStream`` (read while iterated; ``.notes`` once read);
    a missing file is a CLI error, a bad record the importer's CaseFormatError when met."""
    from workbench.audit.importers import stream_cases_file
    from workbench.commands._common import CliError

    try:
        return stream_cases_file(path, import_options(args, known))
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None


def read_cases_arg(args: argparse.Namespace, path: str, known: Iterable[str] | None = None,
                   quiet: bool = False, limit: int | None = None):
    """The cases of ``path`` in the format the command line names; notes go to stderr (with
    ``quiet``: the whole ImportResult is returned instead), a missing file is a CLI error, a
    bad one the importer's CaseFormatError.

    ``limit`` (else the command's ``--limit``, as ``audit`` has it: "only the first N
    cases"): the first N cases, and the file is read no further; a bad record after them is
    not met."""
    from workbench.audit.importers import ImportResult

    if limit is None:
        limit = getattr(args, "limit", None)
        limit = limit if isinstance(limit, int) and limit >= 0 else None
    stream = open_cases_arg(args, path, known)
    result = ImportResult(stream.head(limit), stream.notes)
    if not quiet:
        print_notes(result.notes)
    return result if quiet else result.cases


def print_notes(notes: list[str]) -> None:
    for note in notes[:20]:
        print(f"note: {note}", file=sys.stderr)
    if len(notes) > 20:
        print(f"note: {len(notes) - 20} more", file=sys.stderr)
