"""``workbench audit``, ``workbench metrics`` and ``workbench import-complibench``."""

from __future__ import annotations

import argparse
import json
import sys

from workbench.audit.judge.probability import DEFAULT_SAMPLE_TEMPERATURE, DEFAULT_SAMPLES
from workbench.commands._case_formats import add_case_format_args, read_cases_arg
from workbench.commands._ci_gate import GateRun, add_gate_args
from workbench.commands._common import (
    action,
    add_actor_option,
    add_index_and_cases,
    cli_gateway,
    load_cases_or_fail,
    load_index_or_fail,
)
from workbench.vocabulary import (
    JUDGED_MODES,
    EmptySeedPolicy,
    JudgeMode,
    KeywordMethod,
    LightragPresetName,
    ProbabilityMethod,
    Render,
    Seeding,
    Split,
    StrategyName,
    values,
    verdict_word,
)

STRATEGY_NAMES = values(StrategyName)


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub, "audit", _audit,
        help="audit agent replies (cases JSONL) against a policy index; writes traces JSONL",
        description="Audit each case under one policy-access strategy. Each output line is the "
        "case's AuditTrace as JSON. Re-running the same command skips cases already in --out.",
    )
    add_index_and_cases(p)
    add_case_format_args(p)  # --format/--map/--policy (issue 34)
    add_gate_args(p)  # --fail-on/--junit (issue 34)
    p.add_argument("--strategy", required=True, choices=STRATEGY_NAMES)
    p.add_argument("--keywords", choices=values(KeywordMethod), default=KeywordMethod.LEXICAL,
                   help="audit keywords: deterministic words (default) or the keyworder role")
    p.add_argument("--max-keywords", type=int, default=None,
                   help="keyword limit (default 4 for llm, 6 for lexical)")
    p.add_argument("--no-judge", action="store_true", help="build contexts only; no judge call")
    p.add_argument("--score-only", action="store_true",
                   help="score first: read each judging prompt with the embedded judge's weights "
                   "and keep its activations (OUT.features/), without generating an answer; an "
                   "activation scorer decides the cases, and the judge's reason is asked for "
                   "only where a person will read it (`workbench verdicts --explain`, Replay). "
                   "Needs --out")
    p.add_argument("--judge-mode", choices=JUDGED_MODES, default=JudgeMode.WHOLE,
                   help="whole: one verdict over the whole context; per-rule: one question per "
                   "rule; checklist: one call giving every rule a status, the verdict derived")
    p.add_argument("--probability", choices=values(ProbabilityMethod), default=ProbabilityMethod.AUTO,
                   help="where each verdict's violation probability comes from: auto (token "
                   "log-probabilities when the server returns them, else --samples sampled "
                   "answers; default), logprobs, sampled, or off")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                   help=f"sampled answers per verdict when sampling (default {DEFAULT_SAMPLES})")
    p.add_argument("--sample-temperature", type=float, default=DEFAULT_SAMPLE_TEMPERATURE,
                   help=f"temperature of sampled answers (default {DEFAULT_SAMPLE_TEMPERATURE})")
    p.add_argument("--split", choices=values(Split), default=Split.GROUPED,
                   help="a context over the judge's window is judged in parts: closure-ordered "
                   "groups (each rule with its prerequisites) or one question per rule")
    p.add_argument("--empty-seed", choices=values(EmptySeedPolicy),
                   default=EmptySeedPolicy.ERROR,
                   help="no seed rule found: report EmptySeed (default), judge every rule, or "
                   "(per-skill) judge every rule of each routed SKILL that got no seed")
    p.add_argument("--budget", type=int, default=None, help="token budget of the rendered context")
    p.add_argument("--max-seeds", type=int, default=8, help="seed cap of --seeding keywords")
    p.add_argument("--seeding", choices=values(Seeding), default=Seeding.SCORED,
                   help="scored: rank rules for the whole case and take seeds while their "
                   "closure fits the target (default); keywords: the v1 keyword match")
    p.add_argument("--render", choices=values(Render), default=Render.COMPACT,
                   help="rule rendering: compact three-line blocks (default) or the v1 form")
    p.add_argument("--target-tokens", type=int, default=None,
                   help="soft token target the seeds' closure should fit (default 1600); "
                   "bm25/dense then fill it instead of taking --top-k")
    p.add_argument("--top-k", type=int, default=6, help="passages for bm25 and dense")
    p.add_argument("--lightrag-preset", choices=values(LightragPresetName),
                   default=LightragPresetName.DEFAULT,
                   help="--strategy lightrag settings: the project's defaults (LightRAG's "
                   "1,200-token chunks, queried with the audit keywords) or the first "
                   "paper's B.5 (12,000-token chunks, top_k 20, chunk_top_k 8, a 6,000-token "
                   "cap, LightRAG's own keywords from SKILL names + state + history + reply; "
                   "its own index)")
    p.add_argument("--concurrency", type=int, default=2, help="cases audited at once")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="seconds of audit work per case, model calls not counted (default: "
                   "WORKBENCH_AUDIT_TIME_LIMIT or 120; 0: none); a case past it gets a "
                   "TimeLimit error and the run goes on")
    p.add_argument("--limit", type=int, default=None, help="audit only the first N cases")
    p.add_argument("--order", choices=["input", "skill"], default="input",
                   help="audit cases in file order (default), or grouped by the SKILLs they name "
                   "(cases naming none last): a raw prompt starts with the whole SKILL "
                   "document, so consecutive cases of one SKILL let a server with prompt "
                   "caching (llama.cpp, vLLM, SGLang) read it once")
    p.add_argument("--out", default=None, help="traces JSONL (default: standard output)")
    p.add_argument("--no-retry-failed", dest="retry_failed", action="store_false",
                   help="on resume, keep cases whose trace in --out failed on a model or internal "
                   "error as they are (default: audit them again; the newest trace counts)")
    p.add_argument("--store", metavar="DATASET", default=None,
                   help="also save the cases and traces in the workbench database under DATASET")
    p.add_argument("--run-id", default=None, help="run id for --store (default: a timestamp)")
    add_actor_option(p)  # --store writes cases (gold labels too) and verdicts: the roster's roles
    p.add_argument("--no-cache", action="store_true", help="do not use the database response cache")
    p.add_argument("--no-activations", dest="activations", action="store_false",
                   help="do not keep the judge's activations: by default, when the judge is the "
                   "embedded model in this process (whole mode, --out given), its hidden states "
                   "are read in its own pass over the prompt and kept beside --out "
                   "(OUT.features/), so an activation scorer can decide the cases")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local threads (default), or Ray Data workers (--concurrency of them)")
    p.add_argument("--address", default=None,
                   help="with --engine ray: a running Ray cluster (ray://HOST:10001 or auto); "
                   "default: start Ray on this machine")

    p = action(sub, "metrics", _metrics, help="ACC, violation-F1, tokens and latency per strategy")
    p.add_argument("traces", nargs="+", help="traces JSONL file(s) from `workbench audit`")
    p.add_argument("--cases", default=None, help="cases JSONL: labels and gold rules from here")
    p.add_argument("--index", default=None,
                   help="policy index: also measure gold coverage of passage/document contexts")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--threshold", default=None, metavar="P|dataset:NAME|policy:NAME",
                   help="decide p >= P for the at-threshold figures: a number, or the threshold "
                   "saved in the workbench database for a dataset or policy (`workbench calibrate "
                   "--save`); default: chosen by cross-validation grouped by conversation")

    p = action(
        sub, "import-complibench", _import_complibench,
        help="turn CompliBench conversations into SKILLs, an index and audit cases",
    )
    p.add_argument("dir", help="folder with conversation_*.json (e.g. data/airlines)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--long", action="store_true",
                   help="long-policy variant: add the domain's other workflows as distractors")
    p.add_argument("--distractors", type=int, default=None,
                   help="with --long: number of distractor workflows per SKILL (default: all)")
    p.add_argument("--pseudonymise", metavar="SALT", default=None,
                   help="replace session ids by SHA-256(SALT + id)")


