"""Auditing one case: keywords -> routing -> context (strategy) -> judgment, all traced.

``audit_case`` never raises for outcomes a user must see (no route, unknown SKILL, empty
seed, budget exceeded, an item too large for the judge's window, a model call that failed
for good): they become ``trace.error`` with no verdict. A context over the judge's window is
not an outcome: it is judged in parts (``parts.py``), a too long conversation loses its
oldest turns (``window.py``), both recorded in the trace. Configuration problems and
``MissingRecording`` (a replay without a recording) do raise: they are not facts about the
case.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from workbench.audit.cases import AuditCase
from workbench.audit.deadline import CaseTimeLimit, case_deadline, check_deadline
from workbench.audit.judge import (
    JUDGE_PROMPT,
    RULE_PROMPT,
    call_record,
    judge_per_rule,
    judge_whole,
)
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
from workbench.audit.routing import DEFAULT_MAX_SKILLS, RoutingError, route
from workbench.audit.strategies import ContextOptions, ContextUnavailable, Strategy, get_strategy
from workbench.audit.trace import AuditError, AuditTrace, ModelCall, WindowFit
from workbench.audit.window import (
    JudgeWindow,
    WindowExceeded,
    fit_case,
    judge_window,
    policy_target,
)
from workbench.graph import PolicyIndex
from workbench.tokens import count_tokens
from workbench.vocabulary import JudgeMode, KeywordMethod, Split, StrategyName, values

JUDGE_MODES = values(JudgeMode)


@dataclass(frozen=True)
class AuditOptions:
    """Everything that shapes an audit besides the case, the index and the strategy."""

    keywords: str = KeywordMethod.LEXICAL
    max_keywords: int | None = None  # default: 4 for llm, 6 for lexical
    max_skills: int = DEFAULT_MAX_SKILLS
    judge_mode: str = JudgeMode.WHOLE
    keep_prompts: bool = False
    context: ContextOptions = ContextOptions()
    # How to judge a context over the judge's window: "grouped" (closure-ordered groups)
    # or "per-rule" (see workbench.audit.parts).
    split: str = Split.GROUPED
    # The judge's context window; None: from the gateway's configuration (judge_window).
    window: JudgeWindow | None = None
    # Seconds of audit work (model calls not counted) per case; None: WORKBENCH_AUDIT_TIME_LIMIT
    # (default 120), 0: no limit. Past it the case ends with a TimeLimit error.
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


def _model_call_error(exc: Exception) -> bool:
    from workbench.llm import ModelCallError

    return isinstance(exc, ModelCallError)


def _failed_call(gateway: Any, step: str, label: str) -> list[ModelCall]:
    """Usage of a call that raised: the gateway logged it under our unique step name."""
    for u in reversed(getattr(gateway, "usage_log", [])[-50:]):
        if u.step == step:
            return [ModelCall(label, u.role, u.prompt_tokens, u.completion_tokens,
                              round(u.latency_ms, 3), u.cached, u.attempts, "", u.error or "failed")]
    return []


def _model_seconds(trace: AuditTrace) -> float:
    return sum(c.latency_ms for c in trace.usage if not c.cached) / 1000.0


def _prerequisites(index: AuditIndex):
    """A rule unit's transitive prerequisites (itself first), for closure-ordered parts."""
    return lambda unit: index.skill(unit.skill).graph.closure([unit.id])


