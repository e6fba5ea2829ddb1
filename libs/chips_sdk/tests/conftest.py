"""A small stand-in for Chips's socket, in process, for the SDK's unit tests.

It speaks the frames of docs/protocol.md over a real WebSocket: hello (with head_seq),
subscribe with since (replay, then live), event frames answered by ack with the
idempotency rule (the same key is answered ``duplicate: true`` with the first seq). Two
of them share one log, as two gateways share the eventlog. A test can make one drop its
sockets, apply a write without answering it, send a seq twice, or refuse the token.
The real stack is exercised by tests/e2e; this proves the client's own logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import websockets
from websockets.asyncio.server import Server, ServerConnection, serve


@dataclass
class Log:
    """The log two fake gateways share."""

    events: list[dict[str, Any]] = field(default_factory=list)
    keys: dict[str, int] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        seq = len(self.events) + 1
        logged = {
            "v": 1,
            "id": f"evt_{seq}",
            "seq": seq,
            "ts": "2026-12-01T00:00:00Z",
            "workspace_id": "ws_1",
            "actor": {"kind": "harness", "id": "hrn_1"},
            **{k: v for k, v in event.items() if k != "idempotency_key"},
        }
        self.events.append(logged)
        self.changed.set()
        self.changed = asyncio.Event()
        return logged

    def write(self, event: dict[str, Any]) -> dict[str, Any]:
        """Apply a client's write once per key; the ack frame it earns."""
        key = event["idempotency_key"]
        if key in self.keys:
            return {
                "frame": "ack",
                "idempotency_key": key,
                "seq": self.keys[key],
                "duplicate": True,
            }
        logged = self.append(event)
        self.keys[key] = logged["seq"]
        return {"frame": "ack", "idempotency_key": key, "seq": logged["seq"], "duplicate": False}


@dataclass
class FakeGateway:
    log: Log
    token: str = "chips_at_good"
    server: Server | None = None
    sockets: set[ServerConnection] = field(default_factory=set)
    received: list[dict[str, Any]] = field(default_factory=list)
    # Knobs a test turns.
    swallow_next_write: bool = False  # apply it, then drop the socket without an ack
    repeat_on_subscribe: bool = False  # send the event at since again (a buggy replay)
    refuse: dict[str, Any] | None = None  # error frame, then close 4401
    since_ahead: bool = False  # answer a since beyond the head with since_ahead
    answer: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = next(iter(self.server.sockets)).getsockname()[:2]
        return f"http://{host}:{port}"

    async def drop_all(self) -> None:
        """Every socket dies without a goodbye, as under a killed gateway."""
        for ws in list(self.sockets):
            ws.transport.abort()

    async def handle(self, ws: ServerConnection) -> None:
        if ws.request is None or ws.request.headers.get("Authorization") != f"Bearer {self.token}":
            await ws.send(json.dumps({"frame": "error", "code": "unauthorized", "message": "no"}))
            await ws.close(4401)
            return
        self.sockets.add(ws)
        try:
            await self.session(ws)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.sockets.discard(ws)

    async def session(self, ws: ServerConnection) -> None:
        hello = json.loads(await ws.recv())
        self.received.append(hello)
        await ws.send(
            json.dumps(
                {
                    "frame": "hello",
                    "protocol": {"min": 1, "max": 1, "version": 1},
                    "workspace_id": "ws_1",
                    "spaces": ["spc_1"],
                    "harness": {"id": "hrn_1", "name": "Scout", "owner_id": "usr_1"},
                    "autonomy": "off",
                    "head_seq": len(self.log.events),
                }
            )
        )
        live: asyncio.Task[None] | None = None
        try:
            async for raw in ws:
                frame = json.loads(raw)
                self.received.append(frame)
                if self.refuse is not None:
                    await ws.send(json.dumps({"frame": "error", **self.refuse}))
                    await ws.close(4401)
                    return
                if frame["frame"] == "subscribe":
                    since = frame.get("since", len(self.log.events))
                    head = len(self.log.events)
                    if self.since_ahead and since > head:
                        error = {"frame": "error", "code": "since_ahead", "head": head}
                        await ws.send(json.dumps({**error, "message": f"beyond {head}"}))
                        continue
                    live = asyncio.create_task(self.follow(ws, since))
                elif frame["frame"] == "event":
                    ack = self.log.write(frame["event"])
                    if self.swallow_next_write:
                        self.swallow_next_write = False
                        ws.transport.abort()
                        return
                    await ws.send(json.dumps(ack))
                    for extra in self.answer(frame["event"]) if self.answer else []:
                        self.log.append(extra)
        finally:
            if live is not None:
                live.cancel()

    async def follow(self, ws: ServerConnection, since: int) -> None:
        sent = since - 1 if self.repeat_on_subscribe and since > 0 else since
        while True:
            changed = self.log.changed
            fresh = self.log.events[sent:]
            for event in fresh:
                await ws.send(json.dumps({"frame": "event", "event": event}))
            sent += len(fresh)
            await changed.wait()


@pytest.fixture
async def log() -> Log:
    return Log()


@pytest.fixture
async def gateways(log: Log) -> AsyncIterator[tuple[FakeGateway, FakeGateway]]:
    """Two fake gateways on one log."""
    pair = (FakeGateway(log), FakeGateway(log))
    async with contextlib.AsyncExitStack() as stack:
        for gw in pair:
            gw.server = await stack.enter_async_context(serve(gw.handle, "127.0.0.1", 0))
        yield pair
