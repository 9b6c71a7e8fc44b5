"""The rule and the words behind a score-decided violation: "Find the rule".

When a score (an activation scorer, or the judge's calibrated probability) decides violation
while the judge's own words said compliant, the case has a label but no reason a person can
check. :func:`explain_violation` asks the judge again, on the same conversation: the judge's
own messages (``judge_v3`` over the trace's rendered context), its answer as the assistant
turn, and one user turn (``workbench/prompts/explain_v1.md``) saying that an independent score
finds a likely violation and asking which policy item is most likely broken and which exact
words of the reply break it. Because the request starts with the judge's prompt, llama.cpp's
prompt cache makes it cheap right after the judge's call.

The answer is model output and is checked like a verdict (``units``): the rule must be an id
of the judged context (an unknown id gets one repair naming the valid ids; still unknown, no
rule is found and the id is kept as ``rejected_rule``, never shown as a rule); each quote is
looked up in the reply (one more ask naming the quote; what is still not there is dropped and
counted, never shown). An empty rule is an honest "none found": the decided record then sends
the case to review, saying so (``workbench.decision.decided_verdict``).

:func:`rule_finding` measures the method on labelled cases (the share of explained violations
whose found rule is a gold rule, and the share with validated evidence, for score-decided and
judge-decided violations apart).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase
from workbench.audit.judge.units import (
    ID_MAX,
    MAX_IDS_SHOWN,
    REASON_MAX,
    ask_checking_evidence,
    find_evidence,
    strip_id,
)
from workbench.audit.judge.whole import QUOTE_MAX, judge_messages
from workbench.audit.trace import AuditTrace, ModelCall
from workbench.decision import Explanation
from workbench.errors import WorkbenchError
from workbench.llm.errors import ModelCallError
from workbench.prompts.fencing import defuse
from workbench.prompts.template import load_prompt
from workbench.vocabulary import ModelRole

if TYPE_CHECKING:
    from workbench.decision import DecidedVerdict
    from workbench.llm.protocol import ModelGateway

EXPLAIN_PROMPT = "explain_v1"
SCORED_PROMPT = "explain_scored_v1"  # no judge's answer: the trace was scored only
STEP = "explain"

EXPLAIN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rule": {"type": "string", "maxLength": ID_MAX},
        "evidence": {"type": "array",
                     "items": {"type": "string", "minLength": 1, "maxLength": QUOTE_MAX},
                     "maxItems": 3},
        "reason": {"type": "string", "minLength": 1, "maxLength": REASON_MAX},
    },
    "required": ["rule", "evidence", "reason"],
    "additionalProperties": False,
}


class CannotExplain(WorkbenchError, ValueError):
    """The trace holds nothing to ask about again (no verdict, no context, judged in parts)."""


def known_ids(trace: AuditTrace) -> list[str]:
    """The citable ids of the judged context, in closure order."""
    return list(dict.fromkeys([*trace.units, *trace.closure_ids]))


def explain_messages(case: AuditCase, trace: AuditTrace, score: float | None) -> list[dict[str, str]]:
    """The judge's conversation, its answer, and the question (see the module doc). A trace
    scored only (``workbench audit --score-only``: no answer) gets the question appended to
    the judge's own (``explain_scored_v1``), the prompt its activations were read from."""
    v = trace.verdict
    if not trace.context or trace.error is not None:
        raise CannotExplain(f"case {trace.id}: the trace holds no judged context",
                            "audit the case first")
    if trace.parts:
        raise CannotExplain(f"case {trace.id}: the context was judged in {len(trace.parts)} "
                            "parts (too long for the judge's window whole)",
                            "check this case yourself on Review")
    said = "unknown" if score is None else f"{round(100 * score)} %"
    if v is None:
        asked = load_prompt(SCORED_PROMPT).render(score=said)
        system, user = judge_messages(case, trace.context)
        return [system, {"role": "user", "content": user["content"] + "\n\n"
                         + asked[0]["content"] + "\n\n" + asked[1]["content"]}]
    answer = json.dumps({"violation": bool(v.violation), "violated_rules": list(v.violated_rules),
                         "evidence": [e.get("quote", "") for e in v.evidence],
                         "reason": v.reason}, ensure_ascii=False)
    asked = load_prompt(EXPLAIN_PROMPT).render(score=said)
    question = asked[0]["content"] + "\n\n" + asked[1]["content"]
    # The judge's answer is model output: defused like every value sent back to a model.
    return [*judge_messages(case, trace.context), {"role": "assistant", "content": defuse(answer)},
            {"role": "user", "content": question}]