def _probability_options(args):
    from workbench.audit.judge import ProbabilityOptions
    from workbench.commands._common import CliError

    try:
        return ProbabilityOptions(args.probability, args.samples, args.sample_temperature)
    except ValueError as exc:
        raise CliError(str(exc), "see `workbench audit --help` for --probability, --samples "
                       "and --sample-temperature") from None


def _audit(args) -> int:
    from pathlib import Path

    from workbench.audit.batch import AuditBatch
    from workbench.audit.pipeline import AuditOptions
    from workbench.audit.policy import AuditIndex
    from workbench.audit.policy_context import ContextOptions
    from workbench.commands._common import CliError

    index = load_index_or_fail(args.index)
    for warning in index.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.out is not None and Path(args.out).is_dir():
        raise CliError(f"--out {args.out} is a folder; give a file for the traces (e.g. "
                       f"{Path(args.out) / 'traces.jsonl'})")
    gate = GateRun.from_args(args)
    cases = read_cases_arg(args, args.cases, index.skills)
    if args.limit is not None:
        cases = cases[: args.limit]
    if args.order == "skill":  # stable: file order within each SKILL; unnamed ones last
        cases = sorted(cases, key=lambda c: (not c.skills, tuple(c.skills or ())))
    opts = AuditOptions(
        keywords=args.keywords,
        max_keywords=args.max_keywords,
        judge_mode=JudgeMode.NONE if (args.no_judge or args.score_only) else args.judge_mode,
        context=ContextOptions(
            max_seeds=args.max_seeds, empty_seed=args.empty_seed, budget=args.budget, top_k=args.top_k,
            seeding=args.seeding, render=args.render, seed_target=args.target_tokens,
            lightrag_preset=args.lightrag_preset,
        ),
        split=args.split,
        probability=_probability_options(args),
        time_limit_s=args.time_limit,
    )
    batch = AuditBatch.configure(args.strategy, opts, retry_failed=args.retry_failed)
    if (window := batch.options.window) is not None:
        print(f"[audit] judge window: {window.tokens} tokens ({window.source})", file=sys.stderr)
    # --store: who acts is settled (and refused, nothing written) before any model call.
    stored = _store_sink(args, cases) if args.store else None
    # LightRAG indexes with the model even under --no-judge: it gets this audit's gateway.
    gateway = cli_gateway(args.no_cache) if batch.needs_model else None
    from workbench.audit.sinks import JsonlFileSink, StdoutSink, TeeSink

    # Traces go straight where they belong: --out (resumable) or standard output, and with
    # --store into a stored run as well. Resume reads --out only: stdout holds nothing.
    sink = JsonlFileSink(args.out) if args.out is not None else StdoutSink()
    if stored is not None:
        sink = TeeSink(sink, stored)

    def progress(trace) -> None:
        state = trace.error.kind if trace.error else (
            verdict_word(trace.violation) if trace.verdict else "context")
        if trace.verdict is not None and trace.verdict.probability is not None:
            state += f" (p={trace.verdict.probability:.2f})"
        fit = trace.window
        notes = f", in {len(trace.parts) or fit.split} parts" if fit and fit.split else ""
        if fit and fit.turns_dropped:
            notes += f", {fit.turns_dropped} oldest turns left out"
        print(f"[audit] {trace.id} {trace.strategy}: {state} ({trace.context_tokens} ctx tokens{notes})",
              file=sys.stderr, flush=True)
        if gate is not None:
            gate.collect(trace)

    from workbench.commands import _activations

    engine, features = _engine_and_features(args, batch, index, gateway, cases)
    try:
        summary = batch.run(cases, AuditIndex(index), sink, gateway,
                            concurrency=args.concurrency, on_trace=_then(progress, features),
                            engine=engine)
    finally:
        if gateway is not None:
            gateway.close()
        if features is not None:
            _activations.report(features)
    print(
        f"[audit] {summary.done} audited ({summary.retried} of them retried after an earlier "
        f"error), {summary.skipped} already in {args.out or 'output'}, "
        f"{summary.judged} judged; errors: {summary.errors or 'none'}",
        file=sys.stderr,
    )
    if stored is not None:
        _store_earlier(args, cases, stored)
    return gate.finish(cases, index, stored) if gate is not None else 0


