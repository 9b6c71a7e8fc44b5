"""Analysts' decisions on audit verdicts: the three-way decision, its validation, undo, and
which decision is current. Pure Python (no UI, no database); ``store.review`` keeps them.

An analyst decides one verdict (one trace of one case under one strategy) in one of three
ways (:data:`DECISIONS`):

- ``confirm``: the label shown and the rule it rests on are right;
- ``overturn``: the label shown is wrong (a note says why);
- ``wrong-rule``: the label shown (violation) is right but the rule behind it is not (a note
  says which rule applies). Only a violation rests on rules, so only a violation — whatever
  decided it, the judge's words or a score — can be decided this way.

Each is defined against the label the analyst was shown (the decided record's,
``workbench.decision.DecidedVerdict``), not against the judge's hidden words: a decision
stores that label (``shown``), where its score came from (``shown_source``), the setting's
version, and the analyst's own label (``analyst_label``: the shown label for confirm and
wrong rule, its opposite for an overturn). What the analyst says is ``analyst_label``;
decisions stored before it existed were given it by migration 0008.

Decisions are append-only. A changed mind is a newer record; the newest per (verdict,
reviewer) is current. **Undo** is a record too (decision ``undo``, ``undoes`` = the record
id it withdraws): the withdrawn decision stops counting and the reviewer's earlier decision
on that verdict, if any, is current again. Decisions made together (a bulk decision) share a
``batch`` id and are undone together: "undo" takes back the reviewer's last *action*.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from workbench.clock import utcnow
from workbench.errors import WorkbenchError

CONFIRM, OVERTURN, WRONG_RULE, UNDO = "confirm", "overturn", "wrong-rule", "undo"
VIOLATION, COMPLIANT, REVIEW = "violation", "compliant", "review"  # labels shown / said
SHOWN = (VIOLATION, COMPLIANT, REVIEW)
SAID = (VIOLATION, COMPLIANT)
DECISIONS = (CONFIRM, OVERTURN, WRONG_RULE)
# What each decision is called on screen (the codes stay in the store, the CLI and exports).
DECISION_TEXT = {
    CONFIRM: "confirmed",
    OVERTURN: "overturned",
    WRONG_RULE: "right verdict, wrong rule",
    UNDO: "undone",
}
# Decisions that need a note, and what the note must say.
NOTE_NEEDED = {
    OVERTURN: "an overturn needs a note saying why the judge is wrong; write one first",
    WRONG_RULE: "“wrong rule” needs a note naming the rule that applies; write one first",
}
MAX_NOTE_CHARS = 10_000
# shown_source of an old decision whose card migration 0008 could not rebuild: it counts nowhere.
UNKNOWN_SHOWN = "unknown"

ItemKey = tuple[str, str, str]  # (run_id, case_id, strategy)


class ReviewError(WorkbenchError, ValueError):
    """A review decision is invalid; the message says which field and what is allowed."""


class StaleUndo(ReviewError):
    """The decision an undo was meant for is no longer the reviewer's last (another tab or
    a second press undid it, or a newer decision was made): nothing was undone."""


def item_text(key: ItemKey) -> str:
    """A stable one-line form of an item key (for widget keys and logs)."""
    return " | ".join(key)


@dataclass(frozen=True)
class ReviewDecision:
    """One analyst decision on one verdict, as recorded (never edited).

    ``id`` is the store's record id (``None`` before it is stored); ``batch`` groups the
    decisions of one action (a bulk decision); ``undoes`` is set on an ``undo`` record only.
    """

    dataset: str
    run_id: str
    case_id: str
    strategy: str
    reviewer: str
    decision: str  # confirm | overturn | wrong-rule | undo
    note: str = ""
    judge_violation: bool | None = None  # the verdict reviewed, as it was then
    created_at: datetime = field(default_factory=utcnow)
    id: int | None = None
    batch: str = ""
    undoes: int | None = None
    # What the analyst saw and what they say: the decided label shown ("violation",
    # "compliant" or "review"), its score's source ("judge" / "activations"), the decision
    # setting's version, and the analyst's own label ("violation" / "compliant").
    shown: str | None = None
    shown_source: str | None = None
    setting_version: int | None = None
    analyst_label: str | None = None

    @property
    def key(self) -> ItemKey:
        return (self.run_id, self.case_id, self.strategy)

    @property
    def implied_violation(self) -> bool | None:
        """The verdict the analyst stands behind: the judge's if confirmed (or only the rule
        was wrong), else its opposite."""
        if self.judge_violation is None or self.decision == UNDO:
            return None
        return (not self.judge_violation) if self.decision == OVERTURN else self.judge_violation

    @property
    def shown_violation(self) -> bool | None:
        """The label the analyst was shown, as violation or not: ``shown`` ("review": None);
        for a decision without one, the judge's verdict it was made about."""
        if self.shown in (VIOLATION, COMPLIANT):
            return self.shown == VIOLATION
        return self.judge_violation if self.shown is None else None

    @property
    def stood_violation(self) -> bool | None:
        """What the decision stood for or against, as violation or not: the label shown; for
        a card "to review", the outcome its score decided
        (``workbench.review.queue.shown_stands``), read back from the analyst's own label —
        the same for confirm and wrong rule, its opposite for an overturn. None for an undo
        record or when nothing is known."""
        if self.decision == UNDO:
            return None
        if self.shown == REVIEW:
            said = self.analyst_violation
            if said is None:
                return None
            return (not said) if self.decision == OVERTURN else said
        return self.shown_violation

    @property
    def analyst_violation(self) -> bool | None:
        """What the analyst says the reply is: their ``analyst_label``; for a decision that
        has none (made in memory, or by a caller that did not say), the old meaning
        (:attr:`implied_violation`). None for an undo record or when nothing is known."""
        if self.decision == UNDO or self.shown_source == UNKNOWN_SHOWN:
            return None  # an old decision whose card cannot be rebuilt (migration 0008)
        if self.analyst_label in ("violation", "compliant"):
            return self.analyst_label == "violation"
        return self.implied_violation

    @property
    def words(self) -> str:
        """The decision in the analyst's words."""
        return DECISION_TEXT.get(self.decision, self.decision)


