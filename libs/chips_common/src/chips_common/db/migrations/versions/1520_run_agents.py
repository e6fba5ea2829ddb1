"""A run's agent: the agent whose turn a run is, when an agent started it (ADR 0070).

Revision ID: 1520
Revises: 1510
"""

import sqlalchemy as sa
from alembic import op

revision = "1520"
down_revision = "1510"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("agent_id", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "agent_id")
