"""Agents in rooms: the asks of harnesses for agents, and free agents' held words (ADR 0071).

Revision ID: 1510
Revises: 1541
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "1510"
down_revision = "1541"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_asks",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=True),
        sa.Column("answered_by", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("workspace_id", "id"),
    )
    op.create_table(
        "held_words",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("words", JSONB(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "agent_id"),
    )


def downgrade() -> None:
    op.drop_table("held_words")
    op.drop_table("agent_asks")