def validate_decision(d: ReviewDecision) -> ReviewDecision:
    """Return ``d`` if valid, else raise :class:`ReviewError` naming the field and the fix."""
    for name in ("dataset", "run_id", "case_id", "strategy"):
        value = getattr(d, name)
        if not isinstance(value, str) or not value.strip():
            raise ReviewError(f"{name} must be a non-empty string (which verdict is reviewed?)")
    if not isinstance(d.reviewer, str) or not d.reviewer.strip():
        raise ReviewError("reviewer is empty; enter your name before deciding")
    if d.decision not in (*DECISIONS, UNDO):
        raise ReviewError(f"decision must be one of {', '.join(DECISIONS)}, got {d.decision!r}")
    if not isinstance(d.note, str):
        raise ReviewError("note must be text")
    if len(d.note) > MAX_NOTE_CHARS:
        raise ReviewError(f"note is {len(d.note)} characters; keep it under {MAX_NOTE_CHARS}")
    if d.decision in NOTE_NEEDED and not d.note.strip():
        raise ReviewError(NOTE_NEEDED[d.decision])
    if d.judge_violation is not None and not isinstance(d.judge_violation, bool):
        raise ReviewError("judge_violation must be true, false or absent")
    if d.shown is not None and d.shown not in SHOWN:
        raise ReviewError(f"shown must be one of {', '.join(SHOWN)} or absent, got {d.shown!r}")
    if d.analyst_label is not None and d.analyst_label not in SAID:
        raise ReviewError(f"analyst_label must be one of {', '.join(SAID)} or absent, "
                          f"got {d.analyst_label!r}")
    if d.decision == WRONG_RULE and (d.shown == COMPLIANT
                                     or (d.shown is None and d.judge_violation is False)):
        raise ReviewError("the verdict shown is compliant, so no rule stands behind it to be "
                          "wrong; confirm or overturn this verdict instead")
    if (d.decision == UNDO) != (d.undoes is not None):
        raise ReviewError("an undo record names the decision it withdraws (undoes), and only "
                          "an undo record does")
    if not isinstance(d.batch, str):
        raise ReviewError("batch must be text")
    if d.created_at.tzinfo is None:
        raise ReviewError("created_at must be timezone-aware (UTC)")
    return d


def withdrawn_ids(decisions: Iterable[ReviewDecision]) -> set[int]:
    """Record ids of the decisions that an undo record withdrew."""
    return {d.undoes for d in decisions if d.decision == UNDO and d.undoes is not None}


def effective_decisions(decisions: Sequence[ReviewDecision]) -> list[ReviewDecision]:
    """The decisions that still count, oldest first: no undo records, none withdrawn."""
    gone = withdrawn_ids(decisions)
    return [d for d in decisions if d.decision != UNDO and (d.id is None or d.id not in gone)]


def current_decisions(decisions: Iterable[ReviewDecision]) -> dict[tuple[ItemKey, str], ReviewDecision]:
    """The newest decision that still counts per (item, reviewer); ``decisions`` oldest
    first (later wins). Undone decisions and the undo records themselves do not count."""
    return {(d.key, d.reviewer): d for d in effective_decisions(list(decisions))}


def last_action(decisions: Sequence[ReviewDecision], reviewer: str,
                dataset: str | None = None) -> list[ReviewDecision]:
    """The decisions an undo by ``reviewer`` takes back: their newest decision that still
    counts, with every other still-counting decision of the same batch (a bulk decision is
    one action). Empty when there is nothing to undo. ``decisions`` oldest first, stored
    (with ids)."""
    live = [d for d in effective_decisions(decisions)
            if d.reviewer == reviewer and d.id is not None
            and (dataset is None or d.dataset == dataset)]
    if not live:
        return []
    newest = max(live, key=lambda d: d.id or 0)
    if not newest.batch:
        return [newest]
    return [d for d in live if d.batch == newest.batch]


def undo_records(action: Sequence[ReviewDecision], note: str = "") -> list[ReviewDecision]:
    """The undo records that withdraw ``action`` (from :func:`last_action`)."""
    if not action:
        return []
    batch = f"undo-{action[0].batch or action[0].id}"
    return [ReviewDecision(d.dataset, d.run_id, d.case_id, d.strategy, d.reviewer, UNDO, note,
                           d.judge_violation, batch=batch, undoes=d.id) for d in action]


def describe_action(action: Sequence[ReviewDecision]) -> str:
    """``"confirmed the cdg verdict on mor-001"`` or ``"overturned 12 verdicts"``: what an
    undo button takes back, in words."""
    if not action:
        return "nothing"
    words = {d.words for d in action}
    verb = words.pop() if len(words) == 1 else "decided"
    if len(action) == 1:
        d = action[0]
        return f"{verb} ({d.strategy} verdict on {d.case_id})"
    return f"{verb} ({len(action)} verdicts at once)"
