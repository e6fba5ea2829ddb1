"""Workspaces, people and harnesses: the acts that issue tokens.

Each is an append like any other (the participant lands in the log as
``participant.joined``); the token travels beside the request only as a hash, and is
shown once, in this answer.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Literal

from fastapi import APIRouter, Header
from pydantic import BaseModel, Field

from chips_common.append import AppendAnswer, IssuedCredential, fingerprint_of
from chips_common.events.workspaces import DEFAULT_AUTONOMY, Autonomy
from chips_common.ids import new_id, new_token
from chips_common.tokens import hash_token
from chips_gateway.auth import check_operator
from chips_gateway.context import Caller, Ctx, IdempotencyKey
from chips_gateway.errors import ChipsError

router = APIRouter(prefix="/v1")

Name = Annotated[str, Field(min_length=1, max_length=80)]


class WorkspaceIn(BaseModel):
    name: Name
    owner_name: Name


class PersonIn(BaseModel):
    name: Name
    role: Literal["admin", "member", "guest"] = "member"


class HarnessIn(BaseModel):
    name: Name
    # "off" for a harness that does not take the autonomy dial (chips connect --no-dial),
    # else the level it starts at (docs/adr/0031).
    autonomy: Autonomy = DEFAULT_AUTONOMY  # type: ignore[assignment]


class WorkspaceMade(BaseModel):
    """A new workspace, its owner, and the owner's person token (shown this once)."""

    workspace_id: str
    owner_id: str
    token: str


class PersonAdded(BaseModel):
    """A person added to the workspace, and their person token (shown this once)."""

    participant_id: str
    name: str
    role: str
    token: str


class HarnessConnected(BaseModel):
    """A harness connected: its token (shown this once) and its direct space."""

    harness_id: str
    name: str
    autonomy: str
    token: str
    space_id: str
    url: str


class SocketTicket(BaseModel):
    """A single-use ticket to open ``/v1/ws?ticket=…`` with, for ``expires_in`` seconds."""

    ticket: str
    expires_in: int


def raise_refusal(answer: AppendAnswer) -> None:
    """Turn a refusal into an error; a repeated Idempotency-Key cannot show a token again."""
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event",
            answer.message or "refused",
            field=answer.field,
            **(answer.data or {}),
        )
    if answer.duplicate:
        created = next((e for e in answer.events if e["type"] == "participant.joined"), {})
        raise ChipsError(
            "already_created",
            "that Idempotency-Key was used already; the token was shown in its first answer",
            participant_id=created.get("participant_id"),
            workspace_id=answer.events[0]["workspace_id"] if answer.events else None,
        )


def request_key(header: str | None) -> str:
    """The request's Idempotency-Key, or a fresh one; a key is 1 to 200 characters."""
    if header is not None and (not header or len(header) > 200):
        raise ChipsError("invalid_request", "Idempotency-Key is 1 to 200 characters")
    return header or f"http-{secrets.token_hex(12)}"


def asked(route: str, body: BaseModel) -> str:
    """The fingerprint of what the client asked (docs/adr/0126): the route and its body,
    not the events, which carry the fresh ids and tokens each try makes."""
    return fingerprint_of({"route": route, "body": body.model_dump(mode="json")})


@router.post("/workspaces", status_code=201)
async def create_workspace(
    body: WorkspaceIn,
    ctx: Ctx,
    x_chips_operator_secret: Annotated[str | None, Header()] = None,
    idempotency_key: IdempotencyKey = None,
) -> WorkspaceMade:
    """An operator creates a workspace with its owner, who gets a person token."""
    check_operator(x_chips_operator_secret, ctx.settings.operator_secret)
    workspace_id = new_id("ws")
    owner_id = new_id("usr")
    token = new_token("pt")
    answer = await ctx.appender.append(
        workspace_id,
        "operator",
        {"kind": "operator", "id": "operator"},
        request_key(idempotency_key),
        [
            {"type": "workspace.created", "name": body.name},
            {
                "type": "participant.joined",
                "participant_id": owner_id,
                "kind": "person",
                "name": body.owner_name,
                "role": "owner",
            },
        ],
        [
            IssuedCredential(
                credential_id=new_id("crd"), participant_id=owner_id, token_hash=hash_token(token)
            )
        ],
        fingerprint=asked("POST /v1/workspaces", body),
    )
    raise_refusal(answer)
    return WorkspaceMade(workspace_id=workspace_id, owner_id=owner_id, token=token)


@router.post("/participants", status_code=201)
async def add_person(
    body: PersonIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> PersonAdded:
    """A workspace owner or admin adds a person, who gets a person token."""
    person_id = new_id("usr")
    token = new_token("pt")
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [
            {
                "type": "participant.joined",
                "participant_id": person_id,
                "kind": "person",
                "name": body.name,
                "role": body.role,
            }
        ],
        [
            IssuedCredential(
                credential_id=new_id("crd"), participant_id=person_id, token_hash=hash_token(token)
            )
        ],
        fingerprint=asked("POST /v1/participants", body),
    )
    raise_refusal(answer)
    return PersonAdded(participant_id=person_id, name=body.name, role=body.role, token=token)


@router.post("/harnesses", status_code=201)
async def connect_harness(
    body: HarnessIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> HarnessConnected:
    """A person connects a harness: it gets a token and a direct space with its owner."""
    if caller.kind != "person":
        raise ChipsError("forbidden", "a person connects a harness")
    harness_id = new_id("hrn")
    space_id = new_id("spc")
    token = new_token("at")
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [
            {
                "type": "participant.joined",
                "participant_id": harness_id,
                "kind": "harness",
                "name": body.name,
                "owner_id": caller.participant_id,
                "autonomy": body.autonomy,
            },
            {
                "type": "space.created",
                "space_id": space_id,
                "kind": "direct",
                "title": body.name,
                "members": [harness_id],
                "home_of": harness_id,
            },
        ],
        [
            IssuedCredential(
                credential_id=new_id("crd"), participant_id=harness_id, token_hash=hash_token(token)
            )
        ],
        fingerprint=asked("POST /v1/harnesses", body),
    )
    raise_refusal(answer)
    # The door numbers a name another participant has ("Scout 2"): answer the one it got.
    joined = next((e for e in answer.events if e["type"] == "participant.joined"), {})
    return HarnessConnected(
        harness_id=harness_id,
        name=joined.get("name", body.name),
        autonomy=body.autonomy,
        token=token,
        space_id=space_id,
        url=ctx.settings.gateway_url,
    )


@router.post("/socket-tickets", status_code=201)
async def socket_ticket(ctx: Ctx, caller: Caller) -> SocketTicket:
    """A single-use ticket for opening /v1/ws where no header can be set."""
    ticket = await ctx.tickets.issue(caller)
    return SocketTicket(ticket=ticket, expires_in=ctx.tickets.ttl)
