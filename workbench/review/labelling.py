"""Labels where they teach most, on the Review queue (issue 57 item 5): which cases to label
next, and how many more labelled cases a promise at α needs. Pure Python: the Review page
(the "Label next" sort of ``workbench.review.views.SORTS``, the auto-decide panel) and
`workbench review next` read the same.

**Label next** (:func:`label_next`): the queue's cases nobody has labelled yet — no gold label
and no analyst's current decision (a confirm, overturn or wrong rule is a label:
``workbench.decision.reviewed_truth``) — chosen by ``workbench.decision.propose``: the least
sure under the scorer that decides the dataset now (the decided record's calibrated
P(violation), closest to the setting's threshold; a case without a score first), one per
conversation and SKILL in turn. A case audited under several strategies is proposed once,
through its least sure record: one label covers them all.

**How many labels** (:func:`promise_forecast`): the error rate of the most confident half of
the labelled cases so far (their decided records against the label: what auto-deciding half
of the queue would get wrong), and ``workbench.decision.labels_needed`` at that coverage, for
both ways of making the promise:

- *tested at ten levels* (the auto-decide guarantee: ten confidence levels, each tested at
  δ/10) — ``auto_needed`` cases decided automatically among all the labelled ones;
- *split-certified* (``workbench.decision.split_guarantee``: the level chosen on half the
  conversations, certified on the other half by one test at δ) — ``auto_needed`` among the
  certifying half only, so the labelled cases it needs are twice ``auto_needed / coverage``.

The same promise either way: the error rate of the automatic decisions is at most α, with
probability at least 1 − δ. Which needs fewer labels depends on the error rate: with no error
at α = 10 % the split needs 29 automatic decisions in its half against 51, but 116 labels in
all against 102 at half coverage; from about 2 % errors on, the split needs fewer (144 against
116 at 2 %). :attr:`PromiseForecast.fewer` says which, for the rate seen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.decision import (
    DEFAULT_DELTA,
    Candidate,
    Forecast,
    confidence_of,
    labels_needed,
    out_of_fold,
    propose,
    reviewed_truth,
    split_guarantee,
    violates_each,
)
from workbench.decision.scorers import logit
from workbench.review.decisions import ReviewDecision, current_decisions
from workbench.review.queue import QueueItem
from workbench.vocabulary import label_violation
from workbench.words import percent, plural

NO_SKILL = "–"  # a trace routed to no SKILL
MIN_FORECAST = 10  # below this many labelled cases the error rate seen is not yet a rate
HALF = 0.5  # the forecast's coverage: the confident half decided automatically


def labelled_cases(items: Iterable[QueueItem], decisions: Iterable[ReviewDecision]) -> dict[str, bool]:
    """Case id -> violation, for every case of ``items`` with a gold label or an analyst's
    current decision (the analyst's word over the gold label)."""
    items = list(items)
    gold = {i.case_id: v for i in items if (v := label_violation(i.label)) is not None}
    judged = {i.case_id: i.verdict.judge_violation for i in items}
    return reviewed_truth(gold, decisions, judged)


def _decided_cases(decisions: Iterable[ReviewDecision]) -> set[str]:
    return {key[1] for (key, _who) in current_decisions(decisions)}


def candidates(items: Iterable[QueueItem], labelled: Iterable[str] = ()) -> list[Candidate]:
    """One candidate per case of ``items`` not in ``labelled``: its least sure record (key,
    conversation, first routed SKILL, calibrated P(violation), None without a score)."""
    known = set(labelled)
    best: dict[str, tuple[float, Candidate]] = {}
    for item in items:
        if item.case_id in known or item.gold_violation is not None:
            continue
        v = item.verdict
        p = v.score if v.score_source is not None else None
        doubt = 0.0 if v.confidence is None else float(v.confidence)
        c = Candidate(item.key, item.trace.session or item.case_id,
                      (item.trace.skills or [NO_SKILL])[0], p)
        if item.case_id not in best or doubt < best[item.case_id][0]:
            best[item.case_id] = (doubt, c)
    return [c for _d, c in best.values()]


def label_next(items: Sequence[QueueItem], decisions: Iterable[ReviewDecision] = (),
               threshold: float = 0.5, k: int | None = None) -> list[QueueItem]:
    """The ``k`` queue items to label next (all unlabelled cases, in proposal order, when
    ``k`` is None); see the module doc. ``threshold``: the dataset's setting's."""
    decided = _decided_cases(decisions)
    found = candidates(items, decided)
    picked = propose(found, len(found) if k is None else k, threshold)
    by_key = {i.key: i for i in items}
    return [by_key[c.key] for c in picked]


def proposal_ranks(items: Sequence[QueueItem], decided_keys: Iterable[tuple],
                   threshold: float = 0.5) -> dict[tuple, int]:
    """Item key -> its place among the proposals (0 first), for the "Label next" sort;
    ``decided_keys``: the keys of the items with a current decision (any reviewer)."""
    decided = {key[1] for key in decided_keys}
    picked = propose(candidates(items, decided), len(items), threshold)
    return {c.key: n for n, c in enumerate(picked)}


@dataclass(frozen=True)
class PromiseForecast:
    """How many labelled cases a promise at ``alpha`` needs, both ways (module doc)."""

    alpha: float
    delta: float
    labelled: int
    error_rate: float | None  # of the confident half so far; None: fewer than MIN_FORECAST
    coverage: float
    tested: Forecast  # ten levels (the auto-decide guarantee)
    split: Forecast  # chosen on half the conversations, certified on the other half

    @property
    def fewer(self) -> str | None:
        """"split" or "tested": which needs fewer labels in all (None: neither can pass, or
        they need the same)."""
        a, b = self.tested.labels_needed, self.split.labels_needed
        if a is None and b is None or a == b:
            return None
        if a is None:
            return "split"
        if b is None:
            return "tested"
        return "split" if b < a else "tested"

    def to_json(self) -> dict:
        def one(f: Forecast) -> dict:
            return {"auto_needed": f.auto_needed, "labels_needed": f.labels_needed,
                    "more": f.more}

        return {"alpha": self.alpha, "delta": self.delta, "labelled": self.labelled,
                "error_rate": self.error_rate, "coverage": self.coverage,
                "tested": one(self.tested), "split": one(self.split), "fewer": self.fewer}


def confident_half_error(confidences: Sequence[float], correct: Sequence[bool]) -> float:
    """The error rate of the most confident half (at least one case) of the decisions."""
    order = sorted(range(len(confidences)), key=lambda n: -float(confidences[n]))
    half = order[: max(1, len(order) // 2)]
    return sum(not correct[n] for n in half) / len(half)


def promise_forecast(confidences: Sequence[float], correct: Sequence[bool], alpha: float,
                     delta: float = DEFAULT_DELTA, coverage: float = HALF) -> PromiseForecast:
    """The forecast from the labelled cases' decided confidences and whether each decision
    was right. With fewer than :data:`MIN_FORECAST` of them the error rate is taken as 0:
    the least a promise needs (``error_rate`` None says so)."""
    n = len(confidences)
    rate = confident_half_error(confidences, correct) if n >= MIN_FORECAST else None
    e = 0.0 if rate is None else rate
    tested = labels_needed(alpha, e, coverage, have=n, delta=delta)
    one = labels_needed(alpha, e, coverage, have=n, delta=delta, tests=1)
    total = None if one.labels_needed is None else 2 * math.ceil(one.auto_needed / coverage)
    split = Forecast(alpha, delta, e, coverage, one.auto_needed, total,
                     None if total is None else max(0, total - n))
    return PromiseForecast(alpha, delta, n, rate, coverage, tested, split)


def queue_forecast(items: Sequence[QueueItem], decisions: Iterable[ReviewDecision],
                   alpha: float, delta: float = DEFAULT_DELTA) -> PromiseForecast:
    """:func:`promise_forecast` of a queue: one record per labelled case (its first in
    queue order) that has a score, decided under the dataset's setting."""
    truth = labelled_cases(items, decisions)
    seen: set[str] = set()
    conf: list[float] = []
    right: list[bool] = []
    for item in items:
        v = item.verdict
        if item.case_id in seen or item.case_id not in truth or v.confidence is None:
            continue
        seen.add(item.case_id)
        conf.append(float(v.confidence))
        right.append(v.outcome_violation == truth[item.case_id])
    return promise_forecast(conf, right, alpha, delta)


def forecast_words(f: PromiseForecast) -> str:
    """The forecast in plain words, for the page and the command."""
    a = percent(f.alpha)
    t, s = f.tested, f.split
    if f.error_rate is None:
        seen = (f"With {plural(f.labelled, 'labelled case')} there is no error rate to go on "
                "yet. If the most confident half were never wrong, ")
    else:
        seen = (f"On the {plural(f.labelled, 'labelled case')} so far the most confident half "
                f"is wrong {percent(f.error_rate, 1)} of the time")
        if t.labels_needed is None:
            return (seen + f": not below {a}, so no number of labels can make a promise at {a}. "
                    "Allow a larger share of wrong decisions, or decide with a better scorer.")
        seen += ". At that rate, "
    text = (seen + f"a promise at {a} with half the cases decided automatically needs "
            f"{_count(t)} (tested at ten levels: {t.auto_needed} decided automatically). The "
            f"split-certified guarantee, the same promise with one test, needs {_count(s)} "
            f"({s.auto_needed} decided automatically in its certifying half)")
    if f.fewer == "split":
        return text + ", fewer."
    if f.fewer == "tested":
        return text + ", more at this error rate."
    return text + "."


def _count(f: Forecast) -> str:
    more = "" if not f.more else f", {f.more} more than labelled now"
    return f"{f.labels_needed} labelled cases{more}"


SPLIT = "split"  # ``auto["method"]`` of a split-certified guarantee


def split_auto(probabilities: Sequence[float], truth: Sequence[bool], groups: Sequence[str],
               threshold: float, alpha: float, calibrated: bool,
               delta: float = DEFAULT_DELTA) -> dict:
    """The auto-decide guarantee of a verbal-probability setting made the split-certified way
    (``workbench.decision.split_guarantee``), as a setting's ``auto``: decided at
    ``threshold`` on out-of-fold calibrated probabilities when the setting ``calibrated``
    (else on the probabilities as they are, fitted on nothing). ``decided``, ``coverage``,
    ``errors`` and ``bound`` are the certifying half's, ``certifying`` its size, ``cases``
    all the labelled ones; ``level`` None when no level passes."""
    if calibrated:
        oof = out_of_fold([logit(p) for p in probabilities], truth, groups, threshold)
        q, y = oof.q, oof.truth
    else:
        q, y = np.asarray(probabilities, dtype=float), np.asarray(truth, dtype=bool)
    decided = violates_each(q, threshold)
    g = split_guarantee(confidence_of(q, decided), decided == y, list(groups), alpha, delta)
    certifying = round(g.decided / g.coverage) if g.coverage else 0
    return {"alpha": alpha, "delta": delta, "level": g.level, "coverage": g.coverage,
            "errors": g.errors, "decided": g.decided, "bound": g.bound, "cases": g.cases,
            "certifying": certifying, "method": SPLIT}


def as_json(item: QueueItem, rank: int, threshold: float) -> Mapping[str, object]:
    """One proposal as `workbench review next --json` prints it."""
    v = item.verdict
    return {"rank": rank, "case": item.case_id, "strategy": item.strategy, "run": item.run_id,
            "conversation": item.trace.session or item.case_id,
            "skill": (item.trace.skills or [NO_SKILL])[0], "label": v.label,
            "probability": v.score if v.score_source is not None else None,
            "threshold": threshold, "setting_version": v.setting_version}
