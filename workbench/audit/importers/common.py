"""What every importer shares: messages in one normalised form, the cases they make, how a
file's policy name becomes a SKILL name, and the one error class.

An importer turns its format's conversations into :class:`Message` lists; ``cases_from``
then makes one :class:`~workbench.audit.cases.AuditCase` per assistant message (the reply A),
the messages before it as its history H. Tool calls stay in the history as text the judge
can read (``[tool call] name {"arg": ...}``) and so do their results (``[tool result] name:
...``): what an agent did, not only what it said, is what a policy governs. System
messages are not history: they are the agent's instructions, usually the very policy the
audit supplies from the index, so a case keeps only their digest (``extra["system"]``)
to tell apart cases run under different prompts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from workbench.audit.cases import AuditCase, CaseFormatError, Turn
from workbench.vocabulary import COMPLIANT, VIOLATION, Label

REPLY_ROLE = "assistant"
SYSTEM_ROLES = frozenset({"system", "developer"})
ARGS_SHOWN = 2000  # characters of one tool call's arguments kept in a turn


class ImportFormatError(CaseFormatError):
    """A file does not follow the format it was imported as; names where and the fix."""


def fail(where: str, problem: str, fix: str) -> ImportFormatError:
    return ImportFormatError(f"{where}: {problem}", fix)


def json_objects(items: list[Any], where: str, what: str, fix: str) -> Iterator[tuple[int, str, dict]]:
    """Each item of the list at ``where`` with its position and place (``where[i]``); an item
    that is not a JSON object fails the import there: ``{what} must be a JSON object``."""
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise fail(at, f"{what} must be a JSON object", fix)
        yield i, at, item


@dataclass(frozen=True)
class PolicyNames:
    """How the policy a file names (a tau2 domain, an agent name, a ``policy`` field)
    becomes the SKILL the case is audited against.

    ``skills``: every case names these SKILLs, whatever the file says (``--policy NAME``).
    ``mapping``: a file's name -> SKILL name (``--policy airline=airline-policy``).
    ``known``: SKILL names that exist (the index, the store); a file's name that is one of
    them is used as it is. A name neither mapped nor known leaves the case unrouted (the
    audit routes it by keywords) and is reported, never silently guessed.
    """

    skills: tuple[str, ...] = ()
    mapping: dict[str, str] = field(default_factory=dict)
    known: frozenset[str] | None = None

    @classmethod
    def parse(cls, specs: Iterable[str], known: Iterable[str] | None = None) -> PolicyNames:
        """From ``--policy`` values: ``NAME`` or ``FROM=TO`` (``FROM`` as the file names it)."""
        skills, mapping = [], {}
        for spec in specs:
            name, sep, target = (s.strip() for s in spec.partition("="))
            if sep and not (name and target):
                raise ImportFormatError(f"--policy {spec!r}: both sides of '=' must be given",
                                        "write --policy SKILL or --policy FILE_NAME=SKILL")
            if not name:
                raise ImportFormatError("--policy needs a SKILL name", "write --policy SKILL")
            if sep:
                mapping[name] = target
            else:
                skills.append(name)
        return cls(tuple(skills), mapping, None if known is None else frozenset(known))

    def resolve(self, named: str | None, notes: Notes) -> list[str] | None:
        """The SKILLs for a case whose file names policy ``named`` (None: names none)."""
        if self.skills:
            return list(self.skills)
        if not named:
            return None
        if named in self.mapping:
            return [self.mapping[named]]
        if self.known is not None and named in self.known:
            return [named]
        notes.add(f"policy {named!r} names no {'' if self.known is None else 'known '}SKILL; "
                  f"its cases are routed by keywords (map it: --policy {named}=SKILL)")
        return None


class Notes:
    """Warnings an import collected (each kept once, in order): skipped records, unmapped
    policies. Errors raise instead; notes never mean that something was half-read."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)


@dataclass
class Message:
    """One message of a conversation in the form every importer produces."""

    role: str  # user | assistant | tool | system (or the format's own role word)
    text: str  # what the judge reads: content, then tool calls as lines
    label: str | None = None  # a gold label of this reply, where the format carries one
    meta: dict[str, Any] = field(default_factory=dict)  # kept in the case's extra


