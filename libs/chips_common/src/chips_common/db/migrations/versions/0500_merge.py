"""Join the work done side by side (threads and erasure, runs and lanes, message changes)
into one head.

Revision ID: 0500
Revises: 0200, 0303, 0400
"""

revision = "0500"
down_revision = ("0200", "0303", "0400")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
