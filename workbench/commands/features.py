"""``workbench features``: read the judge's activations for the cases of a run, so a
scorer learned from labelled cases can decide them (``workbench calibrate``, ``metrics``)."""

from __future__ import annotations

import argparse
import sys

from workbench.commands._common import action, command_group


def register(sub: argparse._SubParsersAction) -> None:
    actions = command_group(
        sub, "features", dest="features_action",
        help="capture the judge's activations (hidden states) for a run's cases",
        description="The judge's hidden states, read from the same weights that judge by "
        "llama.cpp in this process (at the last prompt token and pooled over the reply's "
        "tokens, every second layer), kept beside the run (RUN.features/) and keyed by case, "
        "strategy and prompt hash. A capture resumes where it stopped. `workbench audit` keeps "
        "them during the judge's own pass; this command is for runs made without them.",
    )
    p = action(actions, "capture", _capture,
               help="capture the judge's activations for the traces of a run",
               description="For each trace with a rendered context, rebuild the whole-context "
               "judging prompt and read the judge's hidden states at its last token and over "
               "the reply (about as long as the judge reads the prompt: ~50 s for 2,500 tokens "
               "on 2 idle cores). A case captured before with fewer features (an older "
               "capture kept the last token only, which the built-in scorer does not read) is "
               "read again; one already complete is skipped.")
    p.add_argument("traces", help="traces JSONL from `workbench audit` (with or without a judge)")
    p.add_argument("--cases", required=True, help="the cases the traces audited")
    p.add_argument("--model", default="embedded",
                   help="the judge's weights: embedded (default), embedded:small, a .gguf or a folder")
    p.add_argument("--limit", type=int, default=None, help="capture at most N new cases")
    p.add_argument("--layers", default=None,
                   help="hidden-state indices to keep, comma-separated (default: every second layer)")
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    p.add_argument("--reader", choices=["llama.cpp", "transformers"], default="llama.cpp",
                   help="llama.cpp (default: the judge's own kernels, no torch) or transformers "
                   "(the GGUF dequantised into torch, last prompt token only: how features were "
                   "read before; needs pip install '.[activations]')")
    s = action(actions, "status", _status, help="how many of a run's cases have activations")
    s.add_argument("traces")


def _capture(args) -> int:
    from pathlib import Path

    from workbench.audit.activations import capture_run
    from workbench.audit.cases import load_cases
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import read_traces
    from workbench.commands._common import CliError
    from workbench.decision.features import features_dir
    from workbench.extras import require
    from workbench.llm.activations import ActivationReader

    # First, before any file is read or model loaded: without the extra the capture failed
    # only after "loading ...", gguf's absence as a failure to load the model.
    if args.reader == "transformers":
        require("activations", "workbench features capture --reader transformers")
    if not Path(args.traces).is_file():
        raise CliError(f"{args.traces}: no such traces file", "give the JSONL `workbench audit --out` wrote")
    traces, problems = read_traces(args.traces)
    for problem in problems[:5]:
        print(f"warning: skipped {problem}", file=sys.stderr)
    traces = latest_per_case(traces, key=trace_key)
    try:
        cases = {c.id: c for c in load_cases(args.cases)}
    except FileNotFoundError as exc:
        raise CliError(str(exc), "give the cases file the run audited") from None
    layers = None
    if args.layers:
        try:
            layers = [int(x) for x in args.layers.split(",") if x.strip()]
        except ValueError:
            raise CliError(f"--layers {args.layers!r}: give whole numbers, e.g. 8,16,24") from None
    folder = features_dir(Path(args.traces))
    if args.reader == "transformers":
        print(f"[features] loading {args.model} into transformers (about a minute) ...",
              file=sys.stderr)
        reader = ActivationReader(args.model, layers=layers, threads=args.threads)
    else:
        from workbench.llm.onepass import JudgeReader

        reader = JudgeReader(args.model, layers=layers, threads=args.threads)
    summary = capture_run(traces, cases, folder, reader, limit=args.limit,
                          progress=lambda m: print(f"[features] {m}", file=sys.stderr))
    rate = f", {summary.prompt_tokens / summary.seconds:.0f} prompt tokens/s" if summary.seconds else ""
    print(f"[features] {summary.captured} captured ({summary.seconds:.0f} s{rate}), "
          f"{summary.already} already there, {len(summary.no_context)} without a context, "
          f"{len(summary.no_case)} without their case; in {folder}", file=sys.stderr)
    return 0


def _status(args) -> int:
    from pathlib import Path

    from workbench.decision.features import features_dir, read_index

    folder = features_dir(Path(args.traces))
    recs = read_index(folder)
    if not recs:
        print(f"no activations captured for {args.traces} (looked in {folder})")
        return 0
    secs = sum(r.seconds for r in recs)
    print(f"{len(recs)} cases captured in {folder}: model {recs[0].model}, layers "
          f"{', '.join(map(str, recs[0].layers))}; {secs / len(recs):.0f} s a case on average")
    return 0
