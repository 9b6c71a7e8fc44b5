"""Audit cases in the normalised JSONL schema of the SkillCDG paper.

One JSON object per line::

    {"id": "c1", "session": "s1", "label": "negative", "skills": ["merchant-order-refund"],
     "context": [{"role": "user", "content": "..."}, ...],   # or one string
     "background": {...} | "...",                            # environment state
     "model_response": "...", "gold": {...}}                  # extra fields are kept

``label`` is ``positive`` (compliant), ``negative`` (violation) or absent (unknown).
``skills`` is optional: without it the audit routes by keywords. Any other field (``gold``,
provenance, ...) is kept verbatim in ``extra`` and written back unchanged by ``to_dict``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.audit import parquet
from workbench.audit.identifiers import id_problem
from workbench.audit.prompts import quote
from workbench.errors import WorkbenchError
from workbench.inputs import InputError, decode_text, iter_jsonl, read_input_bytes
from workbench.vocabulary import Label, label_violation, values

LABELS = values(Label)
KNOWN_FIELDS = ("id", "session", "label", "skills", "context", "background", "model_response")


class CaseFormatError(WorkbenchError, ValueError):
    """A case does not follow the schema; the message names the line/field and the fix."""


@dataclass(frozen=True)
class Turn:
    role: str
    content: str


def gold_rules_of(extra: Any) -> list[str]:
    """Gold governing rule ids from a case's extra fields: ``gold.governing_rules`` (a list)
    when it holds any id, else ``gold.governing_rule`` (one id), else ``[]``.

    The list wins when a case has both. It is the hand annotation of every rule that governs
    the turn (fixtures/demo/cases.jsonl: 2-6 ids a case, the violated ones among them), while
    the single id is what ``import-complibench`` derives (the violated guideline, or the one
    the turn's message was tagged with). A case carrying both is one someone annotated in
    full after import, and taking only the single id would let a context that misses the
    other governing rules count as covering the case. Ids that are not non-empty strings are
    dropped, repeats kept once, in order.
    """
    gold = extra.get("gold") if isinstance(extra, dict) else None
    if not isinstance(gold, dict):
        return []
    many, one = gold.get("governing_rules"), gold.get("governing_rule")
    ids = [r for r in many if isinstance(r, str) and r] if isinstance(many, list) else []
    if not ids and isinstance(one, str) and one:
        ids = [one]
    return list(dict.fromkeys(ids))


@dataclass
class AuditCase:
    """History H (``context``), state O (``background``) and the reply A (``model_response``)."""

    id: str
    model_response: str
    session: str = ""
    label: str | None = None
    skills: list[str] | None = None
    context: list[Turn] | str = field(default_factory=list)
    background: str | dict | list | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_violation(self) -> bool | None:
        """True for ``negative`` (violation), False for ``positive``, None when unlabelled."""
        return label_violation(self.label)

    @property
    def gold_rules(self) -> list[str]:
        """The rule ids that govern this case by its gold annotation (see ``gold_rules_of``)."""
        return gold_rules_of(self.extra)

    @property
    def turns(self) -> list[Turn]:
        if isinstance(self.context, str):
            return [Turn("transcript", self.context)] if self.context.strip() else []
        return list(self.context)

    @property
    def said(self) -> str:
        """Everything said in the case, conversation then reply: what a full-text search of
        the conversation (Review, Replay) looks in."""
        return " ".join([*(t.content for t in self.turns), self.model_response])

    @property
    def last_user_message(self) -> str:
        for t in reversed(self.turns):
            if t.role == "user":
                return t.content
        return ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "session": self.session}
        if self.label is not None:
            out["label"] = self.label
        if self.skills is not None:
            out["skills"] = list(self.skills)
        out["context"] = (
            self.context
            if isinstance(self.context, str)
            else [{"role": t.role, "content": t.content} for t in self.context]
        )
        if self.background is not None:
            out["background"] = self.background
        out["model_response"] = self.model_response
        out.update(self.extra)
        return out


def pseudonymise(session: str, salt: str = "") -> str:
    """A stable pseudonym for a session id: hex SHA-256 of ``salt + session``.

    Equal sessions stay equal (so per-session grouping survives) while the original id is
    not stored. Use a secret ``salt`` when session ids are guessable (e.g. phone numbers).
    """
    return hashlib.sha256((salt + session).encode("utf-8")).hexdigest()


def case_from_dict(data: Any, where: str = "case") -> AuditCase:
    """Validate and normalise one case. Raises CaseFormatError naming the field and fix."""
    if not isinstance(data, dict):
        raise CaseFormatError(f"{where}: a case must be a JSON object, got {type(data).__name__}")
    cid = data.get("id")
    if isinstance(cid, int) and not isinstance(cid, bool):
        cid = str(cid)
    if not isinstance(cid, str) or not cid.strip():
        raise CaseFormatError(f"{where}: 'id' is missing or empty; give every case a unique id")
    if bad := id_problem(cid, "'id'"):
        raise CaseFormatError(f"{where}: {bad}")
    where = f"{where} (id {cid!r})"
    response = data.get("model_response")
    if not isinstance(response, str):
        raise CaseFormatError(f"{where}: 'model_response' (the reply to audit) must be a string")
    session = data.get("session", "")
    if session is None:
        session = ""
    if not isinstance(session, str | int) or isinstance(session, bool):
        raise CaseFormatError(f"{where}: 'session' must be a string")
    label = data.get("label")
    if label is not None and label not in LABELS:
        raise CaseFormatError(
            f"{where}: 'label' must be 'positive' (compliant), 'negative' (violation) or "
            f"absent, got {label!r}"
        )
    skills = data.get("skills")
    if skills is not None:
        if isinstance(skills, str):
            skills = [skills]
        if not isinstance(skills, list) or not all(isinstance(s, str) and s for s in skills):
            raise CaseFormatError(f"{where}: 'skills' must be a list of SKILL names")
        skills = list(skills) or None
    context = _context(data.get("context", []), where)
    background = data.get("background")
    if background is not None and not isinstance(background, str | dict | list):
        raise CaseFormatError(f"{where}: 'background' must be a string or a JSON object")
    extra = {k: v for k, v in data.items() if k not in KNOWN_FIELDS}
    return AuditCase(
        id=cid,
        model_response=response,
        session=str(session),
        label=label,
        skills=skills,
        context=context,
        background=background,
        extra=extra,
    )


def _context(raw: Any, where: str) -> list[Turn] | str:
    if raw is None:
        return []
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, list):
        raise CaseFormatError(f"{where}: 'context' must be a list of {{role, content}} or a string")
    turns = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict) or not isinstance(t.get("content"), str):
            raise CaseFormatError(f"{where}: context[{i}] needs a string 'content' (and a 'role')")
        role = t.get("role") or "unknown"
        if not isinstance(role, str):
            raise CaseFormatError(f"{where}: context[{i}].role must be a string")
        turns.append(Turn(role, t["content"]))
    return turns


def iter_cases(text: str | Iterable[str], origin: str = "cases") -> Iterator[AuditCase]:
    """Cases from JSONL text (or its lines as they are read: one held at a time); the first
    bad line raises CaseFormatError naming it."""
    seen: dict[str, int] = {}
    try:
        for number, data in iter_jsonl(text, origin):
            where = f"{origin}:{number}"
            yield _unique(case_from_dict(data, where), seen, number, where, "on line")
    except InputError as exc:
        raise CaseFormatError(str(exc)) from None


def _unique(case: AuditCase, seen: dict[str, int], at: int, where: str, first: str) -> AuditCase:
    """``case``, after checking no earlier line/row (``seen``: id -> position) had its id."""
    if case.id in seen:
        raise CaseFormatError(
            f"{where}: duplicate case id {case.id!r} (first {first} {seen[case.id]}); ids must be unique"
        )
    seen[case.id] = at
    return case


def load_cases(path: str | Path) -> list[AuditCase]:
    """Read a cases file: JSONL, or Parquet (``.parquet``, see ``audit.parquet``). Raises
    FileNotFoundError or CaseFormatError (with the line or row)."""
    p = Path(path)
    if parquet.is_parquet(p):
        return read_parquet_cases(p)
    if not p.exists():  # a folder or FIFO is refused by the reader with what it is
        raise FileNotFoundError(f"{p}: no such cases file (JSONL, one case per line)")
    return parse_cases_bytes(read_bytes_or_fail(p), str(p))


def read_parquet_cases(path: Path) -> list[AuditCase]:
    """Cases from a Parquet file (``workbench convert``), validated as the JSONL reader does,
    with row numbers instead of line numbers."""
    seen: dict[str, int] = {}
    out = []
    try:
        for row, data in parquet.json_rows(path, parquet.CASE_COLUMN, "cases"):
            where = f"{path} row {row}"
            out.append(_unique(case_from_dict(data, where), seen, row, where, "in row"))
    except parquet.ParquetFormatError as exc:
        raise CaseFormatError(str(exc)) from None
    return out


def read_bytes_or_fail(path: Path) -> bytes:
    try:
        return read_input_bytes(path, "cases file")
    except InputError as exc:
        raise CaseFormatError(str(exc)) from None


def parse_cases_bytes(data: bytes, origin: str) -> list[AuditCase]:
    """Cases from the bytes of a JSONL file or upload (decoded as the input layer does)."""
    try:
        text, _ = decode_text(data, origin)
    except InputError as exc:
        raise CaseFormatError(str(exc)) from None
    return list(iter_cases(text, origin))


def dump_cases(cases: Iterable[AuditCase], path: str | Path) -> int:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(p, "w", encoding="utf-8") as out:
        for c in cases:
            out.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def render_conversation(case: AuditCase) -> str:
    """The history as one JSON object per turn (see :func:`workbench.audit.prompts.quote`):
    quoting makes turn boundaries unforgeable (a message cannot pretend to start a new turn
    or close the data block)."""
    if isinstance(case.context, str):
        return quote({"transcript": case.context})
    return "\n".join(quote({"role": t.role, "content": t.content}) for t in case.turns)


def render_state(case: AuditCase) -> str:
    bg = case.background
    if bg is None or bg == "" or bg == {}:
        return "(none)"
    return quote(bg, sort_keys=True)


def prompt_fields(case: AuditCase) -> dict[str, str]:
    """The case as every audit prompt (keywords, judge, per-rule judge) quotes it, so the
    prompts cannot drift apart in how they show the same case. The reply is one JSON string,
    quoted like the turns: the one prompt input the audited agent writes freely, so it must
    not be able to end its block either."""
    return {"state": render_state(case), "conversation": render_conversation(case),
            "reply": quote(case.model_response)}
