"""The tables of attachments, kept apart from ``tables`` (they share its metadata).

``attachments``: one row per upload, written by the attachments service alone when the
bytes are stored (immutable from then on). The room, seq and version a post gives it are
the door's, in ``tables.posted_files`` (docs/adr/0140). A posted voice note's
``heard_at`` is the attachments service's too, once it logged what it heard (ADR 0137).
``attachments_checkpoints``: how far the attachments service's consumer has read each
workspace's log (erasure of bytes). The bytes themselves are in S3 only, under their
sha256 (docs/adr/0043).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    Table,
    Text,
    false,
    text,
)

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
    # A voice note: when what it said was logged (``attachment.transcribed``), and until
    # when a replica hearing it holds it (docs/adr/0137).
    Column("heard_at", DateTime(timezone=True)),
    Column("hearing_until", DateTime(timezone=True)),
    Index(
        "ix_attachments_unheard",
        "created_at",
        postgresql_where=text("kind = 'voice_note' AND heard_at IS NULL"),
    ),
)

attachments_checkpoints = Table(
    "attachments_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)
