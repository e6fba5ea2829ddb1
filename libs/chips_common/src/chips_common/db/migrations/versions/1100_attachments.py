"""Attachments: uploads and the room's files (door state), and the service's checkpoint.

Revision ID: 1100
Revises: 0500
"""

import sqlalchemy as sa
from alembic import op

revision = "1100"
down_revision = "0500"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attachments",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("uploader_id", sa.Text(), nullable=False),
        sa.Column("credential_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("mime_type", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("byte_size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("width", sa.Integer()),
        sa.Column("height", sa.Integer()),
        sa.Column("duration_ms", sa.BigInteger()),
        sa.Column("thumbnail", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("kept_metadata", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("space_id", sa.Text()),
        sa.Column("posted_seq", sa.BigInteger()),
        sa.Column("version", sa.Integer()),
        sa.Column("replaces", sa.Text()),
    )
    op.create_index("ix_attachments_sha256", "attachments", ["sha256"])
    op.create_index("ix_attachments_room_name", "attachments", ["space_id", "name", "posted_seq"])
    op.create_table(
        "attachments_checkpoints",
        sa.Column("workspace_id", sa.Text(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("attachments_checkpoints")
    op.drop_index("ix_attachments_room_name", table_name="attachments")
    op.drop_index("ix_attachments_sha256", table_name="attachments")
    op.drop_table("attachments")
