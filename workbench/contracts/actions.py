"""Actions an agent (or its user) takes, as the contract runtime sees them.

An ``Action`` is one of three kinds:

- ``tool``: a tool call by name with JSON arguments. ``parallel`` is the number of tool calls
  issued in the same assistant turn and ``with_message`` says the turn also spoke to the user;
  both exist so a contract can require "one tool call at a time".
- ``assistant``: a message from the agent to the user.
- ``user``: a message from the user. User turns drive transitions (an explicit "yes") but are
  never rejected: the contract constrains the agent, not its user.

Observations (tool results) are not part of the action: they are passed to
``ContractRuntime.step`` or ``ContractRuntime.observe`` next to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ActionKind = Literal["tool", "assistant", "user"]


@dataclass(frozen=True)
class Action:
    """One step of a trajectory. Build with ``Action.tool``, ``Action.assistant``, ``Action.user``."""

    kind: ActionKind
    name: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    call_id: str | None = None
    parallel: int = 1
    with_message: bool = False

    @classmethod
    def tool(
        cls,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        call_id: str | None = None,
        parallel: int = 1,
        with_message: bool = False,
    ) -> Action:
        return cls(
            kind="tool",
            name=name,
            args=dict(args or {}),
            call_id=call_id,
            parallel=parallel,
            with_message=with_message,
        )

    @classmethod
    def assistant(cls, text: str) -> Action:
        return cls(kind="assistant", text=text)

    @classmethod
    def user(cls, text: str) -> Action:
        return cls(kind="user", text=text)

    @property
    def by_agent(self) -> bool:
        """True for the agent's own actions (tool calls and assistant messages)."""
        return self.kind != "user"

    def label(self) -> str:
        """A short, single-line name for tables: ``tool cancel_reservation`` or ``assistant``."""
        return f"tool {self.name}" if self.kind == "tool" else self.kind

    def summary(self, limit: int = 160) -> str:
        """One line describing the action, arguments or text truncated to ``limit`` chars."""
        if self.kind == "tool":
            body = json.dumps(dict(self.args), ensure_ascii=False, sort_keys=True, default=str)
            line = f"{self.name}({body})"
        else:
            line = f"{self.kind}: {' '.join(self.text.split())}"
        return line if len(line) <= limit else line[: limit - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "tool":
            out.update(name=self.name, args=dict(self.args))
            if self.parallel != 1:
                out["parallel"] = self.parallel
            if self.with_message:
                out["with_message"] = True
        else:
            out["text"] = self.text
        return out
