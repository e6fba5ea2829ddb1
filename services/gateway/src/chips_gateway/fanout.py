"""Frames written to sockets straight from the feed, and views shared by sockets.

Two pieces of the live fan-out that are paid once rather than once per socket
(docs/adr/0161):

- :class:`Outbox`: a socket whose send loop has nothing in hand is handed an event's
  frame, encoded once for every such socket, as bytes to write (``Writer.out``); the
  outbox writes each such socket's waiting frames in one call to its transport, once the
  loop has offered every event that came in its turn.
- :class:`SharedView`: the sockets of one participant whose membership views are in the
  same state fold each event into one of them, once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from chips_common.events.wire import EventJson
from chips_common.rules.scope import MembershipView

log = logging.getLogger(__name__)


class Writer(Protocol):
    def flush_out(self) -> None: ...


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
        for writer in waiting:
            try:
                writer.flush_out()
            except Exception:
                log.exception("writing a socket's frames failed")


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