def audit_case(
    case: AuditCase,
    index: AuditIndex | PolicyIndex,
    strategy: str | Strategy = StrategyName.CDG,
    gateway: Any = None,
    options: AuditOptions | None = None,
) -> AuditTrace:
    """Audit one case under one strategy and return its complete trace.

    ``index``: pass an :class:`AuditIndex` when auditing many cases (a bare PolicyIndex is
    prepared on every call). ``gateway`` (a ``workbench.llm.Gateway``) is needed when
    ``options.keywords == "llm"`` or ``options.judge_mode != "none"``; ValueError otherwise.
    """
    opts = options or AuditOptions()
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
    aindex = index if isinstance(index, AuditIndex) else AuditIndex(index)
    strat = get_strategy(strategy, gateway) if isinstance(strategy, str) else strategy
    trace = AuditTrace(
        id=case.id,
        strategy=strat.name,
        session=case.session,
        label=case.label,
        keywords_method=opts.keywords,
        judge_mode=opts.judge_mode,
        prompt_version=JUDGE_PROMPT if opts.judge_mode == JudgeMode.WHOLE else (
            RULE_PROMPT if opts.judge_mode == JudgeMode.PER_RULE else ""),
    )
    t_start = time.perf_counter()
    try:
        with case_deadline(opts.time_limit_s, lambda: _model_seconds(trace)):
            _run(case, aindex, strat, gateway, opts, trace)
    except CaseTimeLimit as exc:  # the case's own outcome: the batch goes on
        trace.error = AuditError(exc.kind, str(exc))
    finally:
        trace.timings_ms["total"] = round((time.perf_counter() - t_start) * 1000.0, 3)
        trace.timings_ms["pipeline"] = round(
            trace.timings_ms["total"] - sum(c.latency_ms for c in trace.usage if not c.cached), 3
        )
    return trace


