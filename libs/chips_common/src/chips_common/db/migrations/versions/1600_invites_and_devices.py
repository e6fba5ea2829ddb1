"""Invites, and devices beside tokens (docs/adr/0125).

A credential is a bearer token (a harness's, a person's API key) or a paired device,
which holds a public key and no token: ``token_hash`` may be empty. Each has a kind, a
name, the user agent it was paired from, and may expire. Invites are door state: the
hash of the secret, who and what role, until when, and what became of it.

Revision ID: 1600
Revises: 1590
"""

import sqlalchemy as sa
from alembic import op

revision = "1600"
down_revision = "1590"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.alter_column("credentials", "token_hash", nullable=True)
    op.add_column("credentials", sa.Column("kind", sa.Text(), server_default="token"))
    op.add_column("credentials", sa.Column("name", sa.Text()))
    op.add_column("credentials", sa.Column("public_key", sa.Text()))
    op.add_column("credentials", sa.Column("user_agent", sa.Text()))
    op.add_column("credentials", sa.Column("expires_at", sa.DateTime(timezone=True)))
    # A person deactivated by an owner or admin (person.updated) stays, inactive.
    for table in ("participants", "rm_participants"):
        op.add_column(
            table, sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    op.create_table(
        "invites",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("secret_hash", sa.Text(), nullable=False, unique=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("email", sa.Text()),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("invited_by", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("used_by", sa.Text()),
        sa.PrimaryKeyConstraint("workspace_id", "id"),
    )


def downgrade() -> None:
    op.drop_table("invites")
    for table in ("participants", "rm_participants"):
        op.drop_column(table, "active")
    for column in ("expires_at", "user_agent", "public_key", "name", "kind"):
        op.drop_column("credentials", column)
