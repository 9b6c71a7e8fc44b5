"""Judgment by the ``judge`` role: a verdict that cites the context's ids.

Two modes over the same context units (rules, passages or documents):

- ``whole``: one call with the whole rendered context; schema
  ``{violation: bool, violated_rules: [ids], reason: str}``. A violation must name at least
  one id in ``violated_rules``, and a compliant verdict none (enforced: the gateway makes one
  repair attempt). Whether the free-text ``reason`` cites the ids is recorded in
  ``Verdict.reason_cites`` rather than enforced: a repair re-sends the whole prompt (minutes
  on a CPU model), and the small judge, asked again, repeats the same wording. Ids that are
  not in the context are flagged in ``unknown_rule_ids``, not silently dropped.
- ``per-rule``: one short question per unit (``{applies: bool, violated: bool}``), combined:
  the reply violates the policy iff some unit applies and is violated. Small models answer a
  single yes/no question far more reliably than a verdict over a rule list.

Both raise ``ModelCallError`` when the model fails for good (the caller records it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.audit.cases import AuditCase, prompt_fields
from workbench.audit.prompts import build_messages
from workbench.audit.trace import ModelCall, Verdict

JUDGE_PROMPT = "judge_v2"
RULE_PROMPT = "judge_rule_v2"
REASON_MAX = 300

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "violation": {"type": "boolean"},
        "violated_rules": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 80},
            "maxItems": 6,
        },
        "reason": {"type": "string", "maxLength": REASON_MAX},
    },
    "required": ["violation", "violated_rules", "reason"],
    "additionalProperties": False,
}

RULE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"applies": {"type": "boolean"}, "violated": {"type": "boolean"}},
    "required": ["applies", "violated"],
    "additionalProperties": False,
}

_BRACKETED = re.compile(r"\[([^\[\]\s]{1,80})\]")


@dataclass(frozen=True)
class ContextUnit:
    """One citable item of a judge context: its id, the text the judge reads for it, and
    where it comes from (SKILL and character spans of its source), for highlighting."""

    id: str
    text: str
    skill: str = ""
    spans: tuple[tuple[int, int], ...] = ()


def _strip(rid: str) -> str:
    return rid.strip().strip("[]").strip()


def cited_ids(reason: str, known: Sequence[str]) -> list[str]:
    """Ids of ``known`` that ``reason`` mentions (bracketed or bare), in order of mention."""
    found = sorted((at, rid) for rid in known if (at := reason.find(rid)) != -1)
    return [rid for _, rid in found]


MAX_IDS_SHOWN = 30  # in a repair request; the prompt itself lists every id


def verdict_validator(known_ids: Sequence[str]) -> Callable[[dict[str, Any]], None]:
    """Reject verdicts whose ``violation`` and ``violated_rules`` contradict each other, and
    violations that cite no id of the context (an invalid citation: nothing to point the
    analyst to). The gateway gives the model one repair; if that fails too, the case's trace
    records the model error instead of an uncited violation."""
    known = set(known_ids)

    def validate(data: dict[str, Any]) -> None:
        if data["violation"] and not data["violated_rules"]:
            raise ValueError(
                "violation is true but violated_rules is empty; list the ids of the violated items"
            )
        if not data["violation"] and data["violated_rules"]:
            raise ValueError("violation is false but violated_rules is not empty")
        cited = [_strip(str(r)) for r in data["violated_rules"]]
        if data["violation"] and known and not any(r in known for r in cited):
            shown = ", ".join(repr(r[:40]) for r in cited[:6])
            # Name the ids the repair may use: a small model otherwise repeats its guess (on
            # CompliBench the 1.5B judge cited the prompt's example id [R12] twice in a row).
            ids = list(dict.fromkeys(known_ids))
            valid = ", ".join(f"[{r[:40]}]" for r in ids[:MAX_IDS_SHOWN])
            more = f" and {len(ids) - MAX_IDS_SHOWN} more" if len(ids) > MAX_IDS_SHOWN else ""
            raise ValueError(
                f"invalid citation: violated_rules names only ids that are not in the context "
                f"({shown}); cite the bracketed ids of the violated items: the context's ids are "
                f"{valid}{more}"
            )

    return validate


def reason_cites(reason: str, violated: Sequence[str], known_ids: Sequence[str]) -> bool:
    """Whether the reason names a violated id (or, for a compliant verdict, any id or none
    is needed: True)."""
    if not violated:
        return True
    return any(rid in reason for rid in violated) or bool(cited_ids(reason, known_ids))


def make_verdict(data: dict[str, Any], known_ids: Sequence[str]) -> Verdict:
    known = set(known_ids)
    ids = [_strip(r) for r in data.get("violated_rules") or []]
    ids = list(dict.fromkeys(i for i in ids if i))
    unknown = [i for i in ids if i not in known]
    for rid in _BRACKETED.findall(data.get("reason") or ""):
        rid = _strip(rid)
        if rid and rid not in known and rid not in unknown and not rid.isdigit():
            unknown.append(rid)
    reason = str(data.get("reason") or "")[:REASON_MAX]
    return Verdict(
        violation=bool(data["violation"]),
        reason=reason,
        violated_rules=ids,
        unknown_rule_ids=unknown,
        reason_cites=reason_cites(reason, ids, known_ids),
    )


def judge_messages(case: AuditCase, context: str) -> list[dict[str, str]]:
    return build_messages(
        JUDGE_PROMPT,
        policy=context,
        **prompt_fields(case),
    )


def rule_messages(case: AuditCase, unit: ContextUnit) -> list[dict[str, str]]:
    return build_messages(
        RULE_PROMPT,
        **prompt_fields(case),
        rule=unit.text,
    )


def call_record(step: str, result: Any) -> ModelCall:
    u = result.usage
    return ModelCall(
        step=step,
        role=u.role,
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        latency_ms=round(u.latency_ms, 3),
        cached=u.cached,
        attempts=u.attempts,
        key=result.key,
    )


def judge_whole(
    gateway: Any, case: AuditCase, context: str, units: Sequence[ContextUnit], step: str
) -> tuple[Verdict, list[ModelCall], list[dict[str, str]]]:
    known = [u.id for u in units]
    messages = judge_messages(case, context)
    result = gateway.complete_json(
        role="judge",
        messages=messages,
        schema=VERDICT_SCHEMA,
        schema_name="verdict",
        step=step,
        validate=verdict_validator(known),
    )
    return make_verdict(result.data, known), [call_record("judge", result)], messages


def judge_per_rule(
    gateway: Any,
    case: AuditCase,
    units: Sequence[ContextUnit],
    step: str,
    calls: list[ModelCall] | None = None,
) -> tuple[Verdict, list[ModelCall]]:
    """``calls`` (optional) receives each call's record as it completes, so the calls made
    before a failure are still accounted."""
    calls = [] if calls is None else calls
    answers: list[dict[str, Any]] = []
    for unit in units:
        result = gateway.complete_json(
            role="judge",
            messages=rule_messages(case, unit),
            schema=RULE_SCHEMA,
            schema_name="rule_check",
            step=f"{step}:{unit.id}",
        )
        calls.append(call_record(f"judge:{unit.id}", result))
        applies, violated = bool(result.data["applies"]), bool(result.data["violated"])
        answers.append({"id": unit.id, "applies": applies, "violated": applies and violated})
    broken = [a["id"] for a in answers if a["violated"]]
    applying = [a["id"] for a in answers if a["applies"]]
    if broken:
        reason = "The reply breaks " + ", ".join(f"[{i}]" for i in broken) + "."
    elif applying:
        reason = "The reply follows the applicable items " + ", ".join(f"[{i}]" for i in applying) + "."
    else:
        reason = "None of the judged items applies to the reply."
    verdict = Verdict(
        violation=bool(broken), reason=reason, violated_rules=broken, per_rule=answers
    )
    return verdict, calls
