"""``workbench annotate``: annotation statistics, the dataset report and label exports.

``workbench annotate agreement LABELS.csv [--json]`` reads a CSV with columns
``item,annotator,label`` (other columns are ignored; an empty label cell is a missing label)
and prints percent agreement, Cohen's kappa, Fleiss' kappa and Krippendorff's alpha, each
``null`` where it does not apply.

``workbench annotate report --index INDEX.json [--db URL] [--json] [--out-jsonl F]
[--out-csv F]`` builds the dataset report (the SkillCDG paper's Table 10: per SKILL and
pooled, extracted and reference rule counts, matched pairs, precision, recall, F1 agreement
and rule correctness) from the extracted index and the labels in the database, plus
agreement per task type and judge-vs-human agreement.

``workbench annotate export [--db URL] [--task T] [--current] [--adjudications]
[--format jsonl|csv] [--out F]`` writes the label records.

``workbench annotate label [--annotator NAME] [--as NAME] (--skill S [--version V] --rule R
| --case-key K --criterion C) --value V`` records one label as the Annotate page does
(``workbench.commands._annotate_label``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.commands._annotate_label import register_label
from workbench.commands._common import CliError, action, command_group, load_index_or_fail

REQUIRED_COLUMNS = ("item", "annotator", "label")

# Why a statistic is null, shown next to it in the text output.
_NOT_APPLICABLE = {
    "percent_agreement": "needs an item with at least two labels",
    "cohen_kappa": "needs exactly two annotators with at least one item in common",
    "fleiss_kappa": "needs every labelled item to have the same number (>= 2) of labels",
    "krippendorff_alpha": "needs an item with at least two labels",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    sub = command_group(subparsers, "annotate", help="annotation statistics",
                        description="Annotation statistics.", dest="annotate_command",
                        metavar="SUBCOMMAND")

    agreement = action(
        sub, "agreement", run_agreement,
        help="inter-annotator agreement of a labels CSV",
        description="Inter-annotator agreement of nominal labels: percent agreement, Cohen's "
        "kappa (exactly two annotators), Fleiss' kappa (same number of labels per item) and "
        "Krippendorff's alpha (any design, missing labels allowed). A statistic that does "
        "not apply is null.",
    )
    agreement.add_argument(
        "labels_csv",
        metavar="LABELS.csv",
        help="CSV with a header and columns item,annotator,label; empty label = missing",
    )
    agreement.add_argument("--json", action="store_true", help="print one JSON object")
    _register_report(sub)
    _register_export(sub)
    register_label(sub, DB_HELP)


def read_labels_csv(path: Path) -> list[tuple[str, str, str | None]]:
    """``(item, annotator, label)`` rows of a labels CSV; raises ``CliError`` on bad input.

    Cells are stripped; an empty label cell becomes ``None`` (missing). Empty item or
    annotator cells and a second label by one annotator for one item are errors naming the
    line.
    """
    import csv
    import io

    from workbench.inputs import InputError, read_input_text

    fix = "pass a CSV file with a header row and columns item,annotator,label"
    try:
        # One decoder for every input: a UTF-8 BOM is dropped, UTF-16/32, Latin-1 and binary
        # files are reported with the line, the same as for JSON and YAML.
        handle = io.StringIO(read_input_text(path, "labels CSV file"), newline="")
    except InputError as exc:
        raise CliError(f"{exc}; {fix}") from None
    rows: list[tuple[str, str, str | None]] = []
    seen: dict[tuple[str, str], int] = {}
    with handle:
        try:
            reader = csv.reader(handle, strict=True)
            header = next(reader, None)
            if header is None:
                raise CliError(f"{path} is empty; {fix}")
            columns = [name.strip().lower() for name in header]
            missing = [name for name in REQUIRED_COLUMNS if name not in columns]
            if missing:
                found = ", ".join(repr(c) for c in header) or "none"
                raise CliError(
                    f"{path} lacks column(s) {', '.join(missing)} (found {found}); "
                    "add a header row item,annotator,label"
                )
            at = {name: columns.index(name) for name in REQUIRED_COLUMNS}
            for record in reader:
                line = reader.line_num
                if not any(cell.strip() for cell in record):
                    continue  # blank line
                cells = {
                    name: record[i].strip() if i < len(record) else ""
                    for name, i in at.items()
                }
                for name in ("item", "annotator"):
                    if not cells[name]:
                        raise CliError(
                            f"{path} line {line}: empty {name}; every row needs an item and "
                            "an annotator (leave only the label empty for a missing label)"
                        )
                label = cells["label"] or None
                key = (cells["item"], cells["annotator"])
                if label is not None:
                    if key in seen:
                        raise CliError(
                            f"{path} line {line}: annotator {key[1]!r} already labelled item "
                            f"{key[0]!r} on line {seen[key]}; keep one label per annotator "
                            "and item"
                        )
                    seen[key] = line
                rows.append((cells["item"], cells["annotator"], label))
        except csv.Error as exc:
            raise CliError(f"{path} is not valid CSV ({exc}); {fix}") from None
    return rows


def run_agreement(args: argparse.Namespace) -> int:
    from workbench.annotation.agreement import agreement_report

    rows = read_labels_csv(Path(args.labels_csv))
    if not rows:
        raise CliError(f"{args.labels_csv} has a header but no rows; add one row per label")
    report = agreement_report(rows)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"items: {report['n_items']}  annotators: {report['n_annotators']}  "
        f"labels: {report['n_labels']}"
    )
    for key, reason in _NOT_APPLICABLE.items():
        value = report[key]
        print(f"{key}: " + (f"null  ({reason})" if value is None else f"{value:.4f}"))
    return 0


# -- report ------------------------------------------------------------------------------

SIMILARITIES = ("embedding", "jaccard", "tfidf")  # as workbench.annotation.report.SIMILARITIES
DB_HELP = "SQLAlchemy URL of the labels (default: WORKBENCH_DB or .workbench/workbench.db)"


def _register_report(sub: argparse._SubParsersAction) -> None:
    report = action(
        sub, "report", run_report,
        help="dataset report: rule-set agreement and rule correctness (Table 10)",
        description="Per SKILL of INDEX and pooled: extracted and reference rule counts, "
        "matched pairs, precision, recall, their F1 (the rule-set agreement) and rule "
        "correctness after adjudication; plus inter-annotator agreement per task type and "
        "judge-vs-human agreement on reviewed items. Labels are read from the database.",
    )
    report.add_argument("--index", required=True, metavar="INDEX.json",
                        help="the extracted skillcdg/1 index (e.g. from `workbench export-store`)")
    report.add_argument("--db", help=DB_HELP)
    report.add_argument("--skill", action="append", metavar="NAME",
                        help="only this SKILL of the index (repeatable)")
    report.add_argument("--similarity", choices=SIMILARITIES, default="embedding",
                        help="how rules are matched by meaning (default: embedding, the offline "
                        "all-MiniLM-L6-v2 model; jaccard and tfidf are lexical)")
    report.add_argument("--threshold", type=float,
                        help="lowest similarity of a matched pair (default: 0.6 for embedding, "
                        "0.5 otherwise)")
    report.add_argument("--min-annotators", type=int, default=2, metavar="N",
                        help="unanimous labels of at least N annotators resolve an item without "
                        "a reviewer (default 2)")
    report.add_argument("--reference-annotator", action="append", metavar="NAME",
                        help="use only this annotator's reference rules (repeatable; default: "
                        "everyone's, pooled)")
    report.add_argument("--pooling", choices=["inventories", "per_skill"], default="inventories",
                        help="pooled row: match the pooled inventories once (the paper's B.4, "
                        "default) or sum the per-SKILL matches")
    report.add_argument("--confirm-with-judge", action="store_true",
                        help="ask the judge role to confirm each matched pair (model calls)")
    report.add_argument("--json", action="store_true", help="print the whole report as JSON")
    report.add_argument("--out-jsonl", metavar="FILE", help="write the table rows as JSONL")
    report.add_argument("--out-csv", metavar="FILE", help="write the table rows as CSV")
    report.add_argument("--force", action="store_true",
                        help="--out-jsonl/--out-csv: replace a file that exists (a symbolic "
                        "link is replaced, never followed)")


def _write(path: str, text: str, force: bool, flag: str = "--out") -> None:
    """Write ``text`` as every --out does (``commands._output``: no existing file replaced
    without --force, no symbolic link followed)."""
    from workbench.commands._output import write_output

    write_output(path, text, force=force, flag=flag)


def _check_outs(args: argparse.Namespace, *flags: str) -> None:
    """Refuse an --out that would be refused, before any work."""
    from workbench.commands._output import check_output

    for flag in flags:
        path = getattr(args, flag.removeprefix("--").replace("-", "_"))
        if path:
            check_output(path, force=args.force, flag=flag)


def run_report(args: argparse.Namespace) -> int:
    import sys

    from store.db import make_engine
    from workbench.annotation.report import (
        TABLE_COLUMNS,
        dataset_report,
        default_threshold,
        similarity_by_name,
        to_csv,
        to_jsonl,
    )
    from workbench.llm import ModelCallError

    _check_outs(args, "--out-jsonl", "--out-csv")
    index = load_index_or_fail(args.index)
    skills = list(index)
    if args.skill:
        unknown = [name for name in args.skill if name not in index.skills]
        if unknown:
            raise CliError(f"no SKILL {', '.join(map(repr, unknown))} in {args.index}; it has "
                           f"{', '.join(index.skills) or '(none)'}")
        skills = [index[name] for name in args.skill]
    threshold = args.threshold if args.threshold is not None else default_threshold(args.similarity)
    if not 0 < threshold <= 1:
        raise CliError(f"--threshold {threshold} is outside (0, 1]; pass e.g. --threshold 0.6")
    if args.min_annotators < 1:
        raise CliError("--min-annotators must be at least 1")
    engine = make_engine(args.db)
    from store.annotation import all_records

    labels, adjudications = all_records(engine)
    if not labels:
        print("warning: the database has no annotation labels yet; label rules on the Annotate "
              "page, or pass --db with the annotators' database", file=sys.stderr)
    confirm = None
    if args.confirm_with_judge:
        from store.llm_cache import persistent_gateway
        from workbench.annotation.confirm import model_confirmer

        confirm = model_confirmer(persistent_gateway(engine))
    try:
        report = dataset_report(
            skills, labels, adjudications, similarity=similarity_by_name(args.similarity),
            similarity_name=args.similarity, threshold=threshold,
            reference_annotators=args.reference_annotator, min_annotators=args.min_annotators,
            confirm=confirm, pooling=args.pooling,
        )
    except ModelCallError as exc:
        raise CliError(f"the judge could not confirm a match: {exc}; run without "
                       "--confirm-with-judge or check `workbench model check`") from None
    table = report.table()
    if args.out_jsonl:
        _write(args.out_jsonl, to_jsonl(table), args.force, "--out-jsonl")
    if args.out_csv:
        _write(args.out_csv, to_csv(table, TABLE_COLUMNS), args.force, "--out-csv")
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        _print_report(report)
    return 0


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _print_report(report) -> None:
    columns = ("skill", "n_extracted", "n_reference", "matched", "precision", "recall", "f1",
               "rule_correctness", "unresolved")
    rows = [[_cell(row[c]) for c in columns] for row in report.table()]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    settings = report.settings
    print(f"\nmatching: {settings['similarity']} >= {settings['threshold']}"
          + (", confirmed by the judge" if settings["confirmed_by"] else "")
          + f"; {len(report.pairs)} matched pair(s) for review (--json lists them)"
          + f"; pooled row: {settings['pooling'].replace('_', ' ')} matching")
    print("agreement (current human labels):")
    for task, stats in report.agreement.items():
        print(f"  {task}: items {stats['n_items']}, annotators {stats['n_annotators']}, "
              f"cohen_kappa {_cell(stats['cohen_kappa'])}, fleiss_kappa "
              f"{_cell(stats['fleiss_kappa'])}, krippendorff_alpha "
              f"{_cell(stats['krippendorff_alpha'])}")
    for task, models in report.judge_human.items():
        for model, stats in models.items():
            print(f"judge vs human ({task}, {model}): {stats['agree']}/{stats['n_items']} agree, "
                  f"cohen_kappa {_cell(stats['cohen_kappa'])}")


# -- export ------------------------------------------------------------------------------

# The task types of workbench.annotation.labels.TASK_TYPES, spelled out so that building the
# parser does not import the annotation package (numpy); a test keeps the two equal.
TASKS = ("rule_correctness", "reference_rule", "cdg_inspection")


def _register_export(sub: argparse._SubParsersAction) -> None:
    export = action(
        sub, "export", run_export,
        help="write annotation labels as JSONL or CSV",
        description="Write the label records (append-only history, or --current: each "
        "annotator's latest label per item) as JSONL or CSV, with columns kind, task, item, "
        "annotator, label, error_type, note, source, created_at. A --current CSV of one task "
        "is a valid input of `workbench annotate agreement`.",
    )
    export.add_argument("--db", help=DB_HELP)
    export.add_argument("--task", choices=TASKS, help="only this task type")
    export.add_argument("--current", action="store_true",
                        help="only each annotator's latest label per item")
    export.add_argument("--source", choices=("human", "model"), help="only human or model labels")
    export.add_argument("--adjudications", action="store_true",
                        help="append the reviewers' adjudications (kind=adjudication)")
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    export.add_argument("--force", action="store_true",
                        help="--out: replace a file that exists (a symbolic link is replaced, "
                        "never followed)")


def run_export(args: argparse.Namespace) -> int:
    import sys

    from store.annotation import adjudications_for, labels_for
    from store.db import make_engine
    from workbench.annotation.labels import TASK_TYPES
    from workbench.annotation.report import LABEL_COLUMNS, label_rows, to_csv, to_jsonl

    _check_outs(args, "--out")
    engine = make_engine(args.db)
    tasks = [args.task] if args.task else list(TASK_TYPES)
    labels = [lab for task in tasks for lab in labels_for(engine, task)]
    if args.source:
        labels = [lab for lab in labels if lab.source == args.source]
    adjudications = (
        [adj for task in tasks for adj in adjudications_for(engine, task)]
        if args.adjudications else []
    )
    rows = label_rows(labels, adjudications, current_only=args.current)
    text = to_csv(rows, LABEL_COLUMNS) if args.format == "csv" else to_jsonl(rows)
    if args.out:
        _write(args.out, text, args.force)
        print(f"wrote {len(rows)} record(s) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
