"""A harness's own door: the spaces it opens by key, and the list of them.

docs/product/spaces.md, How one is opened: ``POST /v1/harnesses/:id/spaces`` is the one way a
harness opens a space. The gateway sends the door a command (docs/adr/0007); the door
decides, in the append transaction, whether that opens a space, finds yesterday's, joins
another harness's shared one, retitles it, or claims a room asked of the harness.
Included by ``api/spaces.py``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field
from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.commands import OpenSpace
from chips_common.db import projector_tables as pt
from chips_common.db import tables as t
from chips_common.events import JsonObject
from chips_common.events.workspaces import Autonomy, Capability, PolicyRule
from chips_common.rules.agents_view import hidden_from
from chips_gateway import rows as typed
from chips_gateway.agents import shown, speaks_agents
from chips_gateway.answers.harnesses import Declared, Disconnected, PolicySet
from chips_gateway.api.identity import request_key
from chips_gateway.api.reads import checkpoint, wait_for_checkpoint
from chips_gateway.api.rooms import append_event
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.edge import MAX_INT
from chips_gateway.errors import ChipsError
from chips_gateway.guard import now_visible, require_harness_or_owner, spaces_of
from chips_gateway.sockets import disconnected_why

router = APIRouter()


class OpenSpaceIn(BaseModel):
    key: str = Field(min_length=1, max_length=200)
    title: str | None = Field(default=None, min_length=1, max_length=200)
    shared: bool = False
    space_id: str | None = None


def require_self(caller: Principal, harness_id: str) -> None:
    if caller.kind != "harness" or caller.participant_id != harness_id:
        raise ChipsError(
            "forbidden", "a harness opens spaces through its own door, with its own token"
        )


@router.post("/harnesses/{harness_id}/spaces", response_model=None)
async def open_space(
    harness_id: str,
    body: OpenSpaceIn,
    ctx: Ctx,
    caller: Caller,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> typed.OpenedSpace:
    """Open the space for ``key``, or find it; answers what the door did.

    201 when a space was opened; 200 when an existing one was found (and perhaps joined,
    retitled or claimed). With ``space_id``, claims the room a person asked of the harness
    under ``key``. ``seq`` is the last event logged, or null when nothing changed.
    """
    require_self(caller, harness_id)
    await check_write_rate(ctx, caller)
    command = OpenSpace(
        key=body.key, title=body.title, shared=body.shared, space_id=body.space_id
    ).model_dump(mode="json", exclude_none=True)
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [command],
    )
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event",
            answer.message or "refused",
            field=answer.field,
            **(answer.data or {}),
        )
    # The door has committed: its state names the space the key belongs to now.
    s = t.spaces.c
    async with ctx.engine.connect() as conn:
        space = (
            await conn.execute(
                select(s.id, s.title, s.state, s.key_shared).where(
                    and_(s.workspace_id == caller.workspace_id, s.key == body.key)
                )
            )
        ).first()
    if space is None:  # the door logged the key in this very answer; it cannot be gone
        raise ChipsError("unavailable", "the space for that key could not be read; ask again")
    did = {e["type"] for e in answer.events}
    # The last event the harness is sent: one before agents is not sent its given agent's
    # coming (docs/adr/0154), so its ``seq`` is the last it will see.
    seqs = answer.seqs
    if len(answer.events) == len(seqs) and not await speaks_agents(ctx.reader, harness_id):
        given = {str(e.get("agent_id")) for e in answer.events if e["type"] == "agent.registered"}
        seqs = [n for e, n in zip(answer.events, seqs, strict=True) if not hidden_from(e, given)]
    mine = {e["type"] for e in answer.events if e.get("participant_id") == harness_id}
    response.status_code = 201 if "space.created" in did else 200
    return {
        "space_id": space.id,
        "key": body.key,
        "shared": space.key_shared,
        "title": space.title,
        "state": space.state,
        "opened": "space.created" in did,
        "joined": "membership.added" in mine,
        "claimed": "space.claimed" in did,
        "retitled": "space.updated" in did,
        "seq": seqs[-1] if seqs else None,
    }


@router.get("/harnesses/{harness_id}/spaces", response_model=None)
async def harness_spaces(
    harness_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
) -> typed.HarnessSpaces:
    """Every space the harness opened (or claimed) by key: open or not, who last moved it;
    and, as ``asked``, the rooms people asked of it that it has not claimed yet.

    docs/product/spaces.md, Retitling and archiving: an adapter reads this to carry archives over
    both ways, "whichever side moved last wins"; and "so an adapter that was down catches
    up when it starts".
    """
    await require_harness_or_owner(ctx, caller, harness_id)
    ws_id = caller.workspace_id
    as_of = (
        await wait_for_checkpoint(ctx, ws_id, after_seq)
        if after_seq is not None
        else await checkpoint(ctx, ws_id)
    )
    s, o = pt.rm_spaces, pt.rm_openers
    # In the room now (the door state): a room it was taken out of shows only its name.
    inside = spaces_of(harness_id, ws_id).where(t.memberships.c.space_id == s.c.id).exists()
    async with ctx.engine.connect() as conn:
        rows = list(
            (
                await conn.execute(
                    select(s, inside.label("inside"))
                    .select_from(o.join(s, o.c.space_id == s.c.id))
                    .where(and_(o.c.workspace_id == ws_id, o.c.harness_id == harness_id))
                    .order_by(o.c.since_seq)
                )
            ).mappings()
        )
        closed = [r["id"] for r in rows if r["state"] != "open" and not r["inside"]]
        archived_out = await taken_out_by_archive(conn, ws_id, harness_id, closed)
        spaces = [
            now_visible(
                {
                    "space_id": row["id"],
                    "key": row["key"],
                    "shared": row["key_shared"],
                    "title": row["title"],
                    "state": row["state"],
                    "open": row["state"] == "open",
                    "moved_by": row["moved_by"],
                    "moved_seq": row["moved_seq"],
                    "member": row["inside"] or row["id"] in archived_out,
                }
            )
            for row in rows
        ]
        asked_rows = (
            await conn.execute(
                select(s.c.id, s.c.title, s.c.state, s.c.created_by, s.c.created_seq)
                .where(
                    and_(
                        s.c.workspace_id == ws_id,
                        s.c.asked_of == harness_id,
                        s.c.key.is_(None),
                    )
                )
                .order_by(s.c.created_seq)
            )
        ).all()
    asked: list[typed.AskedSpace] = [
        {
            "space_id": row.id,
            "title": row.title,
            "state": row.state,
            "asked_by": row.created_by,
            "asked_seq": row.created_seq,
        }
        for row in asked_rows
    ]
    # moved_by may be an agent of the harness's (docs/adr/0079).
    answer: typed.HarnessSpaces = {"as_of_seq": as_of, "spaces": spaces, "asked": asked}
    return await shown(ctx.reader, caller, answer)


async def taken_out_by_archive(
    conn: AsyncConnection, workspace_id: str, harness_id: str, rooms: list[str]
) -> set[str]:
    """Of ``rooms`` (archived, the harness not in them), those it left only because their
    archive released the agents it stood behind there (docs/adr/0154): it left with its
    last agent's release (``rules/agents/rooms.py``, ``leave``: the release, the agent's
    leave, then the harness's), and the room brings them back when it is unarchived."""
    if not rooms:
        return set()
    e = t.events.c
    out = (
        select(e.space_id, func.max(e.seq).label("seq"))
        .where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id.in_(rooms),
                e.type == "membership.removed",
                e.body["participant_id"].astext == harness_id,
            )
        )
        .group_by(e.space_id)
        .subquery()
    )
    released = (
        select(e.space_id)
        .join(out, and_(out.c.space_id == e.space_id, e.seq == out.c.seq - 2))
        .where(
            and_(
                e.workspace_id == workspace_id,
                e.type == "agent.released",
                e.body["harness_id"].astext == harness_id,
                e.body["reason"].astext == "archived",
            )
        )
    )
    return {str(row.space_id) for row in await conn.execute(released)}


