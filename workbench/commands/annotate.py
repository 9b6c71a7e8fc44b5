"""``workbench annotate``: annotation statistics from the command line.

``workbench annotate agreement LABELS.csv [--json]`` reads a CSV with columns
``item,annotator,label`` (other columns are ignored; an empty label cell is a missing label)
and prints percent agreement, Cohen's kappa, Fleiss' kappa and Krippendorff's alpha, each
``null`` where it does not apply.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.cli import CliError

REQUIRED_COLUMNS = ("item", "annotator", "label")

# Why a statistic is null, shown next to it in the text output.
_NOT_APPLICABLE = {
    "percent_agreement": "needs an item with at least two labels",
    "cohen_kappa": "needs exactly two annotators with at least one item in common",
    "fleiss_kappa": "needs every labelled item to have the same number (>= 2) of labels",
    "krippendorff_alpha": "needs an item with at least two labels",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "annotate", help="annotation statistics", description="Annotation statistics."
    )
    sub = parser.add_subparsers(dest="annotate_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda _args: _print_help(parser))

    agreement = sub.add_parser(
        "agreement",
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
    agreement.set_defaults(func=run_agreement)


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def read_labels_csv(path: Path) -> list[tuple[str, str, str | None]]:
    """``(item, annotator, label)`` rows of a labels CSV; raises ``CliError`` on bad input.

    Cells are stripped; an empty label cell becomes ``None`` (missing). Empty item or
    annotator cells and a second label by one annotator for one item are errors naming the
    line.
    """
    import csv

    fix = "pass a CSV file with a header row and columns item,annotator,label"
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file; {fix}") from None
    except IsADirectoryError:
        raise CliError(f"{path} is a directory; {fix}") from None
    except OSError as exc:
        raise CliError(f"cannot open {path}: {exc.strerror or exc}; {fix}") from None
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
        except UnicodeDecodeError:
            raise CliError(f"{path} is not UTF-8 text; save it as UTF-8 CSV") from None
        except csv.Error as exc:
            raise CliError(f"{path} is not valid CSV ({exc}); {fix}") from None
    return rows


def _format(value: float | None) -> str:
    return "null" if value is None else f"{value:.4f}"


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
        suffix = f"  ({reason})" if value is None else ""
        print(f"{key}: {_format(value)}{suffix}")
    return 0
