"""Keys of the spaces harnesses open through their door, and who opened each.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("spaces", sa.Column("key", sa.Text(), nullable=True))
    op.add_column(
        "spaces", sa.Column("key_shared", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.create_index(
        "spaces_key",
        "spaces",
        ["workspace_id", "key"],
        unique=True,
        postgresql_where=sa.text("key IS NOT NULL"),
    )
    op.create_table(
        "space_openers",
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("since_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("space_id", "harness_id"),
    )
    op.add_column("rm_spaces", sa.Column("key", sa.Text(), nullable=True))
    op.add_column(
        "rm_spaces",
        sa.Column("key_shared", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_table(
        "rm_openers",
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("since_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("space_id", "harness_id"),
    )
    op.create_index("rm_openers_harness", "rm_openers", ["workspace_id", "harness_id"])


def downgrade() -> None:
    op.drop_index("rm_openers_harness", table_name="rm_openers")
    op.drop_table("rm_openers")
    op.drop_column("rm_spaces", "key_shared")
    op.drop_column("rm_spaces", "key")
    op.drop_table("space_openers")
    op.drop_index("spaces_key", table_name="spaces")
    op.drop_column("spaces", "key_shared")
    op.drop_column("spaces", "key")
