"""Live fan-out: one feed per workspace with sockets on this replica.

A feed listens on ``chips.events.<workspace>`` and hands every committed event, in seq
order and without gaps, to each subscription attached to it. A missing seq (a lost or
reordered message) is read from Postgres before going on, and a periodic look at the
workspace's head catches a loss at the tail, so JetStream losing a message may delay
an event but never drop it (docs/architecture/design.md §2, Gaps are healed from the log).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Protocol

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from chips_common import otel
from chips_common.events.wire import DeliveredJson, EventJson, delivered
from chips_common.nats.streams import HDR_TRACEPARENT, Names
from chips_common.rules.scope import MembershipView
from chips_gateway import metrics
from chips_gateway.fanout import Outbox, SharedView, as_logged_to_people
from chips_gateway.intake import text_frame
from chips_gateway.reader import LogReader
from chips_gateway.windows import RoomWindow

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.gateway")
# How many recent events' encoded frames a feed keeps for its sockets' send loops.
FRAMES_KEPT = 2048


class Listener(Protocol):
    def offer(self, event: EventJson) -> None: ...


class Shares(Protocol):
    """A subscription that may hold its participant's shared view."""

    view: MembershipView
    cursor: int
    shared: SharedView | None


def retyped(shaped: DeliveredJson, event: EventJson) -> bool:
    """Whether ``shaped`` is ``event`` with only its type changed: every other field the
    very same object, in the same order."""
    if len(shaped) != len(event) or shaped.get("type") == event.get("type"):
        return False
    sent: Mapping[str, object] = shaped
    logged: Mapping[str, object] = event
    return all(
        a == b and (a == "type" or sent[a] is logged[b]) for a, b in zip(sent, logged, strict=True)
    )


