"""Judgment by the ``judge`` role: a verdict that cites the context's ids, a probability,
and the words of the reply it rests on.

Three modes over the same context units (rules, passages or documents), one module each:
``whole`` (one verdict over the whole context), ``per-rule`` (one yes/no question per item)
and ``checklist`` (one call giving every item a status, the verdict derived). All raise
``ModelCallError`` when the model fails for good (the caller records it). :func:`judge_context`
runs the mode a caller names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.audit.cases import AuditCase
from workbench.audit.judge.checklist import (
    CHECKLIST_PROMPT,
    checklist_messages,
    checklist_schema,
    judge_checklist,
)
from workbench.audit.judge.per_rule import RULE_PROMPT, RULE_SCHEMA, judge_per_rule, rule_messages
from workbench.audit.judge.probability import ProbabilityOptions
from workbench.audit.judge.units import (
    MAX_IDS_SHOWN,
    REASON_MAX,
    ContextUnit,
    Judged,
    call_record,
    cited_ids,
    failed_record,
    reason_cites,
)
from workbench.audit.judge.whole import (
    JUDGE_PROMPT,
    VERDICT_SCHEMA,
    judge_messages,
    judge_whole,
    make_verdict,
    verdict_validator,
)
from workbench.vocabulary import JudgeMode

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

PROMPTS = {JudgeMode.WHOLE: JUDGE_PROMPT, JudgeMode.PER_RULE: RULE_PROMPT,
           JudgeMode.CHECKLIST: CHECKLIST_PROMPT}

__all__ = [
    "CHECKLIST_PROMPT", "JUDGE_PROMPT", "MAX_IDS_SHOWN", "PROMPTS", "REASON_MAX", "RULE_PROMPT",
    "RULE_SCHEMA", "VERDICT_SCHEMA", "ContextUnit", "Judged", "ProbabilityOptions", "call_record",
    "checklist_messages", "checklist_schema", "cited_ids", "failed_record", "judge_checklist",
    "judge_context", "judge_messages", "judge_per_rule", "judge_whole", "make_verdict",
    "reason_cites", "rule_messages", "verdict_validator",
]


def judge_context(
    gateway: ModelGateway,
    case: AuditCase,
    context: str,
    units: Sequence[ContextUnit],
    mode: JudgeMode,
    step: str,
    probability: ProbabilityOptions | None = None,
    calls: list | None = None,
) -> Judged:
    """Judge ``context`` (its citable ``units``) in ``mode``. ``calls``, when given, receives
    per-rule calls as they complete (so those made before a failure are kept)."""
    if mode == JudgeMode.CHECKLIST:
        return judge_checklist(gateway, case, context, units, step, probability)
    if mode == JudgeMode.PER_RULE:
        return judge_per_rule(gateway, case, units, step, calls=calls, probability=probability)
    if mode == JudgeMode.WHOLE:
        return judge_whole(gateway, case, context, units, step, probability)
    raise ValueError(f"judge mode {mode!r} does not call the judge")
