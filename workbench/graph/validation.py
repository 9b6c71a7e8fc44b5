"""Validation of ``skillcdg/1`` data: every problem is collected with its location, so a user
fixes a file in one pass instead of one error at a time."""

from __future__ import annotations

from collections.abc import Iterator

# Only the data types, not policy_index: PolicyIndex.from_dict calls validate_skills.
from workbench.graph.rule_graph import (
    DECISIONS,
    EDGE_TYPES,
    FORMAT,
    MODALITIES,
    PROVENANCES,
    Edge,
    EdgeDecision,
    IndexValidationError,
    Problem,
    Rule,
    RuleGraph,
    SkillGraph,
    Span,
)
from workbench.skill.names import look_alike_problem, name_skeleton, skill_name_problem


def _str_field(obj: dict, key: str, loc: str, problems: list[Problem], required: bool = True):
    value = obj.get(key)
    if value is None:
        if required:
            problems.append(Problem(f"{loc}.{key}", "missing"))
        return None
    if not isinstance(value, str):
        problems.append(Problem(f"{loc}.{key}", f"must be a string, got {type(value).__name__}"))
        return None
    return value


def _objects(raw: dict, key: str, loc: str, problems: list[Problem]) -> Iterator[tuple[str, dict]]:
    """The objects of the optional list ``raw[key]`` with their locations; a non-list and each
    non-object element are reported and skipped."""
    items = raw.get(key, [])
    if not isinstance(items, list):
        problems.append(Problem(f"{loc}.{key}", "must be a list"))
        return
    for j, item in enumerate(items):
        iloc = f"{loc}.{key}[{j}]"
        if isinstance(item, dict):
            yield iloc, item
        else:
            problems.append(Problem(iloc, "must be an object"))


def _spans(raw: object, loc: str, source: str | None, problems: list[Problem]) -> list[Span]:
    if not isinstance(raw, list):
        problems.append(Problem(loc, "must be a list of {start, end}"))
        return []
    spans: list[Span] = []
    for k, sp in enumerate(raw):
        sloc = f"{loc}[{k}]"
        if not isinstance(sp, dict):
            problems.append(Problem(sloc, "must be an object {start, end}"))
            continue
        start, end = sp.get("start"), sp.get("end")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            problems.append(Problem(sloc, "start and end must be integers"))
            continue
        if start >= end:
            problems.append(Problem(sloc, f"empty span (start {start} >= end {end})"))
            continue
        if source is not None and (start < 0 or end > len(source)):
            problems.append(
                Problem(sloc, f"outside the source ({start}..{end}, source has {len(source)} chars)")
            )
            continue
        spans.append(Span(start, end))
    return spans


def _trust(raw: dict, loc: str, problems: list[Problem]) -> tuple[str, float | None]:
    """The optional ``provenance`` and ``confidence`` of a rule or edge."""
    provenance = raw.get("provenance", "")
    if not isinstance(provenance, str) or (provenance and provenance not in PROVENANCES):
        problems.append(Problem(f"{loc}.provenance",
                                f"{provenance!r} is not one of {', '.join(PROVENANCES)}"))
        provenance = ""
    confidence = raw.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool) or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        problems.append(Problem(f"{loc}.confidence", f"must be a number from 0 to 1, got {confidence!r}"))
        confidence = None
    return provenance, None if confidence is None else float(confidence)


def _edge_extras(er: dict, eloc: str, source: str | None, problems: list[Problem]) -> dict:
    provenance, confidence = _trust(er, eloc, problems)
    evidence = None
    if "evidence" in er:
        found = _spans([er["evidence"]], f"{eloc}.evidence", source, problems)
        evidence = found[0] if found else None
    note = er.get("note", "")
    if not isinstance(note, str):
        problems.append(Problem(f"{eloc}.note", "must be a string"))
        note = ""
    return {"provenance": provenance, "confidence": confidence, "evidence": evidence, "note": note}


