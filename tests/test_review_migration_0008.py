"""Migration 0008 gives old review decisions the label shown and the analyst's own label, by
the meaning the workbench gave them when they were made (issue 53): the verdict reviewed was
the judge's; confirm and wrong-rule stand behind it, overturn says the opposite; an undo says
nothing of its own. Run on SQLite and PostgreSQL, on a store at 0007 holding old decisions."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from store.db import MIGRATIONS


def _config(conn) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


OLD = [  # decision, judge_violation -> shown, analyst_label
    ("confirm", True, "violation", "violation"),
    ("confirm", False, "compliant", "compliant"),
    ("overturn", False, "compliant", "violation"),  # "it *was* a violation"
    ("overturn", True, "violation", "compliant"),
    ("wrong-rule", True, "violation", "violation"),
    ("undo", True, None, None),
    ("confirm", None, None, None),  # a decision made with no verdict known
]


def test_old_decisions_keep_their_meaning(store_url):
    engine = create_engine(store_url)
    with engine.begin() as conn:
        command.upgrade(_config(conn), "0007")
        for i, (decision, judge, _, _) in enumerate(OLD):
            conn.execute(text(
                "INSERT INTO review_decision (dataset, run_id, case_id, strategy, reviewer, "
                "decision, note, judge_violation, created_at, batch, undoes) VALUES "
                "('d', 'r', :case, 'cdg', 'ana', :decision, 'n', :judge, :at, '', :undoes)"),
                {"case": f"c{i}", "decision": decision, "judge": judge,
                 "at": "2026-12-01 10:00:00", "undoes": 1 if decision == "undo" else None})
    with engine.begin() as conn:
        command.upgrade(_config(conn), "0008")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT case_id, shown, shown_source, setting_version, "
                                 "analyst_label FROM review_decision ORDER BY id")).all()
    engine.dispose()
    assert [(r.shown, r.analyst_label) for r in rows] == [(s, a) for *_, s, a in OLD]
    assert [r.shown_source for r in rows] == ["judge"] * 5 + [None, None]
    assert all(r.setting_version is None for r in rows)
