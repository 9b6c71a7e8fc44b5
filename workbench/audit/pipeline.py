"""Auditing one case: keywords -> routing -> context (strategy) -> fit -> judgment, all traced.

Each step is a function that returns its value and records what it found on the trace; a step
that ends the audit with an outcome the user must see (no route, unknown SKILL, empty seed,
budget exceeded, an item too large for the judge's window, a model call that failed for good)
raises :class:`Outcome`, which carries the error and the failed call's record (a
``ModelCallError`` carries the usage of the call that failed). ``audit_case`` catches it once
and never raises for such outcomes. A context over the judge's window is not an outcome: it
is judged in parts (``parts.py``), a too long conversation loses its oldest turns
(``window.py``), both recorded in the trace. Configuration problems and ``MissingRecording``
(a replay without a recording) do raise: they are not facts about the case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from workbench.audit.cases import AuditCase
from workbench.audit.deadline import CaseTimeLimit, case_deadline, check_deadline
from workbench.audit.judge import PROMPTS, ProbabilityOptions, call_record, failed_record, judge_context
from workbench.audit.keywords import (
    DEFAULT_MAX_LEXICAL_KEYWORDS,
    DEFAULT_MAX_LLM_KEYWORDS,
    KEYWORD_METHODS,
    KEYWORDS_PROMPT,
    clean_keywords,
    keyword_messages,
    keyword_schema,
    lexical_keywords,
)
from workbench.audit.parts import SPLITS, judge_in_parts, plan_parts, render_part
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions, ContextUnavailable, PolicyContext, Strategy
from workbench.audit.prompts import load_prompt
from workbench.audit.routing import DEFAULT_MAX_SKILLS, Routing, RoutingError, route
from workbench.audit.strategies import get_strategy
from workbench.audit.trace import AuditError, AuditTrace, ModelCall, WindowFit
from workbench.audit.window import JudgeWindow, WindowExceeded, fit_case, judge_room, judge_window
from workbench.errors import WorkbenchError
from workbench.graph import PolicyIndex
from workbench.llm.errors import ModelCallError
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import (
    ErrorKind,
    JudgeMode,
    KeywordMethod,
    ModelRole,
    Split,
    StrategyName,
    values,
)

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

JUDGE_MODES = values(JudgeMode)
T = TypeVar("T")


@dataclass(frozen=True)
class AuditOptions:
    """Everything that shapes an audit besides the case, the index and the strategy."""

    keywords: str = KeywordMethod.LEXICAL
    max_keywords: int | None = None  # default: 4 for llm, 6 for lexical
    max_skills: int = DEFAULT_MAX_SKILLS
    judge_mode: JudgeMode = JudgeMode.WHOLE
    keep_prompts: bool = False
    context: ContextOptions = ContextOptions()
    # How to judge a context over the judge's window: "grouped" (closure-ordered groups)
    # or "per-rule" (see workbench.audit.parts).
    split: str = Split.GROUPED
    # The judge's context window; None: this case's audit works it out from the gateway's
    # configuration when judging (a batch works it out once for the run, with or without a
    # judge: workbench.audit.batch.AuditBatch.configure).
    window: JudgeWindow | None = None
    # Where the verdict's violation probability comes from (log-probabilities or samples).
    probability: ProbabilityOptions = ProbabilityOptions()
    # Seconds of the audit's own work (model calls not counted) a case may take before it
    # is stopped with a CaseTimeLimit outcome (workbench.audit.deadline); None: no limit.
    time_limit_s: float | None = None

    def with_context(self, **changes: Any) -> AuditOptions:
        return replace(self, context=replace(self.context, **changes))

    @property
    def keyword_limit(self) -> int:
        if self.max_keywords is not None:
            return self.max_keywords
        if self.keywords == KeywordMethod.LLM:
            return DEFAULT_MAX_LLM_KEYWORDS
        return DEFAULT_MAX_LEXICAL_KEYWORDS


class Outcome(WorkbenchError):
    """A step ended the audit: ``error`` goes on the trace, ``calls`` into its usage."""

    def __init__(self, error: AuditError, calls: list[ModelCall] | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.calls = calls or []


def _model_failure(step: str, exc: ModelCallError) -> Outcome:
    record = failed_record(step, exc)
    return Outcome(AuditError(ErrorKind.MODEL_CALL_ERROR, f"{step}: {exc}", exc.kind),
                   [record] if record is not None else [])


def _check(opts: AuditOptions, gateway: ModelGateway | None) -> None:
    if opts.judge_mode not in JUDGE_MODES:
        raise ValueError(f"judge mode {opts.judge_mode!r} is not one of {', '.join(JUDGE_MODES)}")
    if opts.split not in SPLITS:
        raise ValueError(f"split {opts.split!r} is not one of {', '.join(SPLITS)}")
    if opts.keywords not in KEYWORD_METHODS:
        raise ValueError(f"keyword method {opts.keywords!r} is not one of {', '.join(KEYWORD_METHODS)}")
    if gateway is None and (opts.keywords == KeywordMethod.LLM or opts.judge_mode != JudgeMode.NONE):
        raise ValueError(
            "a model gateway is needed for LLM keywords or judging; pass gateway=Gateway.from_env() "
            "or use keywords='lexical' and judge_mode='none'"
        )


def audit_case(
    case: AuditCase,
    index: AuditIndex | PolicyIndex,
    strategy: str | Strategy = StrategyName.CDG,
    gateway: ModelGateway | None = None,
    options: AuditOptions | None = None,
) -> AuditTrace:
    """Audit one case under one strategy and return its complete trace.

    ``index``: pass an :class:`AuditIndex` when auditing many cases (a bare PolicyIndex is
    prepared on every call). ``gateway`` (a ``workbench.llm.Gateway``) is needed when
    ``options.keywords == "llm"`` or ``options.judge_mode != "none"``; ValueError otherwise.
    """
    opts = options or AuditOptions()
    _check(opts, gateway)
    aindex = index if isinstance(index, AuditIndex) else AuditIndex(index)
    strat = get_strategy(strategy, gateway) if isinstance(strategy, str) else strategy
    trace = AuditTrace(
        id=case.id, strategy=strat.name, session=case.session, label=case.label,
        keywords_method=opts.keywords, judge_mode=opts.judge_mode,
        prompt_version=PROMPTS.get(opts.judge_mode, ""),
    )
    if trace.prompt_version:
        trace.prompt_sha256 = load_prompt(trace.prompt_version).sha256
    trace.settings = _settings(opts, gateway)
    laps = _Laps(trace)
    try:
        with case_deadline(opts.time_limit_s, lambda: _model_seconds(trace)):
            _run(case, aindex, strat, gateway, opts, trace, laps)
    except Outcome as out:
        trace.error = out.error
        trace.usage += out.calls
    except CaseTimeLimit as exc:  # the case's own outcome: the batch goes on
        trace.error = AuditError(exc.kind, str(exc))
    finally:
        laps.finish()
    return trace


def _settings(opts: AuditOptions, gateway: ModelGateway | None) -> dict[str, Any]:
    """What a stored trace says shaped it (``AuditTrace.settings``): the page shows these."""
    roles: list[ModelRole] = []
    if opts.keywords == KeywordMethod.LLM:
        roles.append(ModelRole.KEYWORDER)
    if opts.judge_mode != JudgeMode.NONE:
        roles.append(ModelRole.JUDGE)
    configured = getattr(getattr(gateway, "config", None), "roles", None) or {}
    c = opts.context
    return {
        "seeding": str(c.seeding), "render": str(c.render), "max_seeds": c.max_seeds,
        "budget": c.budget, "target_tokens": c.seed_target, "split": str(opts.split),
        "probability": str(opts.probability.method) if opts.judge_mode != JudgeMode.NONE else "",
        "models": {str(r): configured[r].model for r in roles if r in configured},
    }


def _run(case: AuditCase, index: AuditIndex, strat: Strategy, gateway: ModelGateway | None,
         opts: AuditOptions, trace: AuditTrace, laps: _Laps) -> None:
    trace.keywords = laps.run("keywords", _keywords, case, index, strat, gateway, opts, trace)
    routing = laps.run("routing", _route, case, index, opts, trace)
    window = _window(opts, gateway)
    ctx = laps.run("context", _context, case, index, strat, routing, opts, window, trace)
    judged = laps.run("fit", _fit, case, ctx, opts, window, trace)
    if opts.judge_mode == JudgeMode.NONE:
        return
    trace.verdict = laps.run("judge", _judge, judged, index, strat, ctx, gateway, opts, trace)


def _model_seconds(trace: AuditTrace) -> float:
    """Seconds of the case's model calls so far (not its own work: cache hits cost nothing)."""
    return sum(c.latency_ms for c in trace.usage if not c.cached) / 1000.0


