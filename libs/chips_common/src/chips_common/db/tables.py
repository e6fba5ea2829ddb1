"""The eventlog's tables: the log of record, its outbox and keys, the door state, and the
partition leases, with the ``metadata`` every table module shares.

The eventlog is their only writer; who else may read which is listed in
``chips_common.db.ownership``. The other services' tables are in their own modules
(``projector_tables``, ``search_tables``, ``attachment_tables``, ``referee_tables``), and
the door state of runs in ``run_tables``. Schema changes go through Alembic
(``chips_common/db/migrations``); this module is what the code queries with.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    false,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData()

# --- eventlog: the log of record -------------------------------------------------------

events = Table(
    "events",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("id", Text, nullable=False, unique=True),
    Column("type", Text, nullable=False),
    Column("ts", DateTime(timezone=True), nullable=False),
    Column("actor_id", Text, nullable=False),
    Column("space_id", Text),
    Column("body", JSONB, nullable=False),
    # The W3C trace context the event was appended under, so that whoever reads it from
    # the log (a consumer healing a gap, a rebuild) can join the same trace.
    Column("traceparent", Text),
    PrimaryKeyConstraint("workspace_id", "seq"),
    Index("events_space_seq", "workspace_id", "space_id", "seq"),
    # A room's lead and who works in it, as of a message (docs/adr/0090).
    Index(
        "events_room_referee",
        "workspace_id",
        "space_id",
        "seq",
        postgresql_where=text("type IN ('space.lead_set', 'room.working', 'room.idle')"),
    ),
    # A room's spend ceiling and its pauses, as of a delivery (docs/adr/0083; migration 1570).
    Index(
        "events_room_spend",
        "workspace_id",
        "space_id",
        "seq",
        postgresql_where=text("type IN ('space.spend_ceiling_set', 'exchange.set')"),
    ),
    # The runs a harness had going as of its subscription (docs/adr/0136; migration 1660).
    Index(
        "events_runs_started",
        "workspace_id",
        "seq",
        postgresql_where=text("type = 'run.started'"),
    ),
)

outbox = Table(
    "outbox",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("workspace_id", "seq"),
)

# A space.erased whose space still has copies in CHIPS_EVENTS to purge (docs/adr/0010).
erasures = Table(
    "erasures",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("workspace_id", "seq"),
)

idempotency = Table(
    "idempotency",
    metadata,
    Column("credential_id", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("seqs", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # What the first request was, to tell it sent again from another under its key
    # (docs/adr/0126); null for Chips' own writers and for keys from before it was kept.
    Column("fingerprint", Text),
    PrimaryKeyConstraint("credential_id", "key"),
)

# --- eventlog: the door state (docs/architecture/design.md §2) ----------------------------

workspaces = Table(
    "workspaces",
    metadata,
    Column("id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("head_seq", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

participants = Table(
    "participants",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("owner_id", Text),
    Column("joined_seq", BigInteger, nullable=False),
    # What a harness declared it does (harness.declared), sorted.
    Column("capabilities", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    # A harness's autonomy: "off" (no dial) or the dial's level (docs/adr/0031).
    Column("autonomy", Text),
    # Its owner's rules for the dial, each {action, args?, effect} (docs/adr/0130).
    Column("rules", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    # An agent's facts (key, state, main, name_by, forked_from, made_for), docs/adr/0070.
    Column("agent", JSONB),
    # A person an owner or admin deactivated (person.updated, docs/adr/0125).
    Column("active", Boolean, nullable=False, server_default=true()),
)

credentials = Table(
    "credentials",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False, index=True),
    # Empty for a paired device, which signs with its key instead (docs/adr/0125).
    Column("token_hash", Text, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
    # token (a harness's, or a person's from before devices) | browser | cli | api_key
    Column("kind", Text, server_default="token"),
    Column("name", Text),
    # A device's public key: P-256, SubjectPublicKeyInfo DER, base64url.
    Column("public_key", Text),
    Column("user_agent", Text),
    Column("expires_at", DateTime(timezone=True)),
)

# The newest time each device signed an exchange for a session (the gateway's own table,
# docs/adr/0125): a signed exchange not newer than it is a replay, refused on every gateway
# whatever Redis remembers.
device_signatures = Table(
    "device_signatures",
    metadata,
    Column("device_id", Text, primary_key=True),
    Column("last_ts", BigInteger, nullable=False),
    Column("signed_at", DateTime(timezone=True), nullable=False),
)

# Passkeys (the gateway's own table, docs/adr/0145): a device whose key is a WebAuthn
# credential. Its credentials row says whose it is and whether it was revoked; here, the
# credential's id, its COSE public key, and the authenticator's count, which only grows.
passkeys = Table(
    "passkeys",
    metadata,
    Column("credential_id", Text, primary_key=True),
    Column("device_id", Text, nullable=False, unique=True),
    Column("workspace_id", Text, nullable=False),
    Column("cose_key", Text, nullable=False),
    Column("sign_count", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# Invites and pairing codes, door state (docs/adr/0125): the secret is kept as a hash.
invites = Table(
    "invites",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("secret_hash", Text, nullable=False, unique=True),
    Column("name", Text, nullable=False),
    Column("email", Text),
    Column("role", Text, nullable=False),
    Column("invited_by", Text, nullable=False),
    # Set for a pairing code: the person whose further device it pairs.
    Column("participant_id", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("state", Text, nullable=False),  # pending | used | withdrawn
    Column("used_by", Text),
    PrimaryKeyConstraint("workspace_id", "id"),
)

spaces = Table(
    "spaces",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("title", Text),
    Column("created_by", Text, nullable=False),
    Column("created_seq", BigInteger, nullable=False),
    # open | closed (archived): docs/product/spaces.md, Retitling and archiving.
    Column("state", Text, nullable=False, server_default="open"),
    # A person retitled it: a harness's door title no longer applies (docs/product/spaces.md).
    Column("title_held", Boolean, nullable=False, server_default=false()),
    # The harness whose home this is: the direct space it was handed when connected.
    Column("home_of", Text),
    # The key a harness opened or claimed it under: unique in the workspace
    # (docs/product/spaces.md).
    Column("key", Text),
    Column("key_shared", Boolean, nullable=False, server_default=false()),
    # Its changes are locked: no person renames, archives or deletes it (space.lock_set).
    Column("locked", Boolean, nullable=False, server_default=false()),
    # The harness a person asked to make something of it, until it claims it.
    Column("asked_of", Text),
    # A thread's room and the message it grew from (docs/product/messages.md, Threads).
    Column("parent_space_id", Text),
    Column("root_message_id", Text),
    Index(
        "spaces_key", "workspace_id", "key", unique=True, postgresql_where=text("key IS NOT NULL")
    ),
    Index(
        "spaces_root_message",
        "workspace_id",
        "root_message_id",
        unique=True,
        postgresql_where=text("root_message_id IS NOT NULL"),
    ),
    Index("spaces_parent", "parent_space_id"),
)

# The harnesses that opened a space through their door, or claimed it there: each one
# retitles, archives and unarchives it as its own (docs/product/spaces.md, Who may do what).
space_openers = Table(
    "space_openers",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("space_id", "harness_id"),
)

memberships = Table(
    "memberships",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("standing", Text, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("space_id", "participant_id"),
    Index("memberships_participant", "workspace_id", "participant_id"),
)

# Every change of membership with its seq, so a reader can ask who was in which space
# as of any seq (the gateway scopes a replay by membership as of each event).
membership_log = Table(
    "membership_log",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("added", Boolean, nullable=False),
    PrimaryKeyConstraint("workspace_id", "seq", "space_id", "participant_id"),
    Index("membership_log_participant", "workspace_id", "participant_id", "seq"),
)

# A person's ask of a harness for an agent (agent.fork / agent.asked), by the ask's event
# id: a copy or a new agent registered within a minute of it joins its room (ADR 0071).
agent_asks = Table(
    "agent_asks",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("kind", Text, nullable=False),  # fork | new
    Column("harness_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("asked_at", DateTime(timezone=True), nullable=False),
    Column("agent_id", Text),
    Column("answered_by", Text),
    PrimaryKeyConstraint("workspace_id", "id"),
)

# What each free agent said while in no room (message.held), oldest first, until it is
# posted in the next room the agent joins (ADR 0071).
held_words = Table(
    "held_words",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("agent_id", Text, nullable=False),
    Column("words", JSONB, nullable=False),
    PrimaryKeyConstraint("workspace_id", "agent_id"),
)

# Where each sender's last message in a space went, for the next one's rule 5
# (docs/product/spaces.md: "Where your last message here went").
address_choices = Table(
    "address_choices",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("kind", Text, nullable=False),  # everyone | named | nobody
    Column("ids", JSONB, nullable=False),
    PrimaryKeyConstraint("space_id", "participant_id"),
)

# What has been done to a message since it was posted: taken back, pinned, edited. A row
# exists only for a message something was done to, so a post writes nothing here.
# A posted upload: the room, seq and version the door gave it in the transaction that
# logged the post naming it (an upload is posted once; a name's current version in a room
# decides ``stale_file``). The upload itself, its name and bytes are the attachments
# service's (``attachment_tables.attachments``); a room's erasure leaves these bare ids
# behind, every read of them joins the upload, which the erasure deleted.
posted_files = Table(
    "posted_files",
    metadata,
    Column("upload_id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("posted_seq", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("replaces", Text),
    Index("ix_posted_files_room", "workspace_id", "space_id", "posted_seq"),
)

message_marks = Table(
    "message_marks",
    metadata,
    Column("message_id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("deleted_seq", BigInteger),
    Column("edited_seq", BigInteger),
    Column("pinned", Boolean, nullable=False, server_default=false()),
)

# Delete for me: the messages each person has hidden from their own room.
message_hidden = Table(
    "message_hidden",
    metadata,
    Column("message_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    PrimaryKeyConstraint("message_id", "participant_id"),
)

# Reactions standing now, so the same emoji again takes one back.
reactions = Table(
    "reactions",
    metadata,
    Column("message_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("emoji", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    PrimaryKeyConstraint("message_id", "participant_id", "emoji"),
)

# --- eventlog: partition leases (docs/adr/0022) ------------------------------------------------

# Which replica writes a partition, under which epoch, until when. A replica renews its
# rows by heartbeat; another takes a row whose lease expired, with epoch + 1; every
# append transaction checks its epoch here before it commits.
eventlog_leases = Table(
    "eventlog_leases",
    metadata,
    Column("partition", Integer, primary_key=True),
    Column("holder", Text),
    Column("epoch", BigInteger, nullable=False, server_default=text("0")),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)

# The live replicas (renewed by the same heartbeat), so each can aim for its fair share.
eventlog_replicas = Table(
    "eventlog_replicas",
    metadata,
    Column("id", Text, primary_key=True),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)
