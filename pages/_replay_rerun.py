"""Replay's re-run of one case, honestly estimated and shown: the plan says how many model
calls and about how long (from this machine's measured speed, ``store.model_speed``), the
embedded model's start-up runs as a step of its own (``pages._model_start``: timed and
recorded for the next estimate), and the audit runs under a progress bar (``components.model_run``).
Page-private: it reads and writes the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from components.model_run import Step, run_steps
from pages._model_start import MEASURED, needs_startup, startup_estimate, startup_steps
from store import model_speed
from workbench.audit import AuditOptions, AuditTrace, audit_case
from workbench.audit.cases import AuditCase
from workbench.audit.policy_context import DEFAULT_SEED_TARGET
from workbench.llm import LlmConfig
from workbench.llm.speed import describe_duration
from workbench.llm.tokens import count_tokens
from workbench.llm.transport import key_model
from workbench.vocabulary import JudgeMode, KeywordMethod, ModelRole
from workbench.words import plural

# What a judge or keyword prompt holds besides the case and the policy (template, schema).
PROMPT_OVERHEAD_TOKENS = 700


@dataclass(frozen=True)
class Plan:
    """A re-run before it runs: calls per role, the estimate and the start-up it needs."""

    calls: dict[str, int]  # role -> model calls
    seconds: float | None  # the calls, from measured speed; None: not measured yet
    startup_s: float | None  # the model's start-up first, when it is not running (None: no)
    needs_startup: bool
    speeds: dict[str, str]  # role -> measured speed in words

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def roles_called(keywords: str, judge_mode: JudgeMode) -> list[str]:
    return ([ModelRole.KEYWORDER] if keywords == KeywordMethod.LLM else []) + (
        [ModelRole.JUDGE] if judge_mode != JudgeMode.NONE else [])


def _prompt_tokens(case: AuditCase, stored: AuditTrace | None, role: str) -> int:
    """A prompt's size: the stored trace's own call of that role when it has one, else the
    case's text plus its context (the stored one's, or the default target)."""
    if stored is not None:
        sizes = [c.prompt_tokens for c in stored.usage if c.role == role and not c.error]
        if sizes:
            return int(sum(sizes) / len(sizes))
    text = count_tokens(" ".join([case.model_response, *(t.content for t in case.turns)]))
    context = stored.context_tokens if stored is not None and role == ModelRole.JUDGE else 0
    seeds = DEFAULT_SEED_TARGET if role == ModelRole.JUDGE else 0
    return text + (context or seeds) + PROMPT_OVERHEAD_TOKENS


def plan(eng: Engine, config: LlmConfig | None, case: AuditCase, strategies: Sequence[str],
         keywords: str, judge_mode: JudgeMode, stored: Mapping[str, AuditTrace | None]) -> Plan:
    """What re-running ``case`` under ``strategies`` will cost (``config``: the model
    configuration; only needed when a model is called)."""
    calls: dict[str, int] = {}
    seconds: float | None = 0.0
    speeds: dict[str, str] = {}
    for s in strategies:
        trace = stored.get(s)
        per_role = {ModelRole.KEYWORDER: 1 if keywords == KeywordMethod.LLM else 0,
                    ModelRole.JUDGE: 0 if judge_mode == JudgeMode.NONE else (
                        max(1, len(trace.closure_ids)) if judge_mode == JudgeMode.PER_RULE
                        and trace is not None else 1)}
        for role, n in per_role.items():
            if not n or config is None:
                continue
            calls[role] = calls.get(role, 0) + n
            speed = model_speed.measured_speed(eng, key_model(config.role(role)), role)
            if speed is None:
                seconds = None
                continue
            speeds[role] = speed.describe()
            if seconds is not None:
                prompt = _prompt_tokens(case, trace, role)
                if judge_mode == JudgeMode.PER_RULE and role == ModelRole.JUDGE and trace is not None:
                    prompt = max(1, prompt // max(1, n))
                seconds += n * speed.call_seconds(prompt)
    roles = [r for r, n in calls.items() if n]
    start = config is not None and needs_startup(config, roles)
    startup = startup_estimate(eng, config, roles) if start else None
    return Plan(calls, seconds if calls else 0.0, startup, start, speeds)


def plan_words(p: Plan, strategies: Sequence[str], keywords: str, judge_mode: JudgeMode) -> str:
    what = " and ".join(strategies)
    if not p.total_calls:
        return (f"Runs {what} without a model (lexical keywords, no judge): a few seconds. "
                "The result is a preview of the context; it has no verdict to store.")
    calls = ", ".join(plural(n, f"{role} call") for role, n in p.calls.items() if n)
    if p.seconds is None:
        when = ("no speed measured for this model yet, so no estimate: the embedded model on "
                "a small CPU can take minutes a call")
    else:
        when = f"{describe_duration(p.seconds)} ({MEASURED}: " + "; ".join(
            f"{role} {words}" for role, words in p.speeds.items()) + ")"
    start = ""
    if p.needs_startup:
        start = (" First the model starts, " + (f"{describe_duration(p.startup_s)} as measured"
                                               if p.startup_s else "not timed here yet") + ".")
    return (f"Runs {what} with judge “{judge_mode}” and {keywords} keywords: {calls}, "
            f"{when}.{start} The result is a preview beside the stored verdict; nothing is "
            "stored unless you say so.")


def rerun(eng: Engine, config: LlmConfig, gateway, index, case: AuditCase,
          strategies: Sequence[str], keywords: str, judge_mode: JudgeMode, p: Plan) -> dict[str, AuditTrace]:
    """Audit ``case`` under each strategy (a preview: nothing stored), the model's start-up
    first when it is needed, under progress bars."""
    options = AuditOptions(keywords=keywords, judge_mode=judge_mode, keep_prompts=True)
    before = startup_steps(eng, config, [r for r, n in p.calls.items() if n])
    log = getattr(gateway, "usage_log", None)
    first = len(log) if log is not None else 0

    def job() -> dict[str, AuditTrace]:
        return {s: audit_case(case, index, s, gateway, options) for s in strategies}

    main = Step(f"Auditing {case.id} with {' and '.join(strategies)}", job, p.seconds,
                calls=p.total_calls,
                calls_done=(lambda: len(log) - first) if log is not None else None,
                source=MEASURED if p.seconds else "")
    return run_steps(before, main)