def _engine_and_features(args, batch, index, gateway, cases):
    """The batch engine (None: local threads) and the activations' writer (None: not kept;
    ``workbench.commands._activations``)."""
    from workbench.commands import _activations

    plan = _activations.activation_plan(args, batch.options.judge_mode,
                                        gateway.config if gateway is not None else None)
    if args.score_only:
        plan = _activations.score_only_plan(args)
    if args.engine == "ray":
        factory = readings = features = None
        if plan is not None:
            factory, readings, features = _activations.ray_parts(args, plan, cases)
        return _ray_engine(args, index, batch.needs_model, factory, readings), features
    features = _activations.local_writer(args, plan, gateway, cases) if plan is not None else None
    return None, features


def _then(first, second):
    """``first(trace)`` then, when given, ``second(trace)``."""
    if second is None:
        return first

    def both(trace) -> None:
        first(trace)
        second(trace)

    return both


def _ray_engine(args, index, needs_model: bool, activations=None, readings=None):
    """The Ray engine for this command: each worker makes the gateway this process would
    (same configuration, recording mode and database cache) from the same environment."""
    import functools
    import os

    from workbench.audit.ray_engine import RayEngine
    from workbench.commands._common import CliError
    from workbench.settings import PREFIX

    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1 (the number of Ray workers)")
    env = {k: v for k, v in os.environ.items() if k.startswith(PREFIX)}
    factory = functools.partial(cli_gateway, args.no_cache) if needs_model else None
    try:
        import ray  # noqa: F401
    except ImportError:
        raise CliError("--engine ray needs Ray Data: pip install 'ray[data]' "
                       "(or drop --engine ray to audit on local threads)") from None
    return RayEngine(index.to_dict(), factory, workers=args.concurrency, address=args.address,
                     env=env, activations=activations, readings=readings)


