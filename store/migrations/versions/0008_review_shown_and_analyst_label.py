"""review decisions record what was shown and what the analyst says

A decision used to keep only the judge's yes/no (``judge_violation``) and read
confirm/overturn against it, although the card may have shown a verdict the activation score
decided. Each decision now stores the label shown, where its score came from, the decision
setting's version and the analyst's own label. Existing rows are migrated by the meaning the
workbench gave them when they were made: the verdict reviewed was the judge's
(``shown_source`` "judge", no setting version), a confirm or a wrong-rule stands behind it,
an overturn says the opposite; an undo record says nothing of its own (NULL).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05 13:31:42.766118
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('review_decision', schema=None) as batch_op:
        batch_op.add_column(sa.Column('shown', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('shown_source', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('setting_version', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('analyst_label', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    # Old rows, by their meaning at the time (see the module doc). Plain SQL, so it runs the
    # same on SQLite and PostgreSQL.
    t = sa.table('review_decision', sa.column('decision', sa.String),
                 sa.column('judge_violation', sa.Boolean), sa.column('shown', sa.String),
                 sa.column('shown_source', sa.String), sa.column('analyst_label', sa.String))
    word = sa.case((t.c.judge_violation == sa.true(), 'violation'), else_='compliant')
    opposite = sa.case((t.c.judge_violation == sa.true(), 'compliant'), else_='violation')
    known = sa.and_(t.c.judge_violation.is_not(None), t.c.decision != 'undo')
    op.execute(t.update().where(known).values(shown=word, shown_source='judge'))
    op.execute(t.update().where(known, t.c.decision.in_(('confirm', 'wrong-rule')))
               .values(analyst_label=word))
    op.execute(t.update().where(known, t.c.decision == 'overturn').values(analyst_label=opposite))


def downgrade() -> None:
    with op.batch_alter_table('review_decision', schema=None) as batch_op:
        batch_op.drop_column('analyst_label')
        batch_op.drop_column('setting_version')
        batch_op.drop_column('shown_source')
        batch_op.drop_column('shown')
