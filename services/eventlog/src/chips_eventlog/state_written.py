"""Each keyed door-state table's row as ``state_store`` writes it: one ``TypedDict`` a
table, the row of a touched key as it stands (None when it went), and :data:`WRITTEN`,
how each keyed table's rows are written (docs/adr/0150; ``test_state_rows_typed.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import Table

from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.db.referee_tables import door_exchanges
from chips_common.events import JsonObject
from chips_common.rules.exchanges import ExchangeJson, SettingsJson, exchange_json, settings_json
from chips_eventlog.state import AddCredential, DoorState, Invite

# --- each keyed table's row, as it is written: one TypedDict a table ----------------------


class ParticipantRow(TypedDict):
    id: str
    workspace_id: str
    kind: str
    name: str
    role: str
    owner_id: str | None
    joined_seq: int
    capabilities: list[str]
    autonomy: str | None
    rules: list[JsonObject]
    agent: JsonObject | None
    active: bool


class SpaceRow(TypedDict):
    workspace_id: str
    id: str
    kind: str
    title: str | None
    created_by: str
    created_seq: int
    state: str
    title_held: bool
    home_of: str | None
    key: str | None
    key_shared: bool
    locked: bool
    asked_of: str | None
    parent_space_id: str | None
    root_message_id: str | None


class MembershipRow(TypedDict):
    space_id: str
    participant_id: str
    workspace_id: str
    standing: str
    since_seq: int


class OpenerRow(TypedDict):
    space_id: str
    harness_id: str
    workspace_id: str
    since_seq: int


class ChoiceRow(TypedDict):
    space_id: str
    participant_id: str
    kind: str
    ids: list[str]


class RunRow(TypedDict):
    workspace_id: str
    id: str
    space_id: str
    harness_id: str
    state: str
    started_seq: int
    agent_id: str | None


class CardRow(TypedDict):
    workspace_id: str
    kind: str
    id: str
    run_id: str
    space_id: str
    harness_id: str
    answerers: list[str]
    expires_at: datetime | None
    options: list[list[str]]
    free_text: bool
    answered_by: str | None
    answer: str | None
    answered_seq: int | None
    default_value: str | None
    multiple: bool


class LaneRow(TypedDict):
    workspace_id: str
    id: str
    run_id: str | None
    from_space_id: str
    to_space_id: str
    opener_id: str
    working_run_id: str | None
    state: str
    opened_seq: int


class MarkRow(TypedDict):
    message_id: str
    workspace_id: str
    space_id: str
    deleted_seq: int | None
    edited_seq: int | None
    pinned: bool


class HiddenRow(TypedDict):
    message_id: str
    participant_id: str
    workspace_id: str


class ReactionRow(TypedDict):
    message_id: str
    participant_id: str
    emoji: str
    workspace_id: str


class AskRow(TypedDict):
    workspace_id: str
    id: str
    kind: str
    harness_id: str
    space_id: str
    asked_at: datetime
    agent_id: str | None
    answered_by: str | None


class HeldWordsJson(TypedDict):
    seq: int
    at: str
    text: str
    upload_ids: list[str]


class HeldRow(TypedDict):
    workspace_id: str
    agent_id: str
    words: list[HeldWordsJson]


class ExchangeRow(TypedDict):
    workspace_id: str
    space_id: str
    body: ExchangeJson | SettingsJson


class InviteRow(TypedDict):
    workspace_id: str
    id: str
    secret_hash: str
    name: str
    role: str
    invited_by: str
    created_at: datetime
    expires_at: datetime
    state: str
    email: str | None
    participant_id: str | None
    used_by: str | None


class CredentialRow(TypedDict):
    id: str
    workspace_id: str
    participant_id: str
    token_hash: str | None
    created_at: datetime
    kind: str
    name: str | None
    public_key: str | None
    user_agent: str | None
    expires_at: datetime | None


Row = (
    ParticipantRow
    | SpaceRow
    | MembershipRow
    | OpenerRow
    | ChoiceRow
    | RunRow
    | CardRow
    | LaneRow
    | MarkRow
    | HiddenRow
    | ReactionRow
    | AskRow
    | HeldRow
    | ExchangeRow
    | InviteRow
)
RowOf = Callable[[DoorState, Any], Row | None]


@dataclass(frozen=True)
class Written:
    """How a keyed door-state table's touched rows are written.

    ``row`` gives the row of a touched key (the key of the state's map) as it stands now,
    or None when it went. A key whose columns begin with ``workspace_id`` is scoped to
    the workspace: the state's key is the rest of it.
    """

    table: Table
    key_columns: tuple[str, ...]
    row: RowOf

    @property
    def scoped(self) -> bool:
        return self.key_columns[0] == "workspace_id"


# --- each keyed table's row as it stands, or None when it went ----------------------------


def _participant_row(s: DoorState, key: str) -> ParticipantRow | None:
    p = s.participants.get(key)
    if p is None:
        return None
    return {
        "id": p.id,
        "workspace_id": s.workspace_id,
        "kind": p.kind,
        "name": p.name,
        "role": p.role,
        "owner_id": p.owner_id,
        "joined_seq": p.joined_seq,
        "capabilities": list(p.capabilities),
        "autonomy": p.autonomy,
        "rules": [r.model_dump(mode="json", exclude_none=True) for r in p.rules],
        "agent": p.agent.as_json() if p.agent is not None else None,
        "active": p.active,
    }


def _space_row(s: DoorState, key: str) -> SpaceRow | None:
    space = s.spaces.get(key)
    if space is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        "id": space.id,
        "kind": space.kind,
        "title": space.title,
        "created_by": space.created_by,
        "created_seq": space.created_seq,
        "state": space.state,
        "title_held": space.title_held,
        "home_of": space.home_of,
        "key": space.key,
        "key_shared": space.key_shared,
        "locked": space.locked,
        "asked_of": space.asked_of,
        "parent_space_id": space.parent_space_id,
        "root_message_id": space.root_message_id,
    }


def _membership_row(s: DoorState, key: tuple[str, str]) -> MembershipRow | None:
    m = s.members.get(key[0], {}).get(key[1])
    if m is None:
        return None
    return {
        "space_id": key[0],
        "participant_id": key[1],
        "workspace_id": s.workspace_id,
        "standing": m.standing,
        "since_seq": m.since_seq,
    }


def _opener_row(s: DoorState, key: tuple[str, str]) -> OpenerRow | None:
    if key not in s.openers:
        return None
    return {
        "space_id": key[0],
        "harness_id": key[1],
        "workspace_id": s.workspace_id,
        "since_seq": s.openers[key],
    }


def _choice_row(s: DoorState, key: tuple[str, str]) -> ChoiceRow | None:
    choice = s.choices.get(key)
    if choice is None:
        return None
    return {
        "space_id": key[0],
        "participant_id": key[1],
        "kind": choice.kind,
        "ids": list(choice.ids),
    }


def _run_row(s: DoorState, key: str) -> RunRow | None:
    run = s.runs.get(key)
    if run is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        "id": run.id,
        "space_id": run.space_id,
        "harness_id": run.harness_id,
        "state": run.state,
        "started_seq": run.started_seq,
        "agent_id": run.agent_id,
    }


def _card_row(s: DoorState, key: tuple[str, str]) -> CardRow | None:
    c = s.cards.get(key)
    if c is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        "kind": c.kind,
        "id": c.id,
        "run_id": c.run_id,
        "space_id": c.space_id,
        "harness_id": c.harness_id,
        "answerers": list(c.answerers),
        "expires_at": c.expires_at,
        "options": [list(o) for o in c.options],
        "free_text": c.free_text,
        "answered_by": c.answered_by,
        "answer": c.answer,
        "answered_seq": c.answered_seq,
        "default_value": c.default_value,
        "multiple": c.multiple,
    }


def _lane_row(s: DoorState, key: str) -> LaneRow | None:
    lane = s.lanes.get(key)
    if lane is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        "id": lane.id,
        "run_id": lane.run_id,
        "from_space_id": lane.from_space_id,
        "to_space_id": lane.to_space_id,
        "opener_id": lane.opener_id,
        "working_run_id": lane.working_run_id,
        "state": lane.state,
        "opened_seq": lane.opened_seq,
    }


def _mark_row(s: DoorState, key: str) -> MarkRow | None:
    mark = s.marks.get(key)
    if mark is None:
        return None
    return {
        "message_id": key,
        "workspace_id": s.workspace_id,
        "space_id": mark.space_id,
        "deleted_seq": mark.deleted_seq,
        "edited_seq": mark.edited_seq,
        "pinned": mark.pinned,
    }


def _hidden_row(s: DoorState, key: tuple[str, str]) -> HiddenRow | None:
    if key not in s.hidden:
        return None
    return {"message_id": key[0], "participant_id": key[1], "workspace_id": s.workspace_id}


def _reaction_row(s: DoorState, key: tuple[str, str, str]) -> ReactionRow | None:
    if key not in s.reactions:
        return None
    return {
        "message_id": key[0],
        "participant_id": key[1],
        "emoji": key[2],
        "workspace_id": s.workspace_id,
    }


def _ask_row(s: DoorState, key: str) -> AskRow | None:
    a = s.asks.get(key)
    if a is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        "id": a.id,
        "kind": a.kind,
        "harness_id": a.harness_id,
        "space_id": a.space_id,
        "asked_at": a.at,
        "agent_id": a.agent_id,
        "answered_by": a.answered_by,
    }


def _held_row(s: DoorState, key: str) -> HeldRow | None:
    words = s.held.get(key)
    if words is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        "agent_id": key,
        "words": [
            {"seq": w.seq, "at": w.at, "text": w.text, "upload_ids": list(w.upload_ids)}
            for w in words
        ],
    }


def _exchange_row(s: DoorState, key: str) -> ExchangeRow | None:
    ws = s.workspace_id
    if key == "":
        return {"workspace_id": ws, "space_id": "", "body": settings_json(s.referee)}
    exchange = s.exchanges.get(key)
    if exchange is None:
        return None
    return {"workspace_id": ws, "space_id": key, "body": exchange_json(exchange)}


def _invite_row(s: DoorState, key: str) -> InviteRow | None:
    i: Invite | None = s.invites.get(key)
    if i is None:
        return None
    return {  # all but ``used_seq``, which only this replica's decisions know
        "workspace_id": s.workspace_id,
        "id": i.id,
        "secret_hash": i.secret_hash,
        "name": i.name,
        "role": i.role,
        "invited_by": i.invited_by,
        "created_at": i.created_at,
        "expires_at": i.expires_at,
        "state": i.state,
        "email": i.email,
        "participant_id": i.participant_id,
        "used_by": i.used_by,
    }


def credential_row(ws: str, c: AddCredential, now: datetime) -> CredentialRow:
    return {
        "id": c.id,
        "workspace_id": ws,
        "participant_id": c.participant_id,
        "token_hash": c.token_hash,
        "created_at": now,
        "kind": c.kind,
        "name": c.name,
        "public_key": c.public_key,
        "user_agent": c.user_agent,
        "expires_at": c.expires_at,
    }


# How each keyed table of ``state.TABLES`` is written; ``devices`` is not among them: a
# device is written as its credential row, inserted or withdrawn after the inserts.
WRITTEN: tuple[Written, ...] = (
    Written(t.participants, ("id",), _participant_row),
    Written(t.spaces, ("id",), _space_row),
    Written(t.memberships, ("space_id", "participant_id"), _membership_row),
    Written(t.space_openers, ("space_id", "harness_id"), _opener_row),
    Written(t.address_choices, ("space_id", "participant_id"), _choice_row),
    Written(rt.runs, ("workspace_id", "id"), _run_row),
    Written(rt.run_cards, ("workspace_id", "kind", "id"), _card_row),
    Written(rt.lanes, ("workspace_id", "id"), _lane_row),
    Written(t.message_marks, ("message_id",), _mark_row),
    Written(t.message_hidden, ("message_id", "participant_id"), _hidden_row),
    Written(t.reactions, ("message_id", "participant_id", "emoji"), _reaction_row),
    Written(t.agent_asks, ("workspace_id", "id"), _ask_row),
    Written(t.held_words, ("workspace_id", "agent_id"), _held_row),
    Written(door_exchanges, ("workspace_id", "space_id"), _exchange_row),
    Written(t.invites, ("workspace_id", "id"), _invite_row),
)
BY_NAME = {written.table.name: written for written in WRITTEN}
