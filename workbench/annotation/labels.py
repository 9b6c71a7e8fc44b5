"""Annotation records: task types, labels, blind viewing, adjudication and progress.

Three task types follow the SkillCDG paper's expert annotation:

- ``rule_correctness``: an extracted rule (item = rule key) is ``correct`` or ``incorrect``;
  an incorrect rule needs one of :data:`ERROR_TYPES`.
- ``reference_rule``: an annotator writes their own atomic rule for a SKILL (item = SKILL
  key). The value is a JSON-encoded :class:`ReferenceRule`; one annotator may add many per
  SKILL, so these labels form an inventory and are compared with ``match_inventories``
  rather than adjudicated.
- ``cdg_inspection``: an audit case is judged ``pass`` or ``fail`` on each of
  :data:`CRITERIA`, with a note. Each criterion is its own item, keyed
  ``"<case>#<criterion>"`` (see :func:`inspection_item`), so agreement, blind viewing and
  adjudication work per criterion exactly as for any other item.

Labels are append-only: relabelling adds a newer record, and the latest record per
(task, item, annotator) is the annotator's current label.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from workbench.graph import MODALITIES

RULE_CORRECTNESS = "rule_correctness"
REFERENCE_RULE = "reference_rule"
CDG_INSPECTION = "cdg_inspection"

ERROR_TYPES = (
    "not_atomic",
    "wrong_condition",
    "wrong_action",
    "wrong_modality",
    "span_unsupported",
    "hallucinated",
    "duplicate",
)
CRITERIA = ("skill_governs", "rules_atomic_applicable", "edges_necessary", "verdict_follows")
SOURCES = ("human", "model")
ROLES = ("annotator", "reviewer")
MAX_NOTE_CHARS = 10_000
_CRITERION_SEPARATOR = "#"


def utcnow() -> datetime:
    return datetime.now(UTC)


class LabelError(ValueError):
    """An annotation record is invalid; the message says which field and what is allowed."""


@dataclass(frozen=True)
class TaskType:
    """What a task's labels may hold. ``values`` empty means a structured (JSON) value."""

    name: str
    description: str
    values: tuple[str, ...] = ()
    error_types: tuple[str, ...] = ()
    needs_error_type: str | None = None  # the value that requires an error type
    inventory: bool = False  # many labels per annotator and item; not adjudicated


TASK_TYPES: dict[str, TaskType] = {
    t.name: t
    for t in (
        TaskType(
            RULE_CORRECTNESS,
            "Is the extracted rule a correct atomic rule supported by its source span?",
            values=("correct", "incorrect"),
            error_types=ERROR_TYPES,
            needs_error_type="incorrect",
        ),
        TaskType(
            REFERENCE_RULE,
            "Write your own atomic rules for the SKILL, without seeing the extraction.",
            inventory=True,
        ),
        TaskType(
            CDG_INSPECTION,
            "Does the audit case pass each of the four CDG inspection criteria?",
            values=("pass", "fail"),
        ),
    )
}


@dataclass(frozen=True)
class Annotator:
    """A named person. Reviewers see every label and adjudicate disagreements."""

    name: str
    role: str = "annotator"

    @property
    def is_reviewer(self) -> bool:
        return self.role == "reviewer"


@dataclass(frozen=True)
class Label:
    """One append-only annotation record: who labelled which item of which task, how, when.

    ``source`` is ``"human"`` or ``"model"`` (a judge's or extractor's label kept for
    human-vs-model agreement). ``created_at`` is timezone-aware.
    """

    item: str
    task: str
    annotator: str
    value: str
    error_type: str | None = None
    note: str = ""
    created_at: datetime = field(default_factory=utcnow)
    source: str = "human"


@dataclass(frozen=True)
class Adjudication:
    """A reviewer's final decision on one item, overriding the annotators' labels."""

    item: str
    task: str
    reviewer: str
    value: str
    error_type: str | None = None
    note: str = ""
    created_at: datetime = field(default_factory=utcnow)


