"""Reading the pieces of a contract file (rules, checks, milestones, phases, transitions)
from located YAML. ``workbench.contracts.spec`` assembles them into a ``Contract``."""

from __future__ import annotations

import re
import reprlib
from typing import Any, NamedTuple

from workbench.contracts.contract import (
    ANY_TOOL,
    ActionRule,
    ArgCheck,
    Evidence,
    Milestone,
    ObservationCheck,
    Phase,
    Requirement,
    TextCheck,
    Transition,
)
from workbench.contracts.located_yaml import LocatedList, LocatedMap


class ContractIssue(NamedTuple):
    """One problem in a contract file: where (path in the document, line) and what."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        at = f"{self.path}: " if self.path else ""
        return f"{where}{at}{self.message}"



_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_REQUIREMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)(?:\[([A-Za-z_][A-Za-z0-9_]*)\])?$")
_RULE_KEYS = ("tool", "assistant", "user", "args", "requires", "describe")
_ARG_CHECK_KEYS = ("equals", "one_of", "pattern", "present", "from_user")


def line_of(node: Any, key: Any = None) -> int | None:
    if key is not None and isinstance(node, LocatedMap):
        return node.key_lines.get(key, node.line)
    return getattr(node, "line", None)


class SpecReader:
    """Reads the pieces of a contract (rules, checks, milestones, phases, transitions) from
    located YAML, collecting every issue rather than stopping at the first."""

    def __init__(self) -> None:
        self.issues: list[ContractIssue] = []
        self._requirements: list[tuple[Requirement, str, int | None]] = []
        self._tool_refs: list[tuple[str, str, int | None]] = []
        self._phase_refs: list[tuple[str, str, int | None]] = []

    def issue(self, path: str, line: int | None, message: str) -> None:
        self.issues.append(ContractIssue(path, line, message))

    # -- small typed readers ---------------------------------------------------------------

    def _keys(self, node: LocatedMap, path: str, allowed: tuple[str, ...]) -> None:
        for key in node:
            if not path and isinstance(key, str) and key.startswith("x-"):
                continue  # top-level extension keys hold YAML anchors and notes
            if key not in allowed:
                self.issue(join_path(path, str(key)), line_of(node, key),
                           f"unknown key '{key}'; expected one of: {', '.join(allowed)}")

    def _mapping(self, value: Any, path: str, line: int | None) -> LocatedMap | None:
        if isinstance(value, LocatedMap):
            return value
        self.issue(path, line, f"expected a mapping (key: value), got {kind_of(value)}")
        return None

    def _list(self, value: Any, path: str, line: int | None) -> LocatedList | None:
        if isinstance(value, LocatedList):
            return value
        self.issue(path, line, f"expected a list, got {kind_of(value)}")
        return None

    def _text(self, node: LocatedMap, key: str, path: str, default: str = "") -> str:
        value = node.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            self.issue(join_path(path, key), line_of(node, key), f"expected text, got {kind_of(value)}")
            return default
        return value

    def _ident(self, value: Any, path: str, line: int | None, what: str) -> str | None:
        if not isinstance(value, str) or not _IDENT.match(value):
            self.issue(path, line, f"{what} must be a name of letters, digits, '_' or '-' "
                                   f"(got {brief(value)})")
            return None
        return value

    def _regex(self, value: Any, path: str, line: int | None) -> re.Pattern[str] | None:
        if not isinstance(value, str):
            self.issue(path, line, f"expected a regular expression as text, got {kind_of(value)}")
            return None
        try:
            return re.compile(value)
        except re.error as exc:
            self.issue(path, line, f"invalid regular expression /{value}/: {exc}")
            return None

    def _positive_int(self, node: LocatedMap, key: str, path: str) -> int | None:
        value = node.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.issue(join_path(path, key), line_of(node, key),
                       f"expected a whole number >= 1 (or null for no limit), got {brief(value)}")
            return None
        return value

    def _bool(self, node: LocatedMap, key: str, path: str, default: bool) -> bool:
        value = node.get(key, default)
        if not isinstance(value, bool):
            self.issue(join_path(path, key), line_of(node, key),
                       f"expected true or false, got {brief(value)}")
            return default
        return value

    def _items(self, node: LocatedMap, key: str, path: str) -> list[tuple[Any, str, int | None]]:
        """``(item, item_path, item_line)`` for a list-valued key; [] when absent or invalid."""
        if node.get(key) is None:
            return []
        seq = self._list(node[key], join_path(path, key), line_of(node, key))
        if seq is None:
            return []
        return [(item, f"{join_path(path, key)}[{i}]", seq.item_lines[i]) for i, item in enumerate(seq)]

    # -- pieces ----------------------------------------------------------------------------

    def text_check(self, value: Any, path: str, line: int | None) -> TextCheck:
        if value is None or value is True or value == "any":
            return TextCheck()
        node = self._mapping(value, path, line)
        if node is None:
            return TextCheck()
        self._keys(node, path, ("pattern", "not_pattern"))
        regexes = {key: self._regex(node[key], join_path(path, key), line_of(node, key))
                   for key in ("pattern", "not_pattern") if key in node}
        return TextCheck(regexes.get("pattern"), regexes.get("not_pattern"))

    def requirement(self, value: Any, path: str, line: int | None) -> Requirement | None:
        match = _REQUIREMENT.match(value) if isinstance(value, str) else None
        if not match:
            self.issue(path, line, f"expected MILESTONE or MILESTONE[ARGUMENT], got {brief(value)}")
            return None
        req = Requirement(match.group(1), match.group(2))
        self._requirements.append((req, path, line))
        return req

    def requirements(self, node: LocatedMap, key: str, path: str) -> tuple[Requirement, ...]:
        out = (self.requirement(item, p, ln) for item, p, ln in self._items(node, key, path))
        return tuple(r for r in out if r is not None)

    def arg_check(self, name: str, value: Any, path: str, line: int | None) -> ArgCheck:
        if not isinstance(value, LocatedMap):
            if isinstance(value, LocatedList):
                self.issue(path, line, "a list is ambiguous here; use {one_of: [...]} or "
                                       "{equals: [...]}")
            return ArgCheck(name, equals=value)
        self._keys(value, path, _ARG_CHECK_KEYS)
        kwargs: dict[str, Any] = {}
        if "equals" in value:
            kwargs["equals"] = value["equals"]
        if "one_of" in value:
            seq = self._list(value["one_of"], join_path(path, "one_of"), line_of(value, "one_of"))
            kwargs["one_of"] = tuple(seq) if seq is not None else None
        if "pattern" in value:
            kwargs["pattern"] = self._regex(value["pattern"], join_path(path, "pattern"),
                                            line_of(value, "pattern"))
        if "present" in value:
            kwargs["present"] = self._bool(value, "present", path, True)
        if "from_user" in value:
            kwargs["from_user"] = self._bool(value, "from_user", path, False)
        if not kwargs:
            self.issue(path, line, f"empty check; give one of: {', '.join(_ARG_CHECK_KEYS)}")
        return ArgCheck(name, **kwargs)

    def rule(self, value: Any, path: str, line: int | None, *, guards: bool = True) -> ActionRule | None:
        node = self._mapping(value, path, line)
        if node is None:
            return None
        self._keys(node, path, _RULE_KEYS if guards else tuple(k for k in _RULE_KEYS if k != "requires"))
        kinds = [k for k in ("tool", "assistant", "user") if k in node]
        if len(kinds) != 1:
            self.issue(path, node.line, "a rule needs exactly one of 'tool', 'assistant' or "
                                        f"'user' (found {len(kinds) or 'none'})")
            return None
        kind = kinds[0]
        describe = self._text(node, "describe", path)
        requires = self.requirements(node, "requires", path) if guards else ()
        if kind != "tool":
            if "args" in node:
                self.issue(join_path(path, "args"), line_of(node, "args"),
                           "'args' only applies to tool rules")
            text = self.text_check(node[kind], join_path(path, kind), line_of(node, kind))
            return ActionRule(kind, text=text, requires=requires, describe=describe, line=node.line)
        tools = self._tool_names(node["tool"], join_path(path, "tool"), line_of(node, "tool"))
        args = self._arg_checks(node, "args", path)
        return ActionRule("tool", tools=tools, args=args, requires=requires,
                          describe=describe, line=node.line)

    def _tool_names(self, value: Any, path: str, line: int | None) -> tuple[str, ...]:
        names = list(value) if isinstance(value, LocatedList) else [value]
        good = []
        for name in names:
            if not isinstance(name, str) or not name:
                self.issue(path, line, f"tool names are non-empty text, got {brief(name)}")
                continue
            good.append(name)
            if name != ANY_TOOL:
                self._tool_refs.append((name, path, line))
        if not names:
            self.issue(path, line, "give at least one tool name")
        return tuple(good)

    def rules(self, node: LocatedMap, key: str, path: str) -> tuple[ActionRule, ...]:
        out = (self.rule(item, p, ln) for item, p, ln in self._items(node, key, path))
        return tuple(r for r in out if r is not None)

    def observation(self, value: Any, path: str, line: int | None, default: str) -> ObservationCheck:
        if value is None:
            value = default
        if isinstance(value, str):
            if value in ("ok", "any", "none"):
                return ObservationCheck(value)  # type: ignore[arg-type]
            self.issue(path, line, f"expected ok, any, none or a mapping, got {brief(value)}")
            return ObservationCheck()
        node = self._mapping(value, path, line)
        if node is None:
            return ObservationCheck()
        self._keys(node, path, ("valid", "pattern", "not_pattern", "fields"))
        mode = node.get("valid", "ok")
        if mode not in ("ok", "any"):
            self.issue(join_path(path, "valid"), line_of(node, "valid"),
                       f"expected ok or any, got {brief(mode)}")
            mode = "ok"
        text_node = LocatedMap((k, node[k]) for k in ("pattern", "not_pattern") if k in node)
        text_node.line, text_node.key_lines = node.line, node.key_lines
        text = self.text_check(text_node, path, line) if text_node else TextCheck()
        return ObservationCheck(mode, text, self._arg_checks(node, "fields", path))

    def _arg_checks(self, node: LocatedMap, key: str, path: str) -> tuple[ArgCheck, ...]:
        """The named checks of the optional mapping ``node[key]`` (a tool rule's ``args``, an
        observation check's ``fields``)."""
        if node.get(key) is None:
            return ()
        checks = self._mapping(node[key], join_path(path, key), line_of(node, key))
        return tuple(self.arg_check(str(name), check, join_path(path, f"{key}.{name}"), line_of(checks, name))
                     for name, check in (checks or {}).items())

    def evidence(self, value: Any, path: str, line: int | None, default_obs: Any,
                 default_key: Any) -> Evidence | None:
        node = self._mapping(value, path, line)
        if node is None:
            return None
        rule_node = LocatedMap((k, v) for k, v in node.items() if k not in ("observation", "key"))
        rule_node.line, rule_node.key_lines = node.line, node.key_lines
        rule = self.rule(rule_node, path, line, guards=False)
        if rule is None:
            return None
        obs_value = node.get("observation", default_obs)
        obs_line = line_of(node, "observation") if "observation" in node else line
        obs = self.observation(obs_value, join_path(path, "observation"), obs_line,
                               "ok" if rule.kind == "tool" else "none")
        if rule.kind != "tool" and obs.needs_observation:
            self.issue(join_path(path, "observation"), obs_line,
                       "messages have no observation; use 'none' or verify with a tool rule")
        key = node.get("key", default_key)
        key_line = line_of(node, "key") if "key" in node else line
        if key is not None:
            field_key = isinstance(key, str) and key.startswith("observation.") and len(key) > 12
            if not isinstance(key, str) or rule.kind != "tool" or (
                    key.startswith("observation.") and not field_key):
                self.issue(join_path(path, "key"), key_line, "'key' names an argument of the "
                           "verifying tool call (ARG) or a field of its result (observation.FIELD)")
                key = None
        return Evidence(rule, obs, key)

    def milestone(self, value: Any, path: str, line: int | None) -> Milestone | None:
        node = self._mapping(value, path, line)
        if node is None:
            return None
        self._keys(node, path, ("id", "describe", "verified_by", "observation", "key", "credit",
                                "in_phase"))
        mid = self._ident(node.get("id"), join_path(path, "id"), line_of(node, "id"), "milestone id")
        if "verified_by" not in node:
            self.issue(path, node.line, "missing 'verified_by': the action that verifies it")
            return None
        by = node["verified_by"]
        by_path, by_line = join_path(path, "verified_by"), line_of(node, "verified_by")
        alternatives = ([(item, f"{by_path}[{i}]", by.item_lines[i]) for i, item in enumerate(by)]
                        if isinstance(by, LocatedList) else [(by, by_path, by_line)])
        if not alternatives:
            self.issue(by_path, by_line, "give at least one verifying action")
        evidence = [self.evidence(item, p, ln, node.get("observation"), node.get("key"))
                    for item, p, ln in alternatives]
        credit = node.get("credit", 1.0)
        if isinstance(credit, bool) or not isinstance(credit, int | float) or credit < 0:
            self.issue(join_path(path, "credit"), line_of(node, "credit"),
                       f"expected a number >= 0, got {brief(credit)}")
            credit = 1.0
        in_phase = None
        if node.get("in_phase") is not None:
            in_phase = self._ident(node["in_phase"], join_path(path, "in_phase"),
                                   line_of(node, "in_phase"), "phase id")
            if in_phase:
                self._phase_refs.append((in_phase, join_path(path, "in_phase"), line_of(node, "in_phase")))
        if mid is None or not alternatives or any(e is None for e in evidence):
            return None
        keyed = [e.key is not None for e in evidence]  # type: ignore[union-attr]
        if any(keyed) and not all(keyed):
            self.issue(by_path, by_line, "either every verifying action has a 'key' or none has")
        return Milestone(mid, tuple(evidence), float(credit),  # type: ignore[arg-type]
                         self._text(node, "describe", path), in_phase)

    def phase(self, value: Any, path: str, line: int | None) -> Phase | None:
        node = self._mapping(value, path, line)
        if node is None:
            return None
        self._keys(node, path, ("id", "describe", "required", "admits", "done_when"))
        pid = self._ident(node.get("id"), join_path(path, "id"), line_of(node, "id"), "phase id")
        admits = self.rules(node, "admits", path)
        done_when = []
        for item, p, ln in self._items(node, "done_when", path):
            mid = self._ident(item, p, ln, "milestone id")
            if mid:
                done_when.append(mid)
                self._requirements.append((Requirement(mid), p, ln))
        required = self._bool(node, "required", path, False)
        if pid is None:
            return None
        return Phase(pid, admits, required, tuple(done_when), self._text(node, "describe", path))

    def transitions(self, value: Any, path: str,
                    line: int | None) -> list[tuple[Transition, str, int | None]]:
        node = self._mapping(value, path, line)
        out: list[tuple[Transition, str, int | None]] = []
        for source, targets in (node or {}).items():
            src_path = join_path(path, str(source))
            src_line = line_of(node, source)
            seq = self._list(targets, src_path, src_line) if targets is not None else LocatedList()
            for i, target in enumerate(seq or []):
                t_path, t_line = f"{src_path}[{i}]", seq.item_lines[i]
                when: tuple[Requirement, ...] = ()
                if isinstance(target, LocatedMap):
                    self._keys(target, t_path, ("to", "when"))
                    when = self.requirements(target, "when", t_path)
                    target = target.get("to")
                tid = self._ident(target, t_path, t_line, "transition target")
                if tid and isinstance(source, str):
                    out.append((Transition(source, tid, when), t_path, t_line))
        return out

def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 80
_BRIEF.maxlevel = 3


def brief(value: Any) -> str:
    """A bounded repr for messages: a value read from a file may be huge (a long string, a
    deep or aliased structure), and an error message must not grow with it."""
    return _BRIEF.repr(value)


def kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {brief(value)}"