def _skill(raw: object, loc: str, problems: list[Problem], warnings: list[str]):
    if not isinstance(raw, dict):
        problems.append(Problem(loc, "must be an object"))
        return None
    first_problem = len(problems)
    name = _str_field(raw, "name", loc, problems)
    if name is not None and (bad := skill_name_problem(name)):
        problems.append(Problem(f"{loc}.name", bad))
        name = None
    description = _str_field(raw, "description", loc, problems, required=False) or ""
    source = _str_field(raw, "source", loc, problems)

    rules: list[Rule] = []
    ids: dict[str, str] = {}
    for rloc, rr in _objects(raw, "rules", loc, problems):
        rid = _str_field(rr, "id", rloc, problems)
        condition = _str_field(rr, "condition", rloc, problems)
        action = _str_field(rr, "action", rloc, problems)
        modality = _str_field(rr, "modality", rloc, problems)
        if rid is not None and not rid.strip():
            problems.append(Problem(f"{rloc}.id", "empty rule id"))
            rid = None
        if rid is not None and rid in ids:
            problems.append(Problem(f"{rloc}.id", f"duplicate rule id {rid!r} (first at {ids[rid]})"))
            rid = None
        if modality is not None and modality not in MODALITIES:
            problems.append(
                Problem(f"{rloc}.modality", f"{modality!r} is not one of {', '.join(MODALITIES)}")
            )
            modality = None
        spans = _spans(rr.get("spans", []), f"{rloc}.spans", source, problems)
        provenance, confidence = _trust(rr, rloc, problems)
        if rid is not None:
            ids[rid] = rloc
        if None not in (rid, condition, action, modality):
            rules.append(Rule(rid, condition, action, modality, tuple(spans), provenance, confidence))

    edges = _edges(raw, "edges", loc, ids, source, problems, warnings)
    proposed = _edges(raw, "proposed_edges", loc, ids, source, problems, warnings)
    decisions = _decisions(raw, loc, problems)

    if len(problems) > first_problem:
        return None  # the caller raises with every problem; no partial graph is built
    kept = {e.pair for e in edges}
    return SkillGraph(name, description, source, RuleGraph(rules, edges),
                      [e for e in proposed if e.pair not in kept], decisions)


def _decisions(raw: dict, loc: str, problems: list[Problem]) -> list[EdgeDecision]:
    """The optional ``decisions``: verdicts on pairs of rule ids, which may name rules this
    version no longer has (a verdict outlives the version it was made on)."""
    out: list[EdgeDecision] = []
    for dloc, dr in _objects(raw, "decisions", loc, problems):
        src = _str_field(dr, "source", dloc, problems)
        tgt = _str_field(dr, "target", dloc, problems)
        decision = _str_field(dr, "decision", dloc, problems)
        author = _str_field(dr, "author", dloc, problems, required=False) or ""
        at = _str_field(dr, "at", dloc, problems, required=False) or ""
        if decision is not None and decision not in DECISIONS:
            problems.append(Problem(f"{dloc}.decision",
                                    f"{decision!r} is not one of {', '.join(DECISIONS)}"))
            decision = None
        if at and not _is_iso_time(at):
            problems.append(Problem(f"{dloc}.at", f"{at!r} is not an ISO 8601 time "
                                                  "(e.g. 2025-03-01T09:30:00+00:00)"))
            at = ""
        if None not in (src, tgt, decision):
            out.append(EdgeDecision(src, tgt, decision, author, at))
    return out