def label_of(value: Any, where: str) -> str | None:
    """A gold label in the case schema's words: ``positive``/``negative``, or the analyst's
    ``compliant``/``violation``; empty means unlabelled."""
    if value is None or value == "":
        return None
    word = str(value).strip().lower() if isinstance(value, str) else value
    if word in (Label.POSITIVE, COMPLIANT):
        return Label.POSITIVE.value
    if word in (Label.NEGATIVE, VIOLATION):
        return Label.NEGATIVE.value
    raise fail(where, f"label {value!r} is not a label",
               "use 'violation' or 'compliant' (or the schema's 'negative'/'positive'), or leave it empty")


def tool_call_text(name: Any, arguments: Any) -> str:
    """A tool call as one line of the conversation: ``[tool call] name {"arg": value}``.
    Arguments given as a JSON string (OpenAI) are shown as the JSON they hold."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    args = arguments if isinstance(arguments, str) else json.dumps(
        arguments if arguments is not None else {}, ensure_ascii=False, sort_keys=True)
    if len(args) > ARGS_SHOWN:
        args = args[:ARGS_SHOWN] + f"... ({len(args) - ARGS_SHOWN} more characters)"
    return f"[tool call] {name} {args}"


def tool_result_text(name: str | None, content: Any, error: bool = False) -> str:
    """A tool's answer as a turn: ``[tool result] name: content`` (``[tool error]`` when the
    call failed)."""
    body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    head = "[tool error]" if error else "[tool result]"
    return f"{head} {name}: {body}" if name else f"{head} {body}"


def joined(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def system_digest(texts: list[str]) -> dict[str, Any] | None:
    if not texts:
        return None
    text = "\n".join(texts)
    return {"sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "chars": len(text)}


def origin_stem(origin: str) -> str:
    """The file's name without folders or extension: the default prefix of case ids."""
    return PurePath(origin).stem or "cases"


def cases_from(messages: list[Message], conversation: str, *, session: str = "",
               skills: list[str] | None = None, extra: dict[str, Any] | None = None,
               background: Any = None, label: str | None = None) -> list[AuditCase]:
    """One case per assistant message that says or does something: its id is
    ``<conversation>:<position of the message>``, its history the non-system messages
    before it. ``label`` (a conversation-level gold label) goes to the last reply, unless
    a message carries its own."""
    system = [m.text for m in messages if m.role in SYSTEM_ROLES]
    base = dict(extra or {})
    if (digest := system_digest(system)) is not None:
        base["system"] = digest
    replies = [i for i, m in enumerate(messages) if m.role == REPLY_ROLE and m.text.strip()]
    out = []
    for i in replies:
        m = messages[i]
        history = [Turn(p.role, p.text) for p in messages[:i] if p.role not in SYSTEM_ROLES]
        own = m.label if m.label is not None else (label if i == replies[-1] else None)
        out.append(AuditCase(
            id=f"{conversation}:{i}", model_response=m.text, session=session or conversation,
            label=own, skills=None if skills is None else list(skills), context=history,
            background=background,
            extra={**base, **m.meta, "source": {**base.get("source", {}), "message": i}},
        ))
    return out


def text_of(value: Any, where: str, what: str = "content") -> str:
    """Message content as text: a string, or the text parts of a content-part list
    (``{"type": "text", "text": ...}``); other parts are named, not dropped silently."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for j, part in enumerate(value):
            if isinstance(part, str):
                out.append(part)
                continue
            if not isinstance(part, dict):
                raise fail(f"{where}.{what}[{j}]", "a content part must be an object or a string",
                           'write parts as {"type": "text", "text": "..."}')
            kind = part.get("type")
            body = part.get("text", part.get("content"))
            if kind in ("text", "input_text", "output_text", None) and isinstance(body, str):
                out.append(body)
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                out.append(part["refusal"])
            else:
                out.append(f"[{kind or 'unknown'} part]")
        return "\n".join(out)
    raise fail(where, f"'{what}' must be text or a list of content parts",
               "write the message text as a string")
