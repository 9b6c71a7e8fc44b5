"""Aggregating annotation labels: current labels, blind viewing, resolution, rates, progress.

Labels are append-only (see :mod:`workbench.annotation.labels`), so every question asked of
them starts from the latest record per (task, item, annotator): :func:`current_labels`.
:func:`resolve` turns a task's labels and a reviewer's adjudications into one final label
per item; :func:`rule_correctness_rate` and :func:`progress` summarise them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workbench.annotation.labels import (
    RULE_CORRECTNESS,
    Adjudication,
    Annotator,
    Label,
    task_type,
)
from workbench.identity.roles import may
from workbench.words import plural


def _latest(records: Iterable, key) -> dict:
    """The newest record per key; ties on ``created_at`` go to the later one in input order."""
    latest: dict = {}
    for position, record in enumerate(records):
        k = key(record)
        current = latest.get(k)
        if current is None or (record.created_at, position) >= current[0]:
            latest[k] = ((record.created_at, position), record)
    return {k: record for k, (_, record) in latest.items()}


def current_labels(labels: Iterable[Label]) -> list[Label]:
    """Each annotator's current label per (task, item): the latest record wins.

    Inventory tasks (``reference_rule``) keep every record, since each is a separate rule.
    """
    labels = list(labels)
    inventory = [lab for lab in labels if task_type(lab.task).inventory]
    single = _latest(
        (lab for lab in labels if not task_type(lab.task).inventory),
        key=lambda lab: (lab.task, lab.item, lab.annotator),
    )
    return list(single.values()) + inventory


def visible_labels(labels: Iterable[Label], viewer: Annotator, item: str,
                   task: str | None = None) -> list[Label]:
    """The labels of ``item`` that ``viewer`` may see under blind annotation: all of them for
    a reviewer, only the viewer's own for an annotator — never another annotator's or a
    model's, not even after labelling the item (else one could label, look, and relabel to
    agree; disagreements go to a reviewer). The Annotate pages show labels through this.
    ``task`` restricts the result to one task type when item keys could repeat across tasks.
    """
    return [
        lab for lab in labels
        if lab.item == item and (task is None or lab.task == task)
        and (viewer.is_reviewer or lab.annotator == viewer.name)
    ]


@dataclass(frozen=True)
class Resolution:
    """The final label of one item.

    ``status`` is ``"adjudicated"`` (a reviewer decided; wins over the annotators),
    ``"unanimous"`` (at least ``min_annotators`` humans, all with one value) or
    ``"unresolved"`` (too few labels or a disagreement nobody adjudicated; ``value`` is None).
    ``error_type`` is the adjudicated one, or the annotators' shared one when they agree on it.
    """

    item: str
    status: str
    value: str | None
    error_type: str | None
    annotators: tuple[str, ...]
    reviewer: str | None = None


def resolve(labels: Iterable[Label], adjudications: Iterable[Adjudication] = (), *,
            min_annotators: int = 2, sources: Sequence[str] = ("human",)) -> dict[str, Resolution]:
    """Final label per item of one task: the reviewer's adjudication, else a unanimous value.

    Only labels whose ``source`` is in ``sources`` vote (models do not, by default); each
    annotator's latest label counts. Raises ``ValueError`` when the labels or adjudications
    mix task types, or for an inventory task. Items appear in first-seen order.
    """
    if min_annotators < 1:
        raise ValueError("min_annotators must be at least 1")
    labels = [lab for lab in labels if lab.source in sources]
    adjudications = list(adjudications)
    tasks = {lab.task for lab in labels} | {adj.task for adj in adjudications}
    if len(tasks) > 1:
        raise ValueError(
            f"resolve one task at a time; got {', '.join(sorted(tasks))}"
        )
    if tasks and task_type(next(iter(tasks))).inventory:
        raise ValueError(
            "reference_rule labels form an inventory; compare them with match_inventories"
        )
    votes: dict[str, list[Label]] = {}
    for lab in current_labels(labels):
        votes.setdefault(lab.item, []).append(lab)
    decided = _latest(adjudications, key=lambda adj: adj.item)
    items = list(dict.fromkeys([lab.item for lab in labels] + [a.item for a in adjudications]))
    result: dict[str, Resolution] = {}
    for item in items:
        item_votes = votes.get(item, [])
        names = tuple(sorted(lab.annotator for lab in item_votes))
        adjudication = decided.get(item)
        if adjudication is not None:
            result[item] = Resolution(item, "adjudicated", adjudication.value,
                                      adjudication.error_type, names, adjudication.reviewer)
            continue
        values = {lab.value for lab in item_votes}
        if len(item_votes) >= min_annotators and len(values) == 1:
            error_types = {lab.error_type for lab in item_votes}
            error_type = next(iter(error_types)) if len(error_types) == 1 else None
            result[item] = Resolution(item, "unanimous", next(iter(values)), error_type, names)
        else:
            result[item] = Resolution(item, "unresolved", None, None, names)
    return result


@dataclass(frozen=True)
class CorrectnessRate:
    """Rule correctness after adjudication. ``rate`` = correct / (correct + incorrect),
    ``None`` when nothing is resolved; unresolved rules are counted, not guessed."""

    correct: int
    incorrect: int
    unresolved: int
    rate: float | None
    error_types: dict[str, int]

    @property
    def total(self) -> int:
        return self.correct + self.incorrect + self.unresolved


def rule_correctness_rate(labels: Iterable[Label], adjudications: Iterable[Adjudication] = (),
                          *, items: Iterable[str] | None = None,
                          min_annotators: int = 2) -> CorrectnessRate:
    """Share of pooled extracted rules judged correct, after adjudication.

    Only ``rule_correctness`` labels and adjudications are used. ``items`` is the pooled rule
    inventory; rules in it that nobody resolved count as unresolved, and labels of rules
    outside it are ignored. Without ``items`` every labelled rule counts.
    """
    labels = [lab for lab in labels if lab.task == RULE_CORRECTNESS]
    adjudications = [adj for adj in adjudications if adj.task == RULE_CORRECTNESS]
    resolutions = resolve(labels, adjudications, min_annotators=min_annotators)
    keys = list(dict.fromkeys(items)) if items is not None else list(resolutions)
    correct = incorrect = unresolved = 0
    error_types: Counter = Counter()
    for key in keys:
        resolution = resolutions.get(key)
        if resolution is None or resolution.value is None:
            unresolved += 1
        elif resolution.value == "correct":
            correct += 1
        else:
            incorrect += 1
            error_types[resolution.error_type or "unspecified"] += 1
    decided = correct + incorrect
    return CorrectnessRate(correct, incorrect, unresolved,
                           correct / decided if decided else None, dict(error_types))


@dataclass(frozen=True)
class Progress:
    annotator: str
    done: int
    total: int

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def progress(labels: Iterable[Label], items: Iterable[str], task: str, *,
             annotators: Iterable[str] | None = None) -> dict[str, Progress]:
    """How many items of a task queue each annotator has labelled.

    Every annotator works the whole queue ``items``. ``annotators`` defaults to the human
    annotators who labelled something in ``task``; pass the roster to include those who have
    not started. Labels of items outside the queue are ignored.
    """
    queue = set(items)
    task_labels = [lab for lab in labels if lab.task == task and lab.source == "human"]
    names = (
        list(dict.fromkeys(annotators)) if annotators is not None
        else sorted({lab.annotator for lab in task_labels})
    )
    done: dict[str, set[str]] = {name: set() for name in names}
    for lab in task_labels:
        if lab.annotator in done and lab.item in queue:
            done[lab.annotator].add(lab.item)
    return {name: Progress(name, len(done[name]), len(queue)) for name in names}


@dataclass(frozen=True)
class AgreementAccess:
    """Whether a viewer may see agreement statistics of a task queue, and why not."""

    visible: bool
    reason: str = ""  # what has to happen first, when not visible


def can_see_agreement(role: str, own_done: int, own_total: int, *, open_items: int) -> bool:
    """The blindness rule for everything that depends on other annotators' labels: counts of
    their labels, "unanimous", disagreement counts, kappa and the other agreement figures.

    ``role`` is the viewer's (a :data:`workbench.identity.roles.ROLES` name; the annotation store's
    ``annotator``/``reviewer`` are among them): whoever may see every label (reviewer, admin:
    they adjudicate) sees them always. Anyone else sees them only once their own queue is
    settled: they labelled all ``own_total`` items of it (``own_done``; an empty queue has
    nothing to show) and none of its items is open (``open_items``: too few labels, or a
    disagreement nobody adjudicated). "Open" matters as much as "done": an annotator who has
    labelled everything and still read "unanimous 3, open 1" could relabel one item, watch
    the counts move and learn another's label; once nothing is open a relabel moves nothing
    towards the others (an adjudication stands; changing a unanimous label opens a
    disagreement for a reviewer). Raises ``workbench.identity.roles.RoleError`` for an unknown role.
    """
    if may(role, "see all labels"):
        return True
    return own_total > 0 and own_done >= own_total and open_items == 0


def agreement_access(viewer: Annotator, labels: Iterable[Label],
                     adjudications: Iterable[Adjudication], task: str, queue: Sequence[str], *,
                     min_annotators: int = 2) -> AgreementAccess:
    """The blindness rule (:func:`can_see_agreement`) for one task ``queue``, with the reason
    to show when it withholds the figures (issues #35 and #45).

    Agreement statistics reveal other people's labels: an annotator who knows their own
    labels and reads "agreement 100%" knows everyone else's, and could relabel to agree. So
    reviewers (who see every label anyway) always see them, and an annotator sees them for
    ``queue`` only when it is *closed* for them: they labelled every item, and every item is
    settled (unanimous with ``min_annotators`` humans, or adjudicated). Once it is closed
    a relabel cannot move an outcome towards the others: an adjudicated item keeps the
    reviewer's decision, and changing a unanimous label only opens a disagreement for a
    reviewer.
    """
    keys = list(dict.fromkeys(queue))
    labels = [lab for lab in labels if lab.task == task and lab.source == "human"]
    mine = {lab.item for lab in current_labels(labels) if lab.annotator == viewer.name}
    left = [k for k in keys if k not in mine]
    settled = resolve(labels, [a for a in adjudications if a.task == task],
                      min_annotators=min_annotators)
    open_items = [k for k in keys if k not in settled or settled[k].value is None]
    if can_see_agreement(viewer.role, len(keys) - len(left), len(keys),
                         open_items=len(open_items)):
        return AgreementAccess(True)
    if not keys:
        return AgreementAccess(False, "There is nothing in this queue to agree on yet.")
    if left:
        return AgreementAccess(False, (
            f"Agreement and the queue's counts are shown once you have labelled all "
            f"{plural(len(keys), 'item')} of this queue ({len(left)} to go) and every "
            "disagreement is settled: before that, they would reveal other annotators' labels "
            "(blind annotation)."))
    return AgreementAccess(False, (
        "You have labelled every item. Agreement and the queue's counts are shown once the "
        f"open ones ({plural(len(open_items), 'item')}: too few labels, or a disagreement) "
        "are settled by the other annotators or a reviewer: before that, they would reveal "
        "their labels."))
