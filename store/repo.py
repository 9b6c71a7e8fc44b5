"""Repository functions for SKILL versions, rules and edges.

Import/export with ``skillcdg/1`` is lossless: rule order, edge order, spans, the full source
text, and every optional field (provenance, confidence, evidence and notes of rules and edges,
proposed edges, an author's verdicts) round-trip exactly (``store.skill_trust`` keeps the
optional ones). Saving content identical to the latest version does not add a version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from store import skill_trust
from store.core_tables import EdgeRow, EditRecord, RuleRow, SkillVersion
from store.session import retry_conflicts, write_session
from workbench.errors import WorkbenchError
from workbench.graph import Edge, EdgeDecision, PolicyIndex, Rule, RuleGraph, SkillGraph, Span
from workbench.graph.diff import diff_skills
from workbench.identity.roles import Actor, require
from workbench.skill.names import look_alike_problem, name_skeleton


class NotFound(WorkbenchError, LookupError):
    """A SKILL or version that is not in the store; the message lists what is."""


@dataclass(frozen=True)
class SavedVersion:
    name: str
    version: int
    id: int
    created: bool  # False when the content equalled the latest version
    decisions_added: int = 0  # an import's verdicts on edges the store did not hold yet


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def graph_fingerprint(skill: SkillGraph) -> str:
    """Hash of description, rules and edges (in order, with their provenance) and proposed
    edges: what makes two versions different. Verdicts are kept per SKILL, not per version."""
    payload = PolicyIndex([skill]).to_dict()["skills"][0]
    payload.pop("source")
    payload.pop("decisions", None)
    return _sha(json.dumps(payload, sort_keys=True, ensure_ascii=False))


class StaleVersion(WorkbenchError, RuntimeError):
    """A save built on a version that is no longer the latest: applying it would silently
    undo the versions saved since. ``changes`` says what those versions changed."""

    def __init__(self, name: str, base: int, latest: int, changes: str) -> None:
        self.name, self.base, self.latest, self.changes = name, base, latest, changes
        super().__init__(
            f"SKILL {name!r}: this edit was made on version {base}, but version {latest} is "
            f"the latest (changed since: {changes}). Nothing was saved",
            f"reload version {latest} and make the edit there.",
        )


def save_skill(
    engine: Engine,
    skill: SkillGraph,
    author: str = "system",
    note: str = "",
    report: dict | None = None,
    base_version: int | None = None,
    *,
    actor: Actor,
    trust: bool = False,
    decisions: Iterable[EdgeDecision] = (),
) -> SavedVersion:
    """Store ``skill`` as a new version of its name, unless it equals the latest version.

    ``actor`` must be allowed to "edit graphs" (``roles.NotAllowed`` otherwise, nothing
    saved); pages pass the signed-in one, and ``author`` (recorded) is its name.

    ``base_version`` is the version an edit was built on: when it is given and is not the
    latest, nothing is saved and :class:`StaleVersion` is raised (an edit of an old version
    must never revert later ones). Imports and extractions pass none: their content is new.
    The version number is taken under the write lock, so concurrent saves never collide.

    ``trust=True`` (imports, extractions, edge decisions: a SKILL that knows where each rule
    and edge came from) keeps ``skill``'s provenance, confidences and proposed edges with the
    version, in the same transaction. An edit leaves it False: the version then reads the
    provenance of the version it was built on, and its new edges read as the author's.

    ``decisions`` (verdicts on edges) are recorded in the same transaction, also when the
    content equals the latest version (rejecting proposals changes no graph), and not at all
    when the save is refused. ``note`` is the author's; the edit history's summary is
    computed from the change itself (``workbench.graph.diff``).
    """
    require(actor, "edit graphs")
    verdicts = list(decisions)
    src_sha, g_sha = _sha(skill.source), graph_fingerprint(skill)

    def write() -> SavedVersion:
        with write_session(engine) as session:
            latest = _latest(session, skill.name)
            if latest and latest.source_sha256 == src_sha and latest.graph_sha256 == g_sha:
                _record(session, skill.name, verdicts)
                session.commit()
                return SavedVersion(skill.name, latest.version, latest.id, False)
            if latest is None:  # a new name: it must not look like a stored one
                _refuse_look_alikes(session, [skill.name])
            if base_version is not None and latest is not None and latest.version != base_version:
                raise StaleVersion(skill.name, base_version, latest.version,
                                   _changes_since(engine, skill.name, base_version, latest.version))
            _record(session, skill.name, verdicts)
            return _insert_version(session, skill, latest, src_sha, g_sha, author, note, report,
                                   trust)

    return retry_conflicts(write)


def _record(session: Session, name: str, verdicts: list[EdgeDecision]) -> None:
    session.add_all(skill_trust.EdgeDecisionRow(skill=name, source=d.source, target=d.target,
                                                decision=d.decision, author=d.author)
                    for d in verdicts)


class LookAlikeName(WorkbenchError, ValueError):
    """A new SKILL's name looks like a stored SKILL's (case, look-alike letters)."""


def _refuse_look_alikes(session: Session, names: Iterable[str]) -> None:
    """Raise LookAlikeName when one of ``names`` is not stored but looks like a stored
    SKILL's name (``workbench.skill.names.name_skeleton``): the two would show as one in
    every list."""
    stored = session.exec(
        select(SkillVersion.name).where(SkillVersion.deleted == False).distinct()  # noqa: E712
    ).all()
    by_look = {name_skeleton(other): other for other in stored}
    for name in set(names) - set(stored):  # a stored name gets a new version, as ever
        other = by_look.get(name_skeleton(name))
        if other is not None and (problem := look_alike_problem(name, other)):
            raise LookAlikeName(f"{problem}; nothing was saved",
                                f"save it under a name that reads differently from {other!r}, "
                                f"or as a new version of {other!r}")


def _changes_since(engine: Engine, name: str, base: int, latest: int) -> str:
    from workbench.graph.editing import summarize_changes

    try:
        return summarize_changes(load_skill(engine, name, base), load_skill(engine, name, latest))
    except NotFound:
        return f"version {base} is no longer available"


def _insert_version(
    session: Session,
    skill: SkillGraph,
    latest: SkillVersion | None,
    src_sha: str,
    g_sha: str,
    author: str,
    note: str,
    report: dict | None,
    trust: bool = False,
) -> SavedVersion:
    # max over every row, deleted ones too: a number is never reused.
    number = (
        session.exec(select(func.max(SkillVersion.version)).where(SkillVersion.name == skill.name)).one()
        or 0
    ) + 1
    row = SkillVersion(
        name=skill.name,
        version=number,
        description=skill.description,
        source=skill.source,
        source_sha256=src_sha,
        graph_sha256=g_sha,
        created_by=author,
        note=note,
        report_json=json.dumps(report) if report is not None else None,
    )
    session.add(row)
    session.flush()
    for pos, rule in enumerate(skill.graph.rules.values()):
        session.add(
            RuleRow(
                version_id=row.id,
                position=pos,
                rule_id=rule.id,
                condition=rule.condition,
                action=rule.action,
                modality=rule.modality,
                spans_json=json.dumps([[s.start, s.end] for s in rule.spans]),
            )
        )
    for pos, e in enumerate(skill.graph.edges):
        session.add(
            EdgeRow(version_id=row.id, position=pos, source=e.source, target=e.target, type=e.type)
        )
    if trust:
        session.add_all(skill_trust.trust_rows(row.id, skill))
    if latest is not None:
        # What the change did, from the stored latest to this version: never the note, which
        # may claim what was not saved. Without trust rows of its own the version reads its
        # ancestor's provenance, so only what the edit itself changed is named.
        change = diff_skills(_load(session, latest), skill)
        session.add(
            EditRecord(
                name=skill.name,
                from_version=latest.version,
                to_version=number,
                author=author,
                summary=change.summary(with_trust=trust),
            )
        )
    session.commit()
    return SavedVersion(skill.name, number, row.id, True)


def check_new_names(engine: Engine, names: Iterable[str]) -> None:
    """Raise :class:`LookAlikeName` when one of ``names`` would be a new SKILL whose name
    looks like a stored one's. Call it before costly work whose result :func:`save_skill`
    would then refuse (an extraction); ``save_skill`` checks again under the write lock."""
    with Session(engine) as session:
        _refuse_look_alikes(session, list(names))


def import_index(engine: Engine, index: PolicyIndex, author: str = "import", *,
                 actor: Actor) -> list[SavedVersion]:
    """Store every SKILL of ``index`` as a new version (unless equal to its latest) with all
    that ``skillcdg/1`` carries: provenance, confidence, evidence, notes, proposed edges, and
    the verdicts on its edges (appended to the SKILL's log unless already there). ``actor``
    must be allowed to "edit graphs". Names are checked against the stored ones first, so a
    look-alike name anywhere in the index leaves the store untouched."""
    require(actor, "edit graphs")
    check_new_names(engine, [skill.name for skill in index])  # one look-alike: nothing saved
    out = []
    for skill in index:
        saved = save_skill(engine, skill, author=author, note="imported", actor=actor, trust=True)
        added = 0
        if skill.decisions:
            def write(skill=skill) -> int:
                with write_session(engine) as session:
                    n = skill_trust.add_decisions(session, skill.name, skill.decisions, author)
                    session.commit()
                    return n

            added = retry_conflicts(write)
        out.append(replace(saved, decisions_added=added))
    return out


def _live(name: str):
    """A query of the SKILL's versions that are not deleted."""
    return select(SkillVersion).where(SkillVersion.name == name, SkillVersion.deleted == False)  # noqa: E712


def _latest(session: Session, name: str) -> SkillVersion | None:
    return session.exec(_live(name).order_by(SkillVersion.version.desc())).first()


def skill_names(engine: Engine) -> list[str]:
    with Session(engine) as session:
        rows = session.exec(
            select(SkillVersion.name).where(SkillVersion.deleted == False).distinct()  # noqa: E712
        ).all()
    return sorted(rows)


def versions(engine: Engine, name: str) -> list[SkillVersion]:
    with Session(engine) as session:
        return list(session.exec(_live(name).order_by(SkillVersion.version)).all())


def get_version(engine: Engine, name: str, version: int | None = None) -> SkillVersion:
    with Session(engine) as session:
        if version is None:
            row = _latest(session, name)
        else:
            row = session.exec(_live(name).where(SkillVersion.version == version)).first()
        if row is None:
            known = ", ".join(skill_names(engine)) or "(none: import an index first)"
            what = f"{name!r} version {version}" if version else f"{name!r}"
            raise NotFound(f"no SKILL {what} in the store; known SKILLs: {known}")
        return row


def load_skill(engine: Engine, name: str, version: int | None = None) -> SkillGraph:
    """Version ``version`` (default: the latest) of ``name`` with everything kept for it:
    rules and edges with their provenance, the proposals still waiting, every verdict."""
    row = get_version(engine, name, version)
    with Session(engine) as session:
        return _load(session, row)


def _load(session: Session, row: SkillVersion) -> SkillGraph:
    rules = session.exec(
        select(RuleRow).where(RuleRow.version_id == row.id).order_by(RuleRow.position)
    ).all()
    edges = session.exec(
        select(EdgeRow).where(EdgeRow.version_id == row.id).order_by(EdgeRow.position)
    ).all()
    graph = RuleGraph(
        (
            Rule(r.rule_id, r.condition, r.action, r.modality,
                 tuple(Span(a, b) for a, b in json.loads(r.spans_json)))
            for r in rules
        ),
        (Edge(e.source, e.target, e.type) for e in edges),
    )
    return skill_trust.with_trust(session, row.name, row.version,
                                  SkillGraph(row.name, row.description, row.source, graph))


def export_index(engine: Engine, names: Iterable[str] | None = None) -> PolicyIndex:
    """The latest version of each named SKILL (default: all) as a ``PolicyIndex``."""
    chosen = list(names) if names is not None else skill_names(engine)
    return PolicyIndex(load_skill(engine, n) for n in chosen)


def delete_skill(engine: Engine, name: str, *, actor: Actor) -> int:
    """Hide every version of a SKILL (rows are kept for the audit trail), recorded for
    ``actor``. Returns the count. Raises ``roles.NotAllowed`` when ``actor`` may not edit
    graphs, ``NotFound`` for an unknown name."""
    require(actor, "edit graphs")
    with Session(engine) as session:
        rows = session.exec(select(SkillVersion).where(SkillVersion.name == name)).all()
        if not rows:
            raise NotFound(f"no SKILL {name!r} to delete")
        for r in rows:
            r.deleted = True
            session.add(r)
        session.add(EditRecord(name=name, from_version=max(r.version for r in rows),
                               to_version=0, author=actor.name, summary="deleted"))
        session.commit()
        return len(rows)


@dataclass(frozen=True)
class HistoryEntry:
    """One saved edit: ``summary`` is what the change did (computed), ``note`` what its
    author wrote about it (their words, shown as a note)."""

    created_at: datetime
    author: str
    from_version: int | None
    to_version: int
    summary: str
    note: str


def edit_history(engine: Engine, name: str) -> list[HistoryEntry]:
    with Session(engine) as session:
        records = session.exec(select(EditRecord).where(EditRecord.name == name)
                               .order_by(EditRecord.id)).all()
        notes = dict(session.exec(select(SkillVersion.version, SkillVersion.note)
                                  .where(SkillVersion.name == name)).all())
    return [HistoryEntry(r.created_at, r.author, r.from_version, r.to_version, r.summary,
                         notes.get(r.to_version, "")) for r in records]
