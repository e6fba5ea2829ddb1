"""``/v1/ws``: one socket, one credential (docs/product/websocket.md).

The session reads frames in one task and writes them in another, through a bounded
queue: a reader more than ``ws_max_queued_frames`` behind is told ``too_far_behind`` and
closed rather than buffered for (docs/product/websocket.md, Staying alive). Protocol pings and the
silence timeout are uvicorn's, configured from the same settings (see ``__main__``).

A socket's writes go to the eventlog from a queue of its own: at most
``ws_max_inflight_writes`` of them wait for the log at a time, so that one socket is never
more than that in anybody's way in the log's queue, while the socket goes on being read
(its pongs with it) until ``ws_max_queued_writes`` wait in the queue (docs/adr/0065).

One module per job (docs/adr/0141): ``session`` (what a socket holds), ``connection``
(authenticated, accepted, served, closed), ``handshake`` (the hello), ``frames_in``
(reading frames), ``catch_up`` (subscribe and replay), ``delivery`` (frames out),
``writes`` (event frames to the eventlog and their answers) and ``checks`` (what the edge
refuses before a write travels, on the socket and over HTTP). A session is the mixins of
the parts over :class:`~chips_gateway.ws.session.SessionBase`.
"""

from __future__ import annotations

from chips_gateway.ws.checks import actor_for, check_writable, is_count
from chips_gateway.ws.connection import Session, authenticate, serve_socket
from chips_gateway.ws.session import (
    CLOSE_BEHIND,
    CLOSE_POLICY,
    CLOSE_PROTOCOL,
    CLOSE_RATE,
    CLOSE_TRY_LATER,
    SERVER_PROTOCOL,
    Subscription,
    Write,
)

__all__ = [
    "CLOSE_BEHIND",
    "CLOSE_POLICY",
    "CLOSE_PROTOCOL",
    "CLOSE_RATE",
    "CLOSE_TRY_LATER",
    "SERVER_PROTOCOL",
    "Session",
    "Subscription",
    "Write",
    "actor_for",
    "authenticate",
    "check_writable",
    "is_count",
    "serve_socket",
]
