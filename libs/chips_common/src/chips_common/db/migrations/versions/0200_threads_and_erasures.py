"""Threads (a parent and a root message on a space) and erasures waiting on JetStream.

Revision ID: 0200
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0200"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("spaces", "rm_spaces"):
        op.add_column(table, sa.Column("parent_space_id", sa.Text(), nullable=True))
        op.add_column(table, sa.Column("root_message_id", sa.Text(), nullable=True))
    # A message roots at most one thread (docs/product/messages.md, Threads).
    op.create_index(
        "spaces_root_message",
        "spaces",
        ["workspace_id", "root_message_id"],
        unique=True,
        postgresql_where=sa.text("root_message_id IS NOT NULL"),
    )
    op.create_index("spaces_parent", "spaces", ["parent_space_id"])
    # A space.erased whose space's copies in CHIPS_EVENTS are not purged yet (ADR 0010).
    op.create_table(
        "erasures",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "seq"),
    )


def downgrade() -> None:
    op.drop_table("erasures")
    op.drop_index("spaces_parent", table_name="spaces")
    op.drop_index("spaces_root_message", table_name="spaces")
    for table in ("rm_spaces", "spaces"):
        op.drop_column(table, "root_message_id")
        op.drop_column(table, "parent_space_id")
