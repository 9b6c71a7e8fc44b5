"""``workbench import INDEX.json`` and ``workbench export-store``: the index file <-> the store."""

from __future__ import annotations

import argparse

from workbench.commands._case_formats import add_case_format_args
from workbench.commands._common import action, add_actor_option, cli_actor, load_index_or_fail


def register(sub: argparse._SubParsersAction) -> None:
    p = action(sub, "import", _import, help="import a skillcdg/1 index into the workbench database")
    p.add_argument("index")
    p.add_argument("--db", help="SQLAlchemy URL (default: WORKBENCH_DB or .workbench/workbench.db)")
    p.add_argument("--author", default="", help="recorded as the versions' author "
                   "(default: the --as person, else 'import')")
    add_actor_option(p)

    p = action(sub, "export-store", _export,
               help="write the latest SKILL versions in the store as skillcdg/1")
    p.add_argument("--out", required=True)
    p.add_argument("--db")
    p.add_argument("--skill", action="append", help="only this SKILL (repeatable)")

    p = action(sub, "import-cases", _import_cases,
               help="store audit cases (the case schema, OpenAI chat logs, tau2-bench results, "
               "OpenTelemetry spans, or any CSV/JSONL with --map) under a dataset name",
               description="The whole file is read and checked first: a bad record stores "
               "nothing. Then it is read again and stored in batches, so memory follows the "
               "largest case, not the file. Foreign formats make one case per assistant reply "
               "(--format), each with the latest turns of its conversation (--history-chars).")
    p.add_argument("cases")
    p.add_argument("--dataset", required=True)
    p.add_argument("--db")
    add_case_format_args(p)
    add_actor_option(p)

    p = action(sub, "import-traces", _import_traces,
               help="store audit traces (JSONL or .parquet) of a run; idempotent")
    p.add_argument("traces")
    p.add_argument("--dataset", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--db")
    add_actor_option(p)


def _import(args) -> int:
    from store import repo
    from store.db import make_engine
    from workbench.identity.roles import COMMAND_LINE
    from workbench.words import plural

    # The whole index is read and validated (text, names, rules, edges) before the first
    # write, so a bad SKILL anywhere in the file leaves the store untouched.
    index = load_index_or_fail(args.index)
    engine = make_engine(args.db)
    actor = cli_actor(args, engine)
    author = args.author or (actor.name if actor != COMMAND_LINE else "import")
    for skill, saved in zip(index, repo.import_index(engine, index, author=author, actor=actor),
                            strict=True):
        state = "new version" if saved.created else "unchanged"
        # What was kept, counted, so a user sees nothing of the file was dropped (issue 35).
        sourced = sum(bool(e.provenance) for e in skill.graph.edges)
        print(f"{saved.name}: version {saved.version} ({state}): "
              f"{plural(len(skill.graph), 'rule')}, {plural(len(skill.graph.edges), 'edge')} "
              f"({sourced} with provenance), {plural(len(skill.proposed), 'proposed edge')}, "
              f"{plural(saved.decisions_added, 'new verdict')}")
    return 0


def _export(args) -> int:
    from store import repo
    from store.db import make_engine

    engine = make_engine(args.db)
    index = repo.export_index(engine, args.skill)
    index.save(args.out)
    print(f"wrote {len(index)} SKILL(s) to {args.out}")
    return 0


# Cases are stored this many at a time (fewer when they are long): one batch is what the
# import holds in memory besides what the store reads back.
BATCH_CASES = 10_000
BATCH_CHARS = 16_000_000
# store.audit_repo.save_cases reads every stored case of the dataset for each batch, so
# memory and time grow with the dataset: an import that would take a dataset past this is
# refused before anything is stored.
MAX_DATASET_CASES = 250_000
MAX_IMPORT_CHARS = 500_000_000  # and so is a file whose cases hold more than this


def _import_cases(args) -> int:
    from store import audit_repo, repo
    from store.db import make_engine
    from workbench.audit import CaseFormatError
    from workbench.audit.importers import ImportFormatError
    from workbench.commands._case_formats import open_cases_arg, print_notes
    from workbench.commands._common import CliError

    try:
        # First pass: the whole file is checked, keeping nothing of it (the database is not
        # opened yet: opening it creates it).
        first = open_cases_arg(args, args.cases)
        count, unrouted = _check_cases(first, args.cases)
        engine = make_engine(args.db)
        actor = cli_actor(args, engine)
        stored = audit_repo.case_version(engine, args.dataset)[0]
        if stored + count > MAX_DATASET_CASES:
            raise CliError(f"dataset {args.dataset!r} holds {stored:,} case(s); with the "
                           f"{count:,} of {args.cases} it would pass {MAX_DATASET_CASES:,}, "
                           "what one dataset takes; nothing was stored", _TOO_MANY)
        # Second pass: a policy the file names may be a SKILL of the store; read again knowing
        # them, and store a batch at a time.
        known = repo.skill_names(engine) if first.notes and unrouted else None
        cases = first if known is None else open_cases_arg(args, args.cases, known)
        n = sum(audit_repo.save_cases(engine, args.dataset, batch, actor=actor)
                for batch in _batches(cases))
        print_notes(cases.notes)
    except ImportFormatError:
        raise  # names its own fix
    except (OSError, CaseFormatError) as exc:
        raise CliError(f"{exc}. Cases are JSONL in the normalised schema (see README), or "
                       "another format with --format.") from None
    print(f"{args.dataset}: {n} case(s) stored")
    return 0


_TOO_MANY = ("split the file and import the parts under different --dataset names, or audit "
             "it straight from the file (workbench audit --cases FILE --limit N)")


def _check_cases(cases, path: str) -> tuple[int, bool]:
    """How many cases the file holds and whether one names no SKILL, reading it through
    (a bad record raises); none, or more than a dataset takes, is a CLI error."""
    from workbench.commands._common import CliError

    count, unrouted, chars = 0, False, 0
    for case in cases:
        count += 1
        unrouted = unrouted or case.skills is None
        chars += _chars(case)
        if count > MAX_DATASET_CASES or chars > MAX_IMPORT_CHARS:  # no need to read the rest
            source = case.extra.get("source")  # the line, where the importer kept it
            line = source.get("line") if isinstance(source, dict) else None
            where = f"{path}:{line}" if isinstance(line, int) else path
            what = (f"more than {MAX_DATASET_CASES:,} cases" if count > MAX_DATASET_CASES else
                    f"cases holding more than {MAX_IMPORT_CHARS:,} characters (replies and "
                    "their histories)")
            raise CliError(f"{where}: {what}, what one dataset takes; nothing was stored",
                           _TOO_MANY + "; a long conversation also takes a smaller "
                           "--history-chars")
    if not count:
        raise CliError(f"{path}: holds no case (no line with a case); nothing was stored",
                       "give the cases JSONL, one case per line (see README)")
    return count, unrouted


def _chars(case) -> int:
    turns = case.context if isinstance(case.context, list) else [case.context]
    return len(case.model_response) + sum(len(getattr(t, "content", t)) for t in turns)


def _batches(cases):
    """Lists of at most BATCH_CASES cases, or fewer holding about BATCH_CHARS characters."""
    batch, size = [], 0
    for case in cases:
        batch.append(case)
        size += _chars(case)
        if len(batch) >= BATCH_CASES or size >= BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _import_traces(args) -> int:
    import sys
    from pathlib import Path

    from store import audit_repo
    from store.db import make_engine
    from workbench.audit import parquet
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import no_valid_trace, read_traces
    from workbench.commands._common import CliError
    from workbench.inputs import InputError

    try:
        if parquet.is_parquet(args.traces):
            traces, problems = parquet.read_traces(args.traces), []
        elif not Path(args.traces).exists():
            raise FileNotFoundError(f"{args.traces}: no such traces file")
        else:
            traces, problems = read_traces(args.traces)
    except (InputError, OSError, ValueError) as exc:
        raise CliError(f"{exc}. Traces are the JSONL written by `workbench audit --out`.") from None
    for problem in problems[:20]:
        print(f"warning: {args.traces}: skipped {problem}", file=sys.stderr)
    if len(problems) > 20:
        print(f"warning: {args.traces}: {len(problems) - 20} more line(s) skipped", file=sys.stderr)
    if not traces:
        raise CliError(no_valid_trace(args.traces, problems) + "; nothing was stored",
                       "give the JSONL that `workbench audit --out` writes")
    traces = latest_per_case(traces, key=trace_key)  # a retried case: its newest trace
    # save_traces skips a trace equal to the newest stored one of its case: importing the same
    # file again adds nothing, and a case retried since (its newest trace changed) is updated.
    engine = make_engine(args.db)
    actor = cli_actor(args, engine)
    added = audit_repo.save_traces(engine, traces, args.run_id, args.dataset, actor=actor)
    print(f"{args.run_id}: {added} new trace(s), {len(traces) - added} already stored")
    _import_features(engine, args, traces, actor)
    return 0


def _import_features(engine, args, traces, actor) -> None:
    """The judge's activations captured beside the traces file (``workbench features
    capture``), stored with the traces so the pages can apply an activation scorer."""
    from pathlib import Path

    import numpy as np

    from store.activations import save_features
    from workbench.decision.features import features_dir, read_index

    folder = features_dir(Path(args.traces))
    keys = {(t.id, t.strategy) for t in traces}
    recs = [r for r in read_index(folder) if r.key in keys]
    if not recs:
        return
    n = save_features(engine, args.dataset, ((r, np.load(folder / r.file)) for r in recs),
                      actor=actor)
    print(f"{args.run_id}: the judge's activations of {n} case(s) stored from {folder}")
