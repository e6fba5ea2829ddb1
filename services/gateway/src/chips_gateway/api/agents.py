"""A harness's agents over HTTP (docs/adr/0070, 0071; docs/product/websocket.md, Agents).

``POST /v1/harnesses/:id/agents`` registers one by key, ``POST /v1/agents/:id/attach``
puts one in a room in another's place (the harness's), ``POST /v1/agents/:id/move`` moves
one (a person's), ``PATCH /v1/agents/:id`` renames one (a person's, and the name holds).
Each sends the door a command (docs/adr/0007), which decides in the append transaction
which events to log by the one rule of where an agent may be; the answer is the agent as
the door's state holds it once that transaction committed. Included by ``api/spaces.py``.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field
from sqlalchemy import and_, select

from chips_common.commands import AttachAgent, MoveAgent, RegisterAgent, RenameAgent
from chips_common.db import tables as t
from chips_common.db.principals import Principal
from chips_gateway.api.identity import request_key
from chips_gateway.context import Caller, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.errors import ChipsError

router = APIRouter()


class RegisterIn(BaseModel):
    key: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=80)
    lead: bool = False
    state: Literal["active", "archived"] = "active"
    forked_from: str | None = Field(default=None, max_length=100)
    made_for: str | None = Field(default=None, max_length=100)
    space_id: str | None = Field(default=None, max_length=100)
    face: str | None = Field(
        default=None,
        max_length=100,
        description="its face: one emoji, or the attachment_id of a picture this harness "
        'uploaded (JPEG, PNG, GIF or WebP, at most 1 MB); "" takes it off, and leaving it '
        "out keeps the one it has",
    )


class AttachIn(BaseModel):
    space_id: str = Field(max_length=100)
    replacing: str | None = Field(default=None, max_length=100)


class MoveIn(BaseModel):
    space_id: str = Field(max_length=100)


class RenameIn(BaseModel):
    name: str = Field(min_length=1, max_length=80)


class AgentOut(BaseModel):
    """An agent as it stands: ``space_id`` is its room, or null when it is free; ``why``
    says why a fork's copy or a new agent was registered free."""

    id: str
    harness_id: str
    key: str
    name: str
    name_by: str | None = None
    state: Literal["active", "archived"]
    main: bool
    space_id: str | None = None
    forked_from: str | None = None
    made_for: str | None = None
    why: str | None = None
    face: str | None = Field(
        default=None, description="its face: one emoji, or a picture's attachment_id"
    )
    face_url: str | None = Field(
        default=None, description="a picture face's URL, signed for the caller"
    )
    seq: int | None = Field(default=None, description="the last event logged, or null")


async def send(ctx: Ctx, caller: Principal, command: BaseModel, key: str | None) -> Any:
    """Send the door a command for ``caller``; its answer, or the refusal raised."""
    await check_write_rate(ctx, caller)
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(key),
        [command.model_dump(mode="json", exclude_none=True)],
    )
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event",
            answer.message or "refused",
            field=answer.field,
            **(answer.data or {}),
        )
    return answer


async def read_agent(ctx: Ctx, caller: Principal, **where: str) -> AgentOut | None:
    """The agent as the door's state holds it (committed by the time the door answers)."""
    workspace_id = caller.workspace_id
    p, m = t.participants.c, t.memberships.c
    found = [p.workspace_id == workspace_id, p.kind == "agent"]
    if "agent_id" in where:
        found.append(p.id == where["agent_id"])
    else:
        found += [p.owner_id == where["harness_id"], p.agent["key"].astext == where["key"]]
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(select(p.id, p.owner_id, p.name, p.agent).where(and_(*found)))
        ).first()
        if row is None:
            return None
        room = (
            await conn.execute(
                select(m.space_id).where(
                    and_(m.workspace_id == workspace_id, m.participant_id == row.id)
                )
            )
        ).scalar()
    facts = row.agent or {}
    return AgentOut(
        id=row.id,
        harness_id=row.owner_id,
        key=facts.get("key", ""),
        name=row.name,
        name_by=facts.get("name_by"),
        state=facts.get("state", "active"),
        main=bool(facts.get("main")),
        space_id=room,
        forked_from=facts.get("forked_from"),
        made_for=facts.get("made_for"),
        why=facts.get("why"),
        **ctx.links.face(facts.get("face"), caller.credential_id, time.time()),
    )


def seq_of(answer: Any) -> int | None:
    return answer.seqs[-1] if answer.seqs else None


async def answered(ctx: Ctx, caller: Principal, agent_id: str, answer: Any) -> AgentOut:
    agent = await read_agent(ctx, caller, agent_id=agent_id)
    if agent is None:
        raise ChipsError("not_found", "no such agent in this workspace")
    return agent.model_copy(update={"seq": seq_of(answer)})


@router.post("/harnesses/{harness_id}/agents", response_model=AgentOut)
async def register_agent(
    harness_id: str,
    body: RegisterIn,
    ctx: Ctx,
    caller: Caller,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> AgentOut:
    """Register one of the harness's agents by key, with the harness's own token.

    201 when a new agent was registered; 200 for the same key again (renamed, archived,
    brought back or given another face, or nothing changed). ``face`` is one emoji or the
    ``attachment_id`` of a picture the harness uploaded (docs/adr/0153); a face that is
    neither is refused ``invalid_face``. ``lead`` makes it the harness's Main agent, in its
    Main room; ``forked_from`` or ``made_for`` with ``space_id`` answer a person's ask,
    and the agent joins that room if it came within a minute of the ask.
    """
    if caller.kind != "harness" or caller.participant_id != harness_id:
        raise ChipsError("forbidden", "a harness registers its own agents, with its own token")
    command = RegisterAgent(harness_id=harness_id, **body.model_dump())
    answer = await send(ctx, caller, command, idempotency_key)
    agent = await read_agent(ctx, caller, harness_id=harness_id, key=body.key)
    if agent is None:  # the door answered for this key; it cannot be gone
        raise ChipsError("unavailable", "the agent for that key could not be read; ask again")
    registered = any(e.get("type") == "agent.registered" for e in answer.events)
    response.status_code = 201 if registered and not answer.duplicate else 200
    return agent.model_copy(update={"seq": seq_of(answer)})


@router.post("/agents/{agent_id}/attach", response_model=AgentOut)
async def attach_agent(
    agent_id: str,
    body: AttachIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> AgentOut:
    """The harness puts one of its agents in a room it is in, in the place of another of
    its agents there or of itself (``replacing``); from another room, it moves."""
    command = AttachAgent(agent_id=agent_id, space_id=body.space_id, replacing=body.replacing)
    answer = await send(ctx, caller, command, idempotency_key)
    return await answered(ctx, caller, agent_id, answer)


@router.post("/agents/{agent_id}/move", response_model=AgentOut)
async def move_agent(
    agent_id: str,
    body: MoveIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> AgentOut:
    """A person moves an agent into a room they may add to; its runs in the room it
    leaves are cancelled first."""
    command = MoveAgent(agent_id=agent_id, space_id=body.space_id)
    answer = await send(ctx, caller, command, idempotency_key)
    return await answered(ctx, caller, agent_id, answer)


@router.patch("/agents/{agent_id}", response_model=AgentOut)
async def rename_agent(
    agent_id: str,
    body: RenameIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> AgentOut:
    """A person renames an agent; its harness registering it under another name leaves
    the person's name alone (``name_by``)."""
    command = RenameAgent(agent_id=agent_id, name=body.name)
    answer = await send(ctx, caller, command, idempotency_key)
    return await answered(ctx, caller, agent_id, answer)
