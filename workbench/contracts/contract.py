"""A contract as a value (``Contract``) and its parts: phases, admitted actions,
transitions, milestones, budgets.

Named ``contract`` (it was ``model``): in this product "model" means the language model
(``workbench.llm``), and what this module holds is the contract itself.

These are immutable values built by ``workbench.contracts.spec`` from a YAML file; the
runtime (``workbench.contracts.runtime``) interprets them. Matching an action against a rule
is split in two so the runtime can explain a rejection:

- ``ActionRule.shape_matches``: right kind, tool name or message pattern;
- ``ActionRule.arg_failures``: argument checks that fail (each a readable reason).

Guards (``requires`` on rules, ``when`` on transitions) name milestones; ``name[arg]`` asks
for the milestone to have been completed for the value of the action's argument ``arg``
(e.g. ``reservation_read[reservation_id]``: this very reservation was read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.contracts.actions import Action, ActionKind

ANY_TOOL = "*"


@dataclass(frozen=True)
class Requirement:
    """A milestone a rule or transition needs; ``key_arg`` keys it by an action argument."""

    milestone: str
    key_arg: str | None = None

    def __str__(self) -> str:
        return f"{self.milestone}[{self.key_arg}]" if self.key_arg else self.milestone


@dataclass(frozen=True)
class TextCheck:
    """A regex that must be found (``re.search``) and one that must not; either may be absent."""

    pattern: re.Pattern[str] | None = None
    not_pattern: re.Pattern[str] | None = None

    def matches(self, text: str) -> bool:
        if self.pattern is not None and not self.pattern.search(text):
            return False
        return not (self.not_pattern is not None and self.not_pattern.search(text))


_UNSET: Any = object()


@dataclass(frozen=True)
class ArgCheck:
    """Checks on one top-level argument of a tool call. All given checks must hold.

    ``equals``/``one_of`` compare values; ``pattern`` searches ``str(value)``; ``present``
    requires the argument to be there (true) or absent (false); ``from_user`` requires the
    value to appear as a whole token in an earlier user message (the agent did not invent it).
    """

    name: str
    equals: Any = _UNSET
    one_of: tuple[Any, ...] | None = None
    pattern: re.Pattern[str] | None = None
    present: bool | None = None
    from_user: bool = False

    def failure(self, args: Mapping[str, Any], user_texts: Sequence[str]) -> str | None:
        """Why the check fails for these arguments, or ``None`` when it holds."""
        if self.name not in args:
            if self.present is False:
                return None
            return f"argument '{self.name}' is missing"
        value = args[self.name]
        if self.present is False:
            return f"argument '{self.name}' must be absent"
        if self.equals is not _UNSET and value != self.equals:
            return f"argument '{self.name}' must equal {json.dumps(self.equals, default=str)}"
        if self.one_of is not None and value not in self.one_of:
            return f"argument '{self.name}' must be one of {list(self.one_of)}"
        if self.pattern is not None and not self.pattern.search(_as_text(value)):
            return f"argument '{self.name}' must match /{self.pattern.pattern}/"
        if self.from_user and not said_by_user(value, user_texts):
            return f"argument '{self.name}' must be a value the user gave in an earlier message"
        return None

    def describe(self) -> str:
        parts = []
        if self.from_user:
            parts.append(f"{self.name} taken from the user's own words")
        if self.equals is not _UNSET:
            parts.append(f"{self.name} = {json.dumps(self.equals, default=str)}")
        if self.one_of is not None:
            parts.append(f"{self.name} in {list(self.one_of)}")
        if self.pattern is not None:
            parts.append(f"{self.name} matching /{self.pattern.pattern}/")
        if self.present is True:
            parts.append(f"{self.name} given")
        if self.present is False:
            parts.append(f"no {self.name}")
        return ", ".join(parts)


def said_by_user(value: Any, user_texts: Sequence[str]) -> bool:
    """``value`` occurs as a whole token (case-insensitive) in one of ``user_texts``: "li"
    does not match "like", but "mia_li_3668" matches "my id is mia_li_3668."."""
    needle = _as_text(value).strip()
    if not needle:
        return False
    token = re.compile(rf"(?<![\w]){re.escape(needle)}(?![\w])", re.IGNORECASE)
    return any(token.search(text) for text in user_texts)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def arg_key(value: Any) -> str | None:
    """The key a milestone is completed for, from an argument value (``None`` if absent)."""
    return None if value is None else _as_text(value)


@dataclass(frozen=True)
class ActionRule:
    """One admitted action: a tool call (by name, with argument checks) or a message."""

    kind: ActionKind
    tools: tuple[str, ...] = ()
    text: TextCheck = field(default_factory=TextCheck)
    args: tuple[ArgCheck, ...] = ()
    requires: tuple[Requirement, ...] = ()
    describe: str = ""
    line: int | None = None

    def shape_matches(self, action: Action) -> bool:
        """Kind and tool name (tool rules) or text pattern (message rules) match."""
        if action.kind != self.kind:
            return False
        if self.kind == "tool":
            return ANY_TOOL in self.tools or action.name in self.tools
        return self.text.matches(action.text)

    def arg_failures(self, action: Action, user_texts: Sequence[str]) -> list[str]:
        return [reason for check in self.args if (reason := check.failure(action.args, user_texts))]

    def description(self) -> str:
        """How to satisfy this rule, in words: the author's ``describe`` or a generated one."""
        if self.describe:
            return self.describe
        if self.kind == "tool":
            names = "any tool" if ANY_TOOL in self.tools else " or ".join(self.tools)
            base = f"call {names}"
            checks = "; ".join(c.describe() for c in self.args if c.describe())
            return f"{base} ({checks})" if checks else base
        who = "an assistant message" if self.kind == "assistant" else "a user message"
        if self.text.pattern is not None:
            return f"{who} matching /{self.text.pattern.pattern}/"
        return who


