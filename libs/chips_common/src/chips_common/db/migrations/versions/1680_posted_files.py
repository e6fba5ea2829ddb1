"""A posted upload's room, seq and version move from the attachments service's table to
the door's own ``posted_files``: one writer per table (docs/adr/0140).

Revision ID: 1680
Revises: 1630
"""

import sqlalchemy as sa
from alembic import op

revision = "1680"
down_revision = "1630"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "posted_files",
        sa.Column("upload_id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("posted_seq", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("replaces", sa.Text(), nullable=True),
    )
    op.create_index(
        "ix_posted_files_room", "posted_files", ["workspace_id", "space_id", "posted_seq"]
    )
    op.execute(
        "INSERT INTO posted_files (upload_id, workspace_id, space_id, posted_seq, version, replaces)"
        " SELECT id, workspace_id, space_id, posted_seq, version, replaces FROM attachments"
        " WHERE posted_seq IS NOT NULL"
    )
    op.drop_index("ix_attachments_room_name", table_name="attachments")
    for column in ("space_id", "posted_seq", "version", "replaces"):
        op.drop_column("attachments", column)


def downgrade() -> None:
    op.add_column("attachments", sa.Column("space_id", sa.Text(), nullable=True))
    op.add_column("attachments", sa.Column("posted_seq", sa.BigInteger(), nullable=True))
    op.add_column("attachments", sa.Column("version", sa.Integer(), nullable=True))
    op.add_column("attachments", sa.Column("replaces", sa.Text(), nullable=True))
    op.execute(
        "UPDATE attachments a SET space_id = p.space_id, posted_seq = p.posted_seq,"
        " version = p.version, replaces = p.replaces FROM posted_files p WHERE p.upload_id = a.id"
    )
    op.create_index(
        "ix_attachments_room_name", "attachments", ["space_id", "name", "posted_seq"]
    )
    op.drop_index("ix_posted_files_room", table_name="posted_files")
    op.drop_table("posted_files")
