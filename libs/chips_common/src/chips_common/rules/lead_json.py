"""What the referee's rules about who leads (``rules.lead``) keep and write, as JSON.

A room's row (``RoomRow``), as the referee keeps it in Postgres (JSONB), and the
``room.working`` or ``room.idle`` it writes (``TellingJson``): ``TypedDict``s, so what is
kept and written is checked by mypy and costs nothing at run time (docs/adr/0150).
"""

from __future__ import annotations

from typing import Required, TypedDict

from chips_common.events.wire import RestingJson, WorkingJson


class TurnRow(TypedDict):
    """A ``rules.lead.Turn`` as a room's row keeps it."""

    run_id: str
    agent_id: str
    since: str
    heard_at: str
    heard_seq: int
    last_step: str | None


class WordsRow(TypedDict):
    """``rules.lead.Words`` as a room's row keeps them."""

    message_id: str
    seq: int
    sender: str
    at: str


class RoomRow(TypedDict, total=False):
    """A ``rules.lead.Room`` as the referee's row keeps it (JSONB); a row written before a field
    was kept lacks it."""

    lead: str | None
    agents: dict[str, str]
    turns: list[TurnRow]
    words: WordsRow | None
    handed: str | None
    paused: str | None
    quiet_since: str | None
    asked_alone: list[str]
    told: list[str]
    changed: int


class TellingJson(TypedDict, total=False):
    """A ``room.working`` or ``room.idle`` as the referee writes it, without its room."""

    type: Required[str]
    working: list[WorkingJson]
    since: str
    idle: list[RestingJson]