class Feed:
    def __init__(self, workspace_id: str, reader: LogReader, nc: NATS, names: Names) -> None:
        self.workspace_id = workspace_id
        self.reader = reader
        self.nc = nc
        self.names = names
        self.last = 0
        self.listeners: set[Listener] = set()
        self.lock = asyncio.Lock()
        self.sub: Subscription | None = None
        # The fast path for shaping (windows.py): who is who, and each room's recent events.
        self.people: dict[str, dict[str, str]] = {}
        # Each agent's harness (docs/adr/0070): who a message for an agent is delivered to.
        self.owners: dict[str, str] = {}
        self.rooms: dict[str, RoomWindow] = {}
        # Each thread window's room, so a room's membership changes reach its threads' windows.
        self.parents: dict[str, str] = {}
        # The event frames of the newest events, encoded once for every socket that is
        # sent the event as it is, or only retyped (message.overheard), docs/adr/0024:
        # (seq, the type it is sent as) -> (the event, its frame's JSON).
        self.frames: OrderedDict[tuple[int, str], tuple[EventJson, str]] = OrderedDict()
        # The wire bytes of the event being offered, as it is logged: one text frame
        # written to every socket sent it as it is (docs/adr/0161).
        self.wire: tuple[EventJson, bytes] | None = None
        # While an event is offered: its frame, when every person's socket is sent it as
        # logged (``fanout.as_logged_to_people``); None otherwise (docs/adr/0163).
        self.plain: bytes | None = None
        # Whether each event is offered inside a deliver span: only when spans are
        # recorded (docs/adr/0173), asked once for the feed's life.
        self.spanned = otel.recording()
        # The sockets with frames to write at the loop's next turn.
        self.outbox = Outbox()
        # A membership view per participant, shared by its live sockets in the same state.
        self.views: dict[str, SharedView] = {}

    async def start(self, first: Listener) -> int:
        """Listen on the workspace's subject with ``first`` attached; the last seq it will
        not be offered (as :meth:`attach`)."""
        # Hold the lock while subscribing and reading the head, so that an event arriving
        # in between waits and is then judged against the head (no loss, no repeat). The
        # first listener is attached under the same hold: an event that came meanwhile is
        # offered to it, not to nobody before it is on.
        async with self.lock:
            self.sub = await self.nc.subscribe(
                self.names.events_subject(self.workspace_id), cb=self._on_msg
            )
            self.last = await self.reader.head(self.workspace_id)
            self.people = await self.reader.workspace_participants(self.workspace_id)
            self.owners = await self.reader.agent_owners(self.workspace_id)
            return self.attach(first)

    async def stop(self) -> None:
        if self.sub is not None:
            await self.sub.unsubscribe()
            self.sub = None

    def attach(self, listener: Listener) -> int:
        """Attach a listener and return the last seq it will not be offered."""
        self.listeners.add(listener)
        return self.last

    def detach(self, listener: Listener) -> None:
        self.listeners.discard(listener)
        if getattr(listener, "shared", None) is not None:
            self.unshare_view(listener)  # type: ignore[arg-type]

    def owner_of(self, participant_id: str) -> str | None:
        """An agent's harness, or None for anybody else."""
        return self.owners.get(participant_id)

    def frame_json(self, shaped: DeliveredJson, event: EventJson) -> str | None:
        """``{"frame": "event", "event": shaped}`` as JSON, encoded once per event and type,
        when ``shaped`` is the very event object this feed offered, or a copy of it that
        only says another type (a harness's message.overheard); None otherwise (a socket
        that reshaped the event for its recipient encodes its own copy)."""
        if shaped is not event and not retyped(shaped, event):
            return None
        key = (event["seq"], shaped["type"])
        cached = self.frames.get(key)
        if cached is not None and cached[0] is event:
            return cached[1]
        text = orjson.dumps({"frame": "event", "event": shaped}).decode()
        self.frames[key] = (event, text)
        while len(self.frames) > FRAMES_KEPT:
            self.frames.popitem(last=False)
        return text

    def frame_bytes(self, shaped: DeliveredJson, event: EventJson) -> bytes:
        """The text frame ``{"frame": "event", "event": shaped}`` as written to the
        connection: encoded once for every socket when ``shaped`` is ``event`` itself,
        else for this socket alone (a file link signed for its credential)."""
        if shaped is event:
            wire = self.wire
            if wire is not None and wire[0] is event:
                return wire[1]
            data = text_frame(orjson.dumps({"frame": "event", "event": event}))
            self.wire = (event, data)
            return data
        return text_frame(orjson.dumps({"frame": "event", "event": shaped}))

    def plain_frame(self, event: EventJson) -> bytes | None:
        """The frame every person's socket is sent ``event`` as, when it is the same for all
        of them (``fanout.as_logged_to_people``); None to offer it the whole way, also when
        it cannot be encoded (each socket's send loop then fails on it alone, as before)."""
        try:
            if as_logged_to_people(event):
                return self.frame_bytes(delivered(event), event)
        except Exception:
            log.exception("seq %s could not be encoded once for every person", event.get("seq"))
        return None

    def share_view(self, sub: Shares) -> None:
        """A subscription going live holds its participant's shared view, when its own is
        in the same state; the first one's own view becomes the shared one."""
        pid = sub.view.participant_id
        shared = self.views.get(pid)
        if shared is None or shared.holders <= 0:
            shared = SharedView(sub.view, sub.cursor)
            self.views[pid] = shared
        elif not shared.may_take(sub.view, sub.cursor):
            return
        shared.holders += 1
        sub.view = shared.view
        sub.shared = shared

    def unshare_view(self, sub: Shares) -> None:
        shared, sub.shared = sub.shared, None
        if shared is None:
            return
        shared.holders -= 1
        pid = shared.view.participant_id
        if shared.holders <= 0 and self.views.get(pid) is shared:
            del self.views[pid]

    async def _on_msg(self, msg: Msg) -> None:
        try:
            # Decoded once for every socket of the feed: a logged event as the eventlog
            # published it (EventJson says what it holds; nothing is copied or checked).
            event: EventJson = orjson.loads(msg.data)
        except ValueError:
            log.error("undecodable event on %s", msg.subject)
            return
        traceparent = (msg.headers or {}).get(HDR_TRACEPARENT)
        async with self.lock:
            await self._advance_to(event["seq"], event, traceparent)

    async def catch_up(self) -> None:
        """Deliver whatever Postgres has beyond what this feed has heard."""
        head = await self.reader.head(self.workspace_id)
        if head > self.last:
            async with self.lock:
                await self._advance_to(head, None)

    async def _advance_to(
        self, seq: int, event: EventJson | None, traceparent: str | None = None
    ) -> None:
        if seq <= self.last:
            return
        upto = seq - 1 if event is not None else seq
        while self.last < upto:
            missing = await self.reader.events_traced(self.workspace_id, self.last, upto)
            if not missing:
                if await self.reader.head(self.workspace_id) >= upto:
                    # Committed, and gone: the seqs of an erased space (docs/adr/0010).
                    self.last = upto
                    break
                log.warning(
                    "seq %d..%d of %s not in the log yet", self.last + 1, upto, self.workspace_id
                )
                return
            metrics.GAPS_HEALED.inc(len(missing))
            for healed, healed_trace in missing:
                await self._fold(healed)
                self._dispatch(healed, healed_trace)
        if event is not None:
            await self._fold(event)
            self._dispatch(event, traceparent)

    async def _fold(self, event: EventJson) -> None:
        """Keep the names and the room windows up to date with the event about to go out."""
        if event["type"] == "participant.joined":
            pid = event["participant_id"]
            self.people[pid] = {"id": pid, "kind": event["kind"], "name": event["name"]}
        elif event["type"] == "agent.registered":
            pid = event["agent_id"]
            self.people[pid] = {"id": pid, "kind": "agent", "name": event["name"]}
            self.owners[pid] = event["harness_id"]
        elif event["type"] == "agent.updated" and event.get("name"):
            pid = event["agent_id"]
            self.people[pid] = {"id": pid, "kind": "agent", "name": event["name"]}
        space_id = event.get("space_id")
        if space_id is None:
            return
        if event["type"] == "space.erased":
            # Nothing of an erased room stays in memory (docs/product/spaces.md, Deleting one).
            for erased in (space_id, *(event.get("threads") or ())):
                self.rooms.pop(erased, None)
                self.parents.pop(erased, None)
            return
        window = self.rooms.get(space_id)
        if window is None:
            window = await RoomWindow.load(self.reader, self.workspace_id, space_id, event["seq"])
            self.rooms[space_id] = window
            if parent := await self.reader.parent_of(space_id):
                self.parents[space_id] = parent
        window.apply(event, self.people)
        if event["type"] in ("membership.added", "membership.removed"):
            back = event["seq"] in window.back
            for thread, room in self.parents.items():
                if room == space_id and thread in self.rooms:
                    self.rooms[thread].follow_room(event, self.people, back=back)

    def _dispatch(self, event: EventJson, traceparent: str | None) -> None:
        """Offer one event to every listener, inside a span of the event's own trace (when
        spans are recorded, docs/adr/0173)."""
        self.last = event["seq"]
        if not self.spanned:
            self._offer(event)
            metrics.DELIVERED.inc()
            return
        attributes: dict[str, str | int] = {
            otel.WORKSPACE_ID: self.workspace_id,
            otel.SEQ: event["seq"],
            otel.EVENT_TYPE: event["type"],
            "chips.listeners": len(self.listeners),
        }
        if "message_id" in event:
            attributes[otel.MESSAGE_ID] = event["message_id"]
        with tracer.start_as_current_span(
            "gateway.deliver", context=otel.from_traceparent(traceparent), attributes=attributes
        ):
            self._offer(event)
        metrics.DELIVERED.inc()

    def _offer(self, event: EventJson) -> None:
        self.plain = self.plain_frame(event)
        try:
            for listener in list(self.listeners):
                listener.offer(event)
        finally:
            self.plain = None


