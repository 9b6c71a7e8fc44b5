"""A view of the Review queue: which verdicts it shows and in what order, as plain data that
goes into the address (``?q=refund&verdict=violation&sort=case``), into a saved view
(``store.review_views.save_view``) and back. Pure Python (no UI, no database).

A :class:`ReviewView` holds the queue's filters (reasons, full-text query, status) and its
per-column filters (verdict, gold, strategy, decision so far), and the sort. Sorts are a
registry (:data:`SORTS`): one :class:`SortKey` per entry, so another order is one more
entry, and the URL, saved views and the page's sort box
pick it up. :func:`apply_view` narrows and orders the queue.

Usage::

    view = ReviewView.from_params({"q": "refund", "verdict": "violation", "sort": "case"})
    shown = apply_view(items, view, reviewer="ada", decisions=decisions)
    view.to_params()          # {"q": "refund", "verdict": "violation", "sort": "case"}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from workbench.review.decisions import DECISION_TEXT, ReviewDecision, current_decisions
from workbench.review.labelling import proposal_ranks
from workbench.review.queue import OLD_REASONS, REASONS, STATUSES, QueueItem, filter_queue
from workbench.words import gold_word

NOT_DECIDED = "no decision yet"


@dataclass(frozen=True)
class SortKey:
    """One order of the queue: its label on screen and the key of each item (``None`` keys
    sort last in either direction). ``context`` gives the key what it may need besides the
    item (its queue position, the current decisions, the setting), so keys stay plain
    functions. ``prepare``: for an order of the whole list (not item by item), what it adds
    to the context once, from the items shown and the context (e.g. "Label next"'s ranks)."""

    label: str
    key: Callable[[QueueItem, Mapping[str, Any]], Any]
    prepare: Callable[[Sequence[QueueItem], Mapping[str, Any]], Mapping[str, Any]] | None = None


def _label_next(shown: Sequence[QueueItem], context: Mapping[str, Any]) -> Mapping[str, Any]:
    """The proposals' ranks, for the "Label next" order."""
    setting = context.get("setting")
    threshold = getattr(setting, "threshold", None) or 0.5
    return {"label next": proposal_ranks(shown, context["decided"], threshold)}


SORTS: dict[str, SortKey] = {
    # The default, first in the sort box: the least confident decision first (the
    # confidence of ``workbench.decision.judgement`` under the dataset's setting), so
    # an analyst's time goes where the judge is least sure; verdicts without a score last,
    # in queue order (issue 44 item 2).
    "uncertainty": SortKey("Most doubtful first", lambda i, c: _confidence(i, c)),
    "queue": SortKey("queue order (flagged first, as audited)", lambda i, c: c["position"][i.key]),
    "case": SortKey("case id", lambda i, c: i.case_id),
    "strategy": SortKey("strategy", lambda i, c: (i.strategy, i.case_id)),
    "run": SortKey("run", lambda i, c: (i.run_id, i.case_id)),
    "verdict": SortKey("verdict (violations first)", lambda i, c: (not i.violation, i.case_id)),
    "gold": SortKey("disagrees with gold first",
                    lambda i, c: ("gold-mismatch" not in i.reasons, i.case_id)),
    "newest decision": SortKey("newest decision first",
                               lambda i, c: (_newest(i, c), i.case_id)),
    # Labels where they teach most (issue 57 item 5): the unlabelled cases the current scorer
    # is least sure of, one per conversation and SKILL in turn (workbench.review.labelling);
    # labelled cases after them, in queue order.
    "label next": SortKey("Label next (unlabelled, least sure, spread)",
                          lambda i, c: c["label next"].get(i.key), prepare=_label_next),
}
DEFAULT_SORT = "uncertainty"


def _confidence(item: QueueItem, context: Mapping[str, Any]) -> Any:
    """The decided record's confidence (a case to review first: nothing decided it), with
    the queue position to keep ties in order; None without a score."""
    v = item.verdict
    if v.label == "review":
        return (0.0, context["position"][item.key])
    return None if v.confidence is None else (v.confidence, context["position"][item.key])


def _newest(item: QueueItem, context: Mapping[str, Any]) -> Any:
    when = context["newest"].get(item.key)
    # Newest first in ascending order: negate the timestamp; undecided verdicts last.
    return (1, 0.0) if when is None else (0, -when)


def sort_options() -> list[str]:
    return list(SORTS)


def sort_label(name: str) -> str:
    return SORTS[name].label if name in SORTS else name


VERDICT_CHOICES = ("violation", "compliant", "review")
GOLD_CHOICES = ("violation", "compliant", "no gold label")
DECISION_CHOICES = (NOT_DECIDED, *(DECISION_TEXT[d] for d in ("confirm", "overturn", "wrong-rule")))


@dataclass(frozen=True)
class ReviewView:
    """What the Review queue shows. Empty column filters mean "any"."""

    reasons: tuple[str, ...] = REASONS
    query: str = ""
    status: str = STATUSES[0]
    verdict: tuple[str, ...] = ()
    gold: tuple[str, ...] = ()
    strategies: tuple[str, ...] = ()
    decided: tuple[str, ...] = ()
    sort: str = DEFAULT_SORT
    descending: bool = False

    # -- the address and saved views ---------------------------------------------------
    # field -> URL parameter; lists are comma-separated, the default is left out.
    PARAMS = {"reasons": "reasons", "query": "q", "status": "status", "verdict": "verdict",
              "gold": "gold", "strategies": "strategy_in", "decided": "decided",
              "sort": "sort", "descending": "desc"}

    def to_params(self) -> dict[str, str]:
        """The URL parameters of this view (defaults left out, so a plain queue has none)."""
        default = ReviewView()
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value == getattr(default, f.name):
                continue
            param = self.PARAMS[f.name]
            if isinstance(value, tuple):
                out[param] = ",".join(value) if value else "none"
            elif isinstance(value, bool):
                out[param] = "1" if value else "0"
            else:
                out[param] = str(value)
        return out

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> tuple[ReviewView, list[str]]:
        """A view from URL parameters (or a saved view's), and what was ignored and why:
        an unknown value never breaks the page, it is named and left out."""
        problems: list[str] = []
        changes: dict[str, Any] = {}
        allowed = {"reasons": REASONS, "verdict": VERDICT_CHOICES, "gold": GOLD_CHOICES,
                   "decided": DECISION_CHOICES}
        for name, param in cls.PARAMS.items():
            raw = params.get(param)
            if raw is None:
                continue
            raw = str(raw)
            if name in ("reasons", "verdict", "gold", "strategies", "decided"):
                values = () if raw in ("", "none") else tuple(
                    v.strip() for v in raw.split(",") if v.strip())
                if name == "reasons":  # codes saved before the decided record
                    values = tuple(dict.fromkeys(OLD_REASONS.get(v, v) for v in values))
                if name in allowed:
                    bad = [v for v in values if v not in allowed[name]]
                    if bad:
                        problems.append(f"{param}: {', '.join(bad)} (use {', '.join(allowed[name])})")
                    values = tuple(v for v in values if v in allowed[name])
                changes[name] = values
            elif name == "status":
                if raw in STATUSES:
                    changes[name] = raw
                else:
                    problems.append(f"status: {raw} (use {', '.join(STATUSES)})")
            elif name == "sort":
                if raw in SORTS:
                    changes[name] = raw
                else:
                    problems.append(f"sort: {raw} (use {', '.join(SORTS)})")
            elif name == "descending":
                changes[name] = raw in ("1", "true", "yes")
            else:
                changes[name] = raw
        return replace(cls(), **changes), problems

    def describe(self) -> str:
        """One line naming what the view narrows ("all verdicts" when nothing)."""
        parts = []
        if set(self.reasons) != set(REASONS):
            parts.append("queued for: " + (", ".join(self.reasons) or "any reason"))
        if self.query:
            parts.append(f"text “{self.query}”")
        if self.status != STATUSES[0]:
            parts.append(self.status)
        for label, values in (("verdict", self.verdict), ("gold", self.gold),
                              ("strategy", self.strategies), ("decision", self.decided)):
            if values:
                parts.append(f"{label}: {', '.join(values)}")
        if self.sort != DEFAULT_SORT or self.descending:
            parts.append(f"sorted by {sort_label(self.sort)}" + (" (reversed)" if self.descending else ""))
        return "; ".join(parts) or "all queued verdicts, most doubtful first"


def decision_words(item: QueueItem, current: Mapping[tuple, ReviewDecision]) -> set[str]:
    """The current decisions on ``item`` by anyone, in words (:data:`DECISION_CHOICES`)."""
    words = {d.words for (key, _who), d in current.items() if key == item.key}
    return words or {NOT_DECIDED}


def apply_view(items: Sequence[QueueItem], view: ReviewView, reviewer: str = "",
               decisions: Iterable[ReviewDecision] = (), setting: Any = None) -> list[QueueItem]:
    """The queue items ``view`` shows, in its order. Filters: the queue's own (reasons,
    every word of the query in the item's text, status relative to ``reviewer``), then the
    column filters (an item passes a column when its value is one of those chosen).
    ``setting``: the dataset's saved threshold (a ``DecisionSetting``) that reads the
    judge's probabilities for the uncertainty order."""
    decisions = list(decisions)
    shown = filter_queue(items, view.reasons, view.query, view.status, reviewer, decisions)
    current = current_decisions(decisions)
    if view.verdict:  # the label the card shows: the decided record's
        shown = [i for i in shown if i.verdict.label in view.verdict]
    if view.gold:
        shown = [i for i in shown if gold_word(i.label) in view.gold]
    if view.strategies:
        shown = [i for i in shown if i.strategy in view.strategies]
    if view.decided:
        wanted = set(view.decided)
        shown = [i for i in shown if decision_words(i, current) & wanted]
    sort = SORTS.get(view.sort, SORTS[DEFAULT_SORT])
    context = {"position": {item.key: n for n, item in enumerate(items)},
               "decided": {d.key: d.words for d in current.values()},
               "newest": {}, "setting": setting}
    for d in current.values():
        stamp = d.created_at.timestamp()
        context["newest"][d.key] = max(stamp, context["newest"].get(d.key, stamp))
    if sort.prepare is not None:
        context.update(sort.prepare(shown, context))
    keyed = [(sort.key(item, context), n, item) for n, item in enumerate(shown)]
    present = [k for k in keyed if k[0] is not None]
    missing = [k for k in keyed if k[0] is None]
    present.sort(key=lambda k: k[0], reverse=view.descending)
    return [item for _k, _n, item in present + missing]
