"""The changes a door rule returns, and the :class:`Decision` that carries them.

A rule reads the door state and returns :data:`Change` values; ``DoorState.apply``
applies them, and ``state_store.flush`` writes the rows they touched (docs/adr/0021).
Pure values: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chips_common.rules.addressing import Choice
from chips_common.rules.exchanges import Exchange, ExchangeSettings
from chips_eventlog.state_rows import (
    Ask,
    Card,
    HeldWords,
    Invite,
    Lane,
    Mark,
    Participant,
    Run,
    Space,
)


@dataclass(frozen=True)
class Rename:
    name: str


@dataclass(frozen=True)
class PutParticipant:
    participant: Participant


@dataclass(frozen=True)
class AddCredential:
    id: str
    participant_id: str
    token_hash: str | None
    kind: str = "token"
    name: str | None = None
    public_key: str | None = None
    user_agent: str | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class RevokeDevice:
    """One device or API key withdrawn (``device.revoked``)."""

    device_id: str


@dataclass(frozen=True)
class PutInvite:
    invite: Invite


@dataclass(frozen=True)
class RevokeCredentials:
    """Every live token of a participant withdrawn (``harness.disconnected``)."""

    participant_id: str


@dataclass(frozen=True)
class PutSpace:
    space: Space


@dataclass(frozen=True)
class AddMember:
    space_id: str
    participant_id: str
    standing: str
    seq: int


@dataclass(frozen=True)
class SetStanding:
    """A member's standing changed in place: a harness whose own place an agent took
    (``membership.replaced``) now stands behind its agents there (docs/adr/0071)."""

    space_id: str
    participant_id: str
    standing: str


@dataclass(frozen=True)
class PutAsk:
    ask: Ask


@dataclass(frozen=True)
class PutHeld:
    """An agent's held words as they stand now (none once posted)."""

    agent_id: str
    words: tuple[HeldWords, ...]


@dataclass(frozen=True)
class RemoveMember:
    space_id: str
    participant_id: str
    seq: int


@dataclass(frozen=True)
class AddOpener:
    space_id: str
    harness_id: str
    seq: int


@dataclass(frozen=True)
class PutChoice:
    space_id: str
    participant_id: str
    choice: Choice


@dataclass(frozen=True)
class PutRun:
    run: Run


@dataclass(frozen=True)
class PutCard:
    card: Card


@dataclass(frozen=True)
class PutLane:
    lane: Lane


@dataclass(frozen=True)
class PutMark:
    message_id: str
    mark: Mark


@dataclass(frozen=True)
class SetHidden:
    message_id: str
    participant_id: str
    space_id: str
    hidden: bool


@dataclass(frozen=True)
class SetReaction:
    message_id: str
    participant_id: str
    emoji: str
    space_id: str
    on: bool


@dataclass(frozen=True)
class PostFile:
    """An upload posted into a room at ``seq``, as ``version`` of its name."""

    upload_id: str
    space_id: str
    seq: int
    version: int
    replaces: str | None


@dataclass(frozen=True)
class EraseSpaces:
    """A space and its threads erased at ``seq`` (docs/adr/0010): their events before it,
    and every piece of door state about them, go."""

    space_id: str
    erased: tuple[str, ...]
    seq: int
    # The run.cancel its deletion sent first: they outlive the room (rules/stopping.py).
    spared: tuple[int, ...] = ()


@dataclass(frozen=True)
class PutExchange:
    """A room's exchange as the referee counts it now (rules/exchanges.py)."""

    space_id: str
    exchange: Exchange


@dataclass(frozen=True)
class SetReferee:
    """The workspace's referee settings (``workspace.referee_set``)."""

    settings: ExchangeSettings


Change = (
    Rename
    | PutParticipant
    | AddCredential
    | RevokeCredentials
    | RevokeDevice
    | PutInvite
    | PutSpace
    | AddMember
    | RemoveMember
    | SetStanding
    | PutAsk
    | PutHeld
    | AddOpener
    | PutChoice
    | PutRun
    | PutCard
    | PutLane
    | PutMark
    | SetHidden
    | SetReaction
    | PostFile
    | EraseSpaces
    | PutExchange
    | SetReferee
)


@dataclass
class Decision:
    """What a rule decided: the fields Chips fills in, and the door state it changes."""

    filled: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    # The id the event is logged with, when the rule must know it ahead (an ask of a
    # harness is named by its event's id); else the door gives it one.
    event_id: str | None = None