class _Laps:
    """Each step's wall time into ``trace.timings_ms`` (also when the step ends the audit)."""

    def __init__(self, trace: AuditTrace) -> None:
        self.trace = trace
        self.start = time.perf_counter()

    def run(self, name: str, step: Callable[..., T], *args: Any) -> T:
        began = time.perf_counter()
        try:
            out = step(*args)
        finally:
            self.trace.timings_ms[name] = round((time.perf_counter() - began) * 1000.0, 3)
        if name != "judge":  # a verdict once given is kept, however long it took
            check_deadline(f"after step {name}")
        return out

    def finish(self) -> None:
        t = self.trace
        t.timings_ms["total"] = round((time.perf_counter() - self.start) * 1000.0, 3)
        t.timings_ms["pipeline"] = round(
            t.timings_ms["total"] - sum(c.latency_ms for c in t.usage if not c.cached), 3)


# -- 1. keywords: for seeding, and for routing when the case names no SKILL ----------------

def _keywords(case, index, strat, gateway, opts: AuditOptions, trace: AuditTrace) -> list[str]:
    if not (strat.uses_keywords or not case.skills):
        return []
    if opts.keywords != KeywordMethod.LLM:
        return lexical_keywords(case, index, opts.keyword_limit)
    messages = keyword_messages(case, opts.keyword_limit)
    try:
        res = gateway.complete_json(
            role=ModelRole.KEYWORDER, messages=messages, schema=keyword_schema(opts.keyword_limit),
            schema_name="keywords", step=f"keywords:{case.id}",
        )
    except ModelCallError as exc:
        raise _model_failure("keywords", exc) from None
    trace.usage.append(call_record("keywords", res))
    if opts.keep_prompts:
        trace.prompts.append({"step": "keywords", "prompt": KEYWORDS_PROMPT, "messages": messages})
    return clean_keywords(res.data.get("keywords"), opts.keyword_limit)


