"""``AuditTrace``: every intermediate result of auditing one case, as plain JSON-able data.

A trace is what a batch writes (one JSON line), what the store keeps and what the replay page
shows: keywords, routed SKILLs, seeds (and which keyword matched them), the closure, the
rendered context and its token count, the verdict, errors, and each model call's tokens and
latency. ``from_dict(to_dict(t)) == t``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from workbench.audit.trace_check import trace_problem
from workbench.errors import WorkbenchError
from workbench.llm.errors import bound_message
from workbench.llm.redact import redact_text
from workbench.vocabulary import ErrorKind, JudgeMode

TRACE_VERSION = 1


@dataclass
class ModelCall:
    """One gateway call made for the case (cache hits included, marked ``cached``)."""

    step: str  # "keywords", "judge", "judge:<rule id>"
    role: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cached: bool = False
    attempts: int = 1
    key: str = ""  # the request key: finds the cached/recorded exchange again
    error: str = ""


@dataclass
class Verdict:
    violation: bool
    reason: str
    violated_rules: list[str]
    # Cited ids that are not in the judged context (hallucinated or mistyped): flagged, kept.
    unknown_rule_ids: list[str] = field(default_factory=list)
    # Per-rule mode: one {"id", "applies", "violated"} per judged item, else empty.
    per_rule: list[dict[str, Any]] = field(default_factory=list)
    # False when a violation's free-text reason names none of the violated ids (flagged).
    reason_cites: bool = True
    # P(violation) as the judge gave it (uncalibrated), and where it comes from: "logprobs"
    # (the verdict token's log-probabilities) or "sampled:K" (share of K sampled answers);
    # None / "" when unknown (a server without either, or probability off).
    probability: float | None = None
    probability_source: str = ""
    # The words of the reply the verdict rests on: {"start", "end", "quote"}, character
    # offsets into the case's reply, each checked to be the reply's text there.
    evidence: list[dict[str, Any]] = field(default_factory=list)
    # Quotes the judge gave that are not in the reply: refused, never shown; counted.
    evidence_refused: int = 0
    # Checklist mode: one {"id", "status", "p_violated"} per judged rule, in closure order.
    checklist: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class JudgedPart:
    """One part of a context judged on its own because the whole did not fit the judge's
    context window; the case's verdict combines the parts' verdicts."""

    index: int  # 1-based, in judging order
    mode: JudgeMode  # "whole": one verdict over the part; "per-rule": the per-rule question
    units: list[str]  # ids of the items in the part (closure order)
    tokens: int  # rendered policy tokens of the part
    violation: bool | None = None  # None: not judged (an earlier call failed)
    violated_rules: list[str] = field(default_factory=list)
    reason: str = ""


@dataclass
class WindowFit:
    """How the case was fitted into the judge's context window (``workbench.audit.window``)."""

    window: int  # tokens one judge request may hold
    source: str  # where that figure comes from (configuration, server slot, litellm)
    answer_tokens: int  # room kept for the answer (the judge's max_tokens)
    fixed_tokens: int  # the prompt without the policy: skeleton, conversation, state, reply
    # The judge's room: what is left for the policy (the cap of the seeds' target, and the
    # size of each part when judged in parts). ``target_tokens`` in the trace's JSON.
    judge_room: int
    split: str = ""  # "": judged whole; "grouped" | "per-rule": judged in parts
    # Oldest turns left out so the rest fits (never silently: the judge is told, too).
    turns_total: int = 0
    turns_dropped: int = 0
    tokens_dropped: int = 0


@dataclass
class AuditError:
    kind: str  # an ErrorKind (workbench.vocabulary): EmptySeed, BudgetExceeded, NoRoute, ...
    message: str
    cause: str = ""  # for ModelCallError: the gateway's kind (timeout, connection, ...)

    def __post_init__(self) -> None:
        # Plain text, as a trace read back from a file has it: counts by kind print as before
        # ({'EmptySeed': 2}, not the enum's repr). Kinds from older traces stay as they were.
        self.kind = str(self.kind)
        # Messages can carry model output (untrusted, unbounded): bound what every trace keeps.
        # ... and never an endpoint's credentials (also in traces stored before this rule).
        self.message = bound_message(redact_text(str(self.message)))


