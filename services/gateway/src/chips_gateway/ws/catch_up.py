"""Subscribing: attach to the workspace's feed, then replay what the reader missed.

Attach first, so that everything after the attach point comes live; then replay
(since, attach point] from Postgres, and the events the feed offered meanwhile. Nothing
is missed and nothing repeats (docs/product/websocket.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import UTC, datetime

from chips_common.events import JsonObject
from chips_common.events.wire import EventJson
from chips_common.rules.delivery import WorkingTurns
from chips_common.rules.scope import MembershipView
from chips_gateway.agents import view_as_of
from chips_gateway.frames import EventsFrame
from chips_gateway.sockets import seen_key
from chips_gateway.windows import AsOf, ReplayWindows
from chips_gateway.ws.checks import is_count
from chips_gateway.ws.delivery import Delivery, shown_to
from chips_gateway.ws.session import Subscription, queued

log = logging.getLogger(__name__)


class CatchUp(Delivery):
    """A socket's subscribe frame: its feed, its view, and the replay."""

    __slots__ = ()

    async def on_subscribe(self, frame: JsonObject) -> None:
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
            # Its agents' turns and its own (it is its own one agent where it is a member
            # itself), as the log stood at the start.
            runs, heard = await self.ctx.reader.working_turns(
                p.workspace_id, p.participant_id, start
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
        task = asyncio.create_task(self.replay_or_close(placeholder, start, boundary))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def seen(self) -> None:
        """Note when this participant last subscribed, for ``chips doctor``'s last seen.

        Redis is a soft dependency (docs/architecture/design.md §3): without it the doctor cannot
        say.
        """
        prefix, now = self.ctx.settings.redis_prefix, datetime.now(UTC)
        with contextlib.suppress(Exception):
            await self.ctx.redis.mset(
                {
                    seen_key(prefix, self.principal.participant_id): now.isoformat(
                        timespec="seconds"
                    ),
                    # The credential's own, for the devices list (docs/adr/0125).
                    seen_key(prefix, self.principal.credential_id): now.isoformat(
                        timespec="seconds"
                    ),
                }
            )

    async def replay_or_close(self, sub: Subscription, since: int, boundary: int) -> None:
        try:
            await self.replay(sub, since, boundary)
        except Exception as exc:
            log.warning("a replay failed (%r); the socket is closed, to be resumed", exc)
            self.replay_error = exc
            self.replay_failed.set()

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
            shown: list[tuple[EventJson, AsOf, Mapping[str, str] | None]] = []
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
                            pid,
                            await self.shaper.shape(e, as_of.extras, as_of.job),
                            own,
                            self.people(),
                        )
                    )
                ]
                if shaped:
                    await self.queue.put(EventsFrame(frame="events", events=shaped))
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
        # Live from here, with nothing in between.
        sub.go_live(self.feed)
