"""Analyst review of audit verdicts: the review queue, decisions, progress and agreement,
plus the side-by-side metrics table of stored runs. Pure Python (no UI, no database).

A *review item* is the newest trace of one case under one strategy among the runs being
reviewed, identified by ``(run_id, case_id, strategy)``, with its decided record
(``workbench.decision.DecidedVerdict``: what the card shows). It enters the queue for any of
:data:`REASONS`, each read from the decided records, never from the judge's hidden words:

- ``in-doubt``: the record is "to review", or its confidence is below the "likely" band
  (``workbench.words.LIKELY``: the card reads "possible violation" / "probably compliant");
- ``decided-violation``: the record is a violation;
- ``strategies-disagree``: the strategies' records of the same case differ;
- ``gold-mismatch``: the record's label differs from the case's gold label.

An analyst *confirms* the label shown, *overturns* it, or marks it *right verdict, wrong rule*
(``workbench.review.decisions``: the decisions, undo, which one is current). A decision keeps
the label it was made about (``shown``) and the analyst's own (``analyst_label``), so a later
re-audit or a new setting never changes what an old decision meant (:func:`decision_on`).

Agreement treats each current decision as a pair of labels on one verdict: the one shown
(violation or not) and the analyst's own. Share confirmed is their observed agreement; Cohen's
kappa corrects it for chance from both label distributions
(:func:`workbench.annotation.agreement.cohen_kappa`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.annotation.agreement import cohen_kappa, krippendorff_alpha
from workbench.audit.cases import gold_rules_of
from workbench.audit.trace import (
    AuditTrace,
    case_and_strategy,
    latest_per_case,
)
from workbench.clock import utcnow as utcnow
from workbench.decision import (
    REVIEW,
    VIOLATION,
    DecidedVerdict,
    DecisionSetting,
    decided_verdict,
)

# Re-exported (``X as X``): the review API stays importable from one place.
from workbench.review.decisions import DECISION_TEXT as DECISION_TEXT
from workbench.review.decisions import DECISIONS as DECISIONS
from workbench.review.decisions import WRONG_RULE as WRONG_RULE
from workbench.review.decisions import ItemKey as ItemKey
from workbench.review.decisions import ReviewDecision as ReviewDecision
from workbench.review.decisions import ReviewError as ReviewError
from workbench.review.decisions import StaleUndo as StaleUndo
from workbench.review.decisions import current_decisions as current_decisions
from workbench.review.decisions import item_text as item_text
from workbench.review.decisions import validate_decision as validate_decision
from workbench.vocabulary import label_violation, verdict_word
from workbench.words import LIKELY

REASONS = ("in-doubt", "decided-violation", "strategies-disagree", "gold-mismatch")
REASON_TEXT = {
    "in-doubt": "in doubt",
    "decided-violation": "decided violation",
    "strategies-disagree": "strategies disagree",
    "gold-mismatch": "gold disagrees with the decision",
}
# Codes of saved views and addresses written before the decided record.
OLD_REASONS = {"flagged": "decided-violation"}
STATUSES = ("all", "not reviewed by me", "reviewed by me")


# -- the queue ---------------------------------------------------------------------------


@dataclass
class QueueItem:
    dataset: str
    run_id: str
    case_id: str
    strategy: str
    trace: AuditTrace
    label: str | None = None  # gold: "negative" (violation) | "positive" | None
    reasons: tuple[str, ...] = ()
    others: dict[str, str] = field(default_factory=dict)  # other strategy -> its decided label
    search_text: str = ""
    decided: DecidedVerdict | None = None  # the record the card shows

    def __post_init__(self) -> None:
        if self.decided is None:
            self.decided = decided_verdict(self.trace, run=self.run_id)

    @property
    def key(self) -> ItemKey:
        return (self.run_id, self.case_id, self.strategy)

    @property
    def verdict(self) -> DecidedVerdict:
        assert self.decided is not None  # set in __post_init__
        return self.decided

    @property
    def violation(self) -> bool:
        """Whether the label shown is a violation."""
        return self.verdict.label == VIOLATION

    @property
    def gold_violation(self) -> bool | None:
        return label_violation(self.label)


Record = tuple[str, AuditTrace]  # (run_id, trace) of a stored trace


def latest_records(records: Iterable[Record]) -> list[Record]:
    """The newest ``(run_id, trace)`` per (case, strategy); ``records`` oldest first.

    Order: cases in first-seen order, then strategies in first-seen order.
    """
    return latest_per_case(records, key=lambda r: case_and_strategy(r[1]))


def in_doubt(verdict: DecidedVerdict) -> bool:
    """The record is "to review", or decided with less than "likely" confidence."""
    c = verdict.confidence
    return verdict.label == REVIEW or (c is not None and c < LIKELY)


def reasons_of(verdict: DecidedVerdict, gold: bool | None,
               labels_of_case: Collection[str]) -> tuple[str, ...]:
    """The queue's reasons for one record (see the module doc): ``gold`` the case's gold
    answer (None: none), ``labels_of_case`` the labels of every strategy's record of it."""
    decided = {lab for lab in labels_of_case if lab != REVIEW}
    return tuple(reason for reason, applies in (
        ("in-doubt", in_doubt(verdict)),
        ("decided-violation", verdict.label == VIOLATION),
        ("strategies-disagree", len(decided) > 1),
        ("gold-mismatch", gold is not None and verdict.label != REVIEW
         and (verdict.label == VIOLATION) != gold),
    ) if applies)


