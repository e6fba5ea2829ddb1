"""The connection loop under a :class:`~chips_sdk.client.Client`: open a socket, serve it,
send unanswered writes again, resubscribe, and hand each event on (docs/adr/0141).

:class:`Connection` holds the client's state, as :class:`~chips_sdk.client.Client`
sets it; the client adds what a harness calls (handlers, writing, reading).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, cast

import websockets
from websockets.asyncio.client import ClientConnection

from chips_sdk.errors import ChipsError, Unauthorized
from chips_sdk.frames import Ack, Hello
from chips_sdk.http import Http, failure_reason

log = logging.getLogger("chips_sdk")

PROTOCOL = {"min": 1, "max": 1}
VERSION = "0.1.0"
CLOSE_UNAUTHORIZED = 4401
CLOSE_PROTOCOL = 4400
# Frames that are not events, which handlers may also be registered for.
FRAME_KINDS = ("hello", "receipt", "error", "restart")

Handler = Callable[[Any], Awaitable[None]]


def connect_reason(exc: BaseException) -> str:
    """Why a socket could not be opened, in words (for the log line of each attempt)."""
    if isinstance(exc, ChipsError):
        reason = exc.extra.get("reason")
        return str(reason) if reason else f"{exc.code}: {exc.message}"
    return failure_reason(exc)


class Connection:
    """A client's socket, kept open across drops; its state is the client's."""

    urls: list[str]
    token: str
    name: str
    accepts: list[str]
    context_budget: dict[str, int] | None
    backoff: tuple[float, float]
    ping_interval: float | None
    tickets: bool
    subscribe: bool
    http: Http
    hello: Hello | None
    last_seq: int | None
    reconnects: int
    skipped: int
    resent: int
    _handlers: dict[str, list[Handler]]
    _pending: dict[str, tuple[dict[str, Any], asyncio.Future[Ack]]]
    _sent_before: set[str]
    _waiters: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]]
    _streams: list[asyncio.Queue[dict[str, Any] | None]]
    _ws: ClientConnection | None
    _ready: bool
    _url_turn: int
    _loop_task: asyncio.Task[None] | None
    _tasks: set[asyncio.Task[Any]]
    _connected: asyncio.Event
    _closed: asyncio.Event
    _fatal: ChipsError | None
    _keys: itertools.count[int]
    _session: str

    async def _run(self) -> None:
        delay = self.backoff[0]
        try:
            while not self._closed.is_set():
                url = self.urls[self._url_turn % len(self.urls)]
                try:
                    ws = await self._open(url)
                except Unauthorized as exc:
                    self._stop(exc)
                    return
                except (OSError, TimeoutError, ChipsError, websockets.WebSocketException) as exc:
                    wait = delay * (0.5 + random.random())
                    # Said every time, never silently retried (a harness pointed at the
                    # wrong port must say so); the waits grow to backoff[1].
                    log.warning(
                        "could not connect to %s (%s); trying again in %.1f s",
                        url,
                        connect_reason(exc),
                        wait,
                    )
                    self._url_turn += 1
                    await asyncio.sleep(wait)
                    delay = min(delay * 2, self.backoff[1])
                    continue
                delay = self.backoff[0]
                await self._serve(ws)
                self._ready = False
                self._ws = None
                if self._fatal is not None or self._closed.is_set():
                    return
                log.warning(
                    "the connection to %s closed (code %s); reconnecting", url, ws.close_code
                )
                self.reconnects += 1
                self._url_turn += 1
                await asyncio.sleep(self.backoff[0] * random.random())
        except ChipsError as exc:
            self._stop(exc)
        except Exception as exc:  # a bug: stop and say so, rather than hang
            log.exception("the chips client stopped")
            self._stop(ChipsError("client_failed", f"the client stopped: {exc!r}"))

    def _stop(self, exc: ChipsError) -> None:
        self._fatal = exc
        self._closed.set()
        self._fail_all(exc)

    async def _open(self, url: str) -> ClientConnection:
        """A new socket, said hello on, with every unanswered write sent again, subscribed."""
        self.http = self.http if self.http.url == url else self._swap_http(url)
        ws_url = url.replace("https://", "wss://").replace("http://", "ws://") + "/v1/ws"
        headers: dict[str, str] = {}
        if self.tickets:
            ws_url += f"?ticket={await self.http.ticket()}"
        else:
            headers["Authorization"] = f"Bearer {self.token}"
        ws = await websockets.connect(
            ws_url,
            additional_headers=headers,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_interval,
            max_size=2**24,
            open_timeout=10,
        )
        try:
            hello: dict[str, Any] = {
                "frame": "hello",
                "protocol": PROTOCOL,
                "client": {"name": self.name, "version": VERSION},
                "accepts": self.accepts,
            }
            if self.context_budget is not None:
                hello["context"] = self.context_budget
            # A refused credential is told in an error frame before the close (4401),
            # perhaps before our hello is through; the frame is read all the same.
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(json.dumps(hello))
            try:
                answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
            except websockets.ConnectionClosed:
                if ws.close_code == CLOSE_UNAUTHORIZED:
                    raise Unauthorized("unauthorized", "Chips refused the token") from None
                raise
            if answer.get("frame") == "error":
                raise ChipsError.from_body(answer)
            if "person" in answer and self._handlers.get("message.new"):
                # A person's socket is never handed message.new: such a harness would sit
                # silent for ever, so it stops here, saying what to set.
                raise Unauthorized(
                    "unauthorized",
                    f"this token is a person's ({answer['person'].get('name')}'s), and "
                    "message.new is handed to harnesses only: set CHIPS_HARNESS_TOKEN to the "
                    "token `chips connect` printed",
                )
            self.hello = cast(Hello, answer)
            # Unanswered writes first, before anything else (docs/product/websocket.md, Writing).
            sent: set[str] = set()
            await self._flush(ws, sent)
            since = self.last_seq if self.last_seq is not None else answer.get("head_seq")
            if self.last_seq is None and isinstance(since, int):
                self.last_seq = since
            subscribe: dict[str, Any] = {
                "frame": "subscribe",
                "workspace_id": answer["workspace_id"],
            }
            if since is not None:
                subscribe["since"] = since
            if self.subscribe:
                await ws.send(json.dumps(subscribe))
            await self._flush(ws, sent)  # writes made while subscribing; no await after it
        except BaseException:
            await ws.close()
            raise
        self._ws = ws
        self._ready = True
        self._connected.set()
        log.info(
            "connected to %s as %s (since %s)",
            url,
            (answer.get("harness") or answer.get("person") or {}).get("name"),
            self.last_seq,
        )
        self._dispatch("hello", answer)
        return ws

    async def _flush(self, ws: ClientConnection, sent: set[str]) -> None:
        """Send every pending write not sent on this socket yet, until none is left."""
        while unsent := [(k, b) for k, (b, _) in self._pending.items() if k not in sent]:
            for key, body in unsent:
                if key in self._sent_before:
                    self.resent += 1
                await ws.send(json.dumps({"frame": "event", "event": body}))
                sent.add(key)
                self._sent_before.add(key)

    def _swap_http(self, url: str) -> Http:
        old = self.http
        task = asyncio.create_task(old.aclose())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return Http(url, self.token)

    async def _serve(self, ws: ClientConnection) -> None:
        """Read frames until the socket closes; a refusal of the token stops the client."""
        last_error: dict[str, Any] | None = None
        try:
            async for raw in ws:
                try:
                    frame = json.loads(raw)
                    kind = frame.get("frame")
                except (ValueError, AttributeError):
                    log.warning("chips: a frame that is not a JSON object was ignored")
                    continue
                if kind == "event":
                    self._deliver(frame["event"])
                elif kind == "events":
                    for event in frame["events"]:
                        self._deliver(event)
                elif kind == "ack":
                    self._answered(frame["idempotency_key"], frame, None)
                elif kind == "error":
                    last_error = frame
                    self._on_error(frame)
                else:
                    self._dispatch(str(kind), frame)
        except websockets.ConnectionClosed:
            pass
        code = ws.close_code
        if code in (CLOSE_UNAUTHORIZED, CLOSE_PROTOCOL) or (
            last_error is not None and last_error.get("code") == "unauthorized"
        ):
            body = last_error or {"code": "unauthorized", "message": f"closed with {code}"}
            raise ChipsError.from_body(body)

    def _on_error(self, frame: dict[str, Any]) -> None:
        key = frame.get("idempotency_key")
        code = frame.get("code")
        if key and key in self._pending:
            if code in ("unavailable", "rate_limited"):
                # Chips could not take it now; the key makes sending it again safe.
                wait = frame.get("retry_after")
                self._later(
                    float(wait) if isinstance(wait, int | float) else 1.0, self._resend, key
                )
                return
            self._answered(key, None, ChipsError.from_body(frame))
            return
        if code == "since_ahead" and isinstance(frame.get("head"), int):
            # Our seqs are from another log (a restored workspace): start again from its head.
            log.warning("chips: %s", frame.get("message"))
            self.last_seq = frame["head"]
            self._later(0.0, self._resubscribe, "")
            return
        log.warning("chips: %s: %s", frame.get("code"), frame.get("message"))
        self._dispatch("error", frame)

    async def _resend(self, key: str) -> None:
        entry = self._pending.get(key)
        if entry is not None and self._ready and self._ws is not None:
            with contextlib.suppress(websockets.ConnectionClosed):
                await self._ws.send(json.dumps({"frame": "event", "event": entry[0]}))

    async def _resubscribe(self, _: str) -> None:
        if self._ws is not None and self.hello is not None:
            frame = {
                "frame": "subscribe",
                "workspace_id": self.hello["workspace_id"],
                "since": self.last_seq,
            }
            with contextlib.suppress(websockets.ConnectionClosed):
                await self._ws.send(json.dumps(frame))

    def _later(self, delay: float, fn: Callable[[str], Awaitable[None]], key: str) -> None:
        async def go() -> None:
            await asyncio.sleep(delay)
            await fn(key)

        task = asyncio.create_task(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _answered(self, key: str, ack: dict[str, Any] | None, error: ChipsError | None) -> None:
        self._sent_before.discard(key)
        entry = self._pending.pop(key, None)
        if entry is None or entry[1].done():
            return
        if error is not None:
            entry[1].set_exception(error)
        else:
            entry[1].set_result(cast(Ack, ack))

    def _fail_all(self, exc: ChipsError) -> None:
        for _, future in self._pending.values():
            if not future.done():
                future.set_exception(exc)
                future.exception()  # marks it retrieved: nobody may be awaiting it
        self._pending.clear()
        for _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(exc)
                waiter.exception()
        for queue in self._streams:
            queue.put_nowait(None)

    def _deliver(self, event: dict[str, Any]) -> None:
        seq = event.get("seq")
        # A held message handed over comes again under its own seq, after the act that
        # handed it: it is delivered, and the cursor stays where it is.
        if isinstance(seq, int) and not event.get("handed"):
            if self.last_seq is not None and seq <= self.last_seq:
                self.skipped += 1
                return
            self.last_seq = seq
        for predicate, future in list(self._waiters):
            if not future.done() and predicate(event):
                future.set_result(event)
        for queue in self._streams:
            queue.put_nowait(event)
        self._dispatch(str(event.get("type")), event)
        self._dispatch("*", event)

    def _dispatch(self, kind: str, payload: dict[str, Any]) -> None:
        for handler in self._handlers.get(kind, ()):
            task = asyncio.create_task(self._call(handler, payload))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _call(self, handler: Handler, payload: dict[str, Any]) -> None:
        try:
            await handler(payload)
        except Exception:
            log.exception("a handler for %s failed", payload.get("type") or payload.get("frame"))