class CapabilitiesIn(BaseModel):
    capabilities: list[Capability] = Field(max_length=6)


@router.put(
    "/harnesses/{harness_id}/capabilities",
    response_model=Declared,
    response_model_exclude_unset=True,
)
async def declare_capabilities(
    harness_id: str,
    body: CapabilitiesIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Declared:
    """``chips declare``: record what the harness does (``harness.declared``).

    The list replaces the one declared before; the harness itself or its owner sends it.
    """
    event: JsonObject = {
        "type": "harness.declared",
        "harness_id": harness_id,
        **body.model_dump(),
    }
    ack = await append_event(ctx, caller, event, idempotency_key)
    return Declared(
        **ack.model_dump(exclude_unset=True),
        harness_id=harness_id,
        capabilities=sorted(set(body.capabilities)),
    )


@router.post(
    "/harnesses/{harness_id}/disconnect",
    response_model=Disconnected,
    response_model_exclude_unset=True,
)
async def disconnect(
    harness_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> Disconnected:
    """``chips disconnect``: withdraw every token of the harness (``harness.disconnected``).

    Its owner, or a workspace owner or admin, sends it. The door withdraws the tokens as it
    logs the event; then every gateway closes the harness's live sockets (sockets.py).
    """
    event: JsonObject = {"type": "harness.disconnected", "harness_id": harness_id}
    ack = await append_event(ctx, caller, event, idempotency_key)
    async with ctx.engine.connect() as conn:
        name = (
            await conn.execute(
                select(t.participants.c.name).where(t.participants.c.id == harness_id)
            )
        ).scalar()
    await ctx.sockets.notify(harness_id, disconnected_why(str(name or harness_id)))
    return Disconnected(**ack.model_dump(exclude_unset=True), harness_id=harness_id)


class PolicyIn(BaseModel):
    autonomy: Autonomy | None = None
    rules: list[PolicyRule] | None = Field(default=None, max_length=100)


async def read_policy(ctx: Ctx, caller: Principal, harness_id: str) -> typed.Policy:
    """The harness's dial and rules, for its owner and for the harness itself."""
    p = t.participants.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(p.owner_id, p.autonomy, p.rules).where(
                    and_(
                        p.id == harness_id,
                        p.workspace_id == caller.workspace_id,
                        p.kind == "harness",
                    )
                )
            )
        ).first()
    if row is None:
        raise ChipsError("not_found", "no such harness in this workspace")
    if caller.participant_id not in (harness_id, row.owner_id):
        raise ChipsError("forbidden", "a harness's dial and rules are shown to its owner")
    return {"harness_id": harness_id, "autonomy": row.autonomy or "off", "rules": row.rules}


@router.get("/harnesses/{harness_id}/policy", response_model=None)
async def get_policy(harness_id: str, ctx: Ctx, caller: Caller) -> typed.Policy:
    """The autonomy dial's level and the owner's rules (docs/adr/0130)."""
    return await read_policy(ctx, caller, harness_id)


@router.put(
    "/harnesses/{harness_id}/policy", response_model=PolicySet, response_model_exclude_unset=True
)
async def set_policy(
    harness_id: str,
    body: PolicyIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> PolicySet:
    """``chips dial`` and ``chips rule``: the owner sets the level, the rules, or both
    (``harness.policy_set``); answers the policy as it now stands."""
    event: JsonObject = {
        "type": "harness.policy_set",
        "harness_id": harness_id,
        **body.model_dump(mode="json", exclude_none=True),
    }
    ack = await append_event(ctx, caller, event, idempotency_key)
    policy = await read_policy(ctx, caller, harness_id)
    # The rules as the door logged and keeps them: each validates as the catalogue's rule.
    return PolicySet.model_validate({**ack.model_dump(exclude_unset=True), **policy})
