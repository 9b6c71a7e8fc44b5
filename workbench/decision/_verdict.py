"""The decided verdict of a case: one record that every surface reads.

A judged trace has two answers in it — the judge's words (its yes/no, the rules it named, its
reason) and a score (the judge's verbal probability, or an activation scorer's output) — and
the dataset's saved setting says which decides. :func:`decided_verdict` is the one place that
turns a trace, the setting, the stored explanation of a score-decided violation (``Find the
rule``, :mod:`workbench.audit.judge.explain`) and the analysts' current decisions into a
:class:`DecidedVerdict`: the label ("violation", "compliant" or "review"), the score and where
it comes from with the setting's version, the rules of the judged closure that support the
label, the words of the reply they rest on, the reason, and the review state. Review (card and
queue), Replay (card and Browse table), Evaluate, the Start panel, the exports, alerts, the CI
gate, the API, ``workbench verdicts`` and ``workbench metrics`` read it; none re-derives a label.

The rules of the label:

- **Which setting applies** is :func:`setting_for`, the one place that chooses: the saved
  setting when its score is known for the trace (an activation setting needs the case's
  activation score attached, ``DecisionSetting.case_scores``), else none — the judge's
  probability at 0.5, uncalibrated, or its bare yes/no without one.
- **Every violation carries a rule of its closure.** Where the judge's words said violation,
  the label is the judge's, with the rules it named that are in the judged closure (the
  whole-mode judge must name one; ids outside the closure stay flagged on the trace, never a
  rule behind the label) or, where it named none of the closure, the explanation's; with
  neither, the case is labelled "review" and ``doubt`` says the judge named no rule of the
  closure. Where a score decided
  violation over the judge's "compliant" (or with no answer at all, scored only), the label is
  a violation only with the explanation's rule of the closure behind it; without one the case
  is labelled "review" and ``doubt`` says why in words. A violation's reason is never "it
  complies": such a reason gives way to the explanation's, or to a sentence naming the rule.
- **A compliant decision over the judge's "violation"** gets a reason the workbench writes
  (which way each went), never the judge's case for a violation shown as the reason.
- **Not judged** (an error, judge "none"): "review", with the error as the doubt.

The review state is the newest current decision on the trace (any reviewer): what it was, the
label shown then, the analyst's own label and who. The label itself stays the machine's; what
the analyst says is ``review.analyst_label``, which "Analysts vs gold", calibration and training
from reviews read (``_labelled.reviewed_truth``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.decision._decide import Decided, DecisionSetting, ScoreSource, decide, judgement
from workbench.review.decisions import ReviewDecision, current_decisions
from workbench.vocabulary import error_words

VIOLATION, COMPLIANT, REVIEW = "violation", "compliant", "review"
LABELS = (VIOLATION, COMPLIANT, REVIEW)
JUDGE, ACTIVATIONS = "judge", "activations"  # where the score comes from (``score_source``)
# Who wrote the reason: the judge's own words, the rule-finding call, or the workbench.
BY_JUDGE, BY_EXPLAIN, BY_WORKBENCH = "judge", "explain", "workbench"
# A reason that says the reply keeps the policy: never shown under a violation. Two kinds of
# words say so: a claim of compliance ("complies", "is fully compliant", "adheres to", "in
# compliance with", "follows the policy"), which a negation just before it turns around ("is
# not compliant", "does not adhere to", "not in compliance with"; "does not comply" never
# matches), and a denial of any violation ("No violation.", "doesn't violate", "No policy items
# are violated", "violates no rule").
_CLAIMS_COMPLIANCE = re.compile(
    r"\b(complies"
    r"|(fully|entirely|completely|wholly|totally|perfectly|clearly)\s+compliant"
    r"|(is|are|was|were|remains|stays|appears|seems|looks)\s+(\w+ly\s+)?compliant"
    r"|in\s+(full\s+)?compliance\s+with"
    r"|(adheres|adhered|conforms|conformed)\s+to"
    r"|(follows|followed|respects|respected|obeys|obeyed)\s+(all\s+)?(of\s+)?(the|every|each)\s+"
    r"(\w+\s+)?(policy|policies|rules?|policy\s+items?))\b",
    re.IGNORECASE)
_NEGATED = re.compile(r"(\bnot|n't|\bnever|\bno\s+longer|\bfail(s|ed)?\s+to|\bpartially|\bpartly"
                      r"|\bnon)\W+(\w+\W+)?$", re.IGNORECASE)
_DENIES_VIOLATION = re.compile(
    r"\b((does|did|do)\s*n[o']t\s+(violate|break|breach|contravene)"
    r"|no\s+violations?"
    r"|no\s+(policy\s+)?(rules?|items?|policy\s+items?|requirements?|policies)\s+(is|are|was|were)"
    r"\s+(\w+ly\s+)?(violated|broken|breached)"
    r"|nothing\s+(is|was)\s+(\w+ly\s+)?(violated|broken)"
    r"|(violates|breaks|breaches)\s+no(thing)?)\b",
    re.IGNORECASE)

Key = tuple[str, str, str]  # (run, case, strategy)
Saved = tuple[int, DecisionSetting]  # a saved setting and its version


def says_complies(reason: str) -> bool:
    """Whether ``reason`` says the reply complies: it denies any violation, or claims
    compliance with no negation just before the claim in the same sentence (see
    :data:`_CLAIMS_COMPLIANCE`)."""
    text = reason or ""
    if _DENIES_VIOLATION.search(text):
        return True
    for m in _CLAIMS_COMPLIANCE.finditer(text):
        before = re.split(r"[.;!?]", text[max(0, m.start() - 40):m.start()])[-1]
        if not _NEGATED.search(before):
            return True
    return False


@dataclass(frozen=True)
class Explanation:
    """Why a score-decided case is a violation: the rule of the closure most likely broken
    and the words of the reply that break it, each validated (an id outside the closure is
    rejected, a quote not in the reply dropped and counted). ``rule`` None: none was found."""

    rule: str | None
    evidence: tuple[dict[str, Any], ...] = ()
    reason: str = ""
    refused: int = 0  # quotes that are not in the reply: dropped, never shown
    rejected_rule: str = ""  # an id the model named that is not in the judged closure
    model: str = ""  # the model string of the role that answered

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "evidence": [dict(e) for e in self.evidence],
                "reason": self.reason, "refused": self.refused,
                "rejected_rule": self.rejected_rule, "model": self.model}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Explanation:
        return cls(data.get("rule") or None, tuple(dict(e) for e in data.get("evidence") or ()),
                   str(data.get("reason") or ""), int(data.get("refused") or 0),
                   str(data.get("rejected_rule") or ""), str(data.get("model") or ""))


@dataclass(frozen=True)
class ReviewState:
    """The newest current analyst decision on a verdict."""

    decision: str  # confirm | overturn | wrong-rule
    shown: str | None  # the label the analyst saw
    analyst_label: str | None  # what the analyst says the reply is
    reviewer: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "shown": self.shown,
                "analyst_label": self.analyst_label, "reviewer": self.reviewer}


@dataclass(frozen=True)
class DecidedVerdict:
    """One case's decided verdict (see the module doc). ``decided`` is the decision underneath
    (confidence, calibration, automatic), None when the trace was not judged."""

    case: str
    run: str
    strategy: str
    label: str  # violation | compliant | review
    score: float | None  # calibrated P(violation) (raw without a calibration)
    score_source: str | None  # "judge" | "activations"; None: not judged
    setting_version: int | None  # the saved setting that decided; None: none (the default)
    rules: tuple[str, ...] = ()  # ids of the closure supporting the label
    evidence: tuple[dict[str, Any], ...] = ()  # {"start", "end", "quote"} of the reply
    reason: str = ""
    reason_by: str = BY_JUDGE  # judge | explain | workbench
    doubt: str = ""  # why the label is "review", in words ("" otherwise)
    review: ReviewState | None = None
    decided: Decided | None = field(default=None, compare=False)
    judge_violation: bool | None = None  # the judge's own yes/no
    judge_rules: tuple[str, ...] = ()  # the ids the judge named (as named)
    judge_reason: str = ""
    explanation: Explanation | None = None

    @property
    def key(self) -> Key:
        return (self.run, self.case, self.strategy)

    @property
    def violation(self) -> bool:
        return self.label == VIOLATION

    @property
    def in_doubt(self) -> bool:
        return self.label == REVIEW

    @property
    def outcome_violation(self) -> bool | None:
        """The score's outcome (violation or not) whatever the label; None unjudged."""
        return None if self.decided is None else self.decided.violation

    @property
    def confidence(self) -> float | None:
        return None if self.decided is None else self.decided.confidence

    @property
    def score_decided(self) -> bool:
        """The score decided against the judge's own yes/no."""
        return (self.decided is not None and self.judge_violation is not None
                and self.decided.source is not ScoreSource.VERDICT
                and self.decided.violation != self.judge_violation)

    @property
    def needs_rule(self) -> bool:
        """A violation was decided but no rule of the closure stands behind it yet (to review,
        or the judge named only ids outside the closure): what "Find the rule" is for."""
        return self.outcome_violation is True and not self.rules and self.label != COMPLIANT

    def to_json(self) -> dict[str, Any]:
        """The record as ``workbench verdicts --json`` prints it (one line per case)."""
        d = self.decided
        return {
            "case": self.case, "run": self.run, "strategy": self.strategy, "label": self.label,
            "score": self.score, "score_source": self.score_source,
            "setting_version": self.setting_version, "rules": list(self.rules),
            "evidence": [dict(e) for e in self.evidence], "reason": self.reason,
            "reason_by": self.reason_by, "doubt": self.doubt or None,
            "review": None if self.review is None else self.review.to_dict(),
            "confidence": None if d is None else d.confidence,
            "calibrated": None if d is None else d.calibrated,
            "automatic": None if d is None else d.automatic,
            "judge": {"violation": self.judge_violation, "rules": list(self.judge_rules),
                      "reason": self.judge_reason},
        }


