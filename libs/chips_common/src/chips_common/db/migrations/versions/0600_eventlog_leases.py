"""Partition leases that expire: a row per partition (holder, epoch, expiry) and a row per
live eventlog replica, both renewed by a heartbeat (docs/adr/0022).

Revision ID: 0600
Revises: 0500
"""

import sqlalchemy as sa
from alembic import op

revision = "0600"
down_revision = "0500"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eventlog_leases",
        sa.Column("partition", sa.Integer(), primary_key=True),
        sa.Column("holder", sa.Text()),
        sa.Column("epoch", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "eventlog_replicas",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("eventlog_replicas")
    op.drop_table("eventlog_leases")
