"""Audit cases for CDG inspection, read from audit traces.

An inspection case is what an annotator needs to judge the first paper's four criteria: which
SKILLs were selected, the interaction (history, state, response), the seed rules, the
retrieved closure with its ``require`` edges, and the verdict.

Traces come from a JSONL file (one JSON object per line) or from stored audit results
(``workbench.audit.trace.AuditTrace`` as JSON). The reader is tolerant because traces are
produced by several tools; it understands:

``case_id`` (or ``id`` / ``instance``), ``run_id``, ``dataset``, ``strategy``;
``history`` (text, or a list of ``{"role", "content"}`` messages), ``state``, ``response``;
``skills`` (or ``routed_skills``): SKILL names; ``seeds`` and ``closure``: rule ids as a list
(of the only SKILL) or ``{skill: [ids]}``; ``edges``: ``[{"source", "target"}]`` (optional:
without them the edges among the closure are taken from the SKILL's graph); ``context``: the
rendered policy context the judge saw (text); ``verdict``: ``{"violation", "reason",
"violated_rules"}`` (or those keys at the top level). Any of these may also sit under a
``retrieval`` object. An AuditTrace does not repeat the interaction: a ``case`` object in
the normalised case schema (``context`` = history, ``background`` = state,
``model_response``) fills it in, as does :func:`with_case` for stored cases. Unknown keys
are kept in ``raw``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from workbench.audit.trace_file import json_lines
from workbench.errors import WorkbenchError
from workbench.graph import Edge, SkillGraph


class TraceError(WorkbenchError, ValueError):
    """A trace cannot be read as an inspection case; the message says what is missing."""


@dataclass(frozen=True)
class InspectionCase:
    key: str  # the case key for ``inspection_item``
    case_id: str
    run_id: str = ""
    dataset: str = ""
    strategy: str = ""
    skills: tuple[str, ...] = ()
    history: str = ""
    state: str = ""
    response: str = ""
    seeds: dict[str, tuple[str, ...]] = field(default_factory=dict)
    closure: dict[str, tuple[str, ...]] = field(default_factory=dict)
    edges: tuple[tuple[str, str, str], ...] = ()  # (skill, source, target) as traced
    violation: bool | None = None
    reason: str = ""
    violated_rules: tuple[str, ...] = ()
    rendered_context: str = ""  # the policy text the judge saw
    raw: dict = field(default_factory=dict)


def _lookup(data: Mapping, *names: str) -> object:
    """The first of ``names`` present in ``data`` or in its ``case``/``retrieval``/``verdict``."""
    scopes = [data] + [data[k] for k in ("retrieval", "verdict") if isinstance(data.get(k), Mapping)]
    for name in names:
        for scope in scopes:
            if name in scope and scope[name] is not None:
                return scope[name]
    return None


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, Mapping) for m in value):
        return "\n".join(f"{m.get('role', '?')}: {m.get('content', '')}" for m in value)
    return json.dumps(value, ensure_ascii=False, indent=1)


def _ids(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise TraceError(f"{where} must be a list of rule ids, got {value!r}")
    return tuple(value)


def _per_skill(value: object, skills: tuple[str, ...], where: str) -> dict[str, tuple[str, ...]]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): _ids(v, f"{where}[{k!r}]") for k, v in value.items()}
    owner = skills[0] if len(skills) == 1 else ""
    return {owner: _ids(value, where)}


def parse_trace(data: object, *, origin: str = "trace") -> InspectionCase:
    """An :class:`InspectionCase` from one trace object; raises :class:`TraceError`."""
    if not isinstance(data, Mapping):
        raise TraceError(f"{origin}: expected a JSON object, got {type(data).__name__}")
    case_id = _lookup(data, "case_id", "id", "instance")
    if case_id is None and isinstance(data.get("case"), Mapping):
        case_id = data["case"].get("id")
    if not isinstance(case_id, str | int) or not str(case_id).strip():
        raise TraceError(f"{origin}: no case id; add a 'case_id' field")
    case_id = str(case_id).strip()
    run_id = str(_lookup(data, "run_id") or "")
    skills_value = _lookup(data, "skills", "routed_skills") or []
    if isinstance(skills_value, str):
        skills_value = [skills_value]
    if not isinstance(skills_value, list) or not all(isinstance(s, str) for s in skills_value):
        raise TraceError(f"{origin}: 'skills' must be a list of SKILL names")
    skills = tuple(skills_value)
    try:
        seeds = _per_skill(_lookup(data, "seeds", "seed_rules"), skills, "seeds")
        closure = _per_skill(_lookup(data, "closure", "closure_rules"), skills, "closure")
    except TraceError as exc:
        raise TraceError(f"{origin}: {exc}") from None
    if not skills:
        skills = tuple(k for k in {**seeds, **closure} if k)
    edges = []
    for edge in _lookup(data, "edges") or []:
        if not isinstance(edge, Mapping) or not {"source", "target"} <= edge.keys():
            raise TraceError(f"{origin}: edge {edge!r} needs 'source' and 'target'")
        owner = str(edge.get("skill") or (skills[0] if len(skills) == 1 else ""))
        edges.append((owner, str(edge["source"]), str(edge["target"])))
    violation = _lookup(data, "violation")
    violated = _lookup(data, "violated_rules") or []
    key = f"{run_id}/{case_id}" if run_id else case_id
    rendered = data.get("context")
    case = InspectionCase(
        key=key,
        case_id=case_id,
        run_id=run_id,
        dataset=str(_lookup(data, "dataset") or ""),
        strategy=str(_lookup(data, "strategy") or ""),
        skills=skills,
        history=_text(_lookup(data, "history", "conversation")),
        state=_text(_lookup(data, "state", "background")),
        response=_text(_lookup(data, "response", "reply", "model_response")),
        seeds=seeds,
        closure=closure,
        edges=tuple(edges),
        violation=violation if isinstance(violation, bool) else None,
        reason=_text(_lookup(data, "reason")),
        violated_rules=tuple(str(r) for r in violated) if isinstance(violated, list) else (),
        rendered_context=rendered if isinstance(rendered, str) else "",
        raw=dict(data),
    )
    if isinstance(data.get("case"), Mapping):
        case = with_case(case, data["case"])
    return case


def with_case(case: InspectionCase, payload: Mapping) -> InspectionCase:
    """``case`` with its interaction filled in from an audit case in the normalised schema
    (``context`` = history, ``background`` = state, ``model_response``) where the trace
    has none; SKILLs named by the case are used when the trace routed none."""
    skills = payload.get("skills")
    return dataclasses.replace(
        case,
        history=case.history or _text(payload.get("context") or payload.get("history")),
        state=case.state or _text(payload.get("background") or payload.get("state")),
        response=case.response or _text(payload.get("model_response") or payload.get("response")),
        skills=case.skills or (tuple(s for s in skills if isinstance(s, str))
                               if isinstance(skills, list) else ()),
    )


def read_traces_jsonl(text: str, *, origin: str = "traces") -> tuple[list[InspectionCase], list[str]]:
    """Cases from JSONL text, plus one message per line that could not be read.

    Blank lines are skipped. A repeated case key keeps the first case and reports the rest.
    """
    cases: list[InspectionCase] = []
    errors: list[str] = []
    seen: set[str] = set()
    # Lines are split and decoded by the one trace reader; the tolerant view of foreign
    # traces (other field names, interaction included) is this module's own.
    for line in json_lines(text=text, origin=origin):
        if isinstance(line, str):
            errors.append(line)
            continue
        where, data = line
        try:
            case = parse_trace(data, origin=where)
        except TraceError as exc:
            errors.append(str(exc))
            continue
        if case.key in seen:
            errors.append(f"{where}: case {case.key!r} repeats an earlier line; kept the first")
            continue
        seen.add(case.key)
        cases.append(case)
    return cases, errors


def case_from_audit_result(run_id: str, dataset: str, case_id: str, strategy: str,
                           violation: bool | None, trace_json: str) -> InspectionCase:
    """A case from one stored audit result; the row's columns win over the trace's fields."""
    try:
        data = json.loads(trace_json)
    except json.JSONDecodeError as exc:
        raise TraceError(f"audit result {run_id}/{case_id}: trace is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        data = {"trace": data}
    data = {**data, "run_id": run_id, "dataset": dataset, "case_id": case_id,
            "strategy": strategy}
    if violation is not None and "violation" not in data:
        data["violation"] = violation
    return parse_trace(data, origin=f"audit result {run_id}/{case_id}")


def closure_edges(case: InspectionCase, skill: str, graph: SkillGraph | None) -> list[Edge]:
    """The ``require`` edges shown for one SKILL of a case: the traced ones when the trace has
    edges, else the graph's edges among the closure rules (none without a graph)."""
    traced = [Edge(s, t) for owner, s, t in case.edges if owner in (skill, "")]
    if case.edges:
        return traced
    if graph is None:
        return []
    return list(graph.graph.subgraph(case.closure.get(skill, ())).edges)
