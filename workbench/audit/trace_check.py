"""Is a JSON object read from a file an ``AuditTrace`` this workbench can use?

Traces come back from files (resume, ``metrics``, ``import-traces``, uploads) and may have
been written by another tool, edited by hand or damaged. ``AuditTrace.from_dict`` does not
check types, and metrics, the store and the pages index into verdicts, errors and usage,
so a wrongly shaped trace must be refused when it is read, with the field named, not
crash a page later.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workbench.audit.identifiers import id_problem
from workbench.vocabulary import JudgeMode, KeywordMethod, Label, StrategyName, values

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _str_map(value_ok: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(value_ok(x) for x in v.values())


def _dicts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, dict) for x in v)


def _spans(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(s, list) and len(s) == 2 and all(_int(x) for x in s) for s in v)


def _unit_spans(v: Any) -> bool:
    return _str_map(lambda u: isinstance(u, dict) and _str(u.get("skill", ""))
                    and _spans(u.get("spans", [])))(v)


def _probability(v: Any) -> bool:
    return v is None or (_num(v) and 0.0 <= v <= 1.0)


def _evidence(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(s, dict) and _int(s.get("start")) and _int(s.get("end"))
        and 0 <= s["start"] < s["end"] and _str(s.get("quote", "")) for s in v)


# field: (required, check); optional fields may be absent (the dataclass default applies).
VERDICT: dict[str, tuple[bool, Check]] = {
    "violation": (True, _bool), "reason": (True, _str), "violated_rules": (True, _strs),
    "unknown_rule_ids": (False, _strs), "per_rule": (False, _dicts), "reason_cites": (False, _bool),
    "probability": (False, _probability), "probability_source": (False, _str),
    "evidence": (False, _evidence), "evidence_refused": (False, _int),
    "checklist": (False, _dicts),
}
ERROR: dict[str, tuple[bool, Check]] = {
    "kind": (True, _str), "message": (True, _str), "cause": (False, _str),
}
MODEL_CALL: dict[str, tuple[bool, Check]] = {
    "step": (True, _str), "role": (True, _str), "prompt_tokens": (True, _int),
    "completion_tokens": (True, _int), "latency_ms": (True, _num), "cached": (False, _bool),
    "attempts": (False, _int), "key": (False, _str), "error": (False, _str),
}


def _record(fields: dict[str, tuple[bool, Check]]) -> Callable[[Any, str], str | None]:
    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"'{where}' must be an object"
        for key in value:
            if key not in fields:
                return f"'{where}' has an unknown field {str(key)[:40]!r}"
        for key, (required, ok) in fields.items():
            if key not in value:
                if required:
                    return f"'{where}' lacks '{key}'"
            elif not ok(value[key]):
                return f"'{where}.{key}' has the wrong type"
        return None
    return check


_verdict, _error, _call = _record(VERDICT), _record(ERROR), _record(MODEL_CALL)

TRACE: dict[str, Check] = {
    "session": _str, "label": _opt_str, "keywords_method": _str, "judge_mode": _str,
    "keywords": _strs, "skills": _strs, "routing": _str, "seeds": _str_map(_strs),
    "seed_matches": _str_map(_strs), "closure": _str_map(_strs),
    "closure_paths": _str_map(_str_map(_strs)), "passages": _strs,
    "units": _strs, "unit_spans": _unit_spans, "fallback": _opt_str, "context": _str,
    "context_tokens": _int, "timings_ms": _str_map(_num), "prompts": _dicts,
    "prompt_version": _str, "prompt_sha256": _str, "version": _int, "online_tokens": _num, "latency_ms": _num,
    "settings": lambda v: isinstance(v, dict) and all(
        x is None or isinstance(x, str | int | float | bool | dict) for x in v.values()),
}


# Fields whose value is a word of workbench.vocabulary: grouped by, filtered on and shown,
# so a value no run writes ("whole " or "<b>cdg</b>") would make a group of its own.
VOCABULARY: dict[str, tuple[str, ...]] = {
    "strategy": values(StrategyName), "judge_mode": values(JudgeMode),
    "keywords_method": values(KeywordMethod), "label": values(Label),
}


def trace_problem(data: Mapping[str, Any]) -> str | None:
    """Why ``data`` is not a usable trace (naming the field), or None when it is.

    ``id`` and ``strategy`` must be non-empty strings, the id without control or
    direction-changing characters; other fields, when present, must have the types
    ``AuditTrace`` gives them, and those of :data:`VOCABULARY` one of its words (``label``
    may be null). Unknown top-level fields are allowed (newer writers).
    """
    for key in ("id", "strategy"):
        if not isinstance(data.get(key), str) or not data[key]:
            return f"'{key}' must be a non-empty string"
    if bad := id_problem(data["id"], "'id'"):
        return bad
    for key, ok in TRACE.items():
        if key in data and not ok(data[key]):
            return f"'{key}' has the wrong type"
    for key, words in VOCABULARY.items():
        if data.get(key) is not None and data[key] not in words:
            return f"'{key}' is {str(data[key])[:40]!r}, not one of {', '.join(words)}"
    if data.get("verdict") is not None and (bad := _verdict(data["verdict"], "verdict")):
        return bad
    if data.get("error") is not None and (bad := _error(data["error"], "error")):
        return bad
    usage = data.get("usage")
    if usage is not None:
        if not isinstance(usage, list):
            return "'usage' must be a list"
        for i, call in enumerate(usage):
            if bad := _call(call, f"usage[{i}]"):
                return bad
    return None
