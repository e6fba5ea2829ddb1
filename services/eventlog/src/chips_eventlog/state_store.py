"""The door state's SQL: read a workspace's state once, write each batch's changes together.

:func:`load_many` reads every door-state table once for a chunk of workspaces when this
replica takes a partition's lease (:func:`load` reads one, for a batch whose workspace is
not read yet); :func:`prefetch` reads the few things a batch names that the snapshot does
not hold (messages older than its window, a room's last harness message for ``/wrong``,
space ids of other workspaces); :func:`flush` writes what the batch changed,
one statement per table (two when rows went away). docs/adr/0021.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Text,
    and_,
    any_,
    bindparam,
    delete,
    func,
    insert,
    select,
    true,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.db.referee_tables import door_exchanges
from chips_common.ids import event_id_for_message
from chips_common.rules.addressing import Choice
from chips_common.rules.exchanges import (
    ExchangeSettings,
    exchange_from_json,
    exchange_json,
    settings_json,
)
from chips_eventlog.rules.files import named_in_raw
from chips_eventlog.state import (
    AddCredential,
    AgentFacts,
    Ask,
    Card,
    DoorState,
    FileVersion,
    HeldWords,
    Lane,
    Mark,
    Membership,
    Message,
    Participant,
    Run,
    Space,
    Upload,
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
            AgentFacts(**row.agent) if row.agent else None,
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


async def find_messages(
    conn: AsyncConnection, workspace_id: str, message_ids: list[str]
) -> list[Message]:
    """The messages of this workspace that these ids name, read from the log."""
    ids = [event_id_for_message(m) for m in message_ids if m.startswith("msg_")]
    if not ids:
        return []
    e = t.events.c
    rows = await conn.execute(
        select(
            e.body["message_id"].astext, e.space_id, e.body["actor"], e.body["kind"].astext
        ).where(and_(e.id.in_(ids), e.workspace_id == workspace_id, e.type == "message.post"))
    )
    return [Message(row[0], row[1], row[2]["id"], row[2]["kind"], row[3] or "text") for row in rows]


async def last_harness_message(
    conn: AsyncConnection, workspace_id: str, space_id: str
) -> str | None:
    """The newest message a harness said in a room that still stands (for ``/wrong``)."""
    e, m = t.events.c, t.message_marks.c
    said_id = e.body["message_id"].astext
    taken_back = (
        select(m.message_id)
        .where(and_(m.message_id == said_id, m.deleted_seq.is_not(None)))
        .exists()
    )
    query = (
        select(said_id.label("message_id"))
        .select_from(t.events.join(t.participants, t.participants.c.id == e.actor_id))
        .where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id == space_id,
                e.type == "message.post",
                t.participants.c.kind.in_(("harness", "agent")),
                ~taken_back,
            )
        )
        .order_by(e.seq.desc())
        .limit(1)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else str(row.message_id)


@dataclass
class Reads:
    """What a batch names that the snapshot may not hold, to read before deciding."""

    messages: set[str] = field(default_factory=set)
    wrong_rooms: set[str] = field(default_factory=set)
    posts: list[tuple[str, list[str]]] = field(default_factory=list)
    space_ids: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.messages or self.wrong_rooms or self.posts or self.space_ids)


def reads_for(state: DoorState, raws: list[Any]) -> Reads:
    """What :func:`prefetch` reads for these events (nothing, for most batches): a pure
    function of the snapshot, so a batch that needs nothing read is decided at once."""
    reads = Reads()
    space_ids: set[str] = set()
    for raw in raws:
        if not isinstance(raw, dict):
            continue
        ids = named_in_raw(raw) if raw.get("type") == "message.post" else None
        room = raw.get("space_id")
        run = state.run(raw["run_id"]) if isinstance(raw.get("run_id"), str) else None
        if room is None and run is not None:  # a reply on the run is said in its room
            room = run.space_id
        if ids and isinstance(room, str):
            reads.posts.append((room, ids))
        for name in ("reply_to", "message_id", "root_message_id"):
            value = raw.get(name)
            if isinstance(value, str) and value.startswith("msg_") and value not in state.messages:
                reads.messages.add(value)
        text = raw.get("text")
        space_id = raw.get("space_id")
        wrong = isinstance(text, str) and text.strip().lower().startswith("/wrong")
        if raw.get("type") == "message.post" and isinstance(space_id, str) and wrong:
            reads.wrong_rooms.add(space_id)
        if raw.get("type") == "space.created" and isinstance(space_id, str):
            space_ids.add(space_id)
    reads.space_ids = [s for s in space_ids if s not in state.spaces]
    return reads


async def prefetch(conn: AsyncConnection, state: DoorState, raws: list[Any]) -> None:
    """Read what the batch's events name that the snapshot may not hold.

    A message outside the window (a reply to, an edit of, a thread on an old message), a
    room's last harness message for ``/wrong``, and space ids given by the client (ids
    are unique across workspaces). Every rule then decides from memory.
    """
    reads = reads_for(state, raws)
    wanted = set(reads.messages)
    for room in reads.wrong_rooms:
        said = await last_harness_message(conn, state.workspace_id, room)
        state.last_harness_said[room] = said
        if said is not None and said not in state.messages:
            wanted.add(said)
    if wanted:
        for message in await find_messages(conn, state.workspace_id, sorted(wanted)):
            state.messages[message.message_id] = message
    if reads.posts:
        await prefetch_files(conn, state, reads.posts)
    if reads.space_ids:
        rows = await conn.execute(select(t.spaces.c.id).where(t.spaces.c.id.in_(reads.space_ids)))
        state.taken_space_ids.update(row.id for row in rows)


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


async def prefetch_files(
    conn: AsyncConnection, state: DoorState, posts: list[tuple[str, list[str]]]
) -> None:
    """The uploads the batch's posts carry, and the posted versions of their names in the
    rooms they are posted to (the attachments service writes uploads; the door posts them)."""
    a = attachments.c
    ids = sorted({i for _, post in posts for i in post})
    rows = await conn.execute(
        select(attachments).where(and_(a.id.in_(ids), a.workspace_id == state.workspace_id))
    )
    for r in rows:
        state.uploads[r.id] = Upload(
            r.id,
            r.uploader_id,
            r.name,
            r.mime_type,
            r.kind,
            r.byte_size,
            r.sha256,
            r.width,
            r.height,
            r.duration_ms,
            r.thumbnail,
            r.space_id,
            r.posted_seq is not None,
        )
    names = {
        (space_id, state.uploads[i].name)
        for space_id, post in posts
        for i in post
        if i in state.uploads
    }
    for space_id, name in sorted(names):
        found = await conn.execute(
            select(a.id, a.version, a.sha256, a.uploader_id, a.posted_seq).where(
                and_(
                    a.workspace_id == state.workspace_id,
                    a.space_id == space_id,
                    a.name == name,
                    a.posted_seq.is_not(None),
                )
            )
        )
        state.files[(space_id, name)] = tuple(
            FileVersion(r.id, r.version, r.sha256, r.uploader_id, r.posted_seq) for r in found
        )


async def flush(conn: AsyncConnection, state: DoorState, now: datetime) -> None:
    """Write every door-state row the batch changed: the rows as they stand now."""
    ws = state.workspace_id
    if state.renamed:
        await conn.execute(
            update(t.workspaces).where(t.workspaces.c.id == ws).values(name=state.name)
        )
    touched = state.touched
    await _write(
        conn,
        t.participants,
        ["id"],
        touched["participants"],
        lambda key: _participant_row(ws, state.participants.get(key)),
    )
    await _write(
        conn, t.spaces, ["id"], touched["spaces"], lambda key: _space_row(ws, state.spaces.get(key))
    )
    await _write(
        conn,
        t.memberships,
        ["space_id", "participant_id"],
        touched["memberships"],
        lambda key: _membership_row(ws, key, state.members.get(key[0], {}).get(key[1])),
    )
    await _write(
        conn,
        t.space_openers,
        ["space_id", "harness_id"],
        touched["space_openers"],
        lambda key: (
            None
            if key not in state.openers
            else {
                "space_id": key[0],
                "harness_id": key[1],
                "workspace_id": ws,
                "since_seq": state.openers[key],
            }
        ),
    )
    await _write(
        conn,
        door_exchanges,
        ["workspace_id", "space_id"],
        {(ws, space_id) for space_id in touched["door_exchanges"]},
        lambda key: _exchange_row(state, key[1]),
    )
    await _write(
        conn,
        t.address_choices,
        ["space_id", "participant_id"],
        touched["address_choices"],
        lambda key: (
            None
            if key not in state.choices
            else {
                "space_id": key[0],
                "participant_id": key[1],
                "kind": state.choices[key].kind,
                "ids": list(state.choices[key].ids),
            }
        ),
    )
    await _write(
        conn,
        rt.runs,
        ["workspace_id", "id"],
        {(ws, key) for key in touched["runs"]},
        lambda key: _run_row(ws, state.runs.get(key[1])),
    )
    await _write(
        conn,
        rt.run_cards,
        ["workspace_id", "kind", "id"],
        {(ws, *key) for key in touched["run_cards"]},
        lambda key: _card_row(ws, state.cards.get((key[1], key[2]))),
    )
    await _write(
        conn,
        rt.lanes,
        ["workspace_id", "id"],
        {(ws, key) for key in touched["lanes"]},
        lambda key: _lane_row(ws, state.lanes.get(key[1])),
    )
    await _write(
        conn,
        t.message_marks,
        ["message_id"],
        touched["message_marks"],
        lambda key: (
            None
            if key not in state.marks
            else {
                "message_id": key,
                "workspace_id": ws,
                "space_id": state.marks[key].space_id,
                "deleted_seq": state.marks[key].deleted_seq,
                "edited_seq": state.marks[key].edited_seq,
                "pinned": state.marks[key].pinned,
            }
        ),
    )
    await _write(
        conn,
        t.message_hidden,
        ["message_id", "participant_id"],
        touched["message_hidden"],
        lambda key: (
            None
            if key not in state.hidden
            else {"message_id": key[0], "participant_id": key[1], "workspace_id": ws}
        ),
    )
    await _write(
        conn,
        t.reactions,
        ["message_id", "participant_id", "emoji"],
        touched["reactions"],
        lambda key: (
            None
            if key not in state.reactions
            else {
                "message_id": key[0],
                "participant_id": key[1],
                "emoji": key[2],
                "workspace_id": ws,
            }
        ),
    )
    await _write(
        conn,
        t.agent_asks,
        ["workspace_id", "id"],
        {(ws, key) for key in touched["agent_asks"]},
        lambda key: _ask_row(ws, state.asks.get(key[1])),
    )
    await _write(
        conn,
        t.held_words,
        ["workspace_id", "agent_id"],
        {(ws, key) for key in touched["held_words"]},
        lambda key: (
            None
            if key[1] not in state.held
            else {
                "workspace_id": ws,
                "agent_id": key[1],
                "words": [
                    {"seq": w.seq, "at": w.at, "text": w.text, "upload_ids": list(w.upload_ids)}
                    for w in state.held[key[1]]
                ],
            }
        ),
    )
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
    if state.posted_files:
        await conn.execute(
            update(attachments)
            .where(attachments.c.id == bindparam("upload_id"))
            .values(
                space_id=bindparam("room"),
                posted_seq=bindparam("seq"),
                version=bindparam("v"),
                replaces=bindparam("made_from"),
            ),
            [
                {
                    "upload_id": f.upload_id,
                    "room": f.space_id,
                    "seq": f.seq,
                    "v": f.version,
                    "made_from": f.replaces,
                }
                for f in state.posted_files
            ],
        )
    for erasure in state.erasures:
        await erase_events(conn, ws, erasure.erased, erasure.seq, erasure.spared)


async def _write(
    conn: AsyncConnection, table: Any, key_columns: list[str], keys: set[Any], row_of: Any
) -> None:
    """Upsert the touched rows that stand, in one statement; delete the ones that went."""
    if not keys:
        return
    present: list[dict[str, Any]] = []
    gone: list[Any] = []
    for key in sorted(keys, key=repr):
        row = row_of(key)
        if row is None:
            gone.append(key if isinstance(key, tuple) else (key,))
        else:
            present.append(row)
    columns = [table.c[name] for name in key_columns]
    if gone:
        await conn.execute(delete(table).where(tuple_(*columns).in_(gone)))
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
                # Spend already recorded stays on the harness's account (spaces.md):
                # a usage report carries counts and a cost, no words (ADR 0010).
                t.events.c.type != "usage",
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


def _ask_row(ws: str, a: Ask | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {
        "workspace_id": ws,
        "id": a.id,
        "kind": a.kind,
        "harness_id": a.harness_id,
        "space_id": a.space_id,
        "asked_at": a.at,
        "agent_id": a.agent_id,
        "answered_by": a.answered_by,
    }


def _exchange_row(state: DoorState, space_id: str) -> dict[str, Any] | None:
    ws = state.workspace_id
    if space_id == "":
        return {"workspace_id": ws, "space_id": "", "body": settings_json(state.referee)}
    exchange = state.exchanges.get(space_id)
    if exchange is None:
        return None
    return {"workspace_id": ws, "space_id": space_id, "body": exchange_json(exchange)}


def _participant_row(ws: str, p: Participant | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "id": p.id,
        "workspace_id": ws,
        "kind": p.kind,
        "name": p.name,
        "role": p.role,
        "owner_id": p.owner_id,
        "joined_seq": p.joined_seq,
        "capabilities": list(p.capabilities),
        "autonomy": p.autonomy,
        "agent": p.agent.as_json() if p.agent is not None else None,
    }


def _space_row(ws: str, s: Space | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"workspace_id": ws, **s.__dict__}


def _membership_row(ws: str, key: tuple[str, str], m: Membership | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "space_id": key[0],
        "participant_id": key[1],
        "workspace_id": ws,
        "standing": m.standing,
        "since_seq": m.since_seq,
    }


def _run_row(ws: str, r: Run | None) -> dict[str, Any] | None:
    return None if r is None else {"workspace_id": ws, **r.__dict__}


def _card_row(ws: str, c: Card | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "workspace_id": ws,
        **c.__dict__,
        "answerers": list(c.answerers),
        "options": [list(o) for o in c.options],
    }


def _lane_row(ws: str, lane: Lane | None) -> dict[str, Any] | None:
    return None if lane is None else {"workspace_id": ws, **lane.__dict__}


def _credential_row(ws: str, c: AddCredential, now: datetime) -> dict[str, Any]:
    return {
        "id": c.id,
        "workspace_id": ws,
        "participant_id": c.participant_id,
        "token_hash": c.token_hash,
        "created_at": now,
    }
