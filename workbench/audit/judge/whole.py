"""``whole`` mode: one verdict over the whole rendered context.

Schema ``{violation, violated_rules, evidence, reason}``, the verdict first so its token's
log-probabilities give P(violation). Checked before anyone sees it (the gateway makes one
repair attempt when a check fails): a non-empty reason; a violation names at least one id of
the context, a compliant verdict none. Ids that are not in the context are flagged in
``unknown_rule_ids``, not dropped. Whether the reason cites the ids is recorded
(``reason_cites``), not enforced: a repair re-sends the whole prompt (minutes on a CPU
model), and the small judge, asked again, repeats the same wording.

Evidence quotes are looked up in the reply (``workbench.audit.evidence``): one that is not
there is refused and the judge is asked once more, with the quote named; what is still not in
the reply after that is dropped and counted (``evidence_refused``), never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase, prompt_fields
from workbench.audit.judge.probability import Probability, ProbabilityOptions, sampled_answers
from workbench.audit.judge.units import (
    REASON_MAX,
    ContextUnit,
    Evidence,
    Judged,
    ask_checking_evidence,
    check_citations,
    check_reason,
    find_evidence,
    reason_cites,
    strip_id,
    unknown_ids,
)
from workbench.audit.prompts import build_messages
from workbench.audit.trace import Verdict
from workbench.llm.logprobs import probability_of
from workbench.vocabulary import ModelRole

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

JUDGE_PROMPT = "judge_v3"
QUOTE_MAX = 300

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "violation": {"type": "boolean"},
        "violated_rules": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 80},
            "maxItems": 6,
        },
        "evidence": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": QUOTE_MAX},
            "maxItems": 3,
        },
        "reason": {"type": "string", "minLength": 1, "maxLength": REASON_MAX},
    },
    "required": ["violation", "violated_rules", "evidence", "reason"],
    "additionalProperties": False,
}


def verdict_validator(known_ids: Sequence[str], case: AuditCase | None = None):
    """The checks a whole-context answer must pass (see the module doc). Returns the
    answer's located evidence (when ``case`` is given), so the lookup runs once."""

    def validate(data: dict[str, Any]) -> Evidence:
        check_reason(data)
        check_citations(bool(data["violation"]), data["violated_rules"], known_ids)
        return find_evidence(case, data.get("evidence") or []) if case is not None else Evidence()

    return validate


def make_verdict(data: dict[str, Any], known_ids: Sequence[str],
                 evidence: Evidence | None = None) -> Verdict:
    known = set(known_ids)
    ids = list(dict.fromkeys(i for i in (strip_id(r) for r in data.get("violated_rules") or []) if i))
    reason = str(data.get("reason") or "")[:REASON_MAX]
    found = evidence or Evidence()
    return Verdict(
        violation=bool(data["violation"]),
        reason=reason,
        violated_rules=ids,
        unknown_rule_ids=unknown_ids(ids, reason, known),
        reason_cites=reason_cites(reason, ids, known_ids),
        evidence=found.spans,
        evidence_refused=len(found.refused),
    )


def judge_messages(case: AuditCase, context: str) -> list[dict[str, str]]:
    return build_messages(JUDGE_PROMPT, policy=context, **prompt_fields(case))


def judge_whole(
    gateway: ModelGateway,
    case: AuditCase,
    context: str,
    units: Sequence[ContextUnit],
    step: str,
    probability: ProbabilityOptions | None = None,
) -> Judged:
    """One verdict over ``context``; raises ``ModelCallError`` when the model fails for good
    (after the gateway's repair). Sampled answers that fail are left out of the share."""
    popts = probability or ProbabilityOptions()
    known = [u.id for u in units]
    messages = judge_messages(case, context)
    validate = verdict_validator(known, case)

    def ask(msgs: list[dict[str, str]], at: str) -> Any:
        return gateway.complete_json(
            role=ModelRole.JUDGE, messages=msgs, schema=VERDICT_SCHEMA, schema_name="verdict", step=at,
            validate=validate, logprobs=popts.top_logprobs,
        )

    answered = ask_checking_evidence(ask, messages, step)
    result, calls = answered.result, answered.calls
    verdict = make_verdict(result.data, known, answered.evidence)
    verdict.evidence_refused = answered.refused
    p = _probability(gateway, messages, validate, popts, result, step, calls)
    verdict.probability, verdict.probability_source = p.value, p.source
    return Judged(verdict, calls, messages)


def _probability(gateway: ModelGateway, messages, validate, popts: ProbabilityOptions, result: Any,
                 step: str, calls: list) -> Probability:
    value = probability_of(result.logprobs, "violation", "true", ("true", "false"))
    if value is not None and not popts.should_sample(True):
        return Probability(round(value, 4), "logprobs")
    if not popts.should_sample(value is not None):
        return Probability.none()

    def ask_sample(seed: int) -> Any:
        return gateway.complete_json(
            role=ModelRole.JUDGE, messages=messages, schema=VERDICT_SCHEMA, schema_name="verdict",
            step=f"{step}:sample{seed}", validate=validate, sample=(popts.temperature, seed),
        )

    return sampled_answers(ask_sample, lambda res: bool(res.data["violation"]), popts.samples,
                           calls)
