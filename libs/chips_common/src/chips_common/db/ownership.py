"""Which service owns which table, and the reads of another's tables we allow.

Every table has one owning service, the only one whose code writes it (docs/architecture/
code-style.md, Layout shows the architecture). A service reads another's table only where
it is listed in ``READS`` with the reason; anything else goes through an event or an HTTP
read of the owner. ``libs/chips_common/tests/test_layering.py`` holds the code to this:
it fails on a table with no owner, on a write by anyone but the owner, and on a read that
is not listed here. Data only: this module imports nothing.

The migrations stay one history (``db/migrations``), whoever owns the table they change.
"""

from __future__ import annotations

EVENTLOG = "eventlog"
PROJECTOR = "projector"
SEARCH = "search"
ATTACHMENTS = "attachments"
REFEREE = "referee"
GATEWAY = "gateway"
NOTIFIER = "notifier"

SERVICES = (EVENTLOG, PROJECTOR, SEARCH, ATTACHMENTS, REFEREE, GATEWAY, NOTIFIER)

# The table, and the one service that writes it.
OWNER: dict[str, str] = {
    # The log of record, its outbox and keys, and who holds which partition.
    "events": EVENTLOG,
    "outbox": EVENTLOG,
    "erasures": EVENTLOG,
    "idempotency": EVENTLOG,
    "eventlog_leases": EVENTLOG,
    "eventlog_replicas": EVENTLOG,
    # The door state: what the rules at the door decide from (docs/architecture/design.md §2).
    "workspaces": EVENTLOG,
    "participants": EVENTLOG,
    "credentials": EVENTLOG,
    "spaces": EVENTLOG,
    "space_openers": EVENTLOG,
    "memberships": EVENTLOG,
    "membership_log": EVENTLOG,
    "agent_asks": EVENTLOG,
    "invites": EVENTLOG,
    "held_words": EVENTLOG,
    "address_choices": EVENTLOG,
    "message_marks": EVENTLOG,
    "message_hidden": EVENTLOG,
    "posted_files": EVENTLOG,
    "reactions": EVENTLOG,
    "runs": EVENTLOG,
    "run_cards": EVENTLOG,
    "lanes": EVENTLOG,
    "door_exchanges": EVENTLOG,
    # A device's newest signed time, against replays (docs/adr/0125).
    "device_signatures": GATEWAY,
    # A passkey's credential id, COSE key and count (docs/adr/0145).
    "passkeys": GATEWAY,
    # The read models (docs/architecture/design.md §5).
    "projector_checkpoints": PROJECTOR,
    "rm_spaces": PROJECTOR,
    "rm_openers": PROJECTOR,
    "rm_members": PROJECTOR,
    "rm_participants": PROJECTOR,
    "rm_messages": PROJECTOR,
    "rm_hidden": PROJECTOR,
    "rm_feedback": PROJECTOR,
    "rm_runs": PROJECTOR,
    "rm_steps": PROJECTOR,
    "rm_cards": PROJECTOR,
    "rm_usage": PROJECTOR,
    "rm_lanes": PROJECTOR,
    # The search index (docs/architecture/search.md).
    "search_docs": SEARCH,
    "search_threads": SEARCH,
    "search_checkpoints": SEARCH,
    # Uploads and their metadata (docs/architecture/attachments.md).
    "attachments": ATTACHMENTS,
    "attachments_checkpoints": ATTACHMENTS,
    # The referee's clocks (docs/architecture/referee.md).
    "referee_checkpoints": REFEREE,
    "referee_rooms": REFEREE,
    "agents_to_give": REFEREE,
    # What waits for a person, and its delivery (docs/adr/0132).
    "notifier_checkpoints": NOTIFIER,
    "notifications": NOTIFIER,
    "notifier_keys": NOTIFIER,
    "push_gone": NOTIFIER,
    # A person's own notification settings and what they read, set over the API: no
    # event of a workspace's log (docs/adr/0132).
    "notification_prefs": GATEWAY,
    "notification_mutes": GATEWAY,
    "push_subscriptions": GATEWAY,
    "notification_reads": GATEWAY,
}

# Every service may read the log itself and its head: it is the source of everything else.
READ_BY_ALL = frozenset({"events", "workspaces"})

# A write to a table the service does not own, and the decision that allows it.
WRITES: dict[tuple[str, str], str] = {}