def setting_for(saved: Saved | None, trace: Any) -> Saved | None:
    """Which saved setting decides ``trace``: ``saved`` when its score is known for the trace
    (a verbal setting reads the judge's probability; an activation setting needs the case's
    score in ``case_scores``), else None — the judge's probability at 0.5, uncalibrated (its
    bare yes/no without one). The one place that chooses."""
    if saved is None:
        return None
    setting = saved[1]
    if setting.scorer is not None and setting.score_of(trace.id, trace.strategy) is None:
        return None
    return saved


def _review_state(key: Key, decisions: Iterable[ReviewDecision]) -> ReviewState | None:
    # A record read from a file knows no run (""): its decisions are those on its case.
    mine = [d for (k, _who), d in current_decisions(decisions).items()
            if k == key or (not key[0] and k[1:] == key[1:])]
    if not mine:
        return None
    d = max(mine, key=lambda x: (x.created_at, x.id or 0))
    label = d.analyst_label
    if label is None and (said := d.analyst_violation) is not None:
        label = VIOLATION if said else COMPLIANT
    return ReviewState(d.decision, d.shown, label, d.reviewer, d.note)


def _in_closure(trace: Any) -> set[str]:
    return set(trace.units) | set(trace.closure_ids)


def _words(violation: bool) -> str:
    return VIOLATION if violation else COMPLIANT


