"""Frames in: read the socket, one JSON frame at a time, and hand each to its part."""

from __future__ import annotations

import orjson
from fastapi import WebSocketDisconnect

from chips_gateway import metrics
from chips_gateway.ws.catch_up import CatchUp
from chips_gateway.ws.handshake import Handshake
from chips_gateway.ws.writes import Writes


class FramesIn(Handshake, CatchUp, Writes):
    """Reads the socket's frames: hello, subscribe and event."""

    __slots__ = ()

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
            elif not self.hello:
                self.push(self.error("invalid_frame", "send hello first"))
            elif kind == "subscribe":
                await self.on_subscribe(frame)
            elif kind == "event":
                await self.on_event(frame)
            else:
                self.push(self.error("invalid_frame", f"unknown frame {kind!r}"))
