"""A person's own time zone, and each device's newest signed time.

A person's time zone (person.updated) is an IANA name, or none said yet: read by the
room note's "time now" and by notifications' quiet hours, kept in the directory's read
model beside the person's name. A device's newest signed time is the gateway's: a signed
exchange for a session that is not newer is a replay (docs/adr/0125).

Revision ID: 1650
Revises: 1640
"""

import sqlalchemy as sa
from alembic import op

revision = "1650"
down_revision = "1640"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rm_participants", sa.Column("time_zone", sa.Text()))
    op.create_table(
        "device_signatures",
        sa.Column("device_id", sa.Text(), primary_key=True),
        sa.Column("last_ts", sa.BigInteger(), nullable=False),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("device_signatures")
    op.drop_column("rm_participants", "time_zone")
