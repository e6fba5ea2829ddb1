"""The door state's SQL: what each batch changed, written together at its end.

:func:`flush` writes what the batch changed, one statement per keyed table (two when rows
went away), driven by the state's table list (``state.TABLES``) and :data:`WRITTEN`
(``state_written``: each keyed table's typed row, and how it is written); then the logs
and credentials a batch adds, and the events an erasure removes. docs/adr/0021, 0141.

Reading the state is in ``state_load`` (:func:`load`, :func:`load_many`) and
``state_prefetch`` (:func:`prefetch`, :func:`reads_for`); both are imported from here too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, insert, true, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import tables as t
from chips_eventlog.state import TABLES, DoorState
from chips_eventlog.state_load import load, load_many
from chips_eventlog.state_prefetch import (
    Reads,
    find_messages,
    last_harness_message,
    prefetch,
    prefetch_files,
    reads_for,
)
from chips_eventlog.state_written import BY_NAME, WRITTEN, Row, Written, credential_row

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
        written = BY_NAME.get(table.name)
        if written is not None:
            await _write(conn, state, written, state.touched[table.name])
    if state.membership_log:
        await conn.execute(
            insert(t.membership_log), [{"workspace_id": ws, **row} for row in state.membership_log]
        )
    if state.credentials:
        await conn.execute(
            insert(t.credentials), [credential_row(ws, c, now) for c in state.credentials]
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
    present: list[Row] = []
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