def _is_iso_time(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _edges(raw: dict, key: str, loc: str, ids: dict[str, str], source: str | None,
           problems: list[Problem], warnings: list[str]) -> list[Edge]:
    """The edges under ``key`` (``edges``, or the optional ``proposed_edges``)."""
    edges: list[Edge] = []
    seen: set[tuple[str, str]] = set()
    for eloc, er in _objects(raw, key, loc, problems):
        src = _str_field(er, "source", eloc, problems)
        tgt = _str_field(er, "target", eloc, problems)
        etype = er.get("type", "require")
        if etype not in EDGE_TYPES:
            problems.append(Problem(f"{eloc}.type", f"{etype!r} is not a known edge type (require)"))
            continue
        extras = _edge_extras(er, eloc, source, problems)
        bad = False
        for end_name, rid in (("source", src), ("target", tgt)):
            if rid is not None and rid not in ids:
                problems.append(Problem(f"{eloc}.{end_name}", f"no rule {rid!r} in this SKILL"))
                bad = True
        if src is None or tgt is None or bad:
            continue
        if src == tgt:
            warnings.append(f"{eloc}: self-loop on {src!r} dropped")
            continue
        if (src, tgt) in seen:
            warnings.append(f"{eloc}: duplicate edge {src!r} -> {tgt!r} dropped")
            continue
        seen.add((src, tgt))
        edges.append(Edge(src, tgt, etype, **extras))
    return edges


def validate_skills(data: object, origin: str = "index") -> tuple[list[SkillGraph], list[str]]:
    """The SKILLs and warnings of a ``PolicyIndex`` from parsed JSON, or raise
    ``IndexValidationError`` listing every problem. Self-loops and duplicate edges are dropped
    and reported in the warnings. ``PolicyIndex.from_dict`` is the entry point."""
    problems: list[Problem] = []
    warnings: list[str] = []
    if not isinstance(data, dict):
        raise IndexValidationError([Problem("$", "the index must be a JSON object")], origin)
    fmt = data.get("format")
    if fmt != FORMAT:
        problems.append(
            Problem("format", f"unknown format {fmt!r}; this workbench reads {FORMAT!r}")
        )
    raw_skills = data.get("skills")
    if not isinstance(raw_skills, list):
        problems.append(Problem("skills", "missing or not a list"))
        raw_skills = []
    skills: list[SkillGraph] = []
    names: dict[str, str] = {}
    looks: dict[str, tuple[str, str]] = {}  # name_skeleton -> (name, where)
    for i, raw in enumerate(raw_skills):
        loc = f"skills[{i}]"
        skill = _skill(raw, loc, problems, warnings)
        if skill is None:
            continue
        if skill.name in names:
            problems.append(
                Problem(f"{loc}.name", f"duplicate SKILL name {skill.name!r} (first at {names[skill.name]})")
            )
            continue
        other = looks.get(name_skeleton(skill.name))
        if other is not None:
            problems.append(Problem(f"{loc}.name", f"{look_alike_problem(skill.name, other[0])} "
                                                   f"(first at {other[1]})"))
            continue
        names[skill.name] = loc
        looks[name_skeleton(skill.name)] = (skill.name, loc)
        skills.append(skill)
    if problems:
        raise IndexValidationError(problems, origin)
    warnings.extend(_shared_rule_ids(skills))
    return skills, warnings


def _shared_rule_ids(skills: list[SkillGraph]) -> list[str]:
    """Rule ids used by more than one SKILL. Legal, but when both SKILLs are routed to one
    case the judge's context shows two rules under one id and its verdict cannot say which
    was broken; prefixing ids with the SKILL (as ``workbench extract`` does) avoids it."""
    owners: dict[str, list[str]] = {}
    for skill in skills:
        for rid in skill.graph.rules:
            owners.setdefault(rid, []).append(skill.name)
    shared = {rid: names for rid, names in owners.items() if len(names) > 1}
    if not shared:
        return []
    def owners_text(names: list[str]) -> str:
        return ", ".join(names[:3]) + (f" +{len(names) - 3} more" if len(names) > 3 else "")

    shown = ", ".join(f"{rid!r} ({owners_text(names)})" for rid, names in list(shared.items())[:5])
    more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
    return [
        f"{len(shared)} rule id(s) appear in more than one SKILL: {shown}{more}; a verdict citing "
        "one is ambiguous when both SKILLs are audited together: give each SKILL its own id prefix"
    ]