# -- 2. routing -------------------------------------------------------------------------

def _route(case, index, opts: AuditOptions, trace: AuditTrace) -> Routing:
    try:
        routing = route(case, trace.keywords, index, opts.max_skills)
    except RoutingError as exc:
        raise Outcome(AuditError(exc.kind, str(exc))) from None
    trace.skills, trace.routing = routing.skills, routing.source
    return routing


# -- 3. context: seeds, closure and rendering (or the baseline's equivalent) --------------

def _window(opts: AuditOptions, gateway: ModelGateway | None) -> JudgeWindow | None:
    if opts.window is not None or opts.judge_mode == JudgeMode.NONE:
        return opts.window
    config = getattr(gateway, "config", None)
    return judge_window(config) if config is not None else None


def _context(case, index, strat, routing: Routing, opts: AuditOptions, window, trace) -> PolicyContext:
    context_opts = opts.context
    if window is not None:
        # What the window leaves for the policy caps the seeds' target (it does not replace
        # the small default target); the budget stays hard.
        context_opts = replace(context_opts, judge_room=judge_room(case, window))
    # The trace's "target_tokens" setting: the seed target aimed at, the room's cap applied;
    # none for a strategy that takes the whole document (a target it never aimed at would
    # tell the reader of the trace that its context was cut to it).
    trace.settings["target_tokens"] = (context_opts.effective_seed_target()
                                       if getattr(strat, "uses_seed_target", True) else None)
    try:
        ctx = strat.build(case, trace.keywords, routing.skills, index, context_opts)
    except ContextUnavailable as exc:
        p = exc.partial
        trace.seeds, trace.seed_matches, trace.closure = p.seeds, p.seed_matches, p.closure
        trace.closure_paths = p.closure_paths
        trace.context_tokens = p.tokens
        raise Outcome(AuditError(exc.kind, str(exc))) from None
    trace.seeds, trace.seed_matches, trace.closure = ctx.seeds, ctx.seed_matches, ctx.closure
    trace.closure_paths = ctx.closure_paths
    trace.passages, trace.fallback = ctx.passages, ctx.fallback
    trace.units = [u.id for u in ctx.units]
    trace.unit_spans = {u.id: {"skill": u.skill, "spans": [list(sp) for sp in u.spans]} for u in ctx.units}
    trace.context, trace.context_tokens = ctx.text, ctx.tokens
    return ctx