def decided_verdict(trace: Any, *, run: str = "", saved: Saved | None = None,
                    explanation: Explanation | None = None,
                    decisions: Iterable[ReviewDecision] = ()) -> DecidedVerdict:
    """The decided record of ``trace`` (an ``AuditTrace``) stored in ``run`` (see the module
    doc). ``saved``: the dataset's (version, setting), its activation scores attached;
    ``explanation``: the stored rule and words found for it; ``decisions``: review decisions
    (any; those on this trace's key count, undone ones not). A trace read without a judge's
    answer (``workbench audit --score-only``) is decided by its activation score alone."""
    key = (run, trace.id, trace.strategy)
    review = _review_state(key, decisions) if decisions else None
    base = {"case": trace.id, "run": run, "strategy": trace.strategy, "review": review,
            "explanation": explanation}
    v = trace.verdict
    applied = setting_for(saved, trace)
    setting = applied[1] if applied else None
    scored = judgement(trace, setting) if trace.error is None else None
    if v is None and (scored is None or scored.source is not ScoreSource.ACTIVATIONS):
        why = (f"not judged: {error_words(trace.error.kind)}: {trace.error.message}"
               if trace.error is not None
               else "not judged (audited without a judge)")
        return DecidedVerdict(label=REVIEW, score=None, score_source=None, setting_version=None,
                              doubt=why, **base)
    decided = scored or decide(setting, verdict=bool(v.violation))
    source = ACTIVATIONS if decided.source is ScoreSource.ACTIVATIONS else JUDGE
    common = {**base, "decided": decided, "score": decided.probability, "score_source": source,
              "setting_version": applied[0] if applied else None}
    if v is not None:
        common.update(judge_violation=bool(v.violation), judge_rules=tuple(v.violated_rules),
                      judge_reason=v.reason)
    if not decided.violation:
        return _compliant(v, source, common)
    closure = _in_closure(trace)
    found = (explanation is not None and bool(explanation.rule)
             and (not closure or explanation.rule in closure))
    if v is not None and v.violation:
        # A trace that kept no context ids (an older or hand-written one) cannot be checked.
        rules = tuple(r for r in v.violated_rules if not closure or r in closure)
        if rules and not says_complies(v.reason):
            return DecidedVerdict(label=VIOLATION, rules=rules, evidence=tuple(v.evidence),
                                  reason=v.reason, **common)
        if rules and not found:  # the judge said violation, in words that say it complies
            return DecidedVerdict(label=VIOLATION, rules=rules, evidence=tuple(v.evidence),
                                  reason=f"The judge answered violation ({', '.join(rules)}).",
                                  reason_by=BY_WORKBENCH, **common)
    if found:
        assert explanation is not None and explanation.rule
        reason = explanation.reason
        if not reason or says_complies(reason):
            reason = f"{explanation.rule} is the policy item most likely broken."
        return DecidedVerdict(label=VIOLATION, rules=(explanation.rule,),
                              evidence=tuple(explanation.evidence), reason=reason,
                              reason_by=BY_EXPLAIN, **common)
    doubt = _doubt(v, source, explanation)
    return DecidedVerdict(label=REVIEW, reason_by=BY_WORKBENCH, reason=doubt, doubt=doubt,
                          **common)