def _run(case, index, strat, gateway, opts: AuditOptions, trace: AuditTrace) -> None:
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        trace.timings_ms[name] = round((now - t) * 1000.0, 3)
        t = now
        if trace.error is None and trace.verdict is None:  # not over a finished outcome
            check_deadline(f"after step {name}")

    # 1. Keywords: needed for seeding, and for routing when the case names no SKILL.
    if strat.uses_keywords or not case.skills:
        if opts.keywords == KeywordMethod.LLM:
            step = f"keywords:{case.id}"
            messages = keyword_messages(case, opts.keyword_limit)
            try:
                res = gateway.complete_json(
                    role="keyworder", messages=messages, schema=keyword_schema(opts.keyword_limit),
                    schema_name="keywords", step=step,
                )
            except Exception as exc:
                if not _model_call_error(exc):
                    raise
                trace.usage += _failed_call(gateway, step, "keywords")
                trace.error = AuditError("ModelCallError", f"keywords: {exc}", getattr(exc, "kind", ""))
                lap("keywords")
                return
            trace.usage.append(call_record("keywords", res))
            trace.keywords = clean_keywords(res.data.get("keywords"), opts.keyword_limit)
            if opts.keep_prompts:
                trace.prompts.append({"step": "keywords", "prompt": KEYWORDS_PROMPT, "messages": messages})
        else:
            trace.keywords = lexical_keywords(case, index, opts.keyword_limit)
    lap("keywords")

    # 2. Routing.
    try:
        routing = route(case, trace.keywords, index, opts.max_skills)
    except RoutingError as exc:
        trace.error = AuditError(exc.kind, str(exc))
        lap("routing")
        return
    trace.skills, trace.routing = routing.skills, routing.source
    lap("routing")

    # 3. Context: seeds, closure and rendering (or the baseline's equivalent), aiming at what
    # the judge's window leaves for the policy (a soft target; the budget stays hard).
    window = opts.window
    if window is None and opts.judge_mode != JudgeMode.NONE and getattr(gateway, "config", None) is not None:
        window = judge_window(gateway.config)
    context_opts = opts.context
    if window is not None:
        # The window caps what seeding aims at; it does not replace the (small) default target.
        context_opts = replace(context_opts, room_tokens=policy_target(case, window))
    try:
        ctx = strat.build(case, trace.keywords, routing.skills, index, context_opts)
    except ContextUnavailable as exc:
        p = exc.partial
        trace.seeds, trace.seed_matches, trace.closure = p.seeds, p.seed_matches, p.closure
        trace.context_tokens = p.tokens
        trace.error = AuditError(exc.kind, str(exc))
        lap("context")
        return
    trace.seeds, trace.seed_matches, trace.closure = ctx.seeds, ctx.seed_matches, ctx.closure
    trace.passages, trace.fallback = ctx.passages, ctx.fallback
    trace.units = [u.id for u in ctx.units]
    trace.unit_spans = {u.id: {"skill": u.skill, "spans": [list(sp) for sp in u.spans]} for u in ctx.units}
    trace.context, trace.context_tokens = ctx.text, ctx.tokens
    lap("context")

    # 3b. Fit the judge's window: cut the oldest turns if the conversation leaves too little
    # room, and split the context into parts if it is still over what is left.
    rules = bool(ctx.closure)
    judged = case
    if window is not None and ctx.units:
        largest = max(count_tokens(render_part([u], rules)) for u in ctx.units)
        try:
            judged, trace.window = fit_case(
                case, window, largest, ctx.tokens, per_rule=opts.judge_mode == JudgeMode.PER_RULE
            )
        except WindowExceeded as exc:
            trace.window = exc.fit
            trace.error = AuditError(exc.kind, str(exc))
            lap("fit")
            return
        # Set before judging, so a --no-judge run shows which cases would be judged in parts.
        split = (opts.judge_mode in (JudgeMode.WHOLE, JudgeMode.NONE)
                 and ctx.tokens > trace.window.target_tokens)
        trace.window.split = opts.split if split else ""
    lap("fit")

    # 4. Judgment.
    if opts.judge_mode == JudgeMode.NONE:
        return
    step = f"judge:{case.id}:{strat.name}"
    split = opts.judge_mode == JudgeMode.WHOLE and trace.window is not None and bool(trace.window.split)
    prereqs = _prerequisites(index) if rules else None
    try:
        if split:
            assert trace.window is not None
            parts = plan_parts(ctx.units, trace.window.target_tokens, opts.split, prereqs, rules)
            verdict = judge_in_parts(
                gateway, judged, parts, opts.split, step, rules, trace.usage, trace.parts,
                trace.prompts if opts.keep_prompts else None,
            )
        elif opts.judge_mode == JudgeMode.WHOLE:
            try:
                verdict, calls, messages = judge_whole(gateway, judged, ctx.text, ctx.units, step)
            except Exception as exc:
                if getattr(exc, "kind", "") != "context_overflow" or len(ctx.units) < 2:
                    raise
                # The server counts more tokens than we planned with (another tokenizer, or
                # a window nothing told us of): judge in parts of half the size, once.
                trace.usage += _failed_call(gateway, step, "judge")
                split = True
                verdict = _judge_halves(gateway, judged, ctx, opts, prereqs, rules, step, trace)
            else:
                trace.usage += calls
                if opts.keep_prompts:
                    trace.prompts.append({"step": "judge", "prompt": JUDGE_PROMPT, "messages": messages})
        else:
            verdict, _ = judge_per_rule(gateway, judged, ctx.units, step, calls=trace.usage)
    except Exception as exc:
        if not _model_call_error(exc):
            raise
        failed = (f"{step}:part{len(trace.parts)}" if split and opts.split == Split.GROUPED
                  else step if opts.judge_mode == JudgeMode.WHOLE and not split else "")
        trace.usage += _failed_call(gateway, failed, "judge")
        trace.error = AuditError("ModelCallError", f"judge: {exc}", getattr(exc, "kind", ""))
        lap("judge")
        return
    trace.verdict = verdict
    lap("judge")


def _judge_halves(gateway, case, ctx, opts: AuditOptions, prereqs, rules, step, trace: AuditTrace):
    """Parts of at most half the context's tokens (never less than its largest item), after
    the server refused the whole; recorded as a split like any other."""
    largest = max(count_tokens(render_part([u], rules)) for u in ctx.units)
    target = max(ctx.tokens // 2, largest)
    if trace.window is None:
        trace.window = WindowFit(0, "unknown: the server refused the whole context", 0, 0, target)
    trace.window.target_tokens = min(trace.window.target_tokens, target)
    trace.window.split = opts.split
    parts = plan_parts(ctx.units, trace.window.target_tokens, opts.split, prereqs, rules)
    return judge_in_parts(gateway, case, parts, opts.split, step, rules, trace.usage, trace.parts,
                          trace.prompts if opts.keep_prompts else None)