ObservationMode = Literal["ok", "any", "none"]


@dataclass(frozen=True)
class ObservationCheck:
    """What makes an observation valid evidence for a milestone.

    ``ok``: a result is present and is not an error (see ``Contract.error_pattern``);
    ``any``: a result is present; ``none``: no observation needed (messages). ``text`` adds
    regexes on the result; ``fields`` adds checks on top-level fields of a JSON-object result
    (e.g. the reservation's ``user_id`` must be a value the user gave).
    """

    mode: ObservationMode = "ok"
    text: TextCheck = field(default_factory=TextCheck)
    fields: tuple[ArgCheck, ...] = ()

    def accepts(self, observation: str | None, error: re.Pattern[str],
                user_texts: Sequence[str] = ()) -> bool:
        if self.mode == "none":
            return True
        if observation is None:
            return False
        if self.mode == "ok" and error.search(observation):
            return False
        if not self.text.matches(observation):
            return False
        if self.fields:
            data = json_object(observation)
            if data is None:
                return False
            return all(check.failure(data, user_texts) is None for check in self.fields)
        return True

    @property
    def needs_observation(self) -> bool:
        return self.mode != "none"

    def describe(self) -> str:
        base = {"ok": "a result that is not an error", "any": "a result", "none": ""}[self.mode]
        checks = "; ".join(c.describe() for c in self.fields if c.describe())
        return f"{base} with {checks}" if checks and base else base


