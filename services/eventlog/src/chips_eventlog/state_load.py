"""Read a workspace's door state from Postgres (docs/adr/0021).

:func:`load_many` reads every door-state table once for a chunk of workspaces when this
replica takes a partition's lease; :func:`load` reads one, for a batch whose workspace is
not read yet. ``state_store`` writes what each batch changed.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text, and_, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.db.referee_tables import door_exchanges
from chips_common.events.workspaces import PolicyRule
from chips_common.rules.addressing import Choice
from chips_common.rules.exchanges import ExchangeSettings, exchange_from_json
from chips_eventlog.state import (
    AgentFacts,
    Ask,
    Card,
    Device,
    DoorState,
    HeldWords,
    Invite,
    Lane,
    Mark,
    Membership,
    Participant,
    Run,
    Space,
)


async def load(conn: AsyncConnection, workspace_id: str) -> DoorState:
    """Everything the door decides a workspace's requests against."""
    return (await load_many(conn, [workspace_id]))[workspace_id]


def _among(column: Any, ids: list[str]) -> Any:
    """``column = ANY(:ids)``: one parameter, one plan, whatever the chunk's size; for
    one workspace (a batch reading its own) the plain ``column = :id``, planned as such."""
    if len(ids) == 1:
        return column == ids[0]
    return column == any_(bindparam(None, ids, type_=ARRAY(Text)))