# A read of a table the service does not own, and why it is allowed.
READS: dict[tuple[str, str], str] = {
    (EVENTLOG, "attachments"): "ADR 0043: the door's file rule reads the uploads a post names",
    # The gateway authenticates and guards every read from the door state, as of now
    # (ADR 0039), rather than from a read model that may lag.
    (GATEWAY, "credentials"): "who a token is (ADR 0039); a person's devices (ADR 0125)",
    (GATEWAY, "invites"): "what an invite link is for before it is used; open invites (ADR 0125)",
    (GATEWAY, "participants"): "who a caller is, and the directory (ADR 0039)",
    (GATEWAY, "memberships"): "the read guard: membership as of now (ADR 0039)",
    (GATEWAY, "membership_log"): "membership as of a seq, for replay scope (ADR 0039)",
    (GATEWAY, "spaces"): "a room's kind, parent and state for the read guard (ADR 0039)",
    (GATEWAY, "held_words"): "how many of a free agent's words wait, never the words (ADR 0071)",
    (GATEWAY, "message_marks"): "a file's posting message taken back (the room's files)",
    (GATEWAY, "message_hidden"): "a search leaves out what the searcher hid (ADR 0066)",
    # The gateway answers HTTP reads from the read models (docs/architecture/design.md §5).
    (GATEWAY, "projector_checkpoints"): "read-your-writes: wait for after_seq",
    (GATEWAY, "rm_spaces"): "the space list",
    (GATEWAY, "rm_openers"): "a harness's spaces by key",
    (GATEWAY, "rm_members"): "who is in a room",
    (GATEWAY, "rm_participants"): "the directory",
    (GATEWAY, "rm_messages"): "a room's lines",
    (GATEWAY, "rm_hidden"): "a person's hidden lines",
    (GATEWAY, "rm_feedback"): "feedback on a line",
    (GATEWAY, "rm_runs"): "runs",
    (GATEWAY, "rm_steps"): "a run's steps",
    (GATEWAY, "rm_cards"): "a run's cards",
    # The referee's clock expires the questions still open past their time (ADR 0131).
    (REFEREE, "run_cards"): "ADR 0131: questions past their expires_at, as the door keeps them",
    (GATEWAY, "rm_usage"): "a run's usage",
    (GATEWAY, "rm_lanes"): "lanes",
    (GATEWAY, "attachments"): "ADR 0043: the room's files and signed links",
    (GATEWAY, "posted_files"): "ADR 0140: the room, seq and version of the room's files",
    # GET /v1/search is answered by the gateway from the index (ADR 0027).
    (GATEWAY, "search_docs"): "ADR 0027",
    (GATEWAY, "search_checkpoints"): "ADR 0027: a search waits for the index's seq (ADR 0111)",
    # The attachments service checks a fetch against the room it was posted to.
    (ATTACHMENTS, "spaces"): "a fetch's room still stands (ADR 0043)",
    (ATTACHMENTS, "memberships"): "a fetch's caller is in the room (ADR 0043)",
    (ATTACHMENTS, "message_marks"): "a message taken back takes its files (ADR 0043)",
    (ATTACHMENTS, "participants"): "ADR 0153: a picture that is an agent's face, and whose",
    (ATTACHMENTS, "posted_files"): "ADR 0140: the room a fetch's file was posted to; a room's"
    " erasure finds the files posted there; ADR 0137: the posted voice notes to hear",
    # The notifier decides who is told from the door state as of each event (ADR 0132).
    (NOTIFIER, "participants"): "a person is told, a harness's owner decides (ADR 0132)",
    (NOTIFIER, "membership_log"): "who was in the room as of the event (ADR 0132)",
    (NOTIFIER, "spaces"): "a room's name, kind and thread parent (ADR 0132)",
    (NOTIFIER, "invites"): "the address a person was invited at, for email (ADR 0132)",
    (NOTIFIER, "notification_prefs"): "how a person is told: channels, delay (ADR 0132)",
    (NOTIFIER, "notification_mutes"): "a muted room is told only what only they answer",
    (NOTIFIER, "push_subscriptions"): "where a person's browsers are pushed to (ADR 0132)",
    (NOTIFIER, "notification_reads"): "a notification read in the app is not mailed",
    # GET /v1/notifications is answered by the gateway from the notifier's rows (ADR 0132).
    (GATEWAY, "notifications"): "ADR 0132: the inbox",
    (GATEWAY, "notifier_checkpoints"): "ADR 0132: the inbox waits for after_seq",
    (GATEWAY, "notifier_keys"): "ADR 0132: the VAPID public key a browser subscribes with",
}
