"""Passkeys: a device whose key is a WebAuthn credential (docs/adr/0145).

The gateway's own table: for each passkey, the credential's id as the authenticator gives
it, the device it is (a row of credentials, revoked as any device), its COSE public key
and the authenticator's signature count, which only grows.

Revision ID: 1690
Revises: 1730
"""

import sqlalchemy as sa
from alembic import op

revision = "1690"
down_revision = "1730"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "passkeys",
        sa.Column("credential_id", sa.Text(), primary_key=True),
        sa.Column("device_id", sa.Text(), nullable=False, unique=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("cose_key", sa.Text(), nullable=False),
        sa.Column("sign_count", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("passkeys")