async def load_many(conn: AsyncConnection, workspace_ids: list[str]) -> dict[str, DoorState]:
    """The door state of each of these workspaces, reading each table once for them all.

    A partition taken over reads its workspaces in chunks of a few hundred (docs/adr/0021);
    each row goes to its workspace's state. The head seq is read first: a commit landing
    during the reads leaves the state's seq behind the head row, and the first batch of
    the workspace reads it again. A workspace with no row gets an empty state at seq 0.
    """
    ids = list(dict.fromkeys(workspace_ids))
    if not ids:
        return {}
    w = t.workspaces.c
    heads = {
        row.id: row
        for row in await conn.execute(select(w.id, w.head_seq, w.name).where(_among(w.id, ids)))
    }
    states = {
        ws: DoorState(ws, heads[ws].head_seq, heads[ws].name) if ws in heads else DoorState(ws)
        for ws in ids
    }
    row: Any
    p = t.participants.c
    for row in await conn.execute(
        select(
            p.workspace_id,
            p.id,
            p.kind,
            p.role,
            p.owner_id,
            p.name,
            p.joined_seq,
            p.capabilities,
            p.autonomy,
            p.agent,
            p.rules,
            p.active,
        ).where(_among(p.workspace_id, ids))
    ):
        states[row.workspace_id].participants[row.id] = Participant(
            row.id,
            row.kind,
            row.role,
            row.owner_id,
            row.name,
            row.joined_seq,
            tuple(row.capabilities or ()),
            row.autonomy,
            tuple(PolicyRule.model_validate(r) for r in row.rules or ()),
            AgentFacts(**row.agent) if row.agent else None,
            row.active,
        )
    s = t.spaces.c
    for row in await conn.execute(select(t.spaces).where(_among(s.workspace_id, ids))):
        state = states[row.workspace_id]
        space = Space(
            row.id,
            row.kind,
            row.title,
            row.created_by,
            row.created_seq,
            row.state,
            row.title_held,
            row.home_of,
            row.key,
            row.key_shared,
            row.locked,
            row.asked_of,
            row.parent_space_id,
            row.root_message_id,
        )
        state.spaces[space.id] = space
        if space.key is not None:
            state.by_key[space.key] = space.id
        if space.home_of is not None:
            state.homes[space.home_of] = space.id
        if space.root_message_id is not None:
            state.roots[space.root_message_id] = space.id
    m = t.memberships.c
    for row in await conn.execute(
        select(m.workspace_id, m.space_id, m.participant_id, m.standing, m.since_seq).where(
            _among(m.workspace_id, ids)
        )
    ):
        state = states[row.workspace_id]
        state.members.setdefault(row.space_id, {})[row.participant_id] = Membership(
            row.standing, row.since_seq
        )
        if row.participant_id.startswith("agt_"):
            state.where[row.participant_id] = row.space_id
    o = t.space_openers.c
    for row in await conn.execute(
        select(o.workspace_id, o.space_id, o.harness_id, o.since_seq).where(
            _among(o.workspace_id, ids)
        )
    ):
        states[row.workspace_id].openers[(row.space_id, row.harness_id)] = row.since_seq
    x = door_exchanges.c
    for row in await conn.execute(
        select(x.workspace_id, x.space_id, x.body).where(_among(x.workspace_id, ids))
    ):
        state = states[row.workspace_id]
        if row.space_id == "":
            state.referee = ExchangeSettings.from_body(row.body)
        else:
            state.exchanges[row.space_id] = exchange_from_json(row.body)
    c = t.address_choices.c
    for row in await conn.execute(
        select(t.spaces.c.workspace_id, c.space_id, c.participant_id, c.kind, c.ids)
        .select_from(t.address_choices.join(t.spaces, t.spaces.c.id == c.space_id))
        .where(_among(t.spaces.c.workspace_id, ids))
    ):
        states[row.workspace_id].choices[(row.space_id, row.participant_id)] = Choice(
            row.kind, tuple(row.ids)
        )
    r = rt.runs.c
    for row in await conn.execute(select(rt.runs).where(_among(r.workspace_id, ids))):
        state = states[row.workspace_id]
        run = Run(row.id, row.space_id, row.harness_id, row.state, row.started_seq, row.agent_id)
        state.runs[run.id] = run
        if run.state in ("running", "paused"):
            state.live.setdefault(run.space_id, {})[run.id] = None
    k = rt.run_cards.c
    for row in await conn.execute(select(rt.run_cards).where(_among(k.workspace_id, ids))):
        states[row.workspace_id].cards[(row.kind, row.id)] = Card(
            row.kind,
            row.id,
            row.run_id,
            row.space_id,
            row.harness_id,
            tuple(row.answerers or ()),
            row.expires_at,
            tuple((o[0], o[1]) for o in row.options or ()),
            row.free_text,
            row.answered_by,
            row.answer,
            row.answered_seq,
            row.default_value,
            row.multiple,
        )
    la = rt.lanes.c
    for row in await conn.execute(select(rt.lanes).where(_among(la.workspace_id, ids))):
        states[row.workspace_id].lanes[row.id] = Lane(
            row.id,
            row.run_id,
            row.from_space_id,
            row.to_space_id,
            row.opener_id,
            row.working_run_id,
            row.state,
            row.opened_seq,
        )
    mm = t.message_marks.c
    for row in await conn.execute(select(t.message_marks).where(_among(mm.workspace_id, ids))):
        states[row.workspace_id].marks[row.message_id] = Mark(
            row.space_id, row.deleted_seq, row.edited_seq, row.pinned
        )
    # Hidden messages and reactions are kept with their message's space, so an erasure
    # finds them without reading the log.
    for table, into in ((t.message_hidden, "hidden"), (t.reactions, "reactions")):
        e = t.events.c
        said = e.id == func.concat("evt_", func.substr(table.c.message_id, 5))
        keys = [table.c.message_id, table.c.participant_id]
        if table is t.reactions:
            keys.append(table.c.emoji)
        rows = await conn.execute(
            select(table.c.workspace_id, *keys, e.space_id)
            .select_from(table.join(t.events, and_(said, e.workspace_id == table.c.workspace_id)))
            .where(_among(table.c.workspace_id, ids))
        )
        for row in rows:
            found: dict[Any, str] = getattr(states[row.workspace_id], into)
            found[tuple(row[1 : len(keys) + 1])] = row.space_id
    iv = t.invites.c
    for row in await conn.execute(select(t.invites).where(_among(iv.workspace_id, ids))):
        states[row.workspace_id].invites[row.id] = Invite(
            row.id,
            row.secret_hash,
            row.name,
            row.role,
            row.invited_by,
            row.created_at,
            row.expires_at,
            row.state,
            row.email,
            row.participant_id,
            row.used_by,
        )
    cr = t.credentials.c
    for row in await conn.execute(
        select(cr.workspace_id, cr.id, cr.participant_id, cr.kind, cr.revoked_at).where(
            _among(cr.workspace_id, ids)
        )
    ):
        states[row.workspace_id].devices[row.id] = Device(
            row.id, row.participant_id, row.kind or "token", row.revoked_at is not None
        )
    aa = t.agent_asks.c
    for row in await conn.execute(select(t.agent_asks).where(_among(aa.workspace_id, ids))):
        states[row.workspace_id].asks[row.id] = Ask(
            row.id,
            row.kind,
            row.harness_id,
            row.space_id,
            row.asked_at,
            row.agent_id,
            row.answered_by,
        )
    hw = t.held_words.c
    for row in await conn.execute(
        select(hw.workspace_id, hw.agent_id, hw.words).where(_among(hw.workspace_id, ids))
    ):
        states[row.workspace_id].held[row.agent_id] = tuple(
            HeldWords(w["seq"], w["at"], w["text"], tuple(w.get("upload_ids", ())))
            for w in row.words
        )
    return states
