"""One room: its sheet (who is in it, its title and state) and the lines it shows.

Writes go through the eventlog's door like any event; reads come from the projector's
read models (docs/architecture/design.md §5). Included by ``api/spaces.py``.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from sqlalchemy import and_, select

from chips_common.db import projector_tables as pt
from chips_common.db.spend_reads import read_job, read_pause
from chips_common.events import JsonObject
from chips_gateway import rows as typed
from chips_gateway.acks import Ack, ack_of
from chips_gateway.agents import Answer, shown, shown_in_room
from chips_gateway.api.identity import request_key
from chips_gateway.api.reads import checkpoint, wait_for_checkpoint
from chips_gateway.api.room_lines import feedback_item, line_of, posted_with, room_events
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.edge import MAX_INT
from chips_gateway.errors import ChipsError
from chips_gateway.guard import require_member
from chips_gateway.may import room_may

router = APIRouter()


async def append_event(ctx: Ctx, caller: Principal, event: JsonObject, key: str | None) -> Ack:
    """Append one event for ``caller`` and answer like an ack, or raise the refusal."""
    idempotency_key = request_key(key)
    await check_write_rate(ctx, caller)
    answer = await ctx.appender.append(
        caller.workspace_id, caller.credential_id, caller.actor, idempotency_key, [event]
    )
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event",
            answer.message or "refused",
            field=answer.field,
            **(answer.data or {}),
        )
    return ack_of(idempotency_key, answer, None)


@router.get("/spaces/{space_id}", response_model=None)
async def room_sheet(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
) -> typed.Sheet:
    """The room sheet: title, state, and who is in it with their standing."""
    await require_member(ctx, caller, space_id)
    ws_id = caller.workspace_id
    as_of = (
        await wait_for_checkpoint(ctx, ws_id, after_seq)
        if after_seq is not None
        else await checkpoint(ctx, ws_id)
    )
    s, m, p = pt.rm_spaces, pt.rm_members, pt.rm_participants
    async with ctx.engine.connect() as conn:
        space = (
            (
                await conn.execute(
                    select(s).where(and_(s.c.id == space_id, s.c.workspace_id == ws_id))
                )
            )
            .mappings()
            .first()
        )
        # A thread has no members of its own: its room's are in it (docs/product/messages.md).
        room = space["parent_space_id"] if space and space["parent_space_id"] else space_id
        members = (
            await conn.execute(
                select(
                    m.c.participant_id, m.c.standing, p.c.name, p.c.kind, p.c.owner_id, p.c.agent
                )
                .select_from(m.outerjoin(p, m.c.participant_id == p.c.id))
                .where(and_(m.c.space_id == room, m.c.standing != "agents"))
                .order_by(m.c.since_seq, m.c.participant_id)
            )
        ).all()
        # A harness with its agents here is shown as them (docs/adr/0070, 0096).
        members = shown_in_room(members)
        if space is None:
            raise ChipsError(
                "not_found", "that space is not in the read models yet; retry with after_seq"
            )
        # What the reader may do here, as the door's own rules decide it (docs/adr/0142).
        allowed = await room_may(conn, caller, space, room, members)
        roots = await root_texts(conn, [space])
    now = time.time()
    sheet: typed.Sheet = {
        "as_of_seq": as_of,
        **space_fields(space, roots.get(space_id)),
        "members": [
            sheet_member(
                row,
                space["lead_id"],
                ctx.links.face((row.agent or {}).get("face"), caller.credential_id, now),
            )
            for row in members
        ],
        "may": allowed,
    }
    return await as_seen(ctx, caller, sheet)


def sheet_member(row: Any, lead_id: str | None, face: typed.FaceFields) -> typed.SheetMember:
    member: typed.SheetMember = {
        "participant_id": row.participant_id,
        "name": row.name,
        "kind": row.kind,
        "standing": row.standing,
    }
    typed.put_face(member, face)  # an agent's face (docs/adr/0153)
    # The room's lead says so (docs/product/websocket.md, Who leads).
    if row.participant_id == lead_id:
        member["lead"] = True
    return member


async def as_seen(ctx: Ctx, caller: Principal, answer: Answer) -> Answer:
    """A read as its caller is shown it (``chips_gateway.agents.shown``)."""
    return await shown(ctx.reader, caller, answer)


@router.get("/spaces/{space_id}/messages", response_model=None)
async def room_lines(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    since: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
) -> typed.LinePage:
    """What the room shows, oldest first: messages and the muted ``system`` lines.

    ``since`` reads forward: the oldest ``limit`` lines after it. ``before`` reads back, as
    a room scrolled up does: the newest ``limit`` lines older than it, still oldest first
    (docs/adr/0033).

    A room operation (add, remove, leave, retitle, archive, lock) draws a line of kind
    ``system`` whose ``author_id`` is who did it (docs/adr/0006). Each line reads as it
    does now: the latest words (``edited``), a tombstone once taken back (``deleted``,
    no words), ``pinned``, and the feedback standing under it; a line the caller hid
    for themselves (message.hidden) is left out. A post also has what Chips filled in on
    it: ``attachments`` (each linked for the caller, as the socket links them) and
    ``addressed_to``, so a room read back draws its photos and routes as it did live.
    """
    await require_member(ctx, caller, space_id)
    ws_id = caller.workspace_id
    # Without after_seq, as of the log's head now: the projector may hold posts a moment
    # to fold them together, and is asked for them (docs/adr/0168).
    head = after_seq if after_seq is not None else await ctx.reader.head(ws_id)
    as_of = await wait_for_checkpoint(ctx, ws_id, head)
    msg, hidden, fb = pt.rm_messages, pt.rm_hidden, pt.rm_feedback
    mine_hidden = (
        select(hidden.c.message_id)
        .where(
            and_(hidden.c.participant_id == caller.participant_id, hidden.c.message_id == msg.c.id)
        )
        .exists()
    )
    async with ctx.engine.connect() as conn:
        window = and_(msg.c.space_id == space_id, msg.c.seq > since, ~mine_hidden)
        if before is None:
            query = select(msg).where(window).order_by(msg.c.seq).limit(limit)
        else:
            query = (
                select(msg)
                .where(and_(window, msg.c.seq < before))
                .order_by(msg.c.seq.desc())
                .limit(limit)
            )
        rows = sorted((await conn.execute(query)).mappings(), key=lambda row: int(row["seq"]))
        said = [row["id"] for row in rows]
        feedback: dict[str, list[typed.FeedbackItem]] = {}
        if said:
            for f in (
                await conn.execute(select(fb).where(fb.c.message_id.in_(said)).order_by(fb.c.seq))
            ).mappings():
                feedback.setdefault(f["message_id"], []).append(feedback_item(f))
        posted = await posted_with(
            conn, ws_id, [int(row["seq"]) for row in rows if not row["deleted"]]
        )
        now = time.time()
        lines = [
            line_of(
                row,
                feedback.get(row["id"], []),
                posted.get(int(row["seq"])),
                ctx.links,
                caller.credential_id,
                now,
            )
            for row in rows
        ]
        answer: typed.LinePage = {"as_of_seq": as_of, "messages": lines}
        if before is not None and caller.kind == "person":
            # What a person's room draws beside its lines, for the same stretch of the log
            # (docs/adr/0100): from the page's oldest line (from the beginning when the page
            # is the room's first) up to where the page ends.
            start = 0 if len(rows) < limit or not rows else int(rows[0]["seq"])
            answer["events"] = await room_events(
                conn, ws_id, space_id, start, min(before, as_of + 1)
            )
    return await as_seen(ctx, caller, answer)


class MemberIn(BaseModel):
    participant_id: str = Field(min_length=1, max_length=100)
    standing: Literal["owner", "member", "guest"] = "member"


class SpaceChange(BaseModel):
    title: str | None = Field(default=None, min_length=1, max_length=200)
    state: Literal["open", "closed"] | None = None


@router.post("/spaces/{space_id}/members", response_model=Ack, response_model_exclude_unset=True)
async def add_member(
    space_id: str,
    body: MemberIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """The room sheet's Add: ``membership.added``, by the rules at the door."""
    event = {"type": "membership.added", "space_id": space_id, **body.model_dump()}
    return await append_event(ctx, caller, event, idempotency_key)