@dataclass(frozen=True)
class ReferenceRule:
    """An annotator-written atomic rule: the value of a ``reference_rule`` label.

    ``spans`` are half-open ``(start, end)`` character ranges into the SKILL source.
    """

    condition: str
    action: str
    modality: str
    spans: tuple[tuple[int, int], ...]

    def to_value(self) -> str:
        """The JSON text stored as the label value (validated first)."""
        _check_reference_rule(self)
        return json.dumps(
            {
                "condition": self.condition,
                "action": self.action,
                "modality": self.modality,
                "spans": [{"start": s, "end": e} for s, e in self.spans],
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_value(cls, value: str) -> ReferenceRule:
        """Parse a label value; raises :class:`LabelError` saying what is wrong."""
        try:
            data = json.loads(value)
        except (TypeError, json.JSONDecodeError) as exc:
            raise LabelError(
                f"reference_rule value is not JSON ({exc}); build it with ReferenceRule(...).to_value()"
            ) from None
        if not isinstance(data, dict):
            raise LabelError("reference_rule value must be a JSON object with condition, "
                             "action, modality and spans")
        missing = [k for k in ("condition", "action", "modality", "spans") if k not in data]
        if missing:
            raise LabelError(f"reference_rule value lacks {', '.join(missing)}")
        spans_data = data["spans"]
        if not isinstance(spans_data, list):
            raise LabelError('reference_rule spans must be a list like [{"start": 0, "end": 10}]')
        spans = []
        for span in spans_data:
            if not isinstance(span, dict) or not {"start", "end"} <= span.keys():
                raise LabelError(f"reference_rule span {span!r} needs start and end")
            spans.append((span["start"], span["end"]))
        rule = cls(data["condition"], data["action"], data["modality"], tuple(spans))
        _check_reference_rule(rule)
        return rule


def _check_reference_rule(rule: ReferenceRule) -> None:
    for name in ("condition", "action"):
        text = getattr(rule, name)
        if not isinstance(text, str) or not text.strip():
            raise LabelError(f"reference_rule {name} is empty; write the rule's {name}")
    if rule.modality not in MODALITIES:
        raise LabelError(
            f"reference_rule modality {rule.modality!r} is unknown; use one of {', '.join(MODALITIES)}"
        )
    if not rule.spans:
        raise LabelError("reference_rule has no span; select the source text that supports it")
    for start, end in rule.spans:
        ok = (
            isinstance(start, int) and isinstance(end, int)
            and not isinstance(start, bool) and not isinstance(end, bool)
            and 0 <= start < end
        )
        if not ok:
            raise LabelError(
                f"reference_rule span ({start!r}, {end!r}) is invalid; "
                "use integer offsets with 0 <= start < end"
            )


def inspection_item(case_key: str, criterion: str) -> str:
    """The item key of one CDG inspection criterion of an audit case."""
    if criterion not in CRITERIA:
        raise LabelError(f"unknown criterion {criterion!r}; use one of {', '.join(CRITERIA)}")
    if not case_key:
        raise LabelError("case key is empty; pass the audit case's id")
    return f"{case_key}{_CRITERION_SEPARATOR}{criterion}"


def split_inspection_item(item: str) -> tuple[str, str]:
    """``(case_key, criterion)`` of a ``cdg_inspection`` item key; raises :class:`LabelError`."""
    case_key, sep, criterion = item.rpartition(_CRITERION_SEPARATOR)
    if not sep or not case_key or criterion not in CRITERIA:
        raise LabelError(
            f"cdg_inspection item {item!r} must be '<case>#<criterion>' with criterion one of "
            f"{', '.join(CRITERIA)}; build it with inspection_item(case, criterion)"
        )
    return case_key, criterion


def task_type(name: str) -> TaskType:
    """The :class:`TaskType` called ``name``; raises :class:`LabelError` for unknown names."""
    try:
        return TASK_TYPES[name]
    except (KeyError, TypeError):
        raise LabelError(
            f"unknown task {name!r}; use one of {', '.join(TASK_TYPES)}"
        ) from None


def _check_text(field_name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise LabelError(f"{field_name} is empty; every annotation record needs a {field_name}")
    if value != value.strip():
        raise LabelError(f"{field_name} {value!r} has surrounding whitespace; strip it")


def _check_decision(task: str, item: str, value: object, error_type: object, note: object,
                    created_at: object) -> TaskType:
    kind = task_type(task)
    _check_text("item", item)
    if kind.name == CDG_INSPECTION:
        split_inspection_item(item)
    if kind.values:
        if value not in kind.values:
            raise LabelError(
                f"{task} value {value!r} is not allowed; use one of {', '.join(kind.values)}"
            )
    elif kind.name == REFERENCE_RULE:
        if not isinstance(value, str):
            raise LabelError("reference_rule value must be the text of ReferenceRule.to_value()")
        ReferenceRule.from_value(value)
    if kind.needs_error_type is not None and value == kind.needs_error_type:
        if error_type not in kind.error_types:
            raise LabelError(
                f"{task} value {value!r} needs an error type; got {error_type!r}, "
                f"use one of {', '.join(kind.error_types)}"
            )
    elif error_type is not None:
        raise LabelError(
            f"error_type {error_type!r} is only allowed with {task} value "
            f"{kind.needs_error_type!r}" if kind.needs_error_type else
            f"{task} labels take no error_type; put details in the note"
        )
    if not isinstance(note, str):
        raise LabelError(f"note must be text, got {type(note).__name__}")
    if len(note) > MAX_NOTE_CHARS:
        raise LabelError(f"note has {len(note)} characters; keep it under {MAX_NOTE_CHARS}")
    if not isinstance(created_at, datetime) or created_at.tzinfo is None:
        raise LabelError("created_at must be a timezone-aware datetime, e.g. datetime.now(UTC)")
    return kind


def validate_label(label: Label) -> Label:
    """Return ``label`` unchanged if valid, else raise :class:`LabelError` naming the problem."""
    _check_text("annotator", label.annotator)
    if label.source not in SOURCES:
        raise LabelError(f"source {label.source!r} is unknown; use one of {', '.join(SOURCES)}")
    _check_decision(label.task, label.item, label.value, label.error_type, label.note,
                    label.created_at)
    return label


def validate_adjudication(adjudication: Adjudication, reviewer: Annotator | None = None) -> Adjudication:
    """Return ``adjudication`` if valid, else raise :class:`LabelError`.

    If ``reviewer`` is given it must carry the reviewer role and the adjudication's name.
    """
    _check_text("reviewer", adjudication.reviewer)
    if reviewer is not None:
        if not reviewer.is_reviewer:
            raise LabelError(
                f"{reviewer.name!r} has role {reviewer.role!r}; only a reviewer may adjudicate"
            )
        if reviewer.name != adjudication.reviewer:
            raise LabelError(
                f"adjudication is signed by {adjudication.reviewer!r}, not by {reviewer.name!r}"
            )
    kind = _check_decision(adjudication.task, adjudication.item, adjudication.value,
                           adjudication.error_type, adjudication.note, adjudication.created_at)
    if kind.inventory:
        raise LabelError(
            f"{kind.name} labels form an inventory and are not adjudicated; "
            "compare inventories with match_inventories"
        )
    return adjudication


def validate_annotator(annotator: Annotator) -> Annotator:
    """Return ``annotator`` if its name is set and its role known, else raise :class:`LabelError`."""
    _check_text("annotator name", annotator.name)
    if annotator.role not in ROLES:
        raise LabelError(f"role {annotator.role!r} is unknown; use one of {', '.join(ROLES)}")
    return annotator


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
    """The labels of ``item`` that ``viewer`` may see under blind annotation.

    Viewers always see their own labels. Other annotators' labels (humans and models alike)
    are shown only once the viewer has submitted a label for this item, or to a reviewer.
    ``task`` restricts the result to one task type when item keys could repeat across tasks.
    """
    for_item = [
        lab for lab in labels if lab.item == item and (task is None or lab.task == task)
    ]
    own = [lab for lab in for_item if lab.annotator == viewer.name]
    if viewer.is_reviewer or own:
        return for_item
    return own


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
