"""Join the work done side by side (expiring leases, the search index, a harness's
autonomy, attachments) into one head.

Revision ID: 1200
Revises: 0600, 0800, 0900, 1100
"""

revision = "1200"
down_revision = ("0600", "0800", "0900", "1100")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