class Feeds:
    """The feeds of this replica, opened on first use and closed when nobody listens."""

    def __init__(
        self, reader: LogReader, nc: NATS, names: Names, tail_check_seconds: float
    ) -> None:
        self.reader = reader
        self.nc = nc
        self.names = names
        self.tail_check_seconds = tail_check_seconds
        self.feeds: dict[str, Feed] = {}
        self.lock = asyncio.Lock()
        self.checker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.checker = asyncio.create_task(self._check_tails())

    async def stop(self) -> None:
        if self.checker:
            self.checker.cancel()
        for feed in self.feeds.values():
            await feed.stop()

    async def attach(self, workspace_id: str, listener: Listener) -> tuple[Feed, int]:
        async with self.lock:
            feed = self.feeds.get(workspace_id)
            if feed is None:
                feed = Feed(workspace_id, self.reader, self.nc, self.names)
                boundary = await feed.start(listener)
                self.feeds[workspace_id] = feed
                return feed, boundary
            async with feed.lock:
                return feed, feed.attach(listener)

    async def detach(self, feed: Feed, listener: Listener) -> None:
        async with self.lock:
            feed.detach(listener)
            if not feed.listeners and self.feeds.get(feed.workspace_id) is feed:
                del self.feeds[feed.workspace_id]
                await feed.stop()

    async def _check_tails(self) -> None:
        while True:
            await asyncio.sleep(self.tail_check_seconds)
            for feed in list(self.feeds.values()):
                try:
                    await feed.catch_up()
                except Exception:
                    log.exception("tail check of %s failed", feed.workspace_id)
