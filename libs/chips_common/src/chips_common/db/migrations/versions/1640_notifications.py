"""What waits for a person (docs/adr/0132): the notifier's notifications, checkpoints and
VAPID keys, and the person's own settings the gateway keeps (preferences, muted rooms,
push subscriptions, what was read).

Revision ID: 1640
Revises: 1680
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "1640"
down_revision = "1680"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "notifier_checkpoints",
        sa.Column("workspace_id", sa.Text(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "notifications",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("room_id", sa.Text(), nullable=False),
        sa.Column("space_name", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("ref_id", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("sole", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("expires_at", TZ, nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("done_at", TZ, nullable=True),
        sa.Column("done_reason", sa.Text(), nullable=True),
        sa.Column("email_state", sa.Text(), nullable=False, server_default="pending"),
        sa.Column("email_due_at", TZ, nullable=True),
        sa.Column("email_tries", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("push_state", sa.Text(), nullable=False, server_default="pending"),
        sa.Column("push_due_at", TZ, nullable=True),
        sa.Column("push_tries", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("workspace_id", "seq", "participant_id", name="notifications_once"),
    )
    op.create_index(
        "notifications_person", "notifications", ["workspace_id", "participant_id", "seq"]
    )
    op.create_index("notifications_ref", "notifications", ["workspace_id", "ref_id"])
    op.create_index("notifications_run", "notifications", ["workspace_id", "run_id"])
    op.create_index(
        "notifications_email_due",
        "notifications",
        ["email_due_at"],
        postgresql_where=sa.text("email_state IN ('pending', 'sending')"),
    )
    op.create_index(
        "notifications_push_due",
        "notifications",
        ["push_due_at"],
        postgresql_where=sa.text("push_state IN ('pending', 'sending')"),
    )
    op.create_index(
        "notifications_expiring",
        "notifications",
        ["expires_at"],
        postgresql_where=sa.text("done_at IS NULL AND expires_at IS NOT NULL"),
    )
    op.create_table(
        "notifier_keys",
        sa.Column("name", sa.Text(), primary_key=True),
        sa.Column("private_pem", sa.Text(), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "notification_prefs",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("body", JSONB(), nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "participant_id"),
    )
    op.create_table(
        "notification_mutes",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("muted_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "participant_id", "space_id"),
    )
    op.create_table(
        "push_subscriptions",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("endpoint", sa.Text(), nullable=False),
        sa.Column("p256dh", sa.Text(), nullable=False),
        sa.Column("auth", sa.Text(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "participant_id", "endpoint"),
    )
    op.create_table(
        "notification_reads",
        sa.Column("notification_id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("read_at", TZ, nullable=False),
    )


def downgrade() -> None:
    for name in (
        "notification_reads",
        "push_subscriptions",
        "notification_mutes",
        "notification_prefs",
        "notifier_keys",
        "notifications",
        "notifier_checkpoints",
    ):
        op.drop_table(name)
