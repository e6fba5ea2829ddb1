"""Writing and reading the log over HTTP, by the same rules as the socket."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Header, Query
from opentelemetry.trace import SpanKind

from chips_common import otel
from chips_common.events import JsonObject
from chips_common.events.wire import DeliveredJson, LineJson, delivered
from chips_common.rules.context import DEFAULT_LINES, MAX_LINES
from chips_common.rules.context_lines import Changes
from chips_common.rules.scope import told
from chips_gateway.acks import Ack, ack_of
from chips_gateway.agents import present_event_view, shown, view_as_of
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Context, Ctx, check_write_rate
from chips_gateway.edge import MAX_INT
from chips_gateway.errors import ChipsError
from chips_gateway.rows import ContextPage, EventPage
from chips_gateway.shaping import lines_from
from chips_gateway.ws import actor_for, check_writable

router = APIRouter(prefix="/v1")
tracer = otel.tracer("chips.gateway")


@router.post("/events", response_model=Ack, response_model_exclude_unset=True)
async def post_event(
    ctx: Ctx,
    caller: Caller,
    # As the client sent it: the eventlog's door decodes it into its catalogue model.
    event: Annotated[JsonObject, Body()],
    traceparent: Annotated[str | None, Header()] = None,
) -> Ack:
    """Append one event; answered like the socket's ack, refusals like its error frames."""
    return await append_posted(ctx, caller, event, traceparent)


async def append_posted(
    ctx: Context, caller: Principal, event: JsonObject, traceparent: str | None
) -> Ack:
    """``POST /v1/events``' work, once its caller is known and its body read: also what
    ``fastpost.FastPost`` calls for the common request, past FastAPI's machinery."""
    event = dict(event)
    key = event.pop("idempotency_key", None)
    if not isinstance(key, str) or not key or len(key) > 200 or "\x00" in key:
        raise ChipsError("invalid_frame", "every event carries its idempotency_key inside it")
    try:
        await check_write_rate(ctx, caller)
        actor = actor_for(caller, event)
        check_writable(event, ctx.settings.max_event_bytes)
    except ChipsError as exc:
        exc.extra["idempotency_key"] = key
        raise
    with tracer.start_as_current_span(
        "gateway.receive event",
        kind=SpanKind.SERVER,
        context=otel.from_traceparent(traceparent),
        attributes={otel.WORKSPACE_ID: caller.workspace_id, otel.EVENT_TYPE: str(event["type"])},
    ) as span:
        answer = await ctx.appender.append(
            caller.workspace_id, caller.credential_id, actor, key, [event]
        )
        if answer.ok:
            if answer.seqs:  # a request may log nothing (a harness door that changed nothing)
                span.set_attribute(otel.SEQ, answer.seqs[-1])
            if answer.events and "message_id" in answer.events[-1]:
                span.set_attribute(otel.MESSAGE_ID, answer.events[-1]["message_id"])
        trace_id = otel.trace_id_of(span)
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event",
            answer.message or "refused",
            idempotency_key=key,
            field=answer.field,
            **(answer.data or {}),
        )
    return ack_of(key, answer, trace_id)


@router.get("/events", response_model=None)
async def read_events(
    ctx: Ctx,
    caller: Caller,
    since: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
    space_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> EventPage:
    """Events after ``since`` that the caller may see, oldest first.

    With ``space_id``, every event of that space (a member reads a room from its
    beginning). Without, the workspace as the caller's socket would have been sent it:
    each space's events while the caller was in it, and the workspace-wide ones.
    """
    ws_id = caller.workspace_id
    if space_id is not None:
        if not await ctx.reader.is_member(space_id, caller.participant_id):
            raise ChipsError("forbidden", "you are not a member of this space", space_id=space_id)
        events = await ctx.reader.space_events(ws_id, space_id, since, limit)
        next_since = events[-1]["seq"] if events else since
        mine = [delivered(e) for e in events if told(e, caller.participant_id, caller.kind)]
        # A harness before agents reads the room as it would have before them (ADR 0079).
        if (translate := await present_event_view(ctx.reader, caller)) is not None:
            mine = [seen for e in mine if (seen := translate(e)) is not None]
        return {"events": mine, "next_since": next_since}

    # The socket's scope, pre-agents view included, as of since (docs/adr/0079).
    view = await view_as_of(ctx.reader, caller, since)
    head = await ctx.reader.head(ws_id)
    found: list[DeliveredJson] = []
    cursor = since
    async for batch in ctx.reader.replay(ws_id, since, head):
        for event in batch:
            cursor = event["seq"]
            if (seen := view.seen(event)) is not None:
                found.append(seen)
                if len(found) == limit:
                    return {"events": found, "next_since": cursor}
    return {"events": found, "next_since": max(cursor, since)}


@router.get("/spaces/{space_id}/context", response_model=None)
async def read_context(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    before: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LINES)] = DEFAULT_LINES,
) -> ContextPage:
    """Older lines of a room, for a harness catching up (docs/product/websocket.md, What you're
    told).

    The newest ``limit`` lines older than ``before``, in the shape a message.new's context
    has. A person reads the room itself, so a person's credential is refused.
    """
    if caller.kind != "harness":
        raise ChipsError("forbidden", "context is a harness's; a person reads the room itself")
    if not await ctx.reader.is_member(space_id, caller.participant_id):
        raise ChipsError("forbidden", "you are not a member of this space", space_id=space_id)
    upper = before if before is not None else await ctx.reader.head(caller.workspace_id) + 1
    lines: list[LineJson] = []
    changes: Changes = {}
    floor = 0
    window = upper
    # Read back in windows until enough lines (or the room's start) are found.
    while len(lines) < limit + 1 and window > 1:
        events = await ctx.reader.space_window(caller.workspace_id, space_id, floor, window, 500)
        if not events:
            break
        lines = await lines_from(ctx.reader, events, changes) + lines
        window = events[0]["seq"]
    truncated = len(lines) > limit
    kept = lines[-limit:]
    answer: ContextPage = {
        "lines": kept,
        "truncated": truncated,
        "before": kept[0]["seq"] if kept else upper,
    }
    return await shown(ctx.reader, caller, answer)