@router.delete(
    "/spaces/{space_id}/members/{participant_id}",
    response_model=Ack,
    response_model_exclude_unset=True,
)
async def remove_member(
    space_id: str,
    participant_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """The room sheet's Remove, or Leave when it names the caller: ``membership.removed``."""
    event: JsonObject = {
        "type": "membership.removed",
        "space_id": space_id,
        "participant_id": participant_id,
    }
    return await append_event(ctx, caller, event, idempotency_key)


@router.patch("/spaces/{space_id}", response_model=Ack, response_model_exclude_unset=True)
async def change_space(
    space_id: str,
    body: SpaceChange,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """Retitle (``title``), archive (``state: "closed"``) or unarchive: ``space.updated``."""
    event = {"type": "space.updated", "space_id": space_id, **body.model_dump(exclude_none=True)}
    return await append_event(ctx, caller, event, idempotency_key)


class LockIn(BaseModel):
    locked: bool


@router.post("/spaces/{space_id}/lock", response_model=Ack, response_model_exclude_unset=True)
async def lock_space(
    space_id: str,
    body: LockIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """Lock (or unlock) a room's changes: ``space.lock_set`` (docs/product/websocket.md)."""
    event: JsonObject = {"type": "space.lock_set", "space_id": space_id, "locked": body.locked}
    return await append_event(ctx, caller, event, idempotency_key)


class SpendCeilingIn(BaseModel):
    # Null (or left out) is the default ceiling; the door checks the range.
    usd: float | None = None


@router.post(
    "/spaces/{space_id}/spend-ceiling", response_model=Ack, response_model_exclude_unset=True
)
async def set_spend_ceiling(
    space_id: str,
    body: SpendCeilingIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """What the room allows a job: ``space.spend_ceiling_set`` (docs/product/websocket.md)."""
    event: JsonObject = {"type": "space.spend_ceiling_set", "space_id": space_id}
    if body.usd is not None:
        event["usd"] = body.usd
    return await append_event(ctx, caller, event, idempotency_key)


class LeadIn(BaseModel):
    # Null (or left out): the room has no lead.
    agent_id: str | None = None


@router.post("/spaces/{space_id}/lead", response_model=Ack, response_model_exclude_unset=True)
async def set_lead(
    space_id: str,
    body: LeadIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """Choose the room's lead, or none: ``space.lead_set`` (docs/product/websocket.md, Who leads;
    docs/adr/0090). A person's, and one of the agents in the room."""
    event: JsonObject = {"type": "space.lead_set", "space_id": space_id, "agent_id": body.agent_id}
    return await append_event(ctx, caller, event, idempotency_key)


@router.get("/spaces/{space_id}/spend", response_model=None)
async def room_spend(space_id: str, ctx: Ctx, caller: Caller) -> typed.Spend:
    """What the room's job has spent as of now, against its ceiling (docs/adr/0083), and
    whether its agents are paused (``paused``: why, by whom, since which seq; null when
    not), which the people's banner draws (docs/adr/0100)."""
    await require_member(ctx, caller, space_id)
    async with ctx.engine.connect() as conn:
        read = await read_job(conn, caller.workspace_id, space_id)
        paused = await read_pause(conn, caller.workspace_id, space_id)
    spend: typed.Spend = {**read.facts(), "paused": paused}
    return await as_seen(ctx, caller, spend)


@router.delete("/spaces/{space_id}", response_model=Ack, response_model_exclude_unset=True)
async def delete_space(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Ack:
    """Delete a room: ``space.erased`` (docs/product/spaces.md, Deleting one; docs/adr/0010).

    A direct space nobody could open again is archived instead; the answer's seq is then
    that of the ``space.updated``.
    """
    event: JsonObject = {"type": "space.erased", "space_id": space_id}
    return await append_event(ctx, caller, event, idempotency_key)


ROOT_TEXT_MAX = 120


async def root_texts(conn: Any, spaces: Any) -> dict[str, str]:
    """The first words of each thread's root message, by thread id: what names a thread
    that has no title of its own. A root taken back names nothing (``None`` then)."""
    roots = {s["root_message_id"]: s["id"] for s in spaces if s["root_message_id"]}
    if not roots:
        return {}
    rows = (
        await conn.execute(
            select(pt.rm_messages.c.id, pt.rm_messages.c.text).where(
                and_(pt.rm_messages.c.id.in_(list(roots)), ~pt.rm_messages.c.deleted)
            )
        )
    ).all()
    return {
        roots[row.id]: " ".join(row.text.split())[:ROOT_TEXT_MAX]
        for row in rows
        if row.text.strip()
    }


def space_fields(space: Any, root_text: str | None = None) -> typed.SpaceFields:
    """A space as the HTTP API shows it, from its ``rm_spaces`` row; a thread's
    ``root_text`` is the first words of the message it was opened on (:func:`root_texts`)."""
    return {
        "id": space["id"],
        "kind": space["kind"],
        "title": space["title"],
        "state": space["state"],
        "home_of": space["home_of"],
        "key": space["key"],
        "shared": space["key_shared"],
        "locked": space["locked"],
        "created_by": space["created_by"],
        "created_at": space["created_at"].isoformat(),
        "last_seq": space["last_seq"],
        "message_count": space["message_count"],
        "moved_by": space["moved_by"],
        "moved_seq": space["moved_seq"],
        "parent_space_id": space["parent_space_id"],
        "root_message_id": space["root_message_id"],
        "root_text": root_text,
        "asked_of": space["asked_of"],
        "lead_id": space["lead_id"],
    }
