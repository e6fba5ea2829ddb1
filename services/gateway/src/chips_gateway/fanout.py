"""Frames written to sockets straight from the feed, and views shared by sockets.

Two pieces of the live fan-out that are paid once rather than once per socket
(docs/adr/0161):

- :class:`Outbox`: a socket whose send loop has nothing in hand is handed an event's
  frame, encoded once for every such socket, as bytes to write (``Writer.out``); the
  outbox writes each such socket's waiting frames in one call to its transport, once the
  loop has offered every event that came in its turn.
- :class:`SharedView`: the sockets of one participant whose membership views are in the
  same state fold each event into one of them, once.
- :func:`as_logged_to_people`: an event every person's live socket is sent as it was
  logged, whose frame the feed hands to each such socket with nothing asked of the event
  per socket (docs/adr/0163).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from chips_common.events.wire import EventJson
from chips_common.rules.scope import MembershipView
from chips_gateway.metrics import FRAMES_OUT
from chips_gateway.runs import DECISIONS

log = logging.getLogger(__name__)
FRAMES_OUT_EVENT = FRAMES_OUT.labels("event")

# The types a person's socket is not sent as they were logged, or that may end a socket:
# a harness's alone (``Shaper.shape_now``), a decision another socket may have made
# (``runs.mark_elsewhere``), and what withdraws a socket (``Subscription.offer``).
NOT_AS_LOGGED = frozenset(
    {
        "message.new",
        "agent.attached",
        *DECISIONS,
        "harness.disconnected",
        "person.updated",
        "device.revoked",
    }
)


def as_logged_to_people(event: EventJson) -> bool:
    """Whether every person's live socket is sent ``event`` as it was logged, and nothing
    else is done with it for the socket: no file is linked for the socket's credential,
    nothing is marked, and it cannot end the socket. Such an event's frame is encoded once
    and handed to each person's socket with only its order and its room asked
    (docs/adr/0163); any other event is offered the whole way."""
    if event["type"] in NOT_AS_LOGGED or event.get("attachments"):
        return False
    context = event.get("context")
    return not (isinstance(context, dict) and context.get("files"))


class Writer(Protocol):
    def flush_out(self) -> int: ...


class Outbox:
    """The sockets with frames waiting to be written, written at the loop's next turn.

    Every event offered in one turn of the loop (several, when the loop is behind) adds
    its frames to each socket's waiting bytes; one callback then writes each socket's
    bytes with one call to its transport.
    """

    __slots__ = ("handle", "waiting")

    def __init__(self) -> None:
        self.waiting: list[Writer] = []
        self.handle: asyncio.Handle | None = None

    def mark(self, writer: Writer) -> None:
        """``writer`` has frames waiting (said once, when its first one is added)."""
        self.waiting.append(writer)
        if self.handle is None:
            self.handle = asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self.handle = None
        waiting, self.waiting = self.waiting, []
        written = 0
        for writer in waiting:
            try:
                written += writer.flush_out()
            except Exception:
                log.exception("writing a socket's frames failed")
        # Counted once a turn, not once a socket: the counter takes a lock each time.
        FRAMES_OUT_EVENT.inc(written)


class SharedView:
    """One membership view folded once per event for every socket that holds it.

    ``seq`` is the last event folded, ``shown`` what the view said of it: the first holder
    offered an event folds it, the others read the answer. A holder is offered every
    event of its workspace in seq order, as each holder is, so they stay in one state.
    """

    __slots__ = ("holders", "seq", "shown", "view")

    def __init__(self, view: MembershipView, seq: int) -> None:
        self.view = view
        self.seq = seq
        self.shown = False
        self.holders = 0

    def visible(self, event: EventJson) -> bool:
        seq = event["seq"]
        if seq != self.seq:
            shown = self.view.visible(event)
            self.seq, self.shown = seq, shown
        return self.shown

    def may_take(self, view: MembershipView, cursor: int) -> bool:
        """Whether a socket whose own ``view`` has folded every event up to ``cursor``
        can hold this one instead: folded as far, and in the same state."""
        return self.holders > 0 and cursor == self.seq and self.view.same_as(view)
