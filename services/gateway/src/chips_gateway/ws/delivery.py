"""Frames out: the send loop, and each event shaped for the socket's reader."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import orjson

from chips_common.events.wire import DeliveredJson, EventJson
from chips_common.rules.agents_view import Walked, as_seen_by
from chips_gateway import metrics, runs
from chips_gateway.frames import EventFrame, Pending, Queued, ReceiptFrame
from chips_gateway.windows import AsOf
from chips_gateway.ws.session import SessionBase

log = logging.getLogger(__name__)


def shown_to(
    harness_id: str,
    shaped: DeliveredJson,
    own: Mapping[str, str] | None,
    people: Mapping[str, Mapping[str, str]] | None = None,
) -> DeliveredJson | None:
    """A shaped event as its recipient sees it: the pre-agents view when ``own`` is set,
    each agent shown as somebody else bearing that one's name (from ``people``, the feed's
    directory)."""
    if own is None:
        return shaped
    return as_seen_by(shaped, harness_id, own, names=names_of(own, people))


def names_of(
    own: Mapping[str, str], people: Mapping[str, Mapping[str, str]] | None
) -> dict[str, str]:
    """The name of each participant an agent is shown as (docs/adr/0154)."""
    if not people:
        return {}
    return {
        who: name
        for who in set(own.values())
        if isinstance(name := (people.get(who) or {}).get("name"), str)
    }


class Delivery(SessionBase):
    """Sends what is queued for the socket, each event as its reader is to see it."""

    __slots__ = ()

    def write_now(
        self, event: EventJson, as_of: AsOf | None, own: Mapping[str, str] | None
    ) -> bool:
        """Hand the event's frame to the outbox instead of the send loop, when the send
        loop has nothing in hand (so nothing sent before it can come after it), the
        connection takes frames written straight to it, and the event is sent as it is
        shaped now, with nothing to read (a person's socket: :meth:`Shaper.shape_now`).
        The frame's bytes are the feed's, encoded once for every socket sent the same
        frame (docs/adr/0161). False when the event is to be queued instead: also once the
        socket is ending (revoked, behind), so that nothing follows its last frame but
        what its send loop sends."""
        raw, feed, out = self.raw, self.feed, self.out
        if (
            raw is None
            or feed is None
            or own is not None
            or as_of is not None
            or not self.queue.idle()
            or (out is not None and len(out) >= self.max_queued)
            or self.ending.is_set()
            or not raw.may_write_raw()
        ):
            return False
        try:
            shaped = self.shaper.shape_now(event)
            if shaped is None:
                return False
            shaped = runs.mark_elsewhere(self.principal, shaped, self.sent_keys)
            data = feed.frame_bytes(shaped, event)
        except Exception:
            # Shaped again by the send loop, where a failure is this socket's alone, as it
            # always was, not the feed's and every other socket's.
            log.exception("an event could not be written from the feed; it is queued")
            return False
        if out is None:
            self.out = [data]
            feed.outbox.mark(self)
        else:
            out.append(data)
        return True

    async def send_loop(self) -> None:
        while True:
            frame = await self.queue.get()
            try:
                await self.send_frame(frame)
            finally:
                self.queue.task_done()

    async def send_frame(self, frame: Queued) -> None:
        """Send one queued frame: an event shaped for this socket, or as it is."""
        beside: list[ReceiptFrame | EventFrame] = []
        text: str | None = None
        if isinstance(frame, Pending):
            event = frame.event
            as_of: AsOf = frame.as_of or AsOf()
            shaped = await self.shaper.shape(event, as_of.extras, as_of.job)
            shaped = runs.mark_elsewhere(self.principal, shaped, self.sent_keys)
            if (own := frame.view) is not None:
                # The feed's encoding of the event, when it is the feed's own, made once
                # for every socket: the view decides on it without encoding it again.
                shared = self.feed.frame_json(shaped, event) if self.feed is not None else None
                if self.walked is None:
                    self.walked = Walked()
                seen = as_seen_by(
                    shaped,
                    self.principal.participant_id,
                    own,
                    shared,
                    names=self.names(own),
                    walked=self.walked,
                )
                if seen is None:
                    return
                shaped = seen
            frame = EventFrame(frame="event", event=shaped)
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
        await self.send_text(text if text is not None else orjson.dumps(frame).decode())
        metrics.FRAMES_OUT.labels(frame["frame"]).inc()
        for receipt in beside:
            await self.send_text(orjson.dumps(receipt).decode())
            metrics.FRAMES_OUT.labels("receipt").inc()

    async def handed(
        self, event: EventJson, own: Mapping[str, str] | None, as_of: AsOf | None
    ) -> list[EventFrame]:
        """The frames of the held messages ``event`` (a person's act) hands this socket,
        as its recipient sees them (docs/adr/0083)."""
        pid = self.principal.participant_id
        held = as_of.held if as_of is not None else None
        return [
            EventFrame(frame="event", event=seen)
            for h in await self.shaper.handed(event, own, held)
            if (seen := shown_to(pid, h, own, self.people())) is not None
        ]

    def people(self) -> Mapping[str, Mapping[str, str]] | None:
        """The feed's directory: each participant's name, to show an agent by its harness's."""
        return self.feed.people if self.feed is not None else None

    def names(self, own: Mapping[str, str]) -> dict[str, str]:
        return names_of(own, self.people())