def _compliant(v: Any, source: str, common: dict[str, Any]) -> DecidedVerdict:
    """A compliant decision: the judge's own reason and words where it said so too, else a
    sentence saying which way each went."""
    if v is not None and not v.violation:
        return DecidedVerdict(label=COMPLIANT, evidence=tuple(v.evidence), reason=v.reason,
                              **common)
    if v is None:
        reason = (f"{_score_words(source).capitalize()} decides compliant; the judge was not "
                  "asked for an answer (scored only).")
    else:
        named = ", ".join(v.violated_rules) or "no rule"
        reason = (f"The judge's words said violation ({named}); at this dataset's setting "
                  f"{_score_words(source)} decides compliant.")
    return DecidedVerdict(label=COMPLIANT, reason_by=BY_WORKBENCH, reason=reason, **common)


def _doubt(v: Any, source: str, explanation: Explanation | None) -> str:
    """Why a violation decided without a rule behind it is to review, in words."""
    rejected = ""
    if explanation is not None:  # a rule it named that is not in the judged closure
        rejected = explanation.rejected_rule or explanation.rule or ""
        asked = ("asked which policy item the reply breaks, the judge named "
                 + (f"{rejected}, which is not in the judged rules" if rejected else "none"))
    if v is not None and v.violation:
        named = ", ".join(v.violated_rules)
        head = ("The judge's words said violation, but the judge named no rule of the closure"
                + (f" (it named {named}, not among the judged rules)" if named else ""))
        if explanation is None:
            return head + ". Find the rule, or check this case yourself."
        return f"{head}; {asked}. Check this case yourself."
    if explanation is not None:
        return f"No rule was found: {asked}. Check this case yourself."
    if v is None:
        return (f"{_score_words(source).capitalize()} decides violation; the judge was not asked "
                "for an answer (scored only). No rule has been found for it yet: find the rule, "
                "or check this case yourself.")
    return (f"The judge's words said compliant; at this dataset's setting {_score_words(source)} "
            "decides violation. No rule has been found for it yet: find the rule, or check this "
            "case yourself.")


def _score_words(source: str) -> str:
    return "the activation score" if source == ACTIVATIONS else "the judge's probability"


def decided_verdicts(records: Iterable[tuple[str, Any]], saved: Saved | None = None,
                     explanations: Mapping[Key, Explanation] | None = None,
                     decisions: Iterable[ReviewDecision] = ()) -> list[DecidedVerdict]:
    """:func:`decided_verdict` of each ``(run, trace)`` in ``records`` (in their order)."""
    by_key: dict[Key, list[ReviewDecision]] = {}
    for d in decisions:
        by_key.setdefault(d.key, []).append(d)
    explanations = explanations or {}
    out = []
    for run, trace in records:
        key = (run, trace.id, trace.strategy)
        out.append(decided_verdict(trace, run=run, saved=saved, explanation=explanations.get(key),
                                   decisions=by_key.get(key, ())))
    return out
