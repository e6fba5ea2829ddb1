"""What is done to messages after they are posted: edits, take-backs, pins, hides, feedback.

Revision ID: 0400
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0400"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "message_marks",
        sa.Column("message_id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("deleted_seq", sa.BigInteger()),
        sa.Column("edited_seq", sa.BigInteger()),
        sa.Column("pinned", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_table(
        "message_hidden",
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("message_id", "participant_id"),
    )
    op.create_table(
        "reactions",
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("emoji", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("message_id", "participant_id", "emoji"),
    )
    op.add_column("rm_messages", sa.Column("card", postgresql.JSONB(astext_type=sa.Text())))
    for name in ("edited", "deleted", "pinned"):
        op.add_column(
            "rm_messages",
            sa.Column(name, sa.Boolean(), nullable=False, server_default=sa.false()),
        )
    op.create_table(
        "rm_hidden",
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("participant_id", "message_id"),
    )
    op.create_table(
        "rm_feedback",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("from_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("emoji", sa.Text()),
        sa.Column("note", sa.Text()),
        sa.Column("reasons", postgresql.JSONB(astext_type=sa.Text())),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_rm_feedback_message_id", "rm_feedback", ["message_id"])


def downgrade() -> None:
    op.drop_index("ix_rm_feedback_message_id", table_name="rm_feedback")
    op.drop_table("rm_feedback")
    op.drop_table("rm_hidden")
    for name in ("pinned", "deleted", "edited", "card"):
        op.drop_column("rm_messages", name)
    op.drop_table("reactions")
    op.drop_table("message_hidden")
    op.drop_table("message_marks")
