"""The door state's records: one frozen value per row the door decides against.

A workspace's :class:`~chips_eventlog.state.DoorState` holds these in its maps
(docs/adr/0021); ``state_load`` reads them from Postgres and ``state_store`` writes them
back. Pure values: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from chips_common.events import JsonObject
from chips_common.events.workspaces import PolicyRule


@dataclass(frozen=True)
class AgentFacts:
    """What an agent is beside its name (docs/adr/0070); its harness is ``owner_id``."""

    key: str
    state: str = "active"  # "active" | "archived"
    main: bool = False
    name_by: str | None = None
    forked_from: str | None = None
    made_for: str | None = None
    # The room it last left and why (docs/adr/0071): its words while free are held for
    # the next room; a room's unarchive, or its own, brings it back there.
    left_space_id: str | None = None
    left_why: str | None = None
    # The room archived with it (it was the room's only agent), opened again with it.
    archived_room: str | None = None
    # Why a fork's copy or a new agent was registered free; the registration answers it.
    why: str | None = None
    # Its face (docs/adr/0153): one emoji, or the attachment id of a picture.
    face: str | None = None

    def as_json(self) -> JsonObject:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class MembershipLogged(TypedDict):
    """A participant in or out of a room from a seq on (``membership_log``'s row)."""

    seq: int
    space_id: str
    participant_id: str
    added: bool


@dataclass(frozen=True)
class Ask:
    """A person's ask of a harness for an agent (``agent.fork`` / ``agent.asked``): the
    event's id, the room, when, and the agent that answered it (docs/adr/0071)."""

    id: str
    kind: str  # "fork" | "new"
    harness_id: str
    space_id: str
    at: datetime
    agent_id: str | None = None  # the agent to copy, for a fork
    answered_by: str | None = None


@dataclass(frozen=True)
class HeldWords:
    """What a free agent said (``message.held``), to post in the next room it joins."""

    seq: int
    at: str
    text: str
    upload_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Participant:
    id: str
    kind: str
    role: str
    owner_id: str | None
    name: str = ""
    joined_seq: int = 0
    capabilities: tuple[str, ...] = ()
    # A harness's autonomy: "off" (no dial) or the dial's level (docs/adr/0031).
    autonomy: str | None = None
    # Its owner's rules for the dial, in the order written (docs/adr/0130).
    rules: tuple[PolicyRule, ...] = ()
    # An agent's facts (kind "agent"): its harness is owner_id.
    agent: AgentFacts | None = None
    # A person an owner or admin deactivated (docs/adr/0125).
    active: bool = True


@dataclass(frozen=True)
class Invite:
    """An invite, or a pairing code for a further device of a person (docs/adr/0125).

    ``secret_hash`` is the SHA-256 of the secret its link carries; ``state`` is
    ``pending``, ``used`` or ``withdrawn``. ``used_seq`` is the seq of the event that used
    it, known for what this replica decided (the device paired in the same request).
    """

    id: str
    secret_hash: str
    name: str
    role: str
    invited_by: str
    created_at: datetime
    expires_at: datetime
    state: str = "pending"
    email: str | None = None
    participant_id: str | None = None
    used_by: str | None = None
    used_seq: int = 0


@dataclass(frozen=True)
class Device:
    """A credential of a participant's: a paired device, an API key, or a token."""

    id: str
    participant_id: str
    kind: str
    revoked: bool = False


@dataclass(frozen=True)
class Space:
    """A space's door state: what the rules about it are decided against."""

    id: str
    kind: str
    title: str | None
    created_by: str
    created_seq: int
    state: str = "open"
    title_held: bool = False
    home_of: str | None = None
    key: str | None = None
    key_shared: bool = False
    locked: bool = False
    asked_of: str | None = None
    parent_space_id: str | None = None
    root_message_id: str | None = None


@dataclass(frozen=True)
class Membership:
    standing: str
    since_seq: int


@dataclass(frozen=True)
class Run:
    id: str
    space_id: str
    harness_id: str
    state: str
    started_seq: int = 0
    # The agent whose turn it is, when one of the harness's agents started it (ADR 0070).
    agent_id: str | None = None


@dataclass(frozen=True)
class Card:
    kind: str
    id: str
    run_id: str
    space_id: str
    harness_id: str
    answerers: tuple[str, ...] = ()
    expires_at: datetime | None = None
    options: tuple[tuple[str, str], ...] = ()
    free_text: bool = False
    answered_by: str | None = None
    answer: str | None = None
    answered_seq: int | None = None
    # A question's default, taken when it expires, and whether several options are chosen
    # together (ADR 0131).
    default_value: str | None = None
    multiple: bool = False


@dataclass(frozen=True)
class Lane:
    id: str
    run_id: str | None
    from_space_id: str
    to_space_id: str
    opener_id: str
    working_run_id: str | None
    state: str
    opened_seq: int = 0


@dataclass(frozen=True)
class Message:
    """A posted message as the door needs it: where, by whom, and what kind."""

    message_id: str
    space_id: str
    author_id: str
    author_kind: str
    kind: str = "text"


@dataclass(frozen=True)
class Mark:
    """What was done to a message since it was posted (``message_marks``)."""

    space_id: str
    deleted_seq: int | None = None
    edited_seq: int | None = None
    pinned: bool = False


@dataclass(frozen=True)
class Said:
    """A message and what became of it."""

    message_id: str
    space_id: str
    author_id: str
    author_kind: str
    kind: str
    deleted: bool
    pinned: bool


@dataclass(frozen=True)
class Upload:
    """An upload the attachments service stored, as the door needs it to post it."""

    id: str
    uploader_id: str
    name: str
    mime_type: str
    kind: str
    byte_size: int
    sha256: str
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    thumbnail: bool = False
    space_id: str | None = None
    posted: bool = False


@dataclass(frozen=True)
class FileVersion:
    """A posted version of one name in a room."""

    attachment_id: str
    version: int
    sha256: str
    uploader_id: str
    posted_seq: int
