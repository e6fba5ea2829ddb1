"""A space's state (open or archived), its home mark and title hold; the directory read model.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("spaces", sa.Column("state", sa.Text(), nullable=False, server_default="open"))
    op.add_column(
        "spaces",
        sa.Column("title_held", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("spaces", sa.Column("home_of", sa.Text(), nullable=True))
    op.add_column(
        "rm_spaces", sa.Column("state", sa.Text(), nullable=False, server_default="open")
    )
    op.add_column("rm_spaces", sa.Column("home_of", sa.Text(), nullable=True))
    op.add_column("rm_spaces", sa.Column("moved_by", sa.Text(), nullable=True))
    op.add_column("rm_spaces", sa.Column("moved_seq", sa.BigInteger(), nullable=True))
    op.create_table(
        "rm_participants",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Text(), nullable=True),
        sa.Column("joined_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_rm_participants_workspace_id"), "rm_participants", ["workspace_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_rm_participants_workspace_id"), table_name="rm_participants")
    op.drop_table("rm_participants")
    for column in ("moved_seq", "moved_by", "home_of", "state"):
        op.drop_column("rm_spaces", column)
    for column in ("home_of", "title_held", "state"):
        op.drop_column("spaces", column)