def json_object(text: str) -> Mapping[str, Any] | None:
    """``text`` parsed as a JSON object, or ``None`` when it is not one."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return None
    return data if isinstance(data, Mapping) else None


@dataclass(frozen=True)
class Evidence:
    """One way to verify a milestone: an accepted action matching ``rule`` whose observation
    passes ``observation``. ``key`` names the argument (``user_id``) or observation field
    (``observation.user_id``) the milestone is completed for."""

    rule: ActionRule
    observation: ObservationCheck
    key: str | None = None

    @property
    def key_from_observation(self) -> bool:
        return self.key is not None and self.key.startswith("observation.")

    def key_of(self, action: Action, observation: str | None) -> tuple[bool, str | None]:
        """``(available, key)``: ``available`` is False when a key is needed but missing."""
        if self.key is None:
            return True, None
        if self.key_from_observation:
            data = json_object(observation) if observation is not None else None
            value = None if data is None else data.get(self.key.split(".", 1)[1])
        else:
            value = action.args.get(self.key)
        key = arg_key(value)
        return key is not None, key


@dataclass(frozen=True)
class Milestone:
    """Verified progress: an accepted action plus a valid observation (any of ``evidence``).

    Keyed milestones (every evidence has a ``key``) are completed per key value; ``in_phase``
    counts an action only when it is accepted into (or within) that phase, e.g. a "yes" that
    answers a proposal.
    """

    id: str
    evidence: tuple[Evidence, ...]
    credit: float = 1.0
    describe: str = ""
    in_phase: str | None = None

    @property
    def keyed(self) -> bool:
        return bool(self.evidence) and all(e.key is not None for e in self.evidence)

    def how(self) -> str:
        """How to reach this milestone, in words (for feedback)."""
        if self.describe:
            return self.describe
        first = self.evidence[0]
        evidence = first.observation.describe()
        base = first.rule.description()
        return f"{base} and get {evidence}" if evidence else base


@dataclass(frozen=True)
class Phase:
    id: str
    admits: tuple[ActionRule, ...] = ()
    required: bool = False
    done_when: tuple[str, ...] = ()
    describe: str = ""


@dataclass(frozen=True)
class Transition:
    source: str
    target: str
    when: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class Budgets:
    """Caps on the agent's actions (``turns``: tool calls plus assistant messages) and tool calls."""

    turns: int | None = None
    tool_calls: int | None = None


@dataclass(frozen=True)
class TurnShape:
    """Limits on one assistant turn: tool calls per turn and whether a tool call may be sent
    together with a message to the user."""

    max_tool_calls: int | None = None
    message_with_tool_call: bool = True


DEFAULT_ERROR_PATTERN = r"^\s*(error|exception)\b"
DEFAULT_RECOVERY_DISCOUNT = 0.9


@dataclass(frozen=True)
class Contract:
    """A validated skill contract. Build with ``load_contract`` / ``parse_contract``."""

    name: str
    phases: tuple[Phase, ...]
    initial: str
    transitions: tuple[Transition, ...] = ()
    anywhere: tuple[ActionRule, ...] = ()
    milestones: tuple[Milestone, ...] = ()
    budgets: Budgets = field(default_factory=Budgets)
    turn_shape: TurnShape = field(default_factory=TurnShape)
    final_phases: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    error_pattern: re.Pattern[str] = field(
        default_factory=lambda: re.compile(DEFAULT_ERROR_PATTERN, re.IGNORECASE)
    )
    recovery_discount: float = DEFAULT_RECOVERY_DISCOUNT
    description: str = ""
    source: str = ""
    version: int = 1

    def phase(self, phase_id: str) -> Phase:
        for phase in self.phases:
            if phase.id == phase_id:
                return phase
        raise KeyError(phase_id)

    def milestone(self, milestone_id: str) -> Milestone:
        for milestone in self.milestones:
            if milestone.id == milestone_id:
                return milestone
        raise KeyError(milestone_id)

    def transitions_from(self, phase_id: str) -> tuple[Transition, ...]:
        return tuple(t for t in self.transitions if t.source == phase_id)

    @property
    def required_phases(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.phases if p.required)

    def phases_admitting(self, action: Action) -> list[str]:
        """Phases with a rule whose shape matches ``action`` (guards ignored), in file order."""
        return [p.id for p in self.phases if any(r.shape_matches(action) for r in p.admits)]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "phases": [p.id for p in self.phases],
            "required_phases": list(self.required_phases),
            "initial": self.initial,
            "transitions": len(self.transitions),
            "anywhere": len(self.anywhere),
            "milestones": [m.id for m in self.milestones],
            "budgets": {"turns": self.budgets.turns, "tool_calls": self.budgets.tool_calls},
            "recovery_discount": self.recovery_discount,
        }