def build_queue(
    records: Iterable[Record],
    labels: Mapping[str, str | None] | None = None,
    dataset: str = "",
    texts: Mapping[str, str] | None = None,
    verdicts: Mapping[ItemKey, DecidedVerdict] | None = None,
) -> list[QueueItem]:
    """Every judged trace (newest per case and strategy) as a review item with its reasons.

    ``records``: ``(run_id, trace)`` oldest first. ``labels``: gold labels by case id
    (they override the label stored in a trace). ``texts``: extra searchable text per case
    (conversation, reply). ``verdicts``: the decided records by (run, case, strategy)
    (``workbench.decision.decided_verdicts`` under the dataset's setting); a trace without
    one is read under the default setting. Traces nothing decided (errors, judge mode
    ``none`` without an activation score) carry nothing to confirm and are left out.
    """
    decided = {(run, t.id, t.strategy): (verdicts or {}).get((run, t.id, t.strategy))
               or decided_verdict(t, run=run) for run, t in latest_records(records)}
    # Judged, or decided by an activation score alone (a trace scored only, no answer).
    latest = [(run, t) for run, t in latest_records(records)
              if decided[(run, t.id, t.strategy)].decided is not None]
    decided = {k: v for k, v in decided.items() if v.decided is not None}
    by_case: dict[str, dict[str, str]] = {}
    for (_run, cid, strategy), v in decided.items():
        by_case.setdefault(cid, {})[strategy] = v.label
    items = []
    for run_id, t in latest:
        cid, strategy = t.id, t.strategy
        v = decided[(run_id, cid, strategy)]
        label = labels.get(cid) if labels is not None and cid in labels else t.label
        others = {s: lab for s, lab in by_case[cid].items() if s != strategy}
        reasons = reasons_of(v, label_violation(label), by_case[cid].values())
        search = " ".join([
            cid, t.session, strategy, run_id, v.label, v.reason, " ".join(v.rules),
            " ".join(REASON_TEXT[r] for r in reasons), (texts or {}).get(cid, ""),
        ])
        items.append(QueueItem(dataset, run_id, cid, strategy, t, label, reasons, others,
                               search.casefold(), v))
    return items


def filter_queue(
    items: Iterable[QueueItem],
    reasons: Collection[str] | None = REASONS,
    query: str = "",
    status: str = "all",
    reviewer: str = "",
    decisions: Iterable[ReviewDecision] = (),
) -> list[QueueItem]:
    """Items with any of ``reasons`` (``None`` or empty: every judged item) whose text holds
    every word of ``query`` (case-insensitive), restricted by ``status`` (one of
    :data:`STATUSES`, relative to ``reviewer``'s current decisions)."""
    reasons = [OLD_REASONS.get(r, r) for r in reasons or ()]
    unknown = set(reasons) - set(REASONS)
    if unknown:
        raise ValueError(f"unknown queue reason(s) {sorted(unknown)}; use {', '.join(REASONS)}")
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    wanted = set(reasons or ())
    words = query.casefold().split()
    mine = {key for (key, who) in current_decisions(decisions) if who == reviewer}
    return [item for item in items
            if (not wanted or wanted & set(item.reasons))
            and all(w in item.search_text for w in words)
            and (status == "all" or (item.key in mine) == (status == "reviewed by me"))]


