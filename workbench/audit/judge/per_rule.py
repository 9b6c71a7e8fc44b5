"""``per-rule`` mode: one short question per context item (``{applies, violated}``), combined:
the reply violates the policy iff some item applies and is violated. The conversation comes
before the rule in the prompt, so a server's prompt cache reuses it across one case's items.

Each item's P(violated) is P(applies) x P(violated) read from the two answer tokens; the
case's probability is the largest of them, as in checklist mode. Without log-probabilities
the case has no probability in this mode (sampling k answers per item would multiply an
already per-item cost by k).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase, prompt_fields
from workbench.audit.judge.probability import Probability, ProbabilityOptions, clamp
from workbench.audit.judge.units import ContextUnit, Judged, call_record
from workbench.audit.prompts import build_messages
from workbench.audit.trace import ModelCall, Verdict
from workbench.llm.logprobs import probability_of
from workbench.vocabulary import ModelRole

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

RULE_PROMPT = "judge_rule_v2"

RULE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"applies": {"type": "boolean"}, "violated": {"type": "boolean"}},
    "required": ["applies", "violated"],
    "additionalProperties": False,
}
_BOOL = ("true", "false")


def rule_messages(case: AuditCase, unit: ContextUnit) -> list[dict[str, str]]:
    return build_messages(RULE_PROMPT, **prompt_fields(case), rule=unit.text)


def _p_violated(logprobs: Any) -> float | None:
    applies = probability_of(logprobs, "applies", "true", _BOOL)
    violated = probability_of(logprobs, "violated", "true", _BOOL)
    if applies is None or violated is None:
        return None
    return clamp(applies * violated)


def judge_per_rule(
    gateway: ModelGateway,
    case: AuditCase,
    units: Sequence[ContextUnit],
    step: str,
    calls: list[ModelCall] | None = None,
    probability: ProbabilityOptions | None = None,
) -> Judged:
    """``calls`` (optional) receives each call's record as it completes, so the calls made
    before a failure are still accounted."""
    popts = probability or ProbabilityOptions()
    calls = [] if calls is None else calls
    answers: list[dict[str, Any]] = []
    for unit in units:
        result = gateway.complete_json(
            role=ModelRole.JUDGE,
            messages=rule_messages(case, unit),
            schema=RULE_SCHEMA,
            schema_name="rule_check",
            step=f"{step}:{unit.id}",
            logprobs=popts.top_logprobs,
        )
        calls.append(call_record(f"judge:{unit.id}", result))
        applies, violated = bool(result.data["applies"]), bool(result.data["violated"])
        answers.append({"id": unit.id, "applies": applies, "violated": applies and violated,
                        "p_violated": _p_violated(result.logprobs)})
    broken = [a["id"] for a in answers if a["violated"]]
    applying = [a["id"] for a in answers if a["applies"]]
    if broken:
        reason = "The reply breaks " + ", ".join(f"[{i}]" for i in broken) + "."
    elif applying:
        reason = "The reply follows the applicable items " + ", ".join(f"[{i}]" for i in applying) + "."
    else:
        reason = "None of the judged items applies to the reply."
    ps = [a["p_violated"] for a in answers]
    p = (Probability(max(ps), "logprobs") if ps and all(x is not None for x in ps)
         else Probability.none())
    verdict = Verdict(violation=bool(broken), reason=reason, violated_rules=broken,
                      per_rule=answers, probability=p.value, probability_source=p.source)
    return Judged(verdict, calls, [])
