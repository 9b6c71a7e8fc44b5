"""Migration 0009 moves webhook credentials out of the store (issue 54): a rule whose webhook
held user-info or a key parameter keeps the address without it and reads its credential from
``ALERT_RULE_<id>_AUTH``; every alert that copied the address loses it too; clean rules and
alerts are untouched; the new columns have their defaults. Run on SQLite and PostgreSQL, on a
store at 0008 holding old rows."""

from __future__ import annotations

from alembic import command
from sqlalchemy import create_engine, text

from store.db import migrations_config

OLD_RULES = [  # id, webhook as stored by 0007 -> webhook after 0009, auth_env
    (1, "http://user:pw-s3cret@hooks.example.com/a", "http://hooks.example.com/a", "ALERT_RULE_1_AUTH"),
    (2, "https://hooks.example.com/b?token=tok-s3cret&team=x", "https://hooks.example.com/b?team=x",
     "ALERT_RULE_2_AUTH"),
    (3, "https://hooks.example.com/c", "https://hooks.example.com/c", ""),
    (4, "", "", ""),
]


def test_old_webhook_credentials_leave_the_store(store_url):
    engine = create_engine(store_url)
    with engine.begin() as conn:
        command.upgrade(migrations_config(conn), "0008")
        for rid, webhook, *_ in OLD_RULES:
            conn.execute(text(
                "INSERT INTO alert_rule (id, name, kind, policy, probability, \"window\", share, "
                "dataset, webhook, created_by, created_at, silenced_by, above, removed) VALUES "
                "(:id, :name, 'violation', '', 0.5, 50, 0.2, '', :webhook, 'root', :at, '', "
                ":no, :no)"), {"id": rid, "name": f"r{rid}", "webhook": webhook,
                               "at": "2026-12-01 10:00:00", "no": False})
            for n in range(5):  # each alert copied the rule's address
                conn.execute(text(
                    "INSERT INTO alert (rule_id, key, dataset, case_id, summary, payload_json, "
                    "fired_at, delivery, webhook, attempts, last_error, ack_by) VALUES "
                    "(:rule, :key, 'd', 'c', 's', '{}', :at, 'pending', :webhook, 0, '', '')"),
                    {"rule": rid, "key": f"k{n}", "at": "2026-12-01 10:00:00", "webhook": webhook})
    with engine.begin() as conn:
        command.upgrade(migrations_config(conn), "0009")
    with engine.connect() as conn:
        rules = conn.execute(text("SELECT id, webhook, auth_env, paused, dropped FROM alert_rule "
                                  "ORDER BY id")).all()
        alerts = conn.execute(text("SELECT rule_id, webhook FROM alert ORDER BY id")).all()
        everything = " ".join(str(v) for table in ("alert_rule", "alert")
                              for row in conn.execute(text(f"SELECT * FROM {table}")).all()
                              for v in row)
    engine.dispose()
    assert [(r.id, r.webhook, r.auth_env) for r in rules] == [(i, w, e) for i, _, w, e in OLD_RULES]
    assert all(not r.paused and r.dropped == 0 for r in rules)
    by_rule = {rid: clean for rid, _, clean, _ in OLD_RULES}
    assert len(alerts) == 20 and all(a.webhook == by_rule[a.rule_id] for a in alerts)
    assert "s3cret" not in everything