# -- progress and agreement ----------------------------------------------------------------


@dataclass(frozen=True)
class ReviewProgress:
    total: int
    reviewed: int  # items with a decision by anyone
    mine: int  # items with a decision by ``reviewer``

    @property
    def share(self) -> float:
        return self.reviewed / self.total if self.total else 0.0


def review_progress(items: Iterable[QueueItem], decisions: Iterable[ReviewDecision],
                    reviewer: str = "") -> ReviewProgress:
    keys = {item.key for item in items}
    current = current_decisions(decisions)
    reviewed = {key for (key, _who) in current if key in keys}
    mine = {key for (key, who) in current if key in keys and who == reviewer}
    return ReviewProgress(len(keys), len(reviewed), len(mine))


@dataclass
class Agreement:
    """Analysts against the labels shown over current decisions (one per item and reviewer)."""

    decisions: int = 0
    confirmed: int = 0
    overturned: int = 0
    wrong_rule: int = 0  # right verdict, wrong rule cited: the verdict stands
    share_confirmed: float | None = None
    kappa: float | None = None  # Cohen's kappa, label shown vs the analyst's own label
    per_reviewer: list[dict[str, Any]] = field(default_factory=list)
    # Among analysts (items two or more reviewed): Krippendorff's alpha of their labels.
    analysts_alpha: float | None = None
    # Against gold labels, on reviewed items with one: shares of correct labels (the label
    # shown, which the workbench decided, and the analysts' own).
    gold_n: int = 0
    judge_gold: float | None = None
    analysts_gold: float | None = None


def _pair_stats(pairs: list[tuple[bool, bool]]) -> tuple[float | None, float | None]:
    """(observed agreement, Cohen's kappa) of (shown, analyst) label pairs."""
    if not pairs:
        return None, None
    rows = [(n, who, verdict_word(v)) for n, pair in enumerate(pairs)
            for who, v in zip(("judge", "analyst"), pair, strict=True)]
    return sum(a == b for a, b in pairs) / len(pairs), cohen_kappa(rows)


def agreement(
    decisions: Iterable[ReviewDecision],
    items: Iterable[QueueItem] | None = None,
) -> Agreement:
    """Agreement of analysts with the labels shown (and with gold labels, where items have
    them).

    Only each reviewer's current decision per item counts; with ``items``, only decisions on
    those items. Every decision with a known analyst label counts, those on cards "to review"
    included. Each decision is one unit with two labels: what it stood for or against
    (``ReviewDecision.stood_violation``: the label shown; on a card "to review", the outcome
    its score decided; the judge's verdict for a decision made before labels were stored)
    and the analyst's own (``analyst_label``). Kappa is ``None`` when undefined (no
    decisions).
    """
    by_key = {item.key: item for item in items} if items is not None else None
    current = [
        d for d in current_decisions(decisions).values()
        if d.stood_violation is not None and d.analyst_violation is not None
        and (by_key is None or d.key in by_key)
    ]
    out = Agreement(decisions=len(current))
    out.confirmed = sum(d.decision == "confirm" for d in current)
    out.wrong_rule = sum(d.decision == WRONG_RULE for d in current)
    out.overturned = out.decisions - out.confirmed - out.wrong_rule
    pairs = [(bool(d.stood_violation), bool(d.analyst_violation)) for d in current]
    out.share_confirmed, out.kappa = _pair_stats(pairs)
    for reviewer in sorted({d.reviewer for d in current}):
        mine = [pair for d, pair in zip(current, pairs, strict=True) if d.reviewer == reviewer]
        share, kappa = _pair_stats(mine)
        out.per_reviewer.append({
            "reviewer": reviewer, "decisions": len(mine),
            "confirmed": sum(j == i for j, i in mine), "share confirmed": share, "kappa": kappa,
        })
    out.analysts_alpha = krippendorff_alpha(
        (item_text(d.key), d.reviewer, verdict_word(bool(d.analyst_violation))) for d in current
    )
    if by_key is not None:
        gold = [(d, by_key[d.key].gold_violation) for d in current]
        gold = [(d, g) for d, g in gold if g is not None]
        out.gold_n = len(gold)
        if gold:
            out.judge_gold = sum(d.stood_violation == g for d, g in gold) / len(gold)
            out.analysts_gold = sum(d.analyst_violation == g for d, g in gold) / len(gold)
    return out


