"""alert rules: paused, credentials from the environment, per-destination backoff, dropped count

Issue 54. A rule can be paused (``paused``, ``paused_by``); its webhook's credential comes
from the environment or ``.streamlit/secrets.toml`` (``auth_env`` names the variable), never
from the address; ``dropped`` counts alerts dropped unsent when the rule's outbox was full;
``alert_destination`` keeps each receiver's consecutive failures and next try, so a failing
receiver is retried with backoff once per destination instead of once per alert.

Old rows: a webhook holding a credential (``http://user:pw@host/...`` or a key-like query
parameter) has it removed from the rule and from every alert that copied it; the rule then
reads its credential from ``ALERT_RULE_<id>_AUTH`` (set it to the Authorization value, e.g.
``Basic <base64 of user:pw>``; ``workbench alerts list`` says whether it is set). Such an
address was never delivered (the old opener could not use it), so no working delivery stops.
The secret itself is not kept anywhere: whoever configured it sets the variable.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05 13:38:25.154782
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

# As workbench.llm.redact names a secret-looking parameter (kept here: a migration does not
# change when the code does).
_SECRET_NAME = re.compile(r"key|token|secret|pass|pwd|sig|auth|credential|session", re.I)


def without_credentials(url: str) -> str:
    """``url`` without user-info and without secret-looking query or fragment parameters."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    netloc = parts.netloc.rpartition("@")[2]

    def keep(tail: str) -> str:
        pairs = [p for p in re.split(r"[&;]", tail) if p]
        return "&".join(p for p in pairs if not _SECRET_NAME.search(p.partition("=")[0]))

    return urlunsplit((parts.scheme, netloc, parts.path, keep(parts.query), keep(parts.fragment)))


def upgrade() -> None:
    op.create_table('alert_destination',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_error', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('alert_rule', schema=None) as batch_op:
        batch_op.add_column(sa.Column('auth_env', sqlmodel.sql.sqltypes.AutoString(),
                                      nullable=False, server_default=''))
        batch_op.add_column(sa.Column('paused', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('paused_by', sqlmodel.sql.sqltypes.AutoString(),
                                      nullable=False, server_default=''))
        batch_op.add_column(sa.Column('dropped', sa.Integer(), nullable=False, server_default='0'))
    _move_credentials_out()


def _move_credentials_out() -> None:
    conn = op.get_bind()
    rule = sa.table('alert_rule', sa.column('id', sa.Integer), sa.column('webhook', sa.String),
                    sa.column('auth_env', sa.String))
    alert = sa.table('alert', sa.column('id', sa.Integer), sa.column('rule_id', sa.Integer),
                     sa.column('webhook', sa.String))
    for rid, webhook in conn.execute(sa.select(rule.c.id, rule.c.webhook)).all():
        clean = without_credentials(webhook or "")
        if webhook and clean != webhook:
            conn.execute(rule.update().where(rule.c.id == rid)
                         .values(webhook=clean, auth_env=f"ALERT_RULE_{rid}_AUTH"))
    for aid, webhook in conn.execute(sa.select(alert.c.id, alert.c.webhook)
                                     .where(alert.c.webhook != '')).all():
        clean = without_credentials(webhook or "")
        if clean != webhook:
            conn.execute(alert.update().where(alert.c.id == aid).values(webhook=clean))


def downgrade() -> None:
    with op.batch_alter_table('alert_rule', schema=None) as batch_op:
        batch_op.drop_column('dropped')
        batch_op.drop_column('paused_by')
        batch_op.drop_column('paused')
        batch_op.drop_column('auth_env')

    op.drop_table('alert_destination')
