"""the judge's activations of stored traces (activation scorers decide cases on the pages)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04 21:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('activation_features',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('case_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('strategy', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('prompt_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('layers_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('hidden', sa.Integer(), nullable=False),
    sa.Column('vectors', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('dataset', 'case_id', 'strategy')
    )
    op.create_index(op.f('ix_activation_features_dataset'), 'activation_features', ['dataset'],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_activation_features_dataset'), table_name='activation_features')
    op.drop_table('activation_features')