# -- metrics of stored runs side by side ---------------------------------------------------

METRIC_COLUMNS = (
    "dataset", "run", "strategy", "cases", "labelled", "judged", "ACC", "violation-F1",
    "precision", "recall", "to review", "gold in context", "context tokens", "online tokens",
    "latency ms", "errors",
)


def gold_of(cases: Iterable[Any]) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """(labels, governing rules) by case id from audit cases (``gold.governing_rule(s)``)."""
    labels: dict[str, str | None] = {}
    rules: dict[str, list[str]] = {}
    for case in cases:
        labels[case.id] = case.label
        if ids := gold_rules_of(getattr(case, "extra", None)):
            rules[case.id] = ids
    return labels, rules


def _nan_to_none(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else x


def metrics_rows(
    dataset: str,
    records: Iterable[Record],
    labels: Mapping[str, str | None] | None = None,
    gold_rules: Mapping[str, list[str]] | None = None,
    by: str = "run",
    verdicts: Mapping[ItemKey, DecidedVerdict] | None = None,
) -> list[dict[str, Any]]:
    """One row of :data:`METRIC_COLUMNS` per (run, strategy) of one dataset.

    ``by="run"``: each run separately (a run holding two strategies gives two rows);
    ``by="latest"``: the newest trace per case and strategy across runs (``run`` = "latest").
    Metrics are :func:`workbench.audit.metrics.compute_metrics` with the given gold labels
    and governing rules; undefined values are ``None``, and so are the verdict metrics (ACC,
    F1, precision, recall) of a strategy whose traces were all audited without a judge
    (contexts only: nothing was decided, so nothing was decided wrongly). ``verdicts``: the
    decided records by (run, case, strategy): ACC, F1, precision and recall are then those of
    the labels every page shows (a case "to review" is no decision), else the judge's own.
    """
    from workbench.audit.metrics import compute_metrics

    records = list(records)
    if by == "run":
        groups: dict[str, list[Record]] = {}
        # A re-audit inside one run counts once: its newest trace.
        for run_id, t in latest_per_case(records, key=lambda r: (r[0], *case_and_strategy(r[1]))):
            groups.setdefault(run_id, []).append((run_id, t))
    elif by == "latest":
        groups = {"latest": latest_records(records)}
    else:
        raise ValueError(f"by must be 'run' or 'latest', got {by!r}")
    rows = []
    for run, pairs in groups.items():
        traces = [t for _r, t in pairs]
        decided = None if verdicts is None else {
            (t.id, t.strategy): v for r, t in pairs if (v := verdicts.get((r, t.id, t.strategy)))}
        # A run audited without a judge holds contexts only: its ACC is not 0, it is not
        # defined (issue #35: a one-case no-judge re-run showed "ACC 0.000" on Evaluate).
        context_only = {s for s in {t.strategy for t in traces}
                        if all(t.judge_mode == "none" and t.verdict is None
                               for t in traces if t.strategy == s)}
        for m in compute_metrics(traces, labels=labels, gold_rules=gold_rules, verdicts=decided):
            judged = m.group not in context_only
            rows.append({
                "dataset": dataset, "run": run, "strategy": m.group, "cases": m.n,
                "labelled": m.labelled, "judged": m.judged,
                "ACC": _nan_to_none(m.acc) if judged else None,
                "violation-F1": _nan_to_none(m.f1) if judged else None,
                "precision": _nan_to_none(m.precision) if judged else None,
                "recall": _nan_to_none(m.recall) if judged else None,
                "gold in context": _nan_to_none(m.coverage) if m.coverage_n else None,
                "context tokens": _nan_to_none(m.mean_context_tokens),
                "online tokens": _nan_to_none(m.mean_online_tokens),
                "latency ms": _nan_to_none(m.mean_latency_ms),
                "to review": m.to_review if verdicts is not None else None,
                "errors": ", ".join(f"{k}={v}" for k, v in sorted(m.errors.items())),
            })
    return rows


# -- bulk decisions ------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk decision will record, said before it is recorded (the preview)."""

    decisions: list[ReviewDecision]  # one per verdict that can take the decision
    redecided: int  # of those, verdicts the reviewer had already decided (a newer record)
    skipped: list[QueueItem]  # verdicts the decision cannot apply to (wrong rule: compliant)

    def preview(self, words: str, reviewer: str) -> str:
        if not self.decisions:
            return (f"Nothing to record: none of these verdicts can be marked {words}"
                    + (" (“wrong rule” needs a violation citing a rule)." if self.skipped else "."))
        text = (f"Records {len(self.decisions)} decision(s), {words}, by {reviewer}, "
                "as one action (one undo takes them all back).")
        if self.redecided:
            text += (f" {self.redecided} of these verdicts you had decided already: your newer "
                     "decision counts.")
        if self.skipped:
            text += (f" {len(self.skipped)} compliant verdict(s) are left out: “wrong rule” "
                     "needs a violation citing a rule.")
        return text


def shown_stands(verdict: DecidedVerdict) -> bool | None:
    """What a decision on ``verdict`` stands for or against, as violation or not: the label
    shown; for a record "to review", the outcome its score decided (the card says which);
    None when nothing was decided (not judged)."""
    return verdict.outcome_violation if verdict.label == REVIEW else verdict.label == VIOLATION


def decision_on(verdict: DecidedVerdict, dataset: str, reviewer: str, decision: str,
                note: str = "") -> ReviewDecision:
    """The record of ``reviewer`` deciding ``verdict`` (the one the card showed): the label
    shown, its score's source and setting version, and the analyst's own label — the shown
    one for confirm and wrong rule, its opposite for an overturn. Every decision made on a
    page or the command line is built here (validated when stored)."""
    stands = shown_stands(verdict)
    said = None if stands is None or decision not in DECISIONS else (
        not stands if decision == "overturn" else stands)
    return ReviewDecision(dataset, verdict.run, verdict.case, verdict.strategy, reviewer,
                          decision, note, verdict.judge_violation, shown=verdict.label,
                          shown_source=verdict.score_source,
                          setting_version=verdict.setting_version,
                          analyst_label=None if said is None else verdict_word(said))


def plan_bulk(items: Iterable[QueueItem], decision: str, reviewer: str, note: str,
              decisions: Iterable[ReviewDecision] = ()) -> BulkPlan:
    """The decisions ``reviewer`` would record by deciding every item of ``items`` the same
    way (validated later, when stored: an overturn without a note is refused then)."""
    mine = {key for (key, who) in current_decisions(decisions) if who == reviewer}
    out, skipped = [], []
    for item in items:
        if decision == WRONG_RULE and shown_stands(item.verdict) is not True:
            skipped.append(item)
            continue
        out.append(decision_on(item.verdict, item.dataset, reviewer, decision, note))
    return BulkPlan(out, sum(d.key in mine for d in out), skipped)


def plan_auto_decisions(items: Iterable[QueueItem], min_confidence: float, reviewer: str,
                        setting: DecisionSetting | None = None,
                        decisions: Iterable[ReviewDecision] = ()) -> BulkPlan:
    """Auto-decide: every item whose decision at the dataset's threshold (``setting``, a
    ``DecisionSetting``; None: 0.5, uncalibrated) has a confidence of at least
    ``min_confidence`` gets that decision, recorded for ``reviewer`` (who applies it) as a
    confirmation of the label shown when they agree and an overturn when the setting decides
    otherwise; the note says it was automatic and how confident. Items below the level,
    without a score, or with nothing shown to stand behind, are left to people."""
    from workbench.decision import DEFAULT_SETTING, judgement

    mine = {key for (key, who) in current_decisions(decisions) if who == reviewer}
    out, left = [], []
    for item in items:
        j = judgement(item.trace, setting)
        stands = shown_stands(item.verdict)
        if j is None or j.confidence < min_confidence or stands is None:
            left.append(item)
            continue
        decision = "confirm" if j.violation == stands else "overturn"
        threshold = (setting or DEFAULT_SETTING).threshold
        note = (f"auto-decided: {verdict_word(j.violation)} with confidence "
                f"{j.confidence:.2f} ≥ {min_confidence:.2f} (threshold {threshold:.2f})")
        out.append(decision_on(item.verdict, item.dataset, reviewer, decision, note))
    return BulkPlan(out, sum(d.key in mine for d in out), left)
