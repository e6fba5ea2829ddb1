"""Join the two lines of migrations (0007 and 0100) into one head.

Revision ID: 0008
Revises: 0007, 0100
"""

revision = "0008"
down_revision = ("0007", "0100")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