def _store_sink(args, cases):
    """The store sink of ``--store``: the cases are stored first, then each trace as it
    finishes, in run ``--run-id`` (default: the time now), as the ``--as`` person. Storing
    a case again replaces its gold label, so both roles ("import cases", "store audit
    results") are checked before anything is written."""
    from store.audit_repo import StoreSink, save_cases
    from store.db import make_engine
    from workbench.clock import utcnow
    from workbench.commands._common import cli_actor
    from workbench.identity.roles import require

    engine = make_engine()
    actor = cli_actor(args, engine)
    require(actor, "store audit results")
    require(actor, "import cases")
    save_cases(engine, args.store, cases, actor=actor)
    return StoreSink(engine, args.run_id or utcnow().strftime("%Y%m%dT%H%M%SZ"),
                     args.store, actor=actor)


def _store_earlier(args, cases, sink) -> None:
    """A resumed ``--out`` run: the traces of earlier runs in the file are the run's results
    too, so the newest per case is stored (one equal to the stored newest adds nothing)."""
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import read_traces

    wanted = {c.id for c in cases}
    earlier = [] if args.out is None else [
        t for t in latest_per_case(read_traces(args.out)[0], key=trace_key)
        if t.id in wanted and t.strategy == args.strategy]
    for trace in earlier:
        sink.write(trace)
    print(f"[audit] stored {len(cases)} cases and {sink.added} new traces as dataset "
          f"{args.store!r}, run {sink.run_id!r}", file=sys.stderr)


def _metrics(args) -> int:
    from pathlib import Path

    from workbench.audit.metrics import compute_metrics, format_table
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import no_valid_trace, read_traces
    from workbench.commands._common import (
        CliError,
        activation_scores_beside,
        default_beside,
        threshold_arg,
    )

    traces, skipped, empty = [], [], []
    for path in args.traces:
        if not Path(path).exists():
            raise CliError(f"{path}: no such traces file; write one with `workbench audit --out`")
        found, problems = read_traces(path)
        traces += latest_per_case(found, key=trace_key)  # a retried case counts once
        skipped += problems
        if not found:
            empty.append(no_valid_trace(path, problems))
    for problem in skipped[:10]:
        print(f"warning: skipped {problem}", file=sys.stderr)
    if len(skipped) > 10:
        print(f"warning: skipped {len(skipped) - 10} more line(s)", file=sys.stderr)
    if empty:  # a file of which no line counted would make the figures silently partial
        raise CliError("; ".join(empty), "give the JSONL that `workbench audit --out` writes")
    labels = gold = None
    if args.cases:
        cases = load_cases_or_fail(args.cases)
        labels = {c.id: c.label for c in cases}
        gold = {c.id: ids for c in cases if (ids := c.gold_rules)}
    spans = _gold_spans(args.index, cases, gold) if gold and args.index else None
    threshold = threshold_arg(args.threshold)
    if threshold is None and (found := default_beside(args.traces)) is not None:
        threshold = found[1]  # the built-in scorer: these traces' activations are beside them
    activations = activation_scores_beside(threshold, args.traces, traces)
    rows = compute_metrics(traces, labels, gold or None, spans, threshold, activations)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=1))
    else:
        print(format_table(rows))
    return 0


def _gold_spans(index_path, cases, gold):
    """Case id -> [(SKILL, spans of each gold rule)], for cases whose every gold rule is found."""
    index = load_index_or_fail(index_path)
    spans = {}
    for c in cases:
        found = []
        for rid in gold.get(c.id, []):
            for name in c.skills or []:
                if name in index.skills and rid in index[name].graph.rules:
                    rule = index[name].graph.rules[rid]
                    found.append((name, [(sp.start, sp.end) for sp in rule.spans]))
                    break
        if found and len(found) == len(gold[c.id]):
            spans[c.id] = found
    return spans


def _import_complibench(args) -> int:
    from workbench.audit.importers.complibench import import_complibench
    from workbench.commands._common import CliError

    try:
        s = import_complibench(args.dir, args.out, long=args.long, distractors=args.distractors,
                               salt=args.pseudonymise)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    print(f"{s.conversations} conversations -> {s.skills} SKILLs ({s.rules} rules), {s.cases} cases "
          f"({s.violations} violations) in {args.out}")
    return 0