@dataclass
class AuditTrace:
    id: str
    strategy: str
    session: str = ""
    label: str | None = None
    keywords_method: str = "lexical"
    judge_mode: JudgeMode = JudgeMode.WHOLE
    keywords: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    routing: str = ""  # "case" (the case named its SKILLs) or "keywords"
    seeds: dict[str, list[str]] = field(default_factory=dict)
    seed_matches: dict[str, list[str]] = field(default_factory=dict)  # "skill/rule" -> keywords
    closure: dict[str, list[str]] = field(default_factory=dict)  # SKILL -> rule ids judged
    # Why each rule is in context: SKILL -> rule id -> the require path from the seed that
    # brought it (seed first, the rule last); empty for passage strategies and older traces.
    closure_paths: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    passages: list[str] = field(default_factory=list)  # passage ids (bm25, dense)
    units: list[str] = field(default_factory=list)  # every citable id in the context
    # Where each unit comes from: id -> {"skill": name, "spans": [[start, end], ...]}.
    unit_spans: dict[str, dict[str, Any]] = field(default_factory=dict)
    fallback: str | None = None  # "all-rules" when the empty-seed fallback was applied
    context: str = ""
    context_tokens: int = 0
    verdict: Verdict | None = None
    error: AuditError | None = None
    window: WindowFit | None = None  # None: the judge's window is unknown (nothing fitted)
    parts: list[JudgedPart] = field(default_factory=list)  # judged in parts, else empty
    usage: list[ModelCall] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    prompts: list[dict[str, Any]] = field(default_factory=list)  # kept when asked for
    prompt_version: str = ""  # the judge template's label, e.g. "judge_v3" ("" unjudged)
    # SHA-256 of that template file (workbench.prompts.template): which text of the version
    # the prompts came from. Empty when unjudged and in traces written before it was kept.
    prompt_sha256: str = ""
    # What shaped the audit besides strategy, judge mode and keywords: seeding, the token
    # target aimed at, rendering, split, and the model string of each role called (never an
    # address or key). Empty for traces written before it was kept.
    settings: dict[str, Any] = field(default_factory=dict)
    version: int = TRACE_VERSION

    # -- summaries -----------------------------------------------------------------------
    @property
    def violation(self) -> bool | None:
        return None if self.verdict is None else self.verdict.violation

    @property
    def online_tokens(self) -> int:
        """Prompt plus completion tokens of every model call made for this case."""
        return sum(c.prompt_tokens + c.completion_tokens for c in self.usage)

    @property
    def closure_ids(self) -> list[str]:
        return [rid for ids in self.closure.values() for rid in ids]

    # -- (de)serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.window is not None:
            out["window"] = _window_json(out["window"])
        out["online_tokens"] = self.online_tokens
        out["latency_ms"] = round(self.timings_ms.get("total", 0.0), 3)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "trace") -> AuditTrace:
        """The one validating reader of a trace's JSON form. Raises :class:`TraceFormatError`
        naming ``where`` and the field when ``data`` is not a trace this workbench can use.

        Fields a newer writer added are ignored; fields an older one lacked take their
        defaults, so every trace written so far still loads. An integer ``id`` (a case file
        with numeric ids) is read as its string.
        """
        if not isinstance(data, dict):
            raise TraceFormatError(f"{where}: not an audit trace: not a JSON object")
        if isinstance(data.get("id"), int) and not isinstance(data["id"], bool):
            data = {**data, "id": str(data["id"])}
        if bad := trace_problem(data):
            raise TraceFormatError(f"{where}: not an audit trace: {bad}")
        kw = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        try:
            if kw.get("verdict") is not None:
                kw["verdict"] = Verdict(**kw["verdict"])
            if kw.get("error") is not None:
                kw["error"] = AuditError(**kw["error"])
            kw["usage"] = [ModelCall(**c) for c in kw.get("usage") or []]
            if kw.get("window") is not None:
                kw["window"] = WindowFit(**_window_fields(_record(kw["window"], "window")))
            kw["parts"] = [JudgedPart(**_record(p, "parts")) for p in kw.get("parts") or []]
        except TypeError as exc:  # an unknown or missing field in window/parts
            raise TraceFormatError(f"{where}: not an audit trace: {exc}") from None
        return cls(**kw)


