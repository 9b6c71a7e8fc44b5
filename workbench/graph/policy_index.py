"""The policy index (every SKILL graph of a workspace, by name) and its ``skillcdg/1`` JSON
file format: written here, read and checked by ``workbench.graph.validation``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from workbench.graph.rule_graph import (
    FORMAT,
    Edge,
    EdgeDecision,
    IndexValidationError,
    Problem,
    Rule,
    SkillGraph,
    by_unique_key,
)
from workbench.graph.validation import validate_skills


def front_matter_problem(source: str) -> str | None:
    """What the SKILL reader (``workbench.skill.document.parse_skill``) refuses in the front matter of
    a SKILL's ``source`` (YAML that does not parse, a key such as ``name:`` given twice, not a
    mapping), said as it says it with the line of the source; None when it reads. An index
    holding such a source was imported while the same text as SKILL.md was refused
    (issue 45 item 8)."""
    from workbench.inputs import InputError, load_yaml
    from workbench.skill.document import _FRONT_MATTER  # the SKILL reader's own pattern

    m = _FRONT_MATTER.match(source)
    if not m:
        return None
    try:
        loaded = load_yaml(m.group(1), "source", first_line=2)  # after the opening '---'
    except InputError as exc:
        at = f"line {exc.line} of the SKILL text: " if exc.line else ""
        return (f"{at}the YAML front matter does not parse ({exc.problem}); fix the block "
                "between the '---' lines of this SKILL's source (or its SKILL.md) and build "
                "the index again")
    if loaded is not None and not isinstance(loaded, dict):
        return (f"the front matter must be a YAML mapping with 'name' and 'description', not "
                f"a {type(loaded).__name__}; fix the block between the '---' lines")
    return None


def _known(**optional: object) -> dict:
    """The optional fields that are known (not "" or None): written only then, so older
    files round-trip unchanged."""
    return {key: value for key, value in optional.items() if value is not None and value != ""}


def _rule_dict(r: Rule) -> dict:
    return {
        "id": r.id,
        "condition": r.condition,
        "action": r.action,
        "modality": r.modality,
        "spans": [{"start": sp.start, "end": sp.end} for sp in r.spans],
        **_known(provenance=r.provenance, confidence=r.confidence),
    }


def _edge_dict(e: Edge) -> dict:
    evidence = None if e.evidence is None else {"start": e.evidence.start, "end": e.evidence.end}
    return {"source": e.source, "target": e.target, "type": e.type,
            **_known(provenance=e.provenance, confidence=e.confidence, evidence=evidence, note=e.note)}


def _decision_dict(d: EdgeDecision) -> dict:
    return {"source": d.source, "target": d.target, "decision": d.decision,
            **_known(author=d.author, at=d.at)}


class PolicyIndex:
    """All SKILLs of a workspace, by name, in insertion order."""

    def __init__(self, skills: Iterable[SkillGraph] = (), warnings: Iterable[str] = ()):
        self.skills: dict[str, SkillGraph] = by_unique_key(skills, lambda s: s.name, "SKILL name")
        self.warnings: list[str] = list(warnings)

    def __iter__(self) -> Iterator[SkillGraph]:
        return iter(self.skills.values())

    def __len__(self) -> int:
        return len(self.skills)

    def __getitem__(self, name: str) -> SkillGraph:
        try:
            return self.skills[name]
        except KeyError:
            known = ", ".join(self.skills) or "(none)"
            raise KeyError(f"no SKILL named {name!r}; known: {known}") from None

    # -- file format ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        out = []
        for s in self:
            skill = {
                "name": s.name,
                "description": s.description,
                "source": s.source,
                "rules": [_rule_dict(r) for r in s.graph.rules.values()],
                "edges": [_edge_dict(e) for e in s.graph.edges],
            }
            if s.proposed:
                skill["proposed_edges"] = [_edge_dict(e) for e in s.proposed]
            if s.decisions:
                skill["decisions"] = [_decision_dict(d) for d in s.decisions]
            out.append(skill)
        return {"format": FORMAT, "skills": out}

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    def save(self, path: str | Path) -> None:
        """Write atomically: a crash mid-write never leaves a half file behind."""
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(self.dumps(), encoding="utf-8")
        tmp.replace(p)

    @classmethod
    def from_dict(cls, data: object, origin: str = "index") -> PolicyIndex:
        """Build from parsed JSON, or raise ``IndexValidationError`` listing every problem."""
        skills, warnings = validate_skills(data, origin)
        problems = [Problem(f"skills[{i}].source", bad) for i, skill in enumerate(skills)
                    if (bad := front_matter_problem(skill.source))]
        if problems:
            raise IndexValidationError(problems, origin)
        return cls(skills, warnings)

    @classmethod
    def loads(cls, text: str, origin: str = "index") -> PolicyIndex:
        from workbench.inputs import InputError, loads_json

        try:
            data = loads_json(text, origin)
        except InputError as exc:
            raise _as_validation_error(exc, origin) from None
        return cls.from_dict(data, origin)

    @classmethod
    def load(cls, path: str | Path) -> PolicyIndex:
        from workbench.inputs import InputError, read_input_text

        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(
                f"{p}: no such index file. Build one with `workbench extract` or use "
                "fixtures/demo/index.json."
            )
        try:
            text = read_input_text(p, "index file")
        except InputError as exc:
            raise _as_validation_error(exc, str(p)) from None
        return cls.loads(text, str(p))


def _as_validation_error(exc: ValueError, origin: str) -> IndexValidationError:
    line = getattr(exc, "line", None)
    problem = getattr(exc, "problem", str(exc))
    fix = getattr(exc, "fix", "")
    return IndexValidationError(
        [Problem(f"line {line}" if line else "file", problem + (f"; {fix}" if fix else ""))], origin
    )
