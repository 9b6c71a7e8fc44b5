"""The verdicts to export: one :class:`JudgedCase` per judged case, decided once.

Every format (OpenTelemetry evaluation events, Langfuse scores, Phoenix span annotations)
writes the same facts, so they are gathered here from the case's decided record
(``workbench.decision.DecidedVerdict``, what every page shows): its label (violation,
compliant or review), score, reason, and the rules behind it with the SKILL and source spans
they come from, the review state — and, when the case was imported from OpenTelemetry GenAI
spans (``workbench.audit.importers.otel`` keeps ``extra["otel"]``), the trace and span it
judges.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditTrace
from workbench.decision import (
    Decided,
    DecidedVerdict,
    DecisionSetting,
    Explanation,
    decided_verdict,
)
from workbench.review.decisions import ReviewDecision

EVALUATION_NAME = "skillcdg.compliance"  # what every format calls the evaluation
PROBABILITY_NAME = "skillcdg.violation_probability"  # the numeric score, where one is known
MAX_EXPLANATION = 4000  # characters of the judge's reason kept (model output: unbounded)

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class OtelLink:
    """The OpenTelemetry span a case was imported from (lower-case hex ids)."""

    trace_id: str
    span_id: str
    response_id: str | None = None  # gen_ai.response.id of the judged reply, when recorded


@dataclass(frozen=True)
class JudgedCase:
    """One judged case as the exports write it."""

    case_id: str
    strategy: str
    decided: Decided
    setting: DecisionSetting  # what decided it (threshold, calibration, guarantee)
    explanation: str
    skills: list[str]
    violated_rules: list[str]
    # "SKILL:start-end" for each source span of each violated rule (character offsets
    # into the SKILL's text), in the order of ``violated_rules``.
    source_spans: list[str]
    judge_violation: bool | None  # the judge's own yes/no (None: scored only, no answer)
    session: str = ""
    link: OtelLink | None = None
    response_id: str | None = None  # gen_ai.response.id when known without a span
    verdict: DecidedVerdict | None = None  # the record the case's facts come from

    @property
    def label(self) -> str:
        """``violation``, ``compliant`` or ``review``: the decided record's label."""
        return self.verdict.label if self.verdict is not None else str(self.decided.outcome)

    @property
    def guarantee(self) -> dict[str, Any]:
        """The auto-decide guarantee of the setting (alpha, delta, level, bound, ...); empty
        when none was asked for."""
        return dict(self.setting.auto or {})

    def metadata(self) -> dict[str, Any]:
        """The SkillCDG facts as plain JSON (Langfuse's and Phoenix's ``metadata``)."""
        d = self.decided
        out: dict[str, Any] = {
            "case_id": self.case_id, "strategy": self.strategy, "decision": self.label,
            "automatic": d.automatic, "source": str(d.source), "calibrated": d.calibrated,
            "threshold": self.setting.threshold, "probability": d.probability,
            "confidence": d.confidence, "judge_violation": self.judge_violation,
            "skills": self.skills, "violated_rules": self.violated_rules,
            "source_spans": self.source_spans,
        }
        if self.guarantee:
            out["guarantee"] = self.guarantee
        if self.session:
            out["session"] = self.session
        if self.link is not None:
            out["otel"] = {"trace_id": self.link.trace_id, "span_id": self.link.span_id}
        v = self.verdict
        if v is not None:
            out.update(score_source=v.score_source, setting_version=v.setting_version,
                       evidence=[dict(e) for e in v.evidence], reason_by=v.reason_by)
            if v.review is not None:
                out["review"] = v.review.to_dict()
        return out


@dataclass
class Selection:
    """What :func:`judged_cases` made of the traces: the cases, and what was left out why."""

    cases: list[JudgedCase] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)  # case ids: an error, no verdict
    no_case: list[str] = field(default_factory=list)  # trace ids the cases file lacks
    bad_link: list[str] = field(default_factory=list)  # otel ids that are not W3C hex ids

    def notes(self) -> list[str]:
        out = []
        if self.not_judged:
            out.append(f"{len(self.not_judged)} traces have no verdict (an audit error), left "
                       f"out: {', '.join(self.not_judged[:5])}")
        if self.no_case:
            out.append(f"{len(self.no_case)} traces have no case in the cases file (exported "
                       f"without a link to their origin): {', '.join(self.no_case[:5])}")
        if self.bad_link:
            out.append(f"{len(self.bad_link)} cases carry OpenTelemetry ids that are not "
                       f"32/16-digit hex (not linked): {', '.join(self.bad_link[:5])}")
        return out


