"""Judging a context in parts when the whole does not fit the judge's context window.

Two ways to split, both ending in one verdict that cites the violated items:

- ``grouped``: closure-ordered groups. Each item goes with its transitive prerequisites
  among the judged items (a rule is never judged without the rules it requires); groups
  are packed in closure order into parts of at most ``target`` tokens, and each part gets
  the usual whole-context verdict. A group larger than the target is judged rule by rule.
- ``per-rule``: every item on its own, with the per-rule question.

The case violates the policy iff some part says so; the verdict lists every part's
violated ids and the violating parts' reasons. Each part and its answer are kept in the
trace (:class:`~workbench.audit.trace.JudgedPart`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase
from workbench.audit.judge import PROMPTS, ContextUnit, ProbabilityOptions, judge_context
from workbench.audit.trace import JudgedPart, ModelCall, Verdict
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import JudgeMode, Split, values

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

SPLITS = values(Split)

Prerequisites = Callable[[ContextUnit], list[str]]


def render_part(units: Sequence[ContextUnit], rules: bool) -> str:
    """A part's policy text, laid out as the whole context is (rules under a header per
    SKILL, as ``render_rules`` does; passages and documents one after another)."""
    if not rules:
        return "\n\n".join(u.text for u in units)
    return "\n\n".join(block for skill, run in groupby(units, key=lambda u: u.skill)
                       for block in (f"## SKILL: {skill}", *(u.text for u in run)))


def closure_groups(
    units: Sequence[ContextUnit], prerequisites: Prerequisites | None
) -> list[list[ContextUnit]]:
    """Each not yet covered item with its prerequisites among ``units``, in closure order.

    Without ``prerequisites`` (passages, documents, a strategy without closure) every item
    is its own group. An item already in an earlier group was judged there with all its
    prerequisites (closures are transitive), so it opens no group of its own.
    """
    if prerequisites is None:
        return [[u] for u in units]
    by_key = {(u.skill, u.id): u for u in units}
    covered: set[tuple[str, str]] = set()
    groups: list[list[ContextUnit]] = []
    for u in units:
        if (u.skill, u.id) in covered:
            continue
        group = [by_key[(u.skill, r)] for r in prerequisites(u) if (u.skill, r) in by_key]
        if not group or group[0] is not u:
            group = [u] + [g for g in group if g is not u]
        groups.append(group)
        covered.update((g.skill, g.id) for g in group)
    return groups


def plan_parts(
    units: Sequence[ContextUnit],
    target: int,
    split: str,
    prerequisites: Prerequisites | None = None,
    rules: bool = True,
) -> list[list[ContextUnit]]:
    """Parts of at most ``target`` rendered tokens each (see the module doc).

    Raises ValueError for an unknown ``split`` and for an item that alone exceeds ``target``
    (the caller checks item sizes against the window first and reports it properly)."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    for u in units:
        if count_tokens(render_part([u], rules)) > target:
            raise ValueError(f"item {u.id} alone is over the target of {target} tokens")
    if split == Split.PER_RULE:
        return [[u] for u in units]
    parts: list[list[ContextUnit]] = []
    current: list[ContextUnit] = []
    for group in closure_groups(units, prerequisites):
        if count_tokens(render_part(group, rules)) > target:
            if current:
                parts.append(current)
                current = []
            parts.extend([u] for u in group)  # too big together: rule by rule
            continue
        merged = current + [g for g in group if g not in current]
        if current and count_tokens(render_part(merged, rules)) > target:
            parts.append(current)
            merged = list(group)
        current = merged
    if current:
        parts.append(current)
    return parts


def judge_in_parts(
    gateway: ModelGateway,
    case: AuditCase,
    parts: Sequence[Sequence[ContextUnit]],
    split: str,
    step: str,
    rules: bool,
    calls: list[ModelCall],
    judged: list[JudgedPart],
    prompts: list[dict[str, Any]] | None = None,
    *,
    mode: JudgeMode = JudgeMode.WHOLE,
    probability: ProbabilityOptions | None = None,
) -> Verdict:
    """Judge each part and combine. ``calls`` and ``judged`` receive each call's record and
    each part as they complete, so a failure (ModelCallError, raised) keeps what was done;
    ``prompts``, when given, each grouped part's messages. A grouped part is judged in
    ``mode`` (whole or checklist); a per-rule split asks the per-rule question."""
    verdicts: list[Verdict] = []
    for i, part in enumerate(parts, 1):
        text = render_part(part, rules)
        part_mode = JudgeMode.PER_RULE if split == Split.PER_RULE else mode
        record = JudgedPart(i, part_mode, [u.id for u in part], count_tokens(text))
        judged.append(record)
        out = judge_context(gateway, case, text, part, part_mode, f"{step}:part{i}", probability,
                            calls=calls if part_mode == JudgeMode.PER_RULE else None)
        verdict = out.verdict
        if part_mode != JudgeMode.PER_RULE:
            for c in out.calls:
                c.step = c.step.replace("judge", f"judge:part{i}", 1)
            calls.extend(out.calls)
            if prompts is not None:
                prompts.append({"step": f"judge:part{i}", "prompt": PROMPTS[part_mode],
                                "messages": out.messages})
        record.violation = verdict.violation
        record.violated_rules = list(verdict.violated_rules)
        record.reason = verdict.reason
        verdicts.append(verdict)
    return combine(verdicts, judged[-len(verdicts):] if verdicts else [])


def combine(verdicts: Sequence[Verdict], parts: Sequence[JudgedPart]) -> Verdict:
    """One verdict from the parts' verdicts: a violation iff some part found one."""
    n = len(parts)
    violated = list(dict.fromkeys(r for v in verdicts for r in v.violated_rules))
    unknown = list(dict.fromkeys(r for v in verdicts for r in v.unknown_rule_ids))
    breaking = [(p, v) for p, v in zip(parts, verdicts, strict=True) if v.violation]
    if breaking:
        reason = " ".join(f"Part {p.index}/{n}: {v.reason}" for p, v in breaking)
    else:
        reason = f"Compliant with all {n} parts judged separately (the context exceeded the judge's window)."
    per_rule = [a for v in verdicts for a in v.per_rule]
    # P(some part violates): the likeliest part decides, as the likeliest rule does within a
    # checklist; unknown when any part's probability is.
    ps = [v.probability for v in verdicts]
    known = bool(ps) and all(p is not None for p in ps)
    sources = {v.probability_source for v in verdicts}
    evidence = sorted({(e["start"], e["end"]): e for v in verdicts for e in v.evidence}.values(),
                      key=lambda e: (e["start"], e["end"]))
    return Verdict(
        violation=bool(breaking),
        reason=reason,
        violated_rules=violated,
        unknown_rule_ids=unknown,
        per_rule=per_rule,
        reason_cites=all(v.reason_cites for _, v in breaking),
        probability=max(ps) if known else None,  # type: ignore[type-var]
        probability_source=(sources.pop() if len(sources) == 1 else "mixed") if known else "",
        evidence=evidence,
        evidence_refused=sum(v.evidence_refused for v in verdicts),
        checklist=[c for v in verdicts for c in v.checklist],
    )
