"""Annotation records and their validation: task types, annotators, labels, adjudications.

Three task types follow the first paper's expert annotation (its appendix B.4):

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
(task, item, annotator) is the annotator's current label. Reading labels that way (blind
viewing, resolution, correctness rate, progress) is :mod:`workbench.annotation.resolution`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from workbench.clock import utcnow
from workbench.errors import WorkbenchError
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


class LabelError(WorkbenchError, ValueError):
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


def retraction_value(rule: ReferenceRule) -> str:
    """The value of a ``reference_rule`` label that withdraws ``rule``.

    Labels are append-only (the audit trail keeps everything), so an annotator takes back a
    reference rule by adding this record; the inventory then drops that annotator's latest
    copy of the rule.
    """
    return json.dumps({"retract": json.loads(rule.to_value())}, ensure_ascii=False, sort_keys=True)


def retracted_rule(value: str) -> ReferenceRule | None:
    """The rule a retraction value withdraws; None when ``value`` is not a retraction.
    Raises :class:`LabelError` for a retraction whose rule is malformed."""
    try:
        data = json.loads(value)
    except (TypeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or set(data) != {"retract"}:
        return None
    return ReferenceRule.from_value(json.dumps(data["retract"]))


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


def _check_decision(record: Label | Adjudication) -> TaskType:
    task, item, value = record.task, record.item, record.value
    error_type, note = record.error_type, record.note
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
        if retracted_rule(value) is None:
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
    if not isinstance(record.created_at, datetime) or record.created_at.tzinfo is None:
        raise LabelError("created_at must be a timezone-aware datetime, e.g. datetime.now(UTC)")
    return kind


def validate_label(label: Label) -> Label:
    """Return ``label`` unchanged if valid, else raise :class:`LabelError` naming the problem."""
    _check_text("annotator", label.annotator)
    if label.source not in SOURCES:
        raise LabelError(f"source {label.source!r} is unknown; use one of {', '.join(SOURCES)}")
    _check_decision(label)
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
    kind = _check_decision(adjudication)
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