def judged_cases(traces: Iterable[AuditTrace], cases: Sequence[AuditCase] | Mapping[str, AuditCase] = (),
                 setting: DecisionSetting | None = None,
                 activations: Mapping[str, float] | None = None, *,
                 verdicts: Mapping[tuple[str, str], DecidedVerdict] | None = None,
                 setting_version: int | None = None,
                 explanations: Mapping[tuple[str, str], Explanation] | None = None,
                 decisions: Iterable[ReviewDecision] = ()) -> Selection:
    """The judged cases among ``traces`` (those with a verdict), each as its decided record:
    ``verdicts`` (by (case id, strategy)) where the caller has them, else built here under
    ``setting`` (None: the default, threshold 0.5 on the judge's probability; its version
    ``setting_version``) with ``activations`` (case id -> the setting's scorer output) where
    the setting scores activations, the stored ``explanations`` (by (case id, strategy)) and
    review ``decisions``. ``cases`` (by id) give each trace its origin: OpenTelemetry ids, the
    session. Traces are taken as given: pass the newest per case (``latest_per_case``)."""
    by_id = cases if isinstance(cases, Mapping) else {c.id: c for c in cases}
    traces = list(traces)
    s = setting or DecisionSetting()
    if setting is not None and setting.scorer is not None and activations:
        from dataclasses import replace

        s = replace(s, case_scores={**s.case_scores, **{
            (t.id, t.strategy): activations[t.id] for t in traces if t.id in activations}})
    decisions = list(decisions)
    out = Selection()
    for t in traces:
        v = t.verdict
        record = (verdicts or {}).get((t.id, t.strategy)) or decided_verdict(
            t, saved=(setting_version or 0, s) if setting is not None else None,
            explanation=(explanations or {}).get((t.id, t.strategy)),
            decisions=[d for d in decisions if d.case_id == t.id and d.strategy == t.strategy])
        decided = record.decided
        if decided is None:  # not judged, nor decided by an activation score
            out.not_judged.append(t.id)
            continue
        case = by_id.get(t.id)
        if case is None and by_id:
            out.no_case.append(t.id)
        link, response_id = _link(case)
        if case is not None and "otel" in case.extra and link is None:
            out.bad_link.append(t.id)
        rules = list(record.rules)
        out.cases.append(JudgedCase(
            case_id=t.id, strategy=t.strategy, decided=decided, setting=s,
            explanation=(record.reason or "")[:MAX_EXPLANATION],
            skills=list(t.skills), violated_rules=rules, source_spans=_spans(t, rules),
            judge_violation=None if v is None else bool(v.violation),
            session=t.session or (case.session if case else ""),
            link=link, response_id=response_id, verdict=record,
        ))
    return out


def _link(case: AuditCase | None) -> tuple[OtelLink | None, str | None]:
    otel = case.extra.get("otel") if case is not None else None
    if not isinstance(otel, dict):
        return None, None
    response_id = otel.get("gen_ai.response.id")
    response_id = str(response_id) if isinstance(response_id, str | int) and response_id != "" else None
    trace_id = str(otel.get("trace_id", "")).lower().removeprefix("0x")
    span_id = str(otel.get("span_id", "")).lower().removeprefix("0x")
    # W3C ids: all-zero ids are invalid (an exporter's "no parent"), never a link.
    if not (_TRACE_ID.match(trace_id) and _SPAN_ID.match(span_id)) \
            or int(trace_id, 16) == 0 or int(span_id, 16) == 0:
        return None, response_id
    return OtelLink(trace_id, span_id, response_id), response_id


def _spans(trace: AuditTrace, rules: list[str]) -> list[str]:
    out = []
    for rid in rules:
        unit = trace.unit_spans.get(rid) or {}
        skill = unit.get("skill", "")
        for span in unit.get("spans") or []:
            if isinstance(span, list | tuple) and len(span) == 2:
                out.append(f"{skill}:{span[0]}-{span[1]}")
    return out
