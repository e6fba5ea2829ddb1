"""``/v1/ws``: one socket, one credential (spec/websocket.md).

The session reads frames in one task and writes them in another, through a bounded
queue: a reader more than ``ws_max_queued_frames`` behind is told ``too_far_behind`` and
closed rather than buffered for (websocket.md, Staying alive). Protocol pings and the
silence timeout are uvicorn's, configured from the same settings (see ``__main__``).

A socket's writes go to the eventlog from a queue of its own: at most
``ws_max_inflight_writes`` of them wait for the log at a time, so that one socket is never
more than that in anybody's way in the log's queue, while the socket goes on being read
(its pongs with it) until ``ws_max_queued_writes`` wait in the queue (docs/adr/0065).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from fastapi import WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from chips_common import otel
from chips_common.events import (
    CATALOGUE,
    PROTOCOL_VERSION,
    InvalidEvent,
    parse_event,
    said_on_run,
)
from chips_common.rules.agents_view import as_seen_by
from chips_common.rules.context import Budget
from chips_common.rules.delivery import WorkingTurns
from chips_common.rules.exchanges import held_ack
from chips_common.rules.scope import MembershipView
from chips_gateway import metrics, runs
from chips_gateway.agents import agents_with_rooms, view_as_of
from chips_gateway.auth import Principal, bearer, principal_for_credential, principal_for_token
from chips_gateway.context import Context
from chips_gateway.edge import MAX_INT, has_nul
from chips_gateway.errors import ChipsError
from chips_gateway.feeds import Feed
from chips_gateway.ratelimit import Bucket, retry_after
from chips_gateway.shaping import Shaper
from chips_gateway.sockets import disconnected_why, seen_key
from chips_gateway.windows import AsOf, ReplayWindows

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.gateway")

SERVER_PROTOCOL = (PROTOCOL_VERSION, PROTOCOL_VERSION)
CLOSE_POLICY = 4401
CLOSE_PROTOCOL = 4400
CLOSE_BEHIND = 4008
CLOSE_RATE = 4429
CLOSE_TRY_LATER = 1013
# Marks a queued event frame still to be shaped for its recipient by the send loop.
SHAPE = "_shape"
# What the feed's window of the room told of the event (windows.AsOf).
AS_OF = "_as_of"
# The own agents a pre-agents harness is shown as itself, as of the queued event.
VIEW = "_view"


class TooFarBehind(Exception):
    pass


@dataclass
class Write:
    """A write read from the socket and waiting for one of its places in flight."""

    key: str
    event: dict[str, Any]
    span: Span
    actor: dict[str, str]


async def authenticate(ws: WebSocket, ctx: Context) -> Principal:
    token = bearer(ws.headers.get("authorization"))
    if token is None and (ticket := ws.query_params.get("ticket")):
        credential_id = await ctx.tickets.spend(ticket)
        if credential_id is None:
            raise ChipsError(
                "unauthorized", "that ticket was used already, expired, or never issued"
            )
        principal = await principal_for_credential(ctx.auth, credential_id)
        if principal is None:
            raise ChipsError("unauthorized", "the ticket's token was withdrawn")
        return principal
    if token is None and (token := ws.query_params.get("token")):
        # Deprecated (websocket.md, Getting on): still taken, with a warning each time.
        # The token itself never reaches the log.
        log.warning("a socket opened with ?token= in its URL; use a ticket or a header instead")
    if token is None:
        raise ChipsError(
            "unauthorized", "send Authorization: Bearer <token>, or open with ?ticket="
        )
    principal = await principal_for_token(ctx.auth, token)
    if principal is None:
        raise ChipsError("unauthorized", "that token is not known or was withdrawn")
    return principal


class Subscription:
    """One socket's view of one workspace: replay first, then live, each seq once."""

    def __init__(self, session: Session, view: MembershipView, cursor: int) -> None:
        self.session = session
        self.view = view
        self.cursor = cursor
        self.replaying = True
        self.pending: list[tuple[dict[str, Any], AsOf | None]] = []

    def visible(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event if this socket is to be sent it (not sent yet, and in scope), else None.

        Shaping for the recipient happens later, in the send loop or the replay, since a
        message.new's context and room are read from the log.
        """
        seq = event["seq"]
        if seq <= self.cursor:
            return None
        self.cursor = seq
        return event if self.view.visible(event) else None

    def offer(self, event: dict[str, Any]) -> None:
        """Called by the feed for every event of the workspace, in seq order.

        A turn's room, context and spend, and the held posts a person's act hands on, are
        worked out now, from the feed's window as of this event, even while the replay
        runs and the event waits its turn.
        """
        if event["type"] == "harness.disconnected" and (
            event.get("harness_id") == self.session.principal.participant_id
        ):
            self.session.revoke(disconnected_why(self.session.principal.name))
            return
        as_of = self.session.fast_extras(event)
        if self.replaying:
            self.pending.append((event, as_of))
            if len(self.pending) > self.session.max_queued:
                self.session.fall_behind()
            return
        if self.visible(event) is not None:
            self.session.push(queued(event, as_of, self.view.pre_agents()))


def queued(
    event: dict[str, Any], as_of: AsOf | None, view: frozenset[str] | None = None
) -> dict[str, Any]:
    """An event frame waiting to be shaped by the send loop (with what the window told of
    it, if anything, and the own agents of a harness shown the pre-agents view,
    docs/adr/0079)."""
    frame: dict[str, Any] = {"frame": "event", "event": event, SHAPE: True}
    if as_of is not None:
        frame[AS_OF] = as_of
    if view is not None:
        frame[VIEW] = view
    return frame


class Session:
    def __init__(self, ws: WebSocket, ctx: Context, principal: Principal) -> None:
        self.ws = ws
        self.ctx = ctx
        self.principal = principal
        self.max_queued = ctx.settings.ws_max_queued_frames
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self.max_queued)
        self.hello: dict[str, Any] | None = None
        self.accepts: set[str] = set()
        self.subscription: Subscription | None = None
        self.feed: Feed | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        # Writes sent to the eventlog and not answered yet.
        self.waiting: set[asyncio.Future[Any]] = set()
        self.behind = asyncio.Event()
        self.shaper = Shaper(ctx.reader, principal, Budget(), ctx.links)
        # Keys of the decisions this socket sent (approval.resolved): runs.mark_elsewhere.
        self.sent_keys: set[str] = set()
        settings = ctx.settings
        self.writes = Bucket(settings.socket_write_rate, settings.socket_write_burst)
        # Refusals a socket may run into: a burst of them, then about one a second less.
        strikes = settings.rate_limit_strikes
        self.strikes = Bucket(max(strikes / 10, 0.1), strikes)
        # Writes read and not yet sent to the eventlog, in the order they came; at most
        # ``max_inflight`` are sent and unanswered at a time (docs/adr/0065).
        self.queued_writes: deque[Write] = deque()
        self.max_inflight = max(settings.ws_max_inflight_writes, 1)
        self.max_queued_writes = max(settings.ws_max_queued_writes, 1)
        self.inflight = 0
        # Set when a write may go to the eventlog; cleared by the pump when none may.
        self.may_send = asyncio.Event()
        # Set while the queue has room; the reader waits on it (the socket is not read).
        self.write_room = asyncio.Event()
        self.write_room.set()
        # Set while no write is queued or in flight.
        self.writes_idle = asyncio.Event()
        self.writes_idle.set()
        self.kept_going = asyncio.Event()
        # Set when the credential is withdrawn (chips disconnect): the socket is closed.
        self.revoked = asyncio.Event()
        self.revoked_why = ""
        # A harness socket counted online (restarts.py), once it has said hello.
        self.presence: str | None = None

    def revoke(self, why: str) -> None:
        self.revoked_why = why
        self.revoked.set()

    def ask_restart(self, frame: dict[str, Any]) -> bool:
        """Send a restart frame, if this socket's hello said it accepts one (ADR 0080)."""
        if "restart" not in self.accepts:
            return False
        self.push(dict(frame))
        return True

    # --- writing to the client -----------------------------------------------------

    def fast_extras(self, event: dict[str, Any]) -> AsOf | None:
        """What a harness is sent with the event that the feed's window of the room can
        tell, worked out as the event goes by: a message.new's room, context and spend,
        and the held posts a person's act hands on. None (or None in it) to read them from
        the log when the event is sent."""
        if self.principal.kind != "harness" or self.feed is None:
            return None
        window = self.feed.rooms.get(event.get("space_id") or "")
        if window is None:
            return None
        feed, taking = self.feed, self.shaper.takers(event)
        return window.as_of(taking, event, self.shaper.budget, feed.people, feed.owners)

    def push(self, frame: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(frame)
        except asyncio.QueueFull:
            self.fall_behind()

    def fall_behind(self) -> None:
        self.behind.set()

    async def send_loop(self) -> None:
        while True:
            frame = await self.queue.get()
            try:
                await self.send_frame(frame)
            finally:
                self.queue.task_done()

    async def send_frame(self, frame: dict[str, Any]) -> None:
        """Send one queued frame: an event shaped for this socket, or as it is."""
        beside: list[dict[str, Any]] = []
        text: str | None = None
        if frame.pop(SHAPE, False):
            event = frame["event"]
            as_of: AsOf = frame.pop(AS_OF, None) or AsOf()
            shaped = await self.shaper.shape(event, as_of.extras, as_of.job)
            shaped = runs.mark_elsewhere(self.principal, shaped, self.sent_keys)
            if (own := frame.pop(VIEW, None)) is not None:
                # The feed's encoding of the event, when it is the feed's own, made once
                # for every socket: the view decides on it without encoding it again.
                shared = self.feed.frame_json(shaped, event) if self.feed is not None else None
                seen = as_seen_by(shaped, self.principal.participant_id, own, shared)
                if seen is None:
                    return
                shaped = seen
            frame = {"frame": "event", "event": shaped}
            beside = [r for r in [runs.receipt_beside(self.principal, shaped)] if r]
            beside += await self.handed(event, own, as_of)
            if self.feed is not None:
                # Sent as the feed offered it (or only retyped): one encoding for every
                # such socket.
                text = self.feed.frame_json(shaped, event)
        elif frame["frame"] == "events":
            frame["events"] = [
                runs.mark_elsewhere(self.principal, e, self.sent_keys) for e in frame["events"]
            ]
            # A run's harness is sent each receipt after the batch that holds its event.
            beside = [r for e in frame["events"] if (r := runs.receipt_beside(self.principal, e))]
        await self.ws.send_text(text if text is not None else orjson.dumps(frame).decode())
        metrics.FRAMES_OUT.labels(frame["frame"]).inc()
        for receipt in beside:
            await self.ws.send_text(orjson.dumps(receipt).decode())
            metrics.FRAMES_OUT.labels("receipt").inc()

    async def handed(
        self, event: dict[str, Any], own: frozenset[str] | None, as_of: AsOf | None
    ) -> list[dict[str, Any]]:
        """The frames of the held messages ``event`` (a person's act) hands this socket,
        as its recipient sees them (docs/adr/0083)."""
        pid = self.principal.participant_id
        held = as_of.held if as_of is not None else None
        return [
            {"frame": "event", "event": seen}
            for h in await self.shaper.handed(event, own, held)
            if (seen := shown_to(pid, h, own)) is not None
        ]

    def error(self, code: str, message: str, **extra: Any) -> dict[str, Any]:
        return {
            "frame": "error",
            "code": code,
            "message": message,
            **{k: v for k, v in extra.items() if v is not None},
        }

    # --- reading from the client ---------------------------------------------------

    async def read_loop(self) -> None:
        # A socket that went on writing through its refusals is read no further: it is
        # answered what it was let write, and closed (close_kept_going).
        while not self.kept_going.is_set():
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            raw = message.get("text")
            if raw is None:
                self.push(self.error("invalid_frame", "a frame is text: one JSON object"))
                continue
            try:
                # orjson refuses NaN and Infinity (1e999) that json would turn into floats.
                frame = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self.push(self.error("invalid_frame", "a frame is one JSON object"))
                continue
            if not isinstance(frame, dict):
                self.push(self.error("invalid_frame", "a frame is one JSON object"))
                continue
            kind = frame.get("frame")
            metrics.FRAMES_IN.labels(
                kind if kind in ("hello", "subscribe", "event") else "other"
            ).inc()
            if kind == "hello":
                if not await self.on_hello(frame):
                    return
            elif self.hello is None:
                self.push(self.error("invalid_frame", "send hello first"))
            elif kind == "subscribe":
                await self.on_subscribe(frame)
            elif kind == "event":
                await self.on_event(frame)
            else:
                self.push(self.error("invalid_frame", f"unknown frame {kind!r}"))

    async def on_hello(self, frame: dict[str, Any]) -> bool:
        if self.hello is not None:
            self.push(self.error("invalid_frame", "hello was already said on this socket"))
            return True
        protocol = frame.get("protocol") or {}
        low = protocol.get("min", 1) if isinstance(protocol, dict) else None
        high = protocol.get("max", low) if isinstance(protocol, dict) else None
        if not (is_count(low) and is_count(high)):
            self.push(self.error("invalid_frame", "protocol is {min, max} with integer versions"))
            return True
        assert isinstance(low, int) and isinstance(high, int)
        version = min(high, SERVER_PROTOCOL[1])
        if version < max(low, SERVER_PROTOCOL[0]):
            await self.ws.send_text(
                json.dumps(
                    self.error(
                        "invalid_frame",
                        "no protocol version in common: this server speaks "
                        f"{SERVER_PROTOCOL[0]} to {SERVER_PROTOCOL[1]}, the client {low} to {high}",
                    )
                )
            )
            await self.ws.close(CLOSE_PROTOCOL)
            return False
        accepts = frame.get("accepts") or []
        self.accepts = (
            {a for a in accepts if isinstance(a, str)} if isinstance(accepts, list) else set()
        )
        self.hello = frame
        self.shaper = Shaper(
            self.ctx.reader, self.principal, Budget.from_hello(frame.get("context")), self.ctx.links
        )
        p = self.principal
        spaces = await self.ctx.reader.current_spaces(p.workspace_id, p.participant_id)
        who: dict[str, Any] = {"id": p.participant_id, "name": p.name}
        answer: dict[str, Any] = {
            "frame": "hello",
            "protocol": {"min": SERVER_PROTOCOL[0], "max": SERVER_PROTOCOL[1], "version": version},
            "server": {"name": "chips", "gateway": self.ctx.settings.replica_id()},
            "workspace_id": p.workspace_id,
            "spaces": spaces,
            # The log's head as of this hello: a client that has no seq of its own yet
            # subscribes with it as since, so a reconnect before its first event resumes
            # without a gap (docs/protocol.md).
            "head_seq": await self.ctx.reader.head(p.workspace_id),
        }
        if p.kind == "harness":
            capabilities = await self.ctx.reader.capabilities(p.participant_id)
            answer["harness"] = {**who, "owner_id": p.owner_id, "capabilities": capabilities}
            if "agents" in capabilities:
                # websocket.md, Saying you speak agents: hello lists them with their rooms.
                answer["agents"] = await agents_with_rooms(self.ctx.reader, p.participant_id)
            # "off" for a harness that does not take the dial (and one connected before it
            # was recorded), else the dial's level (docs/adr/0031).
            answer["autonomy"] = await self.ctx.reader.autonomy(p.participant_id) or "off"
        else:
            answer["person"] = {**who, "role": p.role}
        if p.kind == "harness":
            # Online, and the harness's next word after a restart (docs/adr/0080): counted
            # before it is answered, so whatever it does next sees it back.
            self.presence = await self.ctx.restarts.opened(p.participant_id, self, self.accepts)
        self.push(answer)
        return True

    async def on_subscribe(self, frame: dict[str, Any]) -> None:
        p = self.principal
        if self.subscription is not None:
            self.push(self.error("invalid_frame", "this socket is subscribed already"))
            return
        if frame.get("workspace_id") != p.workspace_id:
            self.push(
                self.error(
                    "forbidden",
                    "your credential belongs to another workspace",
                    workspace_id=frame.get("workspace_id"),
                )
            )
            return
        since = frame.get("since")
        if since is not None and not is_count(since):
            self.push(self.error("invalid_frame", "since is the last seq you saw, a whole number"))
            return
        # Without since, "from now" is the log's head as this frame is read, not the attach
        # point: a post another socket sends just after this subscribe may be appended
        # while the feed is being opened and attached, and it is this socket's all the
        # same. Read so, it is replayed like any since; writes this gateway is sent
        # meanwhile wait for the read, so none of them is taken for the past.
        from_now = since is None
        if since is not None:
            start = int(since)
        else:
            release = self.ctx.appender.hold(p.workspace_id)
            try:
                start = await self.ctx.reader.head(p.workspace_id)
            finally:
                release()
        # Attach first, so that everything after the attach point comes live; then replay
        # (since, attach point] from Postgres. Nothing is missed and nothing repeats.
        placeholder = Subscription(self, MembershipView(p.participant_id, kind=p.kind), 0)
        feed, boundary = await self.ctx.feeds.attach(p.workspace_id, placeholder)
        # The feed may not have seen what the log already holds (an ack goes out at the
        # commit, before the stream carries the event): only the log's head says "ahead".
        head = boundary
        if start > boundary:
            head = max(boundary, await self.ctx.reader.head(p.workspace_id))
        if not from_now and start > head:
            # A seq the log has not reached: the client's seqs are from another log (a
            # restored or another workspace's). Say so rather than wait in silence.
            await self.ctx.feeds.detach(feed, placeholder)
            self.push(
                self.error(
                    "since_ahead",
                    f"since {since} is beyond this workspace's newest event, seq {head}: "
                    "subscribe again with since at most that seq, or without since to start "
                    "from now",
                    head=head,
                )
            )
            return
        self.feed = feed
        self.shaper.owner_of = feed.owner_of
        if p.kind == "harness":
            # Read from the log only for a harness with agents: none has turns to name.
            has_agents = p.participant_id in feed.owners.values()
            runs, heard = (
                await self.ctx.reader.working_turns(p.workspace_id, p.participant_id, start)
                if has_agents
                else ({}, {})
            )
            self.shaper.turns = WorkingTurns(
                p.participant_id, runs, heard, self.ctx.settings.turn_silent_seconds
            )
        placeholder.view = await view_as_of(self.ctx.reader, p, start)
        # Told ``for`` from the first event on, as the view is shown agents (ADR 0075).
        self.shaper.speaks_agents = placeholder.view.speaks_agents
        placeholder.cursor = start
        self.subscription = placeholder
        await self.seen()
        task = asyncio.create_task(self.replay(placeholder, start, boundary))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def seen(self) -> None:
        """Note when this participant last subscribed, for ``chips doctor``'s last seen.

        Redis is a soft dependency (DESIGN.md §3): without it the doctor cannot say.
        """
        key = seen_key(self.ctx.settings.redis_prefix, self.principal.participant_id)
        with contextlib.suppress(Exception):
            await self.ctx.redis.set(key, datetime.now(UTC).isoformat(timespec="seconds"))

    async def replay(self, sub: Subscription, since: int, boundary: int) -> None:
        batched = "events" in self.accepts
        ws = self.principal.workspace_id
        # A harness's turns come with context and room: fold the rooms along the replay
        # (as the feed does live) rather than read each turn's from the log.
        names = self.feed.people if self.feed is not None else {}
        owners = self.feed.owners if self.feed is not None else {}
        windows = (
            ReplayWindows(self.ctx.reader, ws, names) if self.principal.kind == "harness" else None
        )
        async for batch in self.ctx.reader.replay(ws, since, boundary):
            shown: list[tuple[dict[str, Any], AsOf, frozenset[str] | None]] = []
            for event in batch:
                window = await windows.fold(event) if windows is not None else None
                if sub.visible(event) is None:
                    continue
                as_of = AsOf()
                if window is not None:
                    taking = self.shaper.takers(event)
                    as_of = window.as_of(taking, event, self.shaper.budget, names, owners)
                shown.append((event, as_of, sub.view.pre_agents()))
            if not shown:
                continue
            if batched:
                pid = self.principal.participant_id
                shaped = [
                    seen
                    for e, as_of, own in shown
                    if (
                        seen := shown_to(
                            pid, await self.shaper.shape(e, as_of.extras, as_of.job), own
                        )
                    )
                ]
                if shaped:
                    await self.queue.put({"frame": "events", "events": shaped})
                for e, as_of, own in shown:  # each held message a person's act handed over
                    for handed in await self.handed(e, own, as_of):
                        await self.queue.put(handed)
            else:
                for event, as_of, own in shown:
                    await self.queue.put(queued(event, as_of, own))
        while sub.pending:
            event, pending_as_of = sub.pending.pop(0)
            if sub.visible(event) is not None:
                await self.queue.put(queued(event, pending_as_of, sub.view.pre_agents()))
        sub.replaying = False

    async def on_event(self, frame: dict[str, Any]) -> None:
        if "idempotency_key" in frame:
            self.push(
                self.error(
                    "invalid_frame",
                    "idempotency_key goes inside event, not beside it",
                    idempotency_key=frame.get("idempotency_key"),
                )
            )
            return
        event = frame.get("event")
        if not isinstance(event, dict):
            self.push(self.error("invalid_frame", "an event frame carries one event object"))
            return
        event = dict(event)
        key = event.pop("idempotency_key", None)
        if not isinstance(key, str) or not key or len(key) > 200 or "\x00" in key:
            self.push(
                self.error("invalid_frame", "every event carries its idempotency_key inside it")
            )
            return
        if not await self.within_rate(key):
            return
        try:
            actor = actor_for(self.principal, event)
            check_writable(event, self.ctx.settings.max_event_bytes)
        except ChipsError as exc:
            self.push(self.error(exc.code, exc.message, idempotency_key=key, **exc.extra))
            return
        if event["type"] in runs.DECISIONS:
            self.sent_keys.add(key)
        p = self.principal
        # One span per client frame; a client may hand us its own trace (DESIGN.md §8).
        parent = (
            otel.from_traceparent(frame.get("traceparent"))
            if isinstance(frame.get("traceparent"), str)
            else None
        )
        span = tracer.start_span(
            "gateway.receive event",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={otel.WORKSPACE_ID: p.workspace_id, otel.EVENT_TYPE: str(event["type"])},
        )
        if len(self.queued_writes) >= self.max_queued_writes:
            # Stop reading this socket until its queue has room: its TCP window fills.
            self.write_room.clear()
            await self.write_room.wait()
        self.queued_writes.append(Write(key, event, span, actor))
        self.writes_idle.clear()
        self.may_send.set()

    async def pump(self) -> None:
        """Send the socket's queued writes to the eventlog, in order, a few at a time."""
        while True:
            await self.may_send.wait()
            if not self.queued_writes or self.inflight >= self.max_inflight:
                self.may_send.clear()
                continue
            write = self.queued_writes.popleft()
            if len(self.queued_writes) < self.max_queued_writes:
                self.write_room.set()
            self.inflight += 1
            await self.send_write(write)

    async def send_write(self, write: Write) -> None:
        p = self.principal
        key, span = write.key, write.span
        try:
            with trace.use_span(span, end_on_exit=False):
                future = await self.ctx.appender.send(
                    p.workspace_id, p.credential_id, write.actor, key, [write.event]
                )
        except ChipsError as exc:
            self.sent_one()
            span.end()
            self.push(self.error(exc.code, exc.message, idempotency_key=key))
            return
        # No task per write: the answer (or the timeout) calls back (docs/adr/0024).
        timer = asyncio.get_running_loop().call_later(
            self.ctx.appender.timeout, self.ctx.appender.expire, future
        )
        self.waiting.add(future)
        future.add_done_callback(lambda done: self.answered(key, done, span, timer))

    def sent_one(self) -> None:
        """A write in flight was answered (or never went): the next may go."""
        self.inflight -= 1
        self.may_send.set()
        if not self.queued_writes and not self.inflight:
            self.writes_idle.set()

    async def within_rate(self, key: str) -> bool:
        """Whether a write may go on; if not, the socket is told when to send it again.

        A socket that keeps writing through its refusals is closed (``kept_going``).
        """
        now = time.monotonic()
        wait = self.writes.take(now)
        if wait == 0.0:
            wait = await self.ctx.limiter.take(self.principal.credential_id)
        if wait == 0.0:
            return True
        metrics.RATE_LIMITED.labels("socket").inc()
        self.push(
            self.error(
                "rate_limited",
                f"too many writes; send this one again in {retry_after(wait):.3f} s",
                idempotency_key=key,
                retry_after=retry_after(wait),
            )
        )
        if self.strikes.take(now) > 0.0:
            self.kept_going.set()
        return False

    def answered(
        self, key: str, future: asyncio.Future[Any], span: Span, timer: asyncio.TimerHandle
    ) -> None:
        """The eventlog's answer to one write (or its timeout): the ack or error frame."""
        timer.cancel()
        self.waiting.discard(future)
        self.sent_one()
        if future.cancelled():  # the socket closed first
            span.end()
            return
        exc = future.exception()
        if exc is not None:
            span.end()
            error = (
                exc
                if isinstance(exc, ChipsError)
                else ChipsError("unavailable", "the log did not answer; send it again")
            )
            self.push(self.error(error.code, error.message, idempotency_key=key))
            return
        answer = future.result()
        trace_id = otel.trace_id_of(span)
        if answer.ok:
            if answer.seqs:  # a request may log nothing (a harness door that changed nothing)
                span.set_attribute(otel.SEQ, answer.seqs[-1])
            if message_id := answer.events[-1].get("message_id") if answer.events else None:
                span.set_attribute(otel.MESSAGE_ID, message_id)
            span.end()
            ack: dict[str, Any] = {
                "frame": "ack",
                "idempotency_key": key,
                "seq": answer.seqs[-1] if answer.seqs else None,
                "duplicate": answer.duplicate,
            }
            if trace_id:
                ack["trace_id"] = trace_id
            ack.update(held_ack(answer.events[-1] if answer.events else None))
            self.push(ack)
            if (receipt := runs.receipt_after_ack(answer, key)) is not None:
                self.push(receipt)
        else:
            span.set_attribute("chips.refused", answer.code or "invalid_event")
            span.end()
            self.push(
                self.error(
                    answer.code or "invalid_event",
                    answer.message or "refused",
                    idempotency_key=key,
                    field=answer.field,
                    **(answer.data or {}),
                )
            )

    # --- the whole life of a socket --------------------------------------------------

    async def close_kept_going(self, sender: asyncio.Task[None]) -> None:
        """Close a socket that went on writing through its rate_limited refusals.

        What it was let write is answered first (acks, or errors), so that the client
        knows what was logged; then the last refusal, and close code 4429.
        """
        metrics.RATE_LIMIT_CLOSES.inc()
        # Coming straight back on another socket gets nothing either (docs/adr/0065).
        await self.ctx.limiter.penalize(
            self.principal.credential_id, self.ctx.settings.rate_limit_penalty_seconds
        )
        answering = asyncio.create_task(self.answered_all())
        # Not past the appender's timeout (every write is answered by then), nor past the
        # send loop's end (the client went away).
        await asyncio.wait(
            {answering, sender},
            timeout=self.ctx.appender.timeout + 1.0,
            return_when=asyncio.FIRST_COMPLETED,
        )
        answering.cancel()
        sender.cancel()
        with contextlib.suppress(Exception):
            await self.ws.send_text(
                json.dumps(
                    self.error(
                        "rate_limited",
                        "this socket went on writing after it was told to wait; "
                        "reconnect and keep to retry_after",
                    )
                )
            )
            await self.ws.close(CLOSE_RATE, reason="rate_limited")

    async def answered_all(self) -> None:
        """Until every write taken from the socket is answered and the answer sent."""
        await self.writes_idle.wait()
        await self.queue.join()

    async def run(self) -> None:
        metrics.SOCKETS_OPEN.inc()
        sender = asyncio.create_task(self.send_loop())
        reader = asyncio.create_task(self.read_loop())
        pump = asyncio.create_task(self.pump())
        behind = asyncio.create_task(self.behind.wait())
        kept_going = asyncio.create_task(self.kept_going.wait())
        revoked = asyncio.create_task(self.revoked.wait())
        self.ctx.sockets.add(self.principal.participant_id, self)
        try:
            done, _ = await asyncio.wait(
                {sender, reader, pump, behind, kept_going, revoked},
                return_when=asyncio.FIRST_COMPLETED,
            )
            if self.revoked.is_set():
                sender.cancel()
                with contextlib.suppress(Exception):
                    await self.ws.send_text(
                        json.dumps(self.error("unauthorized", self.revoked_why))
                    )
                    await self.ws.close(CLOSE_POLICY)
            elif self.kept_going.is_set() and not self.behind.is_set():
                await self.close_kept_going(sender)
            elif self.behind.is_set():
                metrics.TOO_FAR_BEHIND.inc()
                sender.cancel()
                with contextlib.suppress(Exception):
                    await self.ws.send_text(
                        json.dumps(
                            self.error(
                                "too_far_behind",
                                f"more than {self.max_queued} frames were waiting for you; "
                                "reconnect and subscribe with since",
                            )
                        )
                    )
                    await self.ws.close(CLOSE_BEHIND)
            for task in done:
                if task not in (behind, kept_going, revoked) and not task.cancelled():
                    exc = task.exception()
                    if exc is not None and not isinstance(exc, WebSocketDisconnect | RuntimeError):
                        log.error("socket task failed", exc_info=exc)
        finally:
            metrics.SOCKETS_OPEN.dec()
            self.ctx.sockets.discard(self.principal.participant_id, self)
            if self.presence is not None:
                await self.ctx.restarts.closed(self.presence)
            for future in list(self.waiting):
                future.cancel()
            for write in self.queued_writes:
                write.span.end()
            self.queued_writes.clear()
            tasks = (sender, reader, pump, behind, kept_going, revoked, *self.tasks)
            for task in tasks:
                task.cancel()
            # Collect every ending, so that none is logged later as never retrieved.
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.feed is not None and self.subscription is not None:
                await self.ctx.feeds.detach(self.feed, self.subscription)


def shown_to(
    harness_id: str, shaped: dict[str, Any], own: frozenset[str] | None
) -> dict[str, Any] | None:
    """A shaped event as its recipient sees it: the pre-agents view when ``own`` is set."""
    return shaped if own is None else as_seen_by(shaped, harness_id, own)


def is_count(value: object) -> bool:
    """A whole number from 0 to the largest seq Postgres holds (JSON true is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT


def actor_for(principal: Principal, event: dict[str, Any]) -> dict[str, str]:
    """Who an event is sent as: the credential's participant, or, for a harness's token,
    one of its agents the event names as its ``actor`` (taken out of the event here).

    Only an agent may be named, and only by a harness: Chips writes the harness beside it
    from the token, and the door checks the agent is that harness's (docs/adr/0070).
    """
    if "actor" not in event:
        return principal.actor
    named = event.pop("actor")
    if principal.kind != "harness":
        raise ChipsError(
            "invalid_event", "actor is filled in by Chips; leave it out", field="actor"
        )
    ok = (
        isinstance(named, dict)
        and named.get("kind") == "agent"
        and isinstance(named.get("id"), str)
        and str(named["id"]).startswith("agt_")
        and len(str(named["id"])) <= 100
        and set(named) <= {"kind", "id", "harness_id"}
        and named.get("harness_id", principal.participant_id) == principal.participant_id
    )
    if not ok:
        raise ChipsError(
            "invalid_event",
            'a harness speaks as one of its agents with actor {"kind": "agent", "id": "agt_…"}',
            field="actor",
        )
    return {"kind": "agent", "id": named["id"], "harness_id": principal.participant_id}


def check_writable(event: dict[str, Any], max_bytes: int) -> None:
    """Refuse what no client may write, before it travels to the eventlog.

    An event over ``max_bytes`` (as compact JSON) is refused here, so that nothing too big
    for the path reaches NATS or the eventlog; so is a NUL character, which Postgres's
    jsonb cannot store.
    """
    try:
        encoded = orjson.dumps(event)
    except (TypeError, orjson.JSONEncodeError):
        raise ChipsError("invalid_event", "an event is a JSON object") from None
    if len(encoded) > max_bytes:
        raise ChipsError(
            "too_large",
            f"this event is {len(encoded)} bytes; an event is at most {max_bytes} bytes",
            size=len(encoded),
            limit=max_bytes,
        )
    if has_nul(encoded):
        raise ChipsError("invalid_event", "an event may not hold the NUL character (\\u0000)")
    # A reply on the run leaves its room to the door, which knows the run's (said_on_run);
    # so does a post naming no room, which the door holds for a free agent and refuses from
    # anybody else (docs/adr/0071). The rest of it is checked here as any post.
    roomless = event.get("type") == "message.post" and "space_id" not in event
    checked = {**event, "space_id": "spc_of_the_run"} if said_on_run(event) or roomless else event
    try:
        body = parse_event(checked)
    except InvalidEvent as exc:
        raise ChipsError("invalid_event", exc.message, field=exc.field) from None
    if not CATALOGUE[body.type].client_writable:
        raise ChipsError("forbidden", f"{body.type} is written by Chips itself", field="type")


async def serve_socket(ws: WebSocket, ctx: Context) -> None:
    """Authenticate a socket, accept it and serve it; every refusal is an error frame.

    But one: a credential whose last socket was closed for writing through its refusals
    (4429) a moment ago is refused the upgrade itself, with HTTP 429 and Retry-After, so
    that nothing it would send is read (docs/adr/0065).
    """
    try:
        principal = await authenticate(ws, ctx)
    except ChipsError as exc:
        await ws.accept()
        with contextlib.suppress(Exception):
            await ws.send_text(
                json.dumps({"frame": "error", "code": exc.code, "message": exc.message})
            )
            await ws.close(CLOSE_TRY_LATER if exc.code == "unavailable" else CLOSE_POLICY)
        return
    if (wait := await ctx.limiter.debt(principal.credential_id)) > 0.0:
        metrics.RATE_LIMITED.labels("upgrade").inc()
        body = {
            "code": "rate_limited",
            "message": "this credential's last socket went on writing after it was told to "
            f"wait; come back in {wait:.0f} s",
            "retry_after": retry_after(wait),
        }
        headers = {"Retry-After": str(max(1, math.ceil(wait)))}
        await ws.send_denial_response(JSONResponse(body, status_code=429, headers=headers))
        return
    await ws.accept()
    await Session(ws, ctx, principal).run()
