"""The tables of attachments, kept apart from ``tables`` (they share its metadata).

``attachments``: one row per upload, written by the attachments service when the bytes
are stored (immutable from then on), and given its room, seq and version by the
eventlog's door in the transaction that logs the message posting it (door state: an
upload is posted once, and a name's current version decides ``stale_file``).
``attachments_checkpoints``: how far the attachments service's consumer has read each
workspace's log (erasure of bytes). The bytes themselves are in S3 only, under their
sha256 (docs/adr/0043).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Index, Integer, Table, Text, false

from chips_common.db.tables import metadata

attachments = Table(
    "attachments",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("uploader_id", Text, nullable=False),
    Column("credential_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("mime_type", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("byte_size", BigInteger, nullable=False),
    Column("sha256", Text, nullable=False, index=True),
    Column("width", Integer),
    Column("height", Integer),
    Column("duration_ms", BigInteger),
    Column("thumbnail", Boolean, nullable=False, server_default=false()),
    Column("kept_metadata", Boolean, nullable=False, server_default=false()),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # Written by the door when a message posts it.
    Column("space_id", Text),
    Column("posted_seq", BigInteger),
    Column("version", Integer),
    Column("replaces", Text),
    Index("ix_attachments_room_name", "space_id", "name", "posted_seq"),
)

attachments_checkpoints = Table(
    "attachments_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)
