"""Agents: a participant's agent facts, in the door state and the directory (ADR 0070).

Revision ID: 1500
Revises: 1200
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "1500"
down_revision = "1200"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("participants", sa.Column("agent", JSONB(), nullable=True))
    op.add_column("rm_participants", sa.Column("agent", JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("rm_participants", "agent")
    op.drop_column("participants", "agent")
