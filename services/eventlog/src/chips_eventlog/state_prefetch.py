"""Read what a batch names that the door state does not hold (docs/adr/0021).

:func:`reads_for` says, from the snapshot alone, what a batch needs read (nothing, for
most batches); :func:`prefetch` reads it: messages older than the window, a room's last
harness message for ``/wrong``, space ids of other workspaces, the uploads a post
carries with the versions of their names, and the picture an agent's face names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.ids import event_id_for_message
from chips_common.rules.faces import is_image_face
from chips_eventlog.rules.files import named_in_raw
from chips_eventlog.state import DoorState, FileVersion, Message, Upload


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
    faces: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.messages or self.wrong_rooms or self.posts or self.space_ids or self.faces)


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
        face = raw.get("face")
        if raw.get("command") == "agent.register" and is_image_face(face):
            reads.faces.add(str(face))  # the picture an agent's face names (ADR 0153)
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
    if reads.faces:
        await prefetch_uploads(conn, state, sorted(reads.faces))
    if reads.space_ids:
        rows = await conn.execute(select(t.spaces.c.id).where(t.spaces.c.id.in_(reads.space_ids)))
        state.taken_space_ids.update(row.id for row in rows)


async def prefetch_files(
    conn: AsyncConnection, state: DoorState, posts: list[tuple[str, list[str]]]
) -> None:
    """The uploads the batch's posts carry, and the posted versions of their names in the
    rooms they are posted to (the attachments service writes uploads; the door posts them,
    in ``posted_files``)."""
    a, p = attachments.c, t.posted_files.c
    ids = sorted({i for _, post in posts for i in post})
    await prefetch_uploads(conn, state, ids)
    names = {
        (space_id, state.uploads[i].name)
        for space_id, post in posts
        for i in post
        if i in state.uploads
    }
    for space_id, name in sorted(names):
        found = await conn.execute(
            select(a.id, p.version, a.sha256, a.uploader_id, p.posted_seq)
            .select_from(t.posted_files.join(attachments, a.id == p.upload_id))
            .where(
                and_(
                    p.workspace_id == state.workspace_id,
                    p.space_id == space_id,
                    a.name == name,
                )
            )
        )
        state.files[(space_id, name)] = tuple(
            FileVersion(r.id, r.version, r.sha256, r.uploader_id, r.posted_seq) for r in found
        )


async def prefetch_uploads(conn: AsyncConnection, state: DoorState, ids: list[str]) -> None:
    """These uploads of the workspace, with where they were posted (if they were)."""
    a, p = attachments.c, t.posted_files.c
    rows = await conn.execute(
        select(attachments, p.space_id, p.posted_seq)
        .select_from(attachments.outerjoin(t.posted_files, p.upload_id == a.id))
        .where(and_(a.id.in_(ids), a.workspace_id == state.workspace_id))
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
