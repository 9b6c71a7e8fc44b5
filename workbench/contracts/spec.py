"""Contract files: YAML in, a validated ``Contract`` out, or every problem with its line.

The format (all keys but ``contract`` and ``phases`` optional)::

    contract: NAME
    description: TEXT
    source: where the procedure comes from
    tools: [known tool names]          # typos in rules are reported; unknown calls rejected
    error_pattern: REGEX               # tool results matching it are errors (default ^Error)
    recovery_discount: 0.9             # rho: credit factor for a milestone reached in recovery
    budgets: {turns: N, tool_calls: N} # turns = the agent's tool calls + assistant messages
    turn_shape: {max_tool_calls: 1, message_with_tool_call: false}
    initial: PHASE                     # default: the first phase
    anywhere: [RULE, ...]              # admitted in every phase, no phase change
    milestones:
      - {id, describe, verified_by: EVIDENCE | [EVIDENCE, ...], credit: 1.0, in_phase: PHASE,
         observation: OBSERVATION, key: KEY}   # defaults for the EVIDENCE items
    phases:
      - {id, describe, required: bool, admits: [RULE, ...], done_when: [MILESTONE, ...]}
    transitions: {PHASE: [TARGET | {to: TARGET, when: [REQUIREMENT, ...]}, ...]}
    termination: {final_phases: [PHASE, ...]}
    x-anything: ...                    # top-level keys starting with x- are ignored (anchors)

    RULE: {tool: NAME | [NAMES] | "*", args: {ARG: VALUE | {equals, one_of, pattern, present,
           from_user}}, requires: [REQUIREMENT], describe: TEXT}
        | {assistant: any | {pattern, not_pattern}, requires, describe}
        | {user: any | {pattern, not_pattern}, describe}
    REQUIREMENT: MILESTONE or MILESTONE[ARG] (completed for the value of the action's ARG;
        quote it inside [...] lists: requires: ["reservation_read[reservation_id]"])
    EVIDENCE: RULE plus optional observation: OBSERVATION and key: KEY
    OBSERVATION: ok | any | none | {valid: ok|any, pattern, not_pattern, fields: {FIELD: CHECK}}
        (ok: present and not an error; none: messages; fields: checks on a JSON result)
    KEY: ARG | observation.FIELD   (a keyed milestone is completed per value)

Order of admission: the transitions out of the current phase, in the order written, then
the current phase's own ``admits``, then ``anywhere``. List the phase itself among its
transitions (``greet: [greet, answer]``) to prefer staying when a target admits the same
action. Regexes use Python syntax (``re.search``); prefix ``(?i)`` to ignore case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.contracts.contract import (
    DEFAULT_ERROR_PATTERN,
    DEFAULT_RECOVERY_DISCOUNT,
    Budgets,
    Contract,
    Milestone,
    Phase,
    Transition,
    TurnShape,
)
from workbench.contracts.located_yaml import LocatedMap, YamlSyntaxError, load_located
from workbench.contracts.spec_reader import (
    ContractIssue,
    SpecReader,
    brief,
    kind_of,
    line_of,
)
from workbench.errors import WorkbenchError
from workbench.inputs import InputError, read_input_text

# A contract is a hand-written procedure of a few kilobytes; far larger input is a mistake.
MAX_CONTRACT_BYTES = 4 * 1024 * 1024

__all__ = ["ContractError", "ContractIssue", "check_contract_text", "load_contract", "parse_contract"]


class ContractError(WorkbenchError, ValueError):
    """The contract could not be loaded; ``issues`` lists every problem found."""

    def __init__(self, issues: list[ContractIssue], source: str = "<contract>") -> None:
        self.issues = list(issues)
        self.source = source
        lines = [f"{source}:{i.line or '?'}: {i.path + ': ' if i.path else ''}{i.message}"
                 for i in self.issues]
        noun = "problem" if len(self.issues) == 1 else "problems"
        super().__init__(
            f"invalid contract {source} ({len(self.issues)} {noun}; fix them and check again "
            "with `workbench contract check`):\n" + "\n".join(lines)
        )


def load_contract(path: str | Path) -> Contract:
    """Read and validate a contract file. Raises ``ContractError`` (also for unreadable files)."""
    path = Path(path)
    text = read_contract_text(path)
    return parse_contract(text, source=str(path))


def read_contract_text(path: Path) -> str:
    """The decoded text of a contract file; raises ContractError naming the line."""
    try:
        return read_input_text(path, "contract file", MAX_CONTRACT_BYTES)
    except InputError as exc:
        issue = ContractIssue("", exc.line, f"cannot read the file: {exc.problem}; {exc.fix}")
        raise ContractError([issue], str(path)) from None


def parse_contract(text: str, source: str = "<contract>") -> Contract:
    """Validate contract YAML text and build the ``Contract``; raises ``ContractError``."""
    contract, issues = check_contract_text(text, source)
    if issues or contract is None:
        raise ContractError(issues, source)
    return contract


def check_contract_text(text: str, source: str = "<contract>") -> tuple[Contract | None, list[ContractIssue]]:
    """Validate without raising: ``(contract or None, issues)``. Used by the UI editor."""
    try:
        data, duplicates = load_located(text)
    except YamlSyntaxError as exc:
        return None, [ContractIssue("", exc.line, f"{exc}; fix the YAML syntax")]
    builder = _Builder()
    for key, line in duplicates:
        builder.issue("", line, f"key '{key}' appears twice in the same mapping; keep one")
    contract = builder.build(data)
    if builder.issues:
        return None, sorted(builder.issues, key=lambda i: (i.line or 0, i.path))
    return contract, []


_TOP_KEYS = (
    "contract", "description", "source", "version", "tools", "error_pattern",
    "recovery_discount", "budgets", "turn_shape", "initial", "anywhere", "milestones",
    "phases", "transitions", "termination",
)


class _Builder(SpecReader):
    """Assembles a whole contract document and cross-checks its references."""

    # -- the whole document -----------------------------------------------------------------

    def build(self, data: Any) -> Contract | None:
        root = self._mapping(data, "", getattr(data, "line", 1))
        if root is None:
            return None
        self._keys(root, "", _TOP_KEYS)
        name = root.get("contract")
        if not isinstance(name, str) or not name.strip():
            self.issue("contract", line_of(root, "contract") or 1,
                       "missing 'contract: NAME' (the contract's name)")
            name = ""
        tools_list = []
        for item, path, line in self._items(root, "tools", ""):
            if isinstance(item, str) and item:
                tools_list.append(item)
            else:
                self.issue(path, line, f"tool names are non-empty text, got {brief(item)}")
        tools = tuple(tools_list)
        error_pattern = re.compile(DEFAULT_ERROR_PATTERN, re.IGNORECASE)
        if root.get("error_pattern") is not None:
            error_pattern = self._regex(root["error_pattern"], "error_pattern",
                                        line_of(root, "error_pattern")) or error_pattern
        rho = root.get("recovery_discount", DEFAULT_RECOVERY_DISCOUNT)
        if isinstance(rho, bool) or not isinstance(rho, int | float) or not 0 < rho <= 1:
            self.issue("recovery_discount", line_of(root, "recovery_discount"),
                       f"expected a number in (0, 1], got {brief(rho)}")
            rho = DEFAULT_RECOVERY_DISCOUNT
        budgets = self._section(root, "budgets", ("turns", "tool_calls"), lambda n: Budgets(
            self._positive_int(n, "turns", "budgets"), self._positive_int(n, "tool_calls", "budgets")
        ), Budgets())
        turn_shape = self._section(
            root, "turn_shape", ("max_tool_calls", "message_with_tool_call"),
            lambda n: TurnShape(self._positive_int(n, "max_tool_calls", "turn_shape"),
                                self._bool(n, "message_with_tool_call", "turn_shape", True)),
            TurnShape(),
        )
        anywhere = self.rules(root, "anywhere", "")
        milestones = [m for m in (self.milestone(item, p, ln)
                                  for item, p, ln in self._items(root, "milestones", "")) if m]
        phase_items = self._items(root, "phases", "")
        if not phase_items:
            self.issue("phases", line_of(root, "phases") or root.line, "a contract needs at least one phase")
        phases = [ph for ph in (self.phase(item, p, ln) for item, p, ln in phase_items) if ph]
        transitions = []
        if root.get("transitions") is not None:
            transitions = self.transitions(root["transitions"], "transitions",
                                           line_of(root, "transitions"))
        final_phases: list[str] = self._section(
            root, "termination", ("final_phases",),
            lambda term: [f for f in (self._ident(i, p, ln, "phase id") for i, p, ln
                                      in self._items(term, "final_phases", "termination")) if f], [])
        phase_ids = [p.id for p in phases]
        initial = root.get("initial", phase_ids[0] if phase_ids else None)
        if root.get("initial") is not None and initial not in phase_ids:
            self.issue("initial", line_of(root, "initial"),
                       f"unknown phase {brief(initial)}; phases are: {', '.join(phase_ids)}")
        self._cross_check(phases, milestones, transitions, tools, final_phases, root)
        if self.issues or not phases or not isinstance(initial, str):
            return None
        return Contract(
            name=name, phases=tuple(phases), initial=initial,
            transitions=tuple(t for t, _, _ in transitions), anywhere=anywhere,
            milestones=tuple(milestones), budgets=budgets, turn_shape=turn_shape,
            final_phases=tuple(final_phases), tools=tools, error_pattern=error_pattern,
            recovery_discount=float(rho), description=self._text(root, "description", ""),
            source=self._text(root, "source", ""), version=self._version(root),
        )

    def _version(self, root: LocatedMap) -> int:
        """``version`` is a whole number >= 1 (default 1). A date or ``!!binary`` is an
        error, not a silent 1: the version decides which stored results a contract owns."""
        value = root.get("version")
        if value is None:
            return 1
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.issue("version", line_of(root, "version"),
                       f"expected a whole number >= 1 (e.g. 'version: 2'), got {kind_of(value)}")
            return 1
        return value

    def _section(self, root: LocatedMap, key: str, allowed: tuple[str, ...],
                 make: Callable[[LocatedMap], Any], default: Any) -> Any:
        if root.get(key) is None:
            return default
        node = self._mapping(root[key], key, line_of(root, key))
        if node is None:
            return default
        self._keys(node, key, allowed)
        return make(node)

    def _cross_check(self, phases: list[Phase], milestones: list[Milestone],
                     transitions: list[tuple[Transition, str, int | None]], tools: tuple[str, ...],
                     final_phases: list[str], root: LocatedMap) -> None:
        phase_ids = [p.id for p in phases]
        _duplicates(self, phase_ids, "phases", root, "phase")
        by_id = {m.id: m for m in milestones}
        _duplicates(self, [m.id for m in milestones], "milestones", root, "milestone")
        for req, path, line in self._requirements:
            milestone = by_id.get(req.milestone)
            if milestone is None:
                known = ", ".join(by_id) or "none declared"
                self.issue(path, line, f"unknown milestone '{req.milestone}'; milestones: {known}")
            elif req.key_arg and not milestone.keyed:
                self.issue(path, line, f"milestone '{req.milestone}' has no 'key', so "
                                       f"'{req}' cannot be checked per {req.key_arg}; add key")
        ends = [(end, path, line) for t, path, line in transitions for end in (t.source, t.target)]
        finals = [(p, "termination.final_phases", line_of(root, "termination")) for p in final_phases]
        for phase_id, path, line in ends + finals + self._phase_refs:
            if phase_id not in phase_ids:
                self.issue(path, line, f"unknown phase '{phase_id}'; phases: {', '.join(phase_ids)}")
        if tools:
            for name, path, line in self._tool_refs:
                if name not in tools:
                    self.issue(path, line, f"tool '{name}' is not in 'tools'; fix the name or "
                                           "add it to the list")
        if phases and not self.issues:
            self._reachability(phases, [t for t, _, _ in transitions], root)

    def _reachability(self, phases: list[Phase], transitions: list[Transition], root: LocatedMap) -> None:
        start = root.get("initial", phases[0].id)
        seen, frontier = {start}, [start]
        while frontier:
            current = frontier.pop()
            for t in transitions:
                if t.source == current and t.target not in seen:
                    seen.add(t.target)
                    frontier.append(t.target)
        for phase in phases:
            if phase.id not in seen:
                self.issue(f"phases.{phase.id}", line_of(root, "phases"),
                           f"phase '{phase.id}' cannot be reached from '{start}'; add a transition")


def _duplicates(builder: _Builder, ids: list[str], path: str, root: LocatedMap, what: str) -> None:
    seen = set()
    for ident in ids:
        if ident in seen:
            builder.issue(path, line_of(root, path), f"{what} id '{ident}' is used twice")
        seen.add(ident)



