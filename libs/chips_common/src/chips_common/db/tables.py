"""Every table, grouped by the service that writes it.

The eventlog is the only writer of the log and the door state; the projector owns the
read models (``rm_*``). Others read. Schema changes go through Alembic
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
    PrimaryKeyConstraint("credential_id", "key"),
)

# --- eventlog: the door state (DESIGN.md §2) -------------------------------------------

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
    # An agent's facts (key, state, main, name_by, forked_from, made_for), docs/adr/0070.
    Column("agent", JSONB),
)

credentials = Table(
    "credentials",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False, index=True),
    Column("token_hash", Text, nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
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
    # open | closed (archived): spec/spaces.md, Retitling and archiving.
    Column("state", Text, nullable=False, server_default="open"),
    # A person retitled it: a harness's door title no longer applies (spec/spaces.md).
    Column("title_held", Boolean, nullable=False, server_default=false()),
    # The harness whose home this is: the direct space it was handed when connected.
    Column("home_of", Text),
    # The key a harness opened or claimed it under: unique in the workspace (spec/spaces.md).
    Column("key", Text),
    Column("key_shared", Boolean, nullable=False, server_default=false()),
    # Its changes are locked: no person renames, archives or deletes it (space.lock_set).
    Column("locked", Boolean, nullable=False, server_default=false()),
    # The harness a person asked to make something of it, until it claims it.
    Column("asked_of", Text),
    # A thread's room and the message it grew from (spec/messages.md, Threads).
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
# retitles, archives and unarchives it as its own (spec/spaces.md, Who may do what).
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
# (spec/spaces.md: "Where your last message here went").
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

# --- projector: read models (DESIGN.md §5) ---------------------------------------------

projector_checkpoints = Table(
    "projector_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)

rm_spaces = Table(
    "rm_spaces",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("title", Text),
    Column("created_by", Text, nullable=False),
    Column("created_seq", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    Column("message_count", BigInteger, nullable=False),
    Column("state", Text, nullable=False, server_default="open"),
    Column("home_of", Text),
    # Who last archived or unarchived it, and when (GET /v1/harnesses/:id/spaces).
    Column("moved_by", Text),
    Column("moved_seq", BigInteger),
    Column("key", Text),
    Column("key_shared", Boolean, nullable=False, server_default=false()),
    Column("locked", Boolean, nullable=False, server_default=false()),
    Column("asked_of", Text),
    Column("parent_space_id", Text),
    Column("root_message_id", Text),
    # The room's lead (space.lead_set; docs/adr/0090).
    Column("lead_id", Text),
)

# Which harness opened (or claimed) which space by key: GET /v1/harnesses/:id/spaces.
rm_openers = Table(
    "rm_openers",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("space_id", "harness_id"),
    Index("rm_openers_harness", "workspace_id", "harness_id"),
)

rm_members = Table(
    "rm_members",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("standing", Text, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("space_id", "participant_id"),
    Index("rm_members_participant", "workspace_id", "participant_id"),
)

rm_messages = Table(
    "rm_messages",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("author_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("reply_to", Text),
    Column("ts", DateTime(timezone=True), nullable=False),
    # A card's fields, for every kind but text and system.
    Column("card", JSONB),
    Column("edited", Boolean, nullable=False, server_default=false()),
    Column("deleted", Boolean, nullable=False, server_default=false()),
    Column("pinned", Boolean, nullable=False, server_default=false()),
    # The run a harness's reply was said on (message.post's run_id), for the run's reads.
    Column("run_id", Text),
    # The agents whose turns heard the message while working (message.heard), in order.
    Column("heard_by", JSONB),
    Index("rm_messages_space_seq", "space_id", "seq"),
    Index("rm_messages_run", "workspace_id", "run_id", "seq"),
)

# The lines each person hid from their own room (message.hidden, until message.shown).
rm_hidden = Table(
    "rm_hidden",
    metadata,
    Column("participant_id", Text, nullable=False),
    Column("message_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    PrimaryKeyConstraint("participant_id", "message_id"),
)

# Feedback standing under each line: reactions not taken back, and every correction.
rm_feedback = Table(
    "rm_feedback",
    metadata,
    Column("id", Text, primary_key=True),  # the feedback event's id
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("message_id", Text, nullable=False, index=True),
    Column("from_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("emoji", Text),
    Column("note", Text),
    Column("reasons", JSONB),
    Column("seq", BigInteger, nullable=False),
)

# The directory: who is in the workspace, for names on screens and in room lines.
rm_participants = Table(
    "rm_participants",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("owner_id", Text),
    Column("joined_seq", BigInteger, nullable=False),
    Column("capabilities", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    # An agent's facts, as the door keeps them (docs/adr/0070).
    Column("agent", JSONB),
)

READ_MODELS = (
    rm_spaces,
    rm_members,
    rm_messages,
    rm_participants,
    rm_openers,
    rm_hidden,
    rm_feedback,
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
