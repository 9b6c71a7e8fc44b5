"""``--fail-on`` and ``--junit`` of ``workbench audit`` (the CI gate), kept apart from the
command's own flags: ``add_gate_args`` declares them, ``GateRun`` collects each finished
trace and, after the run, writes the report and gives the exit code
(``workbench.audit.ci_gate``). Not a command (``workbench.cli`` skips ``_*`` modules)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

GATE_HELP = (
    "CI gate: exit 1 when a case's verdict is a violation: decided as the workbench decides "
    "it — under --store the dataset's saved setting, else the built-in activation scorer when "
    "the run keeps activations beside --out, else the judge's words. With =P (e.g. "
    "violation=0.8) a case fails when the judge's P(violation) is at least P; a verdict "
    "without a probability is decided by its bare violation flag. Cases that could not be "
    "judged (errors) make the exit code 3 when nothing failed; 0 means every case was judged "
    "and passed."
)


def add_gate_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("CI gate")
    g.add_argument("--fail-on", dest="fail_on", default=None, metavar="violation[=P]", help=GATE_HELP)
    g.add_argument("--junit", dest="junit", default=None, metavar="FILE",
                   help="write a JUnit XML report: one test case per audited case, a failure "
                   "naming the violated rules and their source spans, an error for a case that "
                   "could not be judged (with --fail-on P, failures follow the gate)")


class GateRun:
    """The gate of one ``workbench audit`` run: ``collect`` each trace, then ``finish``."""

    def __init__(self, args: argparse.Namespace):
        from workbench.audit.ci_gate import FailOn

        self.args = args
        self.rule = FailOn.parse(args.fail_on) if args.fail_on else FailOn()
        self.traces: dict[str, Any] = {}

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> GateRun | None:
        """The gate asked for (None: neither flag), checked before any case is audited."""
        from workbench.commands._common import CliError

        if not getattr(args, "fail_on", None) and not getattr(args, "junit", None):
            return None
        if getattr(args, "no_judge", False):
            raise CliError("--fail-on and --junit need verdicts; drop --no-judge",
                           "a --no-judge run judges nothing the gate could fail on")
        if args.junit and Path(args.junit).is_dir():
            raise CliError(f"--junit {args.junit} is a folder", "give a file, e.g. audit-junit.xml")
        return cls(args)

    def collect(self, trace) -> None:
        self.traces[trace.id] = trace

    def finish(self, cases, index, stored=None) -> int:
        """Write ``--junit`` and return the exit code. Cases a resumed run skipped count
        with their newest trace in ``--out`` (same strategy, judge mode and keywords).
        ``stored``: the ``--store`` sink (``store.audit_repo.StoreSink``): the cases are then
        decided as the dataset's pages show them — under its saved setting (unless ``=P``
        names the gate's own) with its stored explanations of the run. Without ``stored``
        and ``=P``, a run whose activations are kept beside ``--out`` is decided by the
        built-in activation scorer, as ``workbench verdicts`` and ``export-verdicts`` decide
        that file; else by the judge's words."""
        from workbench.audit import ci_gate
        from workbench.audit.trace import latest_per_case, run_key, trace_key
        from workbench.audit.trace_file import read_traces

        args = self.args
        if args.out is not None and Path(args.out).is_file():
            wanted = {c.id for c in cases} - set(self.traces)
            earlier = [t for t in latest_per_case(read_traces(args.out)[0], key=trace_key)
                       if t.id in wanted and trace_key(t)
                       == run_key(t.id, args.strategy, args.judge_mode, args.keywords)]
            for t in earlier:
                self.traces.setdefault(t.id, t)
        saved, explanations, run = None, None, ""
        if stored is not None:
            from store.explanations import explanations_for
            from store.verdicts import dataset_setting

            if self.rule.threshold is None:
                saved = dataset_setting(stored.engine, stored.dataset)
            explanations, run = explanations_for(stored.engine, stored.dataset), stored.run_id
        elif self.rule.threshold is None and args.out is not None and Path(args.out).is_file():
            saved = self._builtin_beside(Path(args.out))
        results = ci_gate.outcomes([c.id for c in cases], self.traces, self.rule, saved,
                                   explanations, run)
        if saved is not None and saved[1].scorer is not None and stored is None:
            print(f"[gate] decided by the built-in activation scorer on the activations beside "
                  f"{args.out}", file=sys.stderr)
        if args.junit:
            sources = {s.name: s.source for s in index}
            report = ci_gate.junit_xml(
                results, suite=f"workbench audit {args.strategy} {Path(args.cases).name}",
                properties={"strategy": args.strategy, "judge_mode": args.judge_mode,
                            "cases": args.cases, "index": args.index, "fail_on": str(self.rule)},
                sources=sources, replies={c.id: c.model_response for c in cases})
            path = Path(args.junit)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(report, encoding="utf-8")
            print(f"[gate] JUnit report: {path}", file=sys.stderr)
        print(ci_gate.summary_line(results, self.rule), file=sys.stderr)
        for o in results:
            if o.status != "passed":
                print(f"[gate] {o.status}: {o.case_id}: {o.message}", file=sys.stderr)
        return ci_gate.exit_code(results) if args.fail_on else 0

    def _builtin_beside(self, out: Path):
        """The built-in scorer with its scores of this run's cases (keyed as a saved setting
        keys them: case and strategy), when the activations beside ``out`` hold what it
        reads; else None."""
        from dataclasses import replace

        from workbench.commands._common import activation_scores_beside, default_beside
        from workbench.decision.features import features_dir, read_index

        found = default_beside([out])
        if found is None:
            return None
        version, setting = found
        strategy = self.args.strategy
        ours = {r.case_id for r in read_index(features_dir(out)) if r.strategy == strategy}
        traces = [t for t in self.traces.values() if t.id in ours]
        scores = activation_scores_beside(setting, [out], traces) or {}
        return version, replace(setting, case_scores={
            (cid, strategy): s for cid, s in scores.items() if cid in ours})
