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
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from workbench.audit.cases import AuditCase, CaseFormatError, Turn
from workbench.inputs import InputError
from workbench.vocabulary import COMPLIANT, VIOLATION, Label

REPLY_ROLE = "assistant"
SYSTEM_ROLES = frozenset({"system", "developer"})
ARGS_SHOWN = 2000  # characters of one tool call's arguments kept in a turn


class ImportFormatError(CaseFormatError):
    """A file does not follow the format it was imported as; names where and the fix."""


def fail(where: str, problem: str, fix: str) -> ImportFormatError:
    return ImportFormatError(f"{where}: {problem}", fix)


def input_failed(exc: InputError, fix: str | None = None) -> ImportFormatError:
    """A problem the input layer found (encoding, NUL, length, JSON) as the import's failure,
    at its file and line; ``fix`` replaces the input layer's fix when given."""
    where = exc.origin if exc.line is None else f"{exc.origin}:{exc.line}"
    return fail(where, exc.problem, exc.fix if fix is None else fix)


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


HISTORY_CHARS = 32_000  # a case's history: the latest turns within this many characters
TURN_FRAMING = 20  # what one turn counts beyond its text (its role and quoting), so that
# thousands of empty turns cannot slip under the budget
MAX_HISTORY_CHARS = 4_000_000  # --history-chars may be raised this far, not without end
MAX_REPLY_CHARS = 4_000_000  # one reply (or state) beyond this is refused, not audited


@dataclass(frozen=True)
class HistoryBound:
    """How much history one case keeps: the latest turns whose text (plus ``TURN_FRAMING``
    each) fits in ``chars``. Older turns are left out and the case says so: a first turn
    ``note`` for the judge, and ``extra["history_cut"]`` (turns and characters left out).
    Bounding makes a conversation of n messages cost O(n) to import, not O(n^2): each reply
    of it used to carry a full copy of everything before it. The judge's window keeps the
    most recent turns too (``audit.window.fit_case``), so a budget above the judge's window
    loses nothing the judge would have read."""

    chars: int = HISTORY_CHARS

    def __post_init__(self) -> None:
        if not 1_000 <= self.chars <= MAX_HISTORY_CHARS:
            raise ImportFormatError(
                f"--history-chars {self.chars}: a case keeps between 1,000 and "
                f"{MAX_HISTORY_CHARS:,} characters of history",
                "give a number in that range (the default is 32,000, about 8,000 tokens)")

    def cut_note(self, turns: int, chars: int) -> Turn:
        return Turn("note", f"[{turns} earlier {'turn' if turns == 1 else 'turns'} of this "
                    f"conversation ({chars:,} characters) were left out when it was imported: "
                    f"a case keeps the latest {self.chars:,} characters of its history]")

    def cut_text(self, text: str) -> tuple[str, int]:
        """A text longer than the budget: its end, and how many characters were cut."""
        if len(text) <= self.chars:
            return text, 0
        cut = len(text) - self.chars
        return f"[... {cut:,} earlier characters left out at import] " + text[cut:], cut

    def bound(self, turns: list[Turn]) -> tuple[list[Turn], dict[str, int] | None]:
        """The latest of ``turns`` within the budget, and what was cut (None: nothing)."""
        window = HistoryWindow(self)
        for t in turns:
            window.add(t)
        return window.turns(), window.cut()


class HistoryWindow:
    """The history of the next reply while a conversation is read message by message: the
    latest turns within the bound, shared (not copied) between the replies' cases."""

    def __init__(self, bound: HistoryBound) -> None:
        self.bound = bound
        self.window: deque[Turn] = deque()
        self.size = 0  # characters of the window, framing included
        self.seen = 0  # turns added in all
        self.seen_chars = 0

    def add(self, turn: Turn) -> None:
        cost = len(turn.content) + TURN_FRAMING
        self.window.append(turn)
        self.size += cost
        self.seen += 1
        self.seen_chars += len(turn.content)
        while len(self.window) > 1 and self.size > self.bound.chars:
            self.size -= len(self.window.popleft().content) + TURN_FRAMING

    def turns(self) -> list[Turn]:
        kept = list(self.window)
        if kept and self.size > self.bound.chars:  # one turn alone is longer than the budget
            text, _ = self.bound.cut_text(kept[0].content)
            kept[0] = Turn(kept[0].role, text)
        cut = self.cut()
        if cut is None or not cut["turns_left_out"]:
            return kept  # nothing cut, or only the text of the one turn, which says so
        return [self.bound.cut_note(cut["turns_left_out"], cut["characters_left_out"]), *kept]

    def cut(self) -> dict[str, int] | None:
        kept_chars = sum(len(t.content) for t in self.window)
        if self.size > self.bound.chars:
            kept_chars = min(kept_chars, self.bound.chars)
        dropped = self.seen - len(self.window)
        if not dropped and kept_chars == self.seen_chars:
            return None
        return {"turns_left_out": dropped, "characters_left_out": self.seen_chars - kept_chars,
                "turns_kept": len(self.window)}


def check_reply(text: str, where: str, what: str = "reply") -> None:
    """One case that is too big to audit is refused with where it is (exit 2), not read."""
    if len(text) > MAX_REPLY_CHARS:
        raise fail(where, f"the {what} is {len(text):,} characters, more than one case may hold "
                   f"({MAX_REPLY_CHARS:,})", f"shorten the {what} or leave this record out")


def cases_from(messages: list[Message], conversation: str, *, session: str = "",
               skills: list[str] | None = None, extra: dict[str, Any] | None = None,
               background: Any = None, label: str | None = None,
               history: HistoryBound | None = None, last_only: bool = False,
               where: str = "") -> Iterator[AuditCase]:
    """One case per assistant message that says or does something: its id is
    ``<conversation>:<position of the message>``, its history the non-system messages
    before it, bounded by ``history`` (the latest turns, the cut stated in the case).
    ``label`` (a conversation-level gold label) goes to the last reply, unless a message
    carries its own. ``last_only``: only the case of the last message (an OTel span, whose
    earlier messages are other spans' replies). Cases come one at a time; their histories
    share the messages' turns."""
    bound = history or HistoryBound()
    system = [m.text for m in messages if m.role in SYSTEM_ROLES]
    base = dict(extra or {})
    if (digest := system_digest(system)) is not None:
        base["system"] = digest
    replies = [i for i, m in enumerate(messages) if m.role == REPLY_ROLE and m.text.strip()]
    if last_only:
        replies = [i for i in replies if i == len(messages) - 1]
    last = replies[-1] if replies else -1
    window = HistoryWindow(bound)
    upto = 0  # messages[:upto] are in the window
    for i in replies:
        m = messages[i]
        check_reply(m.text, f"{where or conversation}: message {i}")
        for p in messages[upto:i]:
            if p.role not in SYSTEM_ROLES:
                window.add(Turn(p.role, p.text))
        upto = i
        own = m.label if m.label is not None else (label if i == last else None)
        cut = window.cut()
        yield AuditCase(
            id=f"{conversation}:{i}", model_response=m.text, session=session or conversation,
            label=own, skills=None if skills is None else list(skills), context=window.turns(),
            background=background,
            extra={**base, **m.meta, "source": {**base.get("source", {}), "message": i},
                   **({"history_cut": cut} if cut else {})},
        )


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
