"""The notifier's tables and the person's own notification settings (docs/adr/0132).

The notifier owns:

- ``notifier_checkpoints``: how far it has read each workspace's log;
- ``notifications``: one row per (workspace, event seq, recipient), the unique key that
  makes a replay of the log write nothing twice; ``done_*`` when what it asked was
  answered, withdrawn, expired or its run ended; and the delivery markers of each
  channel (``email_*``, ``push_*``), which a sender claims before it sends;
- ``notifier_keys``: the VAPID key pair, made once by the first notifier to start.

The gateway owns what a person sets over the API, none of which is an event of a
workspace's log (nobody else is told of it, and the log does not rebuild it):
``notification_prefs``, ``notification_mutes``, ``push_subscriptions`` and
``notification_reads`` (what was read, and when).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from chips_common.db.tables import metadata

notifier_checkpoints = Table(
    "notifier_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)

notifications = Table(
    "notifications",
    metadata,
    Column("id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    # approval | question | handoff | mention | budget | direct
    Column("kind", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    # The room whose members are told (a thread's room, else the space itself).
    Column("room_id", Text, nullable=False),
    Column("space_name", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),  # the line
    Column("ref_id", Text),  # apv_/q_ card id, or the message's id
    Column("run_id", Text),
    Column("title", Text, nullable=False),
    Column("body", Text, nullable=False),
    # Only this person may answer it: a muted room still notifies of it.
    Column("sole", Boolean, nullable=False, server_default=false()),
    Column("expires_at", DateTime(timezone=True)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("done_at", DateTime(timezone=True)),
    Column("done_reason", Text),  # answered | withdrawn | expired | run_ended
    # Delivery: pending (due at *_due_at) | sending (claimed) | sent | skipped | unsure.
    Column("email_state", Text, nullable=False, server_default="pending"),
    Column("email_due_at", DateTime(timezone=True)),
    Column("email_tries", Integer, nullable=False, server_default=text("0")),
    Column("push_state", Text, nullable=False, server_default="pending"),
    Column("push_due_at", DateTime(timezone=True)),
    Column("push_tries", Integer, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("id"),
    UniqueConstraint("workspace_id", "seq", "participant_id", name="notifications_once"),
    Index("notifications_person", "workspace_id", "participant_id", "seq"),
    Index("notifications_ref", "workspace_id", "ref_id"),
    Index("notifications_run", "workspace_id", "run_id"),
    Index(
        "notifications_email_due",
        "email_due_at",
        postgresql_where=text("email_state IN ('pending', 'sending')"),
    ),
    Index(
        "notifications_push_due",
        "push_due_at",
        postgresql_where=text("push_state IN ('pending', 'sending')"),
    ),
    Index(
        "notifications_expiring",
        "expires_at",
        postgresql_where=text("done_at IS NULL AND expires_at IS NOT NULL"),
    ),
)

notifier_keys = Table(
    "notifier_keys",
    metadata,
    Column("name", Text, primary_key=True),  # "vapid"
    Column("private_pem", Text, nullable=False),
    Column("public_key", Text, nullable=False),  # base64url, uncompressed P-256 point
    Column("created_at", DateTime(timezone=True), nullable=False),
)

notification_prefs = Table(
    "notification_prefs",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("body", JSONB, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("workspace_id", "participant_id"),
)

notification_mutes = Table(
    "notification_mutes",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("muted_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("workspace_id", "participant_id", "space_id"),
)

push_subscriptions = Table(
    "push_subscriptions",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("endpoint", Text, nullable=False),
    Column("p256dh", Text, nullable=False),
    Column("auth", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("workspace_id", "participant_id", "endpoint"),
)

# A subscription its push service said is no more (404 or 410), as of when: the notifier
# pushes to it no longer unless the browser subscribes again after (docs/adr/0132).
push_gone = Table(
    "push_gone",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("endpoint", Text, nullable=False),
    Column("gone_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("workspace_id", "participant_id", "endpoint"),
)

notification_reads = Table(
    "notification_reads",
    metadata,
    Column("notification_id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("read_at", DateTime(timezone=True), nullable=False),
)

# What a rebuild empties and the backup leaves out (derived from the log).
DERIVED_TABLES = (notifications, notifier_checkpoints)