class TraceFormatError(WorkbenchError, ValueError):
    """A JSON object is not an audit trace; the message names where and which field."""


def _record(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"'{name}' must be an object")
    return value


# ``WindowFit.judge_room`` is written as "target_tokens", the name every stored trace and
# recording has; the attribute was renamed, the JSON was not.
_ROOM_JSON = "target_tokens"


def _window_json(fields: dict[str, Any]) -> dict[str, Any]:
    """A WindowFit's fields as the trace's JSON names them (in the same order)."""
    return {(_ROOM_JSON if k == "judge_room" else k): v for k, v in fields.items()}


def _window_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The WindowFit arguments of a trace's JSON ``window``; the attribute's own name is not
    a JSON field (TypeError, as for any unknown field)."""
    if "judge_room" in record:
        raise TypeError("unexpected field 'judge_room' in 'window'")
    return {("judge_room" if k == _ROOM_JSON else k): v for k, v in record.items()}


# Error kinds that another attempt may fix. Others (EmptySeed, NoRoute, BudgetExceeded...)
# follow from the case and the index: re-running gives the same answer, so they count as done.
RETRYABLE_KINDS = frozenset({ErrorKind.MODEL_CALL_ERROR, ErrorKind.INTERNAL_ERROR})


TraceKey = tuple[str, str, str, str]  # (case id, strategy, judge mode, keyword method)


def run_key(case_id: str, strategy: str, judge_mode: str, keywords_method: str) -> TraceKey:
    """The resume key of a case about to be audited in one run configuration: the
    :func:`trace_key` its trace will have."""
    return (case_id, strategy, judge_mode, keywords_method)


def trace_key(trace: AuditTrace) -> TraceKey:
    """What makes a trace the result of one case in one run configuration (the resume key)."""
    return run_key(trace.id, trace.strategy, trace.judge_mode, trace.keywords_method)


def case_and_strategy(trace: AuditTrace) -> tuple[str, str]:
    return (trace.id, trace.strategy)


T = TypeVar("T")


def latest_per_case(items: Iterable[T], key: Callable[[T], Hashable] = case_and_strategy) -> list[T]:
    """The newest item per ``key`` (by default: per case and strategy), ``items`` being oldest
    first, in the order the keys first appeared. The one "latest per case" of the workbench:
    a resumed run's output, the store's newest traces and the review queue all mean this.

    ``key`` maps an item to its group, so stored ``(run_id, trace)`` pairs work too:
    ``latest_per_case(records, key=lambda r: case_and_strategy(r[1]))``.
    """
    return list({key(item): item for item in items}.values())


def is_retryable(trace: AuditTrace) -> bool:
    """Whether a trace failed in a way another attempt may fix."""
    return trace.error is not None and trace.error.kind in RETRYABLE_KINDS


def done_keys(traces: Iterable[AuditTrace], retry_failed: bool = True) -> set[TraceKey]:
    """Keys a resumed run skips: every key with a trace, less (with ``retry_failed``) those
    whose newest trace failed on a passing error."""
    return {trace_key(t) for t in latest_per_case(traces, key=trace_key)
            if not (retry_failed and is_retryable(t))}
