"""An idempotency key remembers what its first request was (docs/adr/0126).

A key sent again with the same request is a duplicate; with another request (another
type, room or body) it is refused ``idempotency_key_reused``. To tell the two apart the
key's row keeps the request's fingerprint, a SHA-256 of its canonical JSON. Rows from
before have none, and are answered as duplicates as they were.

Revision ID: 1590
Revises: 1580
"""

import sqlalchemy as sa
from alembic import op

revision = "1590"
down_revision = "1580"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("idempotency", sa.Column("fingerprint", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("idempotency", "fingerprint")
