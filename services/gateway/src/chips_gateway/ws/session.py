"""What one socket holds: its principal, queues, limits and subscription.

:class:`SessionBase` is the state every part of a socket's session shares, and the few
things each part does to it (push a frame, fall behind, be revoked); the parts are mixins
over it, one module per job (docs/adr/0141). :class:`Subscription` is a socket's view of
its workspace, which the feed offers every event.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import WebSocket
from opentelemetry.trace import Span

from chips_common.events import PROTOCOL_VERSION, JsonObject
from chips_common.events.wire import EventJson
from chips_common.rules.agents_view import Walked
from chips_common.rules.context import Budget
from chips_common.rules.scope import MembershipView
from chips_gateway.auth import Principal
from chips_gateway.context import Context
from chips_gateway.fanout import SharedView
from chips_gateway.feeds import Feed
from chips_gateway.frames import ErrorFrame, Pending, Queued, RestartFrame
from chips_gateway.intake import RAW_OUT, Intake
from chips_gateway.metrics import FRAMES_OUT
from chips_gateway.ratelimit import Bucket
from chips_gateway.shaping import Shaper
from chips_gateway.sockets import DEACTIVATED_WHY, REVOKED_WHY, disconnected_why
from chips_gateway.windows import AsOf
from chips_gateway.ws.flag import Flag, Frames, QueueFull

SERVER_PROTOCOL = (PROTOCOL_VERSION, PROTOCOL_VERSION)
CLOSE_POLICY = 4401
CLOSE_PROTOCOL = 4400
CLOSE_BEHIND = 4008
CLOSE_RATE = 4429
CLOSE_TRY_LATER = 1013
FRAMES_OUT_EVENT = FRAMES_OUT.labels("event")


@dataclass
class Write:
    """A write read from the socket and waiting for one of its places in flight."""

    key: str
    event: JsonObject
    span: Span
    actor: dict[str, str]


class Subscription:
    """One socket's view of one workspace: replay first, then live, each seq once.

    Live, it may hold a view shared with the participant's other sockets on this feed
    (``shared``, docs/adr/0161): each event is folded into it once for all of them.
    """

    __slots__ = ("cursor", "direct", "pending", "replaying", "session", "shared", "view")

    def __init__(self, session: SessionBase, view: MembershipView, cursor: int) -> None:
        self.session = session
        self.view = view
        self.cursor = cursor
        self.replaying = True
        self.pending: list[tuple[EventJson, AsOf | None]] = []
        self.shared: SharedView | None = None
        # Once live, a person's socket whose connection takes frames written straight to
        # it: the feed whose frames it is handed as logged (docs/adr/0163).
        self.direct: Feed | None = None

    def visible(self, event: EventJson) -> EventJson | None:
        """The event if this socket is to be sent it (not sent yet, and in scope), else None.

        Shaping for the recipient happens later, in the send loop or the replay, since a
        message.new's context and room are read from the log.
        """
        seq = event["seq"]
        if seq <= self.cursor:
            return None
        self.cursor = seq
        shared = self.shared
        shown = self.view.visible(event) if shared is None else shared.visible(event)
        return event if shown else None

    def go_live(self, feed: Feed | None) -> None:
        """The replay is done: every event from now on is folded into the view as the
        participant's other live sockets fold it (docs/adr/0161), and a person's socket
        whose connection takes frames written straight to it is handed the feed's frames
        (docs/adr/0163)."""
        if feed is not None:
            feed.share_view(self)
            if self.session.principal.kind == "person" and self.session.takes_raw():
                self.direct = feed
        self.replaying = False

    def offer(self, event: EventJson) -> None:
        """Called by the feed for every event of the workspace, in seq order.

        A turn's room, context and spend, and the held posts a person's act hands on, are
        worked out now, from the feed's window as of this event, even while the replay
        runs and the event waits its turn.

        An event the feed encoded for every person's socket (``Feed.plain``) is asked
        nothing more of for a ``direct`` one: only its order and its room, and then it is
        written or queued as :meth:`SessionBase.write_plain` decides (docs/adr/0163).
        """
        feed = self.direct
        if feed is not None and (data := feed.plain) is not None:
            if self.visible(event) is not None and not self.session.write_plain(data, feed):
                self.session.push(queued(event, None))
            return
        if event["type"] == "harness.disconnected" and (
            event.get("harness_id") == self.session.principal.participant_id
        ):
            self.session.revoke(disconnected_why(self.session.principal.name))
            return
        if event["type"] == "person.updated" and event.get("active") is False:
            me = self.session.principal.participant_id
            if me == event.get("participant_id") or me in event.get("disconnected", ()):
                self.session.revoke(DEACTIVATED_WHY)
                return
        if event["type"] == "device.revoked" and (
            event.get("device_id") == self.session.principal.credential_id
        ):
            self.session.revoke(REVOKED_WHY)
            return
        as_of = self.session.fast_extras(event)
        if self.replaying:
            self.pending.append((event, as_of))
            if len(self.pending) > self.session.max_queued:
                self.session.fall_behind()
            return
        if self.visible(event) is not None:
            own = self.view.pre_agents()
            if not self.session.write_now(event, as_of, own):
                self.session.push(queued(event, as_of, own))


def queued(event: EventJson, as_of: AsOf | None, view: Mapping[str, str] | None = None) -> Pending:
    """An event waiting to be shaped by the send loop (with what the window told of it,
    if anything, and the own agents of a harness shown the pre-agents view,
    docs/adr/0079)."""
    return Pending(event, as_of, view)


class SessionBase:
    """One socket's state, shared by the parts of its session.

    Slotted, as are its parts: a gateway holds thousands of these (docs/adr/0159).
    """

    __slots__ = (
        "accepts",
        "behind",
        "ctx",
        "ending",
        "feed",
        "hello",
        "inflight",
        "kept_going",
        "max_inflight",
        "max_queued",
        "max_queued_writes",
        "may_send",
        "out",
        "presence",
        "principal",
        "pumping",
        "queue",
        "queued_writes",
        "raw",
        "replay_error",
        "replay_failed",
        "revoked",
        "revoked_why",
        "sent_keys",
        "shaper",
        "strikes",
        "subscription",
        "tasks",
        "to_log",
        "waiting",
        "walked",
        "write_room",
        "writes",
        "writes_idle",
        "ws",
    )

    def __init__(self, ws: WebSocket, ctx: Context, principal: Principal) -> None:
        self.ws = ws
        self.ctx = ctx
        self.principal = principal
        self.max_queued = ctx.settings.ws_max_queued_frames
        self.queue: Frames[Queued] = Frames(self.max_queued)
        # Whether the socket said hello (what it said is kept in what follows from it).
        self.hello = False
        self.accepts: frozenset[str] = frozenset()
        self.subscription: Subscription | None = None
        self.feed: Feed | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        # Writes sent to the eventlog and not answered yet.
        self.waiting: set[asyncio.Future[Any]] = set()
        # Set by any reason the socket is to end (behind, kept going, revoked, a replay
        # failed): the session waits on this one flag, not on a task per reason.
        self.ending = Flag()
        self.behind = Flag(also=self.ending)
        self.shaper = Shaper(ctx.reader, principal, Budget(), ctx.links)
        # Keys of the decisions this socket sent (approval.resolved): runs.mark_elsewhere.
        self.sent_keys: set[str] = set()
        settings = ctx.settings
        self.writes = Bucket(settings.socket_write_rate, settings.socket_write_burst)
        # What the pump may send to the log: a few at once, then the socket's rate, so
        # that a burst is taken at once but reaches the log paced (docs/adr/0155).
        self.to_log = Bucket(settings.socket_write_rate, max(settings.socket_log_burst, 1))
        # Refusals a socket may run into: a burst of them, then about one a second less.
        strikes = settings.rate_limit_strikes
        self.strikes = Bucket(max(strikes / 10, 0.1), strikes)
        # Writes read and not yet sent to the eventlog, in the order they came; at most
        # ``max_inflight`` are sent and unanswered at a time (docs/adr/0065).
        self.queued_writes: deque[Write] = deque()
        # The pump sending queued writes to the log, from the socket's first write.
        self.pumping: asyncio.Task[None] | None = None
        self.max_inflight = max(settings.ws_max_inflight_writes, 1)
        self.max_queued_writes = max(settings.ws_max_queued_writes, 1)
        self.inflight = 0
        # Set when a write may go to the eventlog; cleared by the pump when none may.
        self.may_send = Flag()
        # Set while the queue has room; the reader waits on it (the socket is not read).
        self.write_room = Flag()
        self.write_room.set()
        # Set while no write is queued or in flight.
        self.writes_idle = Flag()
        self.writes_idle.set()
        self.kept_going = Flag(also=self.ending)
        # Set when the credential is withdrawn (chips disconnect): the socket is closed.
        self.revoked = Flag(also=self.ending)
        self.revoked_why = ""
        # A replay that failed (Postgres cut under it): the subscription can never go
        # live, so the socket is closed to be resumed by seq, never left open and silent.
        self.replay_failed = Flag(also=self.ending)
        self.replay_error: BaseException | None = None
        # A harness socket counted online (restarts.py), once it has said hello.
        self.presence: str | None = None
        # The connection, for frames written straight to it (None behind another server).
        self.raw: Intake | None = ws.scope.get("extensions", {}).get(RAW_OUT)
        # Frames written from the feed and waiting for the outbox's turn (docs/adr/0161).
        self.out: list[bytes] | None = None
        # A harness before agents: its rooms' lines as it is shown them, made once each.
        self.walked: Walked | None = None

    def revoke(self, why: str) -> None:
        self.revoked_why = why
        self.revoked.set()

    def ask_restart(self, frame: RestartFrame) -> bool:
        """Send a restart frame, if this socket's hello said it accepts one (ADR 0080)."""
        if "restart" not in self.accepts:
            return False
        self.push(frame)
        return True

    def fast_extras(self, event: EventJson) -> AsOf | None:
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

    def write_now(
        self, event: EventJson, as_of: AsOf | None, own: Mapping[str, str] | None
    ) -> bool:
        """Write the event's frame without the send loop, when nothing is ahead of it
        (:meth:`Delivery.write_now`); False to queue it."""
        return False

    def write_plain(self, data: bytes, feed: Feed) -> bool:
        """Add an event's frame, encoded by ``feed`` for every person's socket, to the bytes
        waiting for its outbox, when nothing the send loop holds is ahead of it and the
        socket is not ending. The connection is asked whether it takes frames written
        straight to it with the first frame of a turn (``Intake.write_raw`` asks again as
        it writes them); past ``max_queued`` frames in one turn, or else, False: queue it
        (docs/adr/0163)."""
        if not self.queue.idle() or self.ending.is_set():
            return False
        out = self.out
        if out is None:
            raw = self.raw
            if raw is None or not raw.open_for_raw():
                return False
            self.out = [data]
            feed.outbox.mark(self)
        elif len(out) < self.max_queued:
            out.append(data)
        else:
            return False
        return True

    def takes_raw(self) -> bool:
        """Whether this socket's connection takes frames written straight to it for its
        life (then each frame asks whether it is open for them)."""
        return self.raw is not None and self.raw.takes_raw()

    def flush_out(self) -> int:
        """Write the frames waiting for the outbox, in one call to the transport; how many
        were written. Called by the outbox (which counts them), and before the send loop
        sends anything, so that they go first."""
        out, self.out = self.out, None
        if not out or self.raw is None:
            return 0
        if self.raw.write_raw(out[0] if len(out) == 1 else b"".join(out)):
            return len(out)
        return 0

    async def send_text(self, text: str) -> None:
        """Send a frame through the socket library, after what is waiting for the outbox."""
        if written := self.flush_out():
            FRAMES_OUT_EVENT.inc(written)
        await self.ws.send_text(text)

    def push(self, frame: Queued) -> None:
        try:
            self.queue.put_nowait(frame)
        except QueueFull:
            self.fall_behind()

    def fall_behind(self) -> None:
        self.behind.set()

    def error(self, code: str, message: str, **extra: Any) -> ErrorFrame:
        frame = ErrorFrame(frame="error", code=code, message=message)
        frame.update({k: v for k, v in extra.items() if v is not None})  # type: ignore[typeddict-item]
        return frame
