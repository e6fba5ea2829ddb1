"""Join the work done side by side (expiring leases, the search index by workspace,
which joined the search index, a harness's autonomy and attachments, and the replies on
runs) into one head.

Revision ID: 1200
Revises: 0600, 1300, 1400
"""

revision = "1200"
down_revision = ("0600", "1300", "1400")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
