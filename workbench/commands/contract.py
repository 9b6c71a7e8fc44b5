"""``workbench contract``: validate skill contracts and replay trajectories against them.

``workbench contract check CONTRACT.yaml [--json]`` validates a contract file and lists
every problem with its line. ``workbench contract replay CONTRACT.yaml TRAJECTORIES.json
[--json] [--rho R] [--no-feedback] [--show ID]`` replays each trajectory and prints per trajectory
``{id, accepted_termination, rejected, milestones, credit, outcome}`` and the summary
``{n, pcr, rf_pcr, no_rejection_pcr, hint_rate, outcome_rate}`` with the PCR x outcome table.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from workbench.commands._common import CliError, action, command_group


def register(subparsers: argparse._SubParsersAction) -> None:
    sub = command_group(
        subparsers, "contract", help="skill contracts: validate, replay trajectories",
        description="Skill contracts: procedural compliance of agent trajectories.",
        dest="contract_command", metavar="SUBCOMMAND",
    )

    check = action(
        sub, "check", run_check, help="validate a contract file",
        description="Validate a contract file; every problem is listed with its line.",
    )
    check.add_argument("contract", metavar="CONTRACT.yaml", help="the contract file")
    check.add_argument("--json", action="store_true", help="print one JSON object")

    replay = action(
        sub, "replay", run_replay, help="replay trajectories against a contract",
        description="Replay recorded trajectories (tau-bench JSON, message lists, JSON Lines) "
        "against a contract: per trajectory accepted termination, rejected actions, milestones, "
        "credit and outcome; then PCR, RF-PCR, hint rate, outcome rate and PCR x outcome.",
    )
    replay.add_argument("contract", metavar="CONTRACT.yaml", help="the contract file")
    replay.add_argument("trajectories", metavar="TRAJECTORIES.json",
                        help="trajectory file (.json or .jsonl)")
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.add_argument("--rho", type=float, default=None,
                        help="recovery discount in (0, 1] (default: the contract's, else 0.9)")
    replay.add_argument("--no-feedback", dest="feedback", action="store_false",
                        help="replay as if feedback had been withheld (the factorial study's "
                        "outcome-only and credit-only arms): same verdicts, hint rate 0, "
                        "no recovery discount; RF-PCR then equals PCR")
    replay.add_argument("--show", metavar="ID", default=None,
                        help="also print every step of this trajectory with its feedback")


def _load_contract(path: str):
    from workbench.contracts import load_contract

    return load_contract(path)


def run_check(args: argparse.Namespace) -> int:
    from workbench.contracts import check_contract_text
    from workbench.contracts.spec import read_contract_text

    path = Path(args.contract)
    text = read_contract_text(path)
    contract, issues = check_contract_text(text, source=str(path))
    if args.json:
        out: dict[str, Any] = {"valid": contract is not None,
                               "issues": [i._asdict() for i in issues]}
        if contract is not None:
            out["contract"] = contract.summary()
        print(json.dumps(out, indent=2))
        return 0 if contract is not None else 2
    if contract is None:
        _load_contract(str(path))  # raises CliError with every located problem
    assert contract is not None
    required = ", ".join(contract.required_phases) or "none"
    budgets = contract.budgets
    print(f"ok: contract '{contract.name}' in {path}: {len(contract.phases)} phases "
          f"(required: {required}; initial: {contract.initial}), {len(contract.transitions)} "
          f"transitions, {len(contract.milestones)} milestones, {len(contract.anywhere)} "
          f"anywhere rules; budgets: turns={budgets.turns}, tool_calls={budgets.tool_calls}")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    from workbench.contracts import TrajectoryFormatError, load_trajectories, replay_all, summarize

    contract = _load_contract(args.contract)
    if args.rho is not None and not 0 < args.rho <= 1:
        raise CliError(f"--rho must be in (0, 1], got {args.rho}")
    try:
        trajectories = load_trajectories(args.trajectories)
    except TrajectoryFormatError as exc:
        raise CliError(f"{exc}. Expected tau-bench records, message lists or JSON Lines.") from None
    if args.show is not None and args.show not in {t.id for t in trajectories}:
        sample = ", ".join(t.id for t in trajectories[:3])
        raise CliError(f"no trajectory with id {args.show!r} in {args.trajectories}; "
                       f"ids look like: {sample or '(the file is empty)'}")
    reports = replay_all(contract, trajectories, rho=args.rho, feedback=args.feedback)
    summary = summarize(reports)
    if args.json:
        out = {
            "contract": contract.name,
            "trajectories": [r.to_dict(steps=r.trajectory_id == args.show) for r in reports],
            "summary": summary.to_dict(),
            "feedback": "shown" if args.feedback else "withheld",
        }
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    _print_reports(reports)
    _print_summary(summary)
    if not args.feedback:
        print("feedback withheld: no step counts as a hint or a recovery (no discount)")
    if args.show is not None:
        report = next(r for r in reports if r.trajectory_id == args.show)
        _print_steps(report)
    return 0


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _print_reports(reports) -> None:
    width = max([len("id")] + [len(r.trajectory_id) for r in reports])
    print(f"{'id':<{width}}  accepted  rejected  credit  outcome  milestones")
    for r in reports:
        outcome = "n/a" if r.outcome is None else f"{r.outcome:g}"
        print(f"{r.trajectory_id:<{width}}  {'yes' if r.accepted_termination else 'no':<8}  "
              f"{r.rejected:>8}  {r.credit:>6.2f}  {outcome:>7}  {', '.join(sorted(r.milestones))}")


def _print_summary(summary) -> None:
    print()
    print(f"summary: n={summary.n} pcr={_fmt(summary.pcr)} rf_pcr={_fmt(summary.rf_pcr)} "
          f"no_rejection_pcr={_fmt(summary.no_rejection_pcr)} "
          f"hint_rate={_fmt(summary.hint_rate)} outcome_rate={_fmt(summary.outcome_rate)} "
          f"mean_credit={_fmt(summary.mean_credit)}")
    print("PCR x outcome:")
    print(f"  {'':<24} {'success':>8} {'failure':>8} {'unknown':>8}")
    for row in summary.table.rows():
        label = ("accepted termination" if row["accepted termination"] == "yes"
                 else "no accepted termination")
        print(f"  {label:<24} {row['success']:>8} {row['failure']:>8} {row['unknown']:>8}")


def _print_steps(report) -> None:
    print()
    print(f"steps of {report.trajectory_id}: {report.termination.reason or 'accepted termination'}")
    for step in report.steps:
        verdict = "ok " if step.accepted else "REJ"
        line = f"  {step.index:>3} {verdict} [{step.phase_before} -> {step.phase}] {step.action.summary(100)}"
        print(line)
        if step.milestones:
            print(f"        milestones: {', '.join(step.milestones)} (+{step.credit:.2f})")
        if not step.accepted:
            print(f"        feedback: {step.feedback.render()}")
