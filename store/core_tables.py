"""The core tables every area builds on: SKILL versions with their rules, edges and edit
history, and audit cases with their results.

Named ``core_tables`` (it was ``models``): in this product "model" means the language model
(``workbench.llm``). Table names and columns are unchanged (``store/migrations/`` holds them).

SKILLs are versioned: a re-upload with different content, or an edit, adds a
``SkillVersion``; older versions stay readable. Rules and edges belong to one version.
Table modules owned by other areas import this one; ``store.tables`` registers them all.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel, UniqueConstraint

from workbench.clock import utcnow


class SkillVersion(SQLModel, table=True):
    """One immutable version of a SKILL: its source text and compiled rule graph."""

    __table_args__ = (UniqueConstraint("name", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: int
    description: str = ""
    source: str
    source_sha256: str = Field(index=True)
    graph_sha256: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    created_by: str = "system"
    note: str = ""
    # JSON of the extraction report (blocks, merges, span errors, tokens...), when extracted.
    report_json: str | None = None
    deleted: bool = False


class RuleRow(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("version_id", "rule_id"),)

    id: int | None = Field(default=None, primary_key=True)
    version_id: int = Field(foreign_key="skillversion.id", index=True)
    position: int
    rule_id: str
    condition: str
    action: str
    modality: str
    spans_json: str  # [[start, end], ...] offsets into SkillVersion.source


class EdgeRow(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    version_id: int = Field(foreign_key="skillversion.id", index=True)
    position: int
    source: str
    target: str
    type: str = "require"


class EditRecord(SQLModel, table=True):
    """Who changed what: one row per saved edit that produced a new version."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    from_version: int | None
    to_version: int
    author: str
    summary: str
    created_at: datetime = Field(default_factory=utcnow)


class CaseRow(SQLModel, table=True):
    """An audit case in the normalised schema; the full JSON is kept so extra fields survive."""

    __table_args__ = (UniqueConstraint("dataset", "case_id"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset: str = Field(index=True)
    case_id: str
    session: str = ""
    label: str | None = None
    payload_json: str


class AuditResultRow(SQLModel, table=True):
    """One audit trace of one case under one strategy in one run."""

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    dataset: str = Field(index=True)
    case_id: str = Field(index=True)
    strategy: str
    violation: bool | None = None
    # The verdict's violation probability as the judge gave it (None: unknown), for sorting
    # and filtering without reading every trace.
    probability: float | None = None
    error: str | None = None
    trace_json: str
    created_at: datetime = Field(default_factory=utcnow)

