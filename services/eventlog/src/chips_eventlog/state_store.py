"""The door state's SQL: what each batch changed, written together at its end.

:func:`flush` writes what the batch changed, one statement per keyed table (two when rows
went away), driven by the state's table list (``state.TABLES``) and :data:`WRITTEN`, which
says for each keyed table how its rows are written; then the logs and credentials a batch
adds, and the events an erasure removes. docs/adr/0021, docs/adr/0141.

Reading the state is in ``state_load`` (:func:`load`, :func:`load_many`) and
``state_prefetch`` (:func:`prefetch`, :func:`reads_for`); both are imported from here too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, delete, insert, true, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.db.referee_tables import door_exchanges
from chips_common.rules.exchanges import exchange_json, settings_json
from chips_eventlog.state import TABLES, AddCredential, DoorState, Invite
from chips_eventlog.state_load import load, load_many
from chips_eventlog.state_prefetch import (
    Reads,
    find_messages,
    last_harness_message,
    prefetch,
    prefetch_files,
    reads_for,
)

__all__ = [
    "WRITTEN",
    "Reads",
    "Written",
    "erase_events",
    "find_messages",
    "flush",
    "last_harness_message",
    "load",
    "load_many",
    "prefetch",
    "prefetch_files",
    "reads_for",
    "unflushed",
]

RowOf = Callable[[DoorState, Any], dict[str, Any] | None]


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


def unflushed(state: DoorState) -> bool:
    """Whether the batch changed any door-state row (:func:`flush` has something to write)."""
    return bool(
        state.renamed
        or any(state.touched.values())
        or state.membership_log
        or state.credentials
        or state.revoked
        or state.posted_files
        or state.erasures
    )


async def flush(conn: AsyncConnection, state: DoorState, now: datetime) -> None:
    """Write every door-state row the batch changed: the rows as they stand now."""
    ws = state.workspace_id
    if state.renamed:
        await conn.execute(
            update(t.workspaces).where(t.workspaces.c.id == ws).values(name=state.name)
        )
    for table in TABLES:
        written = _BY_NAME.get(table.name)
        if written is not None:
            await _write(conn, state, written, state.touched[table.name])
    if state.membership_log:
        await conn.execute(
            insert(t.membership_log), [{"workspace_id": ws, **row} for row in state.membership_log]
        )
    if state.credentials:
        await conn.execute(
            insert(t.credentials), [_credential_row(ws, c, now) for c in state.credentials]
        )
    if state.revoked:  # after the inserts: a harness may join and go in one batch
        cr = t.credentials.c
        await conn.execute(
            update(t.credentials)
            .where(
                and_(
                    cr.workspace_id == ws,
                    cr.participant_id.in_([r.participant_id for r in state.revoked]),
                    cr.revoked_at.is_(None),
                )
            )
            .values(revoked_at=now)
        )
    withdrawn = [d for d in state.touched["devices"] if state.devices[d].revoked]
    if withdrawn:  # after the inserts: a device may be paired and revoked in one batch
        cr = t.credentials.c
        await conn.execute(
            update(t.credentials)
            .where(and_(cr.id.in_(sorted(withdrawn)), cr.revoked_at.is_(None)))
            .values(revoked_at=now)
        )
    if state.posted_files:
        await conn.execute(
            insert(t.posted_files),
            [
                {
                    "upload_id": f.upload_id,
                    "workspace_id": ws,
                    "space_id": f.space_id,
                    "posted_seq": f.seq,
                    "version": f.version,
                    "replaces": f.replaces,
                }
                for f in state.posted_files
            ],
        )
    for erasure in state.erasures:
        await erase_events(conn, ws, erasure.erased, erasure.seq, erasure.spared)


async def _write(conn: AsyncConnection, state: DoorState, written: Written, keys: set[Any]) -> None:
    """Upsert the touched rows that stand, in one statement; delete the ones that went."""
    if not keys:
        return
    ws = state.workspace_id
    present: list[dict[str, Any]] = []
    gone: list[Any] = []
    for key in sorted(keys, key=repr):
        row = written.row(state, key)
        if row is None:
            columns = key if isinstance(key, tuple) else (key,)
            gone.append((ws, *columns) if written.scoped else columns)
        else:
            present.append(row)
    key_columns = list(written.key_columns)
    table = written.table
    if gone:
        await conn.execute(
            delete(table).where(tuple_(*[table.c[c] for c in key_columns]).in_(gone))
        )
    if present:
        stmt = pg_insert(table).values(present)
        others = [c for c in present[0] if c not in key_columns]
        if others:
            stmt = stmt.on_conflict_do_update(
                index_elements=key_columns, set_={c: stmt.excluded[c] for c in others}
            )
        else:
            stmt = stmt.on_conflict_do_nothing()
        await conn.execute(stmt)


# Events of an erased room that stay in the log: spend (counts and a cost), and an agent's
# registration (a participant of the workspace, its name and key, no words of the room),
# without which a rebuild from the log would lose the agent (docs/adr/0010, 0154).
OUTLIVE_ERASURE = ("usage", "agent.registered")


async def erase_events(
    conn: AsyncConnection, ws: str, erased: tuple[str, ...], seq: int, spared: tuple[int, ...] = ()
) -> None:
    """The events of erased spaces before the erasure, their outbox rows, and the erasure's
    own row for the purge (docs/adr/0010). ``spared`` (the run.cancel the deletion sent
    first) stay."""
    gone = await conn.execute(
        delete(t.events)
        .where(
            and_(
                t.events.c.workspace_id == ws,
                t.events.c.space_id.in_(erased),
                t.events.c.seq < seq,
                # Spend already recorded stays on the harness's account (docs/product/spaces.md):
                # a usage report carries counts and a cost, no words (ADR 0010); an agent
                # registered into the room outlives it, as any participant (ADR 0154).
                t.events.c.type.notin_(OUTLIVE_ERASURE),
                t.events.c.seq.notin_(spared) if spared else true(),
            )
        )
        .returning(t.events.c.seq)
    )
    seqs = [row.seq for row in gone]
    if seqs:
        await conn.execute(
            delete(t.outbox).where(and_(t.outbox.c.workspace_id == ws, t.outbox.c.seq.in_(seqs)))
        )
    await conn.execute(insert(t.erasures).values(workspace_id=ws, seq=seq))


# --- each keyed table's row as it stands, or None when it went ----------------------------


def _participant_row(s: DoorState, key: str) -> dict[str, Any] | None:
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


def _space_row(s: DoorState, key: str) -> dict[str, Any] | None:
    space = s.spaces.get(key)
    return None if space is None else {"workspace_id": s.workspace_id, **space.__dict__}


def _membership_row(s: DoorState, key: tuple[str, str]) -> dict[str, Any] | None:
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


def _opener_row(s: DoorState, key: tuple[str, str]) -> dict[str, Any] | None:
    if key not in s.openers:
        return None
    return {
        "space_id": key[0],
        "harness_id": key[1],
        "workspace_id": s.workspace_id,
        "since_seq": s.openers[key],
    }


def _choice_row(s: DoorState, key: tuple[str, str]) -> dict[str, Any] | None:
    choice = s.choices.get(key)
    if choice is None:
        return None
    return {
        "space_id": key[0],
        "participant_id": key[1],
        "kind": choice.kind,
        "ids": list(choice.ids),
    }


def _run_row(s: DoorState, key: str) -> dict[str, Any] | None:
    run = s.runs.get(key)
    return None if run is None else {"workspace_id": s.workspace_id, **run.__dict__}


def _card_row(s: DoorState, key: tuple[str, str]) -> dict[str, Any] | None:
    c = s.cards.get(key)
    if c is None:
        return None
    return {
        "workspace_id": s.workspace_id,
        **c.__dict__,
        "answerers": list(c.answerers),
        "options": [list(o) for o in c.options],
    }


def _lane_row(s: DoorState, key: str) -> dict[str, Any] | None:
    lane = s.lanes.get(key)
    return None if lane is None else {"workspace_id": s.workspace_id, **lane.__dict__}


def _mark_row(s: DoorState, key: str) -> dict[str, Any] | None:
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


def _hidden_row(s: DoorState, key: tuple[str, str]) -> dict[str, Any] | None:
    if key not in s.hidden:
        return None
    return {"message_id": key[0], "participant_id": key[1], "workspace_id": s.workspace_id}


def _reaction_row(s: DoorState, key: tuple[str, str, str]) -> dict[str, Any] | None:
    if key not in s.reactions:
        return None
    return {
        "message_id": key[0],
        "participant_id": key[1],
        "emoji": key[2],
        "workspace_id": s.workspace_id,
    }


def _ask_row(s: DoorState, key: str) -> dict[str, Any] | None:
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


def _held_row(s: DoorState, key: str) -> dict[str, Any] | None:
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


def _exchange_row(s: DoorState, key: str) -> dict[str, Any] | None:
    ws = s.workspace_id
    if key == "":
        return {"workspace_id": ws, "space_id": "", "body": settings_json(s.referee)}
    exchange = s.exchanges.get(key)
    if exchange is None:
        return None
    return {"workspace_id": ws, "space_id": key, "body": exchange_json(exchange)}


def _invite_row(s: DoorState, key: str) -> dict[str, Any] | None:
    i: Invite | None = s.invites.get(key)
    if i is None:
        return None
    row = {k: v for k, v in i.__dict__.items() if k != "used_seq"}
    return {"workspace_id": s.workspace_id, **row}


def _credential_row(ws: str, c: AddCredential, now: datetime) -> dict[str, Any]:
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
_BY_NAME = {written.table.name: written for written in WRITTEN}
