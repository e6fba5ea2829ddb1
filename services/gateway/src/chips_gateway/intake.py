"""How the gateway reads a socket: no faster than the socket is served (docs/adr/0149).

uvicorn's sans-I/O WebSocket protocol parses every byte a read hands it at once (a read
is up to 256 KiB: some 1,500 small frames) and, after the socket is closed by the
server, every byte the client goes on sending until its close frame. A client that
writes as fast as it can had the gateway's one event loop parse megabytes for it in
stretches of tens of milliseconds, in which no other socket was served.

``Intake`` keeps what a read brought in a backlog of the socket's own and parses it a
slice at a time, only while the application has taken every message parsed before: a
socket that is not read (its queue of writes full, or closed for writing through its
refusals) costs no parsing, and its client is held back by TCP. Once the gateway has sent
its close frame, what the client sends is dropped unparsed, and the gateway half-closes
the connection so the client answers with its own end (RFC 6455 lets the server close the
TCP connection first); the connection is then closed when the client's end arrives, so
nothing it sent is left unread (which would reset the connection and could lose the
close frame on the client's side).
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from typing import Any

from uvicorn._types import ASGIReceiveEvent, ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

from chips_gateway import metrics

# Bytes parsed in one go (a few dozen small frames, about a millisecond's work), so that
# one socket's bytes never hold the loop from the others for longer.
SLICE = 16 * 1024
# Messages parsed ahead of the application: as far as the socket is read and parsed while
# the application has not taken them. A flood the session stopped reading costs this
# much parsing and no more; a client that pipelines many writes has its pings answered
# as long as the session is reading it.
AHEAD = 256
PARSED = metrics.WS_BYTES_IN.labels("parsed")
# The scope's extension through which a session asks how many of its messages are parsed
# and waiting for it.
PARSED_WAITING = "chips.parsed_waiting"
DROPPED = metrics.WS_BYTES_IN.labels("dropped")
# The scope's extension through which a session writes event frames it encoded itself
# straight to the connection (:meth:`Intake.may_write_raw`, docs/adr/0161).
RAW_OUT = "chips.raw_out"


def text_frame(payload: bytes) -> bytes:
    """A server's unmasked, unfragmented, uncompressed text frame (RFC 6455 §5.2), as
    the socket library writes one for ``send_text``: the same bytes for every socket."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x81, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x81, 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 127, n)
    return head + payload


class Inbox:
    """The messages parsed for the application, for its one reader.

    What uvicorn's protocol asks of its ``asyncio.Queue`` (put_nowait, get, empty), for a
    deque and a future: an idle socket holds one of these, and an ``asyncio.Queue`` is
    three deques and an event (about 2 KB more a socket).
    """

    __slots__ = ("items", "waiter")

    def __init__(self) -> None:
        self.items: deque[ASGIReceiveEvent] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: ASGIReceiveEvent) -> None:
        self.items.append(item)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def empty(self) -> bool:
        return not self.items

    async def get(self) -> ASGIReceiveEvent:
        while not self.items:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        return self.items.popleft()


class Intake(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, reading a socket no faster than it is served."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue: Inbox = Inbox()  # type: ignore[assignment]
        self.backlog = bytearray()
        self.parsing: asyncio.Handle | None = None

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        if self.response.status_code == 101:
            # How many messages are parsed and waiting for the application: the socket's
            # known demand, which its rate limit may take tokens for at once (ratelimit.py).
            self.scope["extensions"][PARSED_WAITING] = {"count": self.parsed_waiting}
            # The connection itself, for frames a session writes straight to it.
            self.scope["extensions"][RAW_OUT] = self  # type: ignore[assignment]

    def parsed_waiting(self) -> int:
        return len(self.queue.items)

    def may_write_raw(self) -> bool:
        """Whether frames built by :func:`text_frame` may go straight to the connection
        now: :meth:`takes_raw` and :meth:`open_for_raw`."""
        return self.takes_raw() and self.open_for_raw()

    def takes_raw(self) -> bool:
        """What stays true for the connection's life once it is: its handshake is done,
        and no extension (compression) rewrites what is sent."""
        return self.handshake_complete and not self.conn.extensions

    def open_for_raw(self) -> bool:
        """What may change from one frame to the next: the connection is open, nothing of
        ours closed it, and the transport is not asking writers to wait (past its
        high-water mark a session queues instead, and falls behind as before)."""
        return (
            not self.close_sent
            and self.conn.state is State.OPEN
            and self.writable.is_set()
            and not self.transport.is_closing()
        )

    def write_raw(self, data: bytes) -> bool:
        """Write whole frames built by :func:`text_frame` in one call to the transport;
        False (nothing written) once the connection is closing."""
        if self.close_sent or self.transport.is_closing() or self.conn.state is not State.OPEN:
            return False
        self.transport.write(data)
        return True

    def data_received(self, data: bytes) -> None:
        if self.close_sent:
            # Past our close frame: dropped unparsed (see the module's note).
            DROPPED.inc(len(data))
            return
        self.backlog += data
        if self.parsing is None:  # else the next slice is parsed on the loop's next turn
            self.parse()

    def may_parse(self) -> bool:
        return bool(self.backlog) and not self.close_sent and len(self.queue.items) < AHEAD

    def parse(self) -> None:
        """Parse one slice of the backlog; the next on the loop's next turn, while the
        application is fewer than ``AHEAD`` messages behind. The socket is read again only
        once its backlog is parsed and the application has room."""
        self.parsing = None
        if self.may_parse():
            chunk = bytes(self.backlog[:SLICE])
            del self.backlog[:SLICE]
            PARSED.inc(len(chunk))
            super().data_received(chunk)
        if self.may_parse():
            self.parsing = self.loop.call_soon(self.parse)
        self.pace_reading()

    def pace_reading(self) -> None:
        wanted = not self.backlog and len(self.queue.items) < AHEAD and not self.close_sent
        if wanted and self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        elif not wanted and not self.read_paused and not self.close_sent:
            self.read_paused = True
            self.transport.pause_reading()

    def send_receive_event_to_app(self) -> None:
        super().send_receive_event_to_app()
        # uvicorn's pauses reading at every message; this reads on while the application
        # is fewer than AHEAD messages behind.
        self.pace_reading()

    async def receive(self) -> ASGIReceiveEvent:
        message = await self.queue.get()
        if self.parsing is None and self.may_parse():
            self.parsing = self.loop.call_soon(self.parse)
        self.pace_reading()
        return message

    def connection_lost(self, exc: Exception | None) -> None:
        if self.parsing is not None:
            self.parsing.cancel()
            self.parsing = None
        super().connection_lost(exc)

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if message["type"] == "websocket.accept" and self.handshake_complete:
            # The upgrade's request and answer, headers and all, are not read again (the
            # application has its own copy of the headers in its scope).
            self.request = self.response = None  # type: ignore[assignment]
        if message["type"] == "websocket.close" and self.close_sent:
            DROPPED.inc(len(self.backlog))
            self.backlog.clear()
            if not self.transport.is_closing() and self.transport.can_write_eof():
                self.transport.write_eof()
