"""``checklist`` mode: one structured call that gives every rule of the context a status, in
closure order; the verdict is derived from the statuses.

The answer schema fixes each entry's id (``prefixItems`` with ``const``: a grammar-enforcing
server writes the ids itself, and the judge only chooses each status among "not applicable",
"followed" and "violated"), so a small model cannot lose its place in a long list or cite an
id that is not there. The case is a violation iff some rule is "violated"; those rules are
the verdict's citations. Each rule's P(violated) is read from its status token's
log-probabilities; the case's probability is the largest of them (the likeliest broken rule
decides; a product over 20-odd rules would turn many small doubts into a false alarm), so a
threshold below 0.5 still points at a rule: the one with that probability.

Without log-probabilities the probability comes from sampled checklists, as in ``whole`` mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase, prompt_fields
from workbench.audit.judge.probability import (
    Probability,
    ProbabilityOptions,
    clamp,
    sampled_answers,
)
from workbench.audit.judge.units import (
    REASON_MAX,
    ContextUnit,
    Evidence,
    Judged,
    ask_checking_evidence,
    check_reason,
    find_evidence,
)
from workbench.audit.prompts import build_messages
from workbench.audit.trace import Verdict
from workbench.llm.logprobs import value_distribution
from workbench.vocabulary import CheckStatus, ModelRole, values

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

CHECKLIST_PROMPT = "judge_checklist_v1"
STATUSES = values(CheckStatus)
# Answer room: an entry is ~15-25 tokens with a long id; the rest is evidence and reason.
TOKENS_PER_CHECK = 32
ANSWER_BASE = 320


def checklist_schema(ids: Sequence[str]) -> dict[str, Any]:
    entry = {"type": "string", "enum": list(STATUSES)}
    return {
        "type": "object",
        "properties": {
            "checks": {
                "type": "array",
                "prefixItems": [
                    {"type": "object",
                     "properties": {"id": {"const": rid}, "status": entry},
                     "required": ["id", "status"], "additionalProperties": False}
                    for rid in ids
                ],
                "minItems": len(ids),
                "maxItems": len(ids),
            },
            "evidence": {"type": "array", "maxItems": 3,
                         "items": {"type": "string", "minLength": 1, "maxLength": 300}},
            "reason": {"type": "string", "minLength": 1, "maxLength": REASON_MAX},
        },
        "required": ["checks", "evidence", "reason"],
        "additionalProperties": False,
    }


def checklist_messages(case: AuditCase, context: str) -> list[dict[str, str]]:
    return build_messages(CHECKLIST_PROMPT, policy=context, **prompt_fields(case))


def checklist_validator(ids: Sequence[str], case: AuditCase):
    def validate(data: dict[str, Any]) -> Evidence:
        got = [str(c.get("id", "")) for c in data["checks"]]
        if got != list(ids):
            raise ValueError("checks must list every policy item once, in the order of the POLICY: "
                             + ", ".join(ids[:30]))
        check_reason(data)
        return find_evidence(case, data.get("evidence") or [])

    return validate


def max_tokens_for(n_rules: int, role_max: int) -> int:
    return max(role_max, ANSWER_BASE + TOKENS_PER_CHECK * n_rules)


def judge_checklist(
    gateway: ModelGateway,
    case: AuditCase,
    context: str,
    units: Sequence[ContextUnit],
    step: str,
    probability: ProbabilityOptions | None = None,
) -> Judged:
    """The checklist verdict over ``context``; raises ``ModelCallError`` when it fails for good."""
    popts = probability or ProbabilityOptions()
    ids = list(dict.fromkeys(u.id for u in units))
    messages = checklist_messages(case, context)
    schema = checklist_schema(ids)
    validate = checklist_validator(ids, case)
    room = max_tokens_for(len(ids), gateway.config.role(ModelRole.JUDGE).max_tokens)

    def ask(msgs: list[dict[str, str]], at: str, sample: tuple[float, int] | None = None) -> Any:
        return gateway.complete_json(
            role=ModelRole.JUDGE, messages=msgs, schema=schema, schema_name="checklist", step=at,
            validate=validate, logprobs=None if sample else popts.top_logprobs,
            sample=sample, max_tokens=room,
        )

    answered = ask_checking_evidence(ask, messages, step)
    result, calls = answered.result, answered.calls
    checks = _checks(result.data["checks"], result.logprobs)
    broken = [c["id"] for c in checks if c["status"] == CheckStatus.VIOLATED]
    verdict = Verdict(
        violation=bool(broken),
        reason=str(result.data.get("reason") or "")[:REASON_MAX],
        violated_rules=broken,
        reason_cites=True,
        evidence=answered.evidence.spans,
        evidence_refused=answered.refused,
        checklist=checks,
    )
    ps = [c["p_violated"] for c in checks if c.get("p_violated") is not None]
    p = Probability(clamp(max(ps)), "logprobs") if len(ps) == len(checks) and ps else None
    if p is None or popts.should_sample(True):
        p = _sampled(ask, messages, popts, p, step, calls)
    verdict.probability, verdict.probability_source = p.value, p.source
    return Judged(verdict, calls, messages)


def _checks(answer: list[dict[str, Any]], logprobs: Any) -> list[dict[str, Any]]:
    out = []
    for i, entry in enumerate(answer):
        dist = value_distribution(logprobs, "status", STATUSES, occurrence=i)
        p = None if dist is None else round(dist[CheckStatus.VIOLATED], 4)
        out.append({"id": str(entry["id"]), "status": str(entry["status"]), "p_violated": p})
    return out


def _sampled(ask, messages, popts: ProbabilityOptions, have: Probability | None, step: str,
             calls: list) -> Probability:
    if not popts.should_sample(have is not None):
        return have or Probability.none()

    def violation(res: Any) -> bool:
        return any(c.get("status") == CheckStatus.VIOLATED for c in res.data["checks"])

    def ask_sample(seed: int) -> Any:
        return ask(messages, f"{step}:sample{seed}", (popts.temperature, seed))

    return sampled_answers(ask_sample, violation, popts.samples, calls)