# -- 3b. fit the judge's window: oldest turns out, parts when still over ------------------

def _fit(case: AuditCase, ctx: PolicyContext, opts: AuditOptions, window, trace) -> AuditCase:
    if window is None or not ctx.units:
        return case
    rules = bool(ctx.closure)
    largest = max(count_tokens(render_part([u], rules)) for u in ctx.units)
    try:
        judged, trace.window = fit_case(
            case, window, largest, ctx.tokens, per_rule=opts.judge_mode == JudgeMode.PER_RULE)
    except WindowExceeded as exc:
        trace.window = exc.fit
        raise Outcome(AuditError(exc.kind, str(exc))) from None
    # Set before judging, so a --no-judge run shows which cases would be judged in parts.
    split = opts.judge_mode != JudgeMode.PER_RULE and ctx.tokens > trace.window.judge_room
    trace.window.split = opts.split if split else ""
    return judged


# -- 4. judgment --------------------------------------------------------------------------

def _prerequisites(index: AuditIndex):
    """A rule unit's transitive prerequisites (itself first), for closure-ordered parts."""
    return lambda unit: index.skill(unit.skill).graph.closure([unit.id])


def _judge(case, index, strat, ctx: PolicyContext, gateway, opts: AuditOptions, trace: AuditTrace):
    step = f"judge:{case.id}:{strat.name}"
    rules = bool(ctx.closure)
    mode = opts.judge_mode
    try:
        if trace.window is not None and trace.window.split and mode != JudgeMode.PER_RULE:
            return _judge_parts(case, index, ctx, gateway, opts, trace, trace.window.judge_room, step)
        try:
            judged = judge_context(gateway, case, ctx.text, ctx.units, mode, step, opts.probability,
                                   calls=trace.usage if mode == JudgeMode.PER_RULE else None)
        except ModelCallError as exc:
            if exc.kind != "context_overflow" or len(ctx.units) < 2 or mode == JudgeMode.PER_RULE:
                raise
            # The server counts more tokens than we planned with (another tokenizer, or a
            # window nothing told us of): judge in parts of half the size, once.
            if (record := failed_record("judge", exc)) is not None:
                trace.usage.append(record)
            largest = max(count_tokens(render_part([u], rules)) for u in ctx.units)
            half = max(ctx.tokens // 2, largest)
            if trace.window is None:
                trace.window = WindowFit(0, "unknown: the server refused the whole context", 0, 0, half)
            # The refusal shows the room was smaller than planned: the trace keeps the room
            # the parts were planned with.
            trace.window.judge_room = min(trace.window.judge_room, half)
            trace.window.split = opts.split
            return _judge_parts(case, index, ctx, gateway, opts, trace, trace.window.judge_room, step)
    except ModelCallError as exc:
        raise _model_failure("judge", exc) from None
    if mode != JudgeMode.PER_RULE:
        trace.usage += judged.calls
    if opts.keep_prompts and judged.messages:
        trace.prompts.append({"step": "judge", "prompt": PROMPTS[mode], "messages": judged.messages})
    return judged.verdict


def _judge_parts(case, index, ctx: PolicyContext, gateway, opts: AuditOptions, trace: AuditTrace,
                 target: int, step: str):
    rules = bool(ctx.closure)
    prereqs = _prerequisites(index) if rules else None
    parts = plan_parts(ctx.units, target, opts.split, prereqs, rules)
    return judge_in_parts(gateway, case, parts, opts.split, step, rules, trace.usage, trace.parts,
                          trace.prompts if opts.keep_prompts else None,
                          mode=opts.judge_mode, probability=opts.probability)