def _validator(known: Sequence[str], case: AuditCase):
    valid = set(known)

    def validate(data: dict[str, Any]):
        rule = strip_id(str(data.get("rule") or ""))
        if rule and rule not in valid:
            shown = ", ".join(f"[{r[:ID_MAX]}]" for r in list(known)[:MAX_IDS_SHOWN])
            raise ValueError(f"rule {rule[:60]!r} is not an item of the POLICY; name one of "
                             f"{shown}, or give an empty rule")
        if not str(data.get("reason") or "").strip():
            raise ValueError("reason is empty; say in one short sentence how the REPLY breaks "
                             "the item")
        return find_evidence(case, data.get("evidence") or [])

    return validate


@dataclass
class Explained:
    """What one ask gives: the explanation and the calls made."""

    explanation: Explanation
    calls: list[ModelCall]


def explain_violation(gateway: ModelGateway, case: AuditCase, trace: AuditTrace,
                      score: float | None = None) -> Explained:
    """Ask the judge which rule of ``trace``'s closure ``case``'s reply most likely breaks and
    with which words (see the module doc). ``score``: the calibrated P(violation) that decided
    it, said in the question. Raises :class:`CannotExplain` for a trace without a judged whole
    context, ``ModelCallError`` when the model fails for good (a timeout, the server down)."""
    known = known_ids(trace)
    messages = explain_messages(case, trace, score)
    validate = _validator(known, case)

    def ask(msgs: list[dict[str, str]], at: str) -> Any:
        return gateway.complete_json(role=ModelRole.JUDGE, messages=msgs, schema=EXPLAIN_SCHEMA,
                                     schema_name="explanation", step=at, validate=validate)

    try:
        answered = ask_checking_evidence(ask, messages, f"{STEP}:{trace.id}")
    except ModelCallError as exc:
        if exc.kind != "invalid_output":
            raise
        return Explained(Explanation(None, rejected_rule="(an id not in the judged rules)",
                                     model=exc.model), [])
    data = answered.result.data
    rule = strip_id(str(data.get("rule") or "")) or None
    return Explained(Explanation(rule, tuple(answered.evidence.spans),
                                 str(data.get("reason") or "")[:REASON_MAX] if rule else "",
                                 answered.refused), answered.calls)


def to_explain(verdicts: Iterable[DecidedVerdict], *, again: bool = False) -> list[DecidedVerdict]:
    """The records "Find the rule" is for: a score decided violation and no rule of the
    closure stands behind it yet (``needs_rule``); with ``again``, also those already
    explained by it (to ask once more)."""
    return [v for v in verdicts
            if v.needs_rule or (again and v.explanation is not None and v.outcome_violation)]


# -- how well it finds the rule ------------------------------------------------------------

@dataclass(frozen=True)
class RuleFinding:
    """Among violations of one kind: how many, how many name a rule, how many of those are a
    gold rule of the case (of those with gold rules), and how many carry validated evidence."""

    kind: str  # "score-decided" | "judge-decided"
    violations: int
    with_rule: int
    with_gold: int  # violations whose case has gold rules
    gold_rule: int  # of those, found rule among the gold rules
    with_evidence: int

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "violations": self.violations, "with_rule": self.with_rule,
                "with_gold_rules": self.with_gold, "gold_rule": self.gold_rule,
                "share_gold_rule": self.gold_rule / self.with_gold if self.with_gold else None,
                "with_evidence": self.with_evidence,
                "share_with_evidence": (self.with_evidence / self.violations
                                        if self.violations else None)}


def rule_finding(verdicts: Iterable[DecidedVerdict],
                 gold_rules: Mapping[str, Sequence[str]]) -> list[RuleFinding]:
    """The figures of :class:`RuleFinding` for score-decided and judge-decided violations
    (decided records whose score's outcome is violation; the found rule is the record's first
    rule; a record "to review" found none). ``gold_rules``: case id -> its gold rule ids
    (``AuditCase.gold_rules``)."""
    violations = [v for v in verdicts if v.outcome_violation]
    out = []
    for kind in ("score-decided", "judge-decided"):
        mine = [v for v in violations if bool(v.judge_violation) == (kind == "judge-decided")]
        with_gold = [v for v in mine if gold_rules.get(v.case)]
        out.append(RuleFinding(
            kind, len(mine), sum(bool(v.rules) for v in mine), len(with_gold),
            sum(bool(v.rules) and v.rules[0] in set(gold_rules[v.case]) for v in with_gold),
            sum(bool(v.rules) and bool(v.evidence) for v in mine)))
    return out
