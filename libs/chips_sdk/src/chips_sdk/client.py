"""The socket client: connect, resume, write safely, and hand events to your handlers.

One :class:`Client` is one credential's connection to Chips. It

- opens ``/v1/ws`` with a single-use ticket (``POST /v1/socket-tickets``), says hello and
  subscribes with ``since``;
- reconnects when the socket drops, with backoff, trying each gateway URL in turn, and
  resumes from the last seq it saw: every event once, in seq order, none missed;
- keeps every write until Chips has answered for its key, and sends whatever is still
  unanswered again, with the same key, the moment a new socket is open (an event Chips
  had applied comes back ``duplicate: true`` and changes nothing);
- answers the server's pings and pings the server (the ``websockets`` library's protocol
  pings), so a dead gateway is noticed;
- raises Chips's errors as exceptions with their code (:mod:`chips_sdk.errors`), and stops
  for good on ``unauthorized`` (a withdrawn token), since retrying cannot help.

See docs/harness-guide.md for a walk through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import websockets
from websockets.asyncio.client import ClientConnection

from chips_sdk.errors import ChipsError, ConnectionClosed, Unauthorized
from chips_sdk.frames import Ack, Hello
from chips_sdk.http import Http
from chips_sdk.runs import Run
from chips_sdk.speaking import speaker_for

log = logging.getLogger("chips_sdk")

PROTOCOL = {"min": 1, "max": 1}
VERSION = "0.1.0"
CLOSE_UNAUTHORIZED = 4401
CLOSE_PROTOCOL = 4400
# Frames that are not events, which handlers may also be registered for.
FRAME_KINDS = ("hello", "receipt", "error", "restart")

Handler = Callable[[Any], Awaitable[None]]
H = TypeVar("H", bound=Handler)


def _env_urls() -> list[str]:
    return [u for u in os.environ.get("CHIPS_URL", "http://127.0.0.1:8080").split(",") if u]


class Client:
    """A connection to Chips for a harness (or a person's tool), over ``/v1/ws``.

    Args:
        url: the gateway, or several (tried in turn on each reconnect). Defaults to
            ``$CHIPS_URL`` (comma-separated for several).
        token: the harness's token (``$CHIPS_HARNESS_TOKEN``, else ``$CHIPS_TOKEN``).
        name: the client's name, said in hello.
        since: resume after this seq. Without it the stream starts from now.
        accepts: what the client takes beyond single event frames; ``events`` (the
            default) takes a replay in batches.
        context: the context budget a turn is handed, ``{"lines": 40, "chars": 16000}``.
        backoff: the first and the longest wait between reconnects, in seconds.
        ping_interval: seconds between the client's own pings; ``None`` for none.
        tickets: open each socket with a single-use ticket (the default), or else with
            the token in an ``Authorization`` header.
        subscribe: subscribe after hello (the default); a client that only writes, or
            only checks that the socket opens, may not.
    """

    def __init__(
        self,
        url: str | Iterable[str] | None = None,
        token: str | None = None,
        *,
        name: str = "chips-sdk",
        since: int | None = None,
        accepts: Iterable[str] = ("events",),
        context: Mapping[str, int] | None = None,
        backoff: tuple[float, float] = (0.1, 5.0),
        ping_interval: float | None = 20.0,
        tickets: bool = True,
        subscribe: bool = True,
    ) -> None:
        urls = _env_urls() if url is None else [url] if isinstance(url, str) else list(url)
        if not urls:
            raise ValueError("give Chips's URL (or set CHIPS_URL)")
        self.urls = [u.rstrip("/") for u in urls]
        self.token = (
            token or os.environ.get("CHIPS_HARNESS_TOKEN") or os.environ.get("CHIPS_TOKEN") or ""
        )
        if not self.token:
            raise ValueError("give a token (or set CHIPS_HARNESS_TOKEN)")
        self.name = name
        self.accepts = list(accepts)
        self.context_budget = dict(context) if context else None
        self.backoff = backoff
        self.ping_interval = ping_interval
        self.tickets = tickets
        self.subscribe = subscribe
        self.http = Http(self.urls[0], self.token)
        self.hello: Hello | None = None
        self.last_seq: int | None = since
        # Counters a test or a dashboard may read.
        self.reconnects = 0
        self.skipped = 0  # events at or below last_seq that a gateway sent again
        self.resent = 0  # writes sent again on a new socket, unanswered on the old one
        self._handlers: dict[str, list[Handler]] = {}
        self._pending: dict[str, tuple[dict[str, Any], asyncio.Future[Ack]]] = {}
        self._sent_before: set[str] = set()  # keys put on some socket already
        self._waiters: list[
            tuple[Callable[[dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]
        ] = []
        self._streams: list[asyncio.Queue[dict[str, Any] | None]] = []
        self._ws: ClientConnection | None = None
        self._ready = False
        self._url_turn = 0
        self._loop_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connected = asyncio.Event()
        self._closed = asyncio.Event()
        self._fatal: ChipsError | None = None
        self._keys = itertools.count(1)
        self._session = uuid.uuid4().hex[:12]

    # --- handlers ----------------------------------------------------------------------

    def on(self, kind: str) -> Callable[[H], H]:
        """Register a coroutine for an event type (``message.new``), a frame kind
        (``receipt``, ``error``, ``restart``, ``hello``), or ``*`` for every event.

        Each call runs as a task of its own, so a handler may wait (for an approval, a
        model) without holding up the others. Use :meth:`stream` to read events in order.
        """

        def register(handler: H) -> H:
            self._handlers.setdefault(kind, []).append(handler)
            return handler

        return register

    # --- life ---------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def start(self) -> Hello:
        """Connect, say hello and subscribe; return the server's hello.

        Raises the error Chips answered when the token is refused.
        """
        if self._loop_task is None:
            self._loop_task = asyncio.create_task(self._run(), name="chips-sdk")
        connected = asyncio.create_task(self._connected.wait())
        closed = asyncio.create_task(self._closed.wait())
        await asyncio.wait({connected, closed}, return_when=asyncio.FIRST_COMPLETED)
        connected.cancel()
        closed.cancel()
        if self._fatal is not None:
            raise self._fatal
        assert self.hello is not None
        return self.hello

    async def run_forever(self) -> None:
        """Start, then serve handlers until :meth:`close` (or a withdrawn token)."""
        await self.start()
        await self._closed.wait()
        if self._fatal is not None:
            raise self._fatal

    async def close(self) -> None:
        """Close the socket and stop; writes still unanswered fail with ``ConnectionClosed``."""
        self._closed.set()
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._loop_task
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        for task in list(self._tasks):
            task.cancel()
        self._fail_all(ConnectionClosed("closed", "the client was closed before Chips answered"))
        await self.http.aclose()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def participant_id(self) -> str:
        """This connection's harness (or person) id, once connected."""
        if self.hello is None:
            raise RuntimeError("not connected yet: await client.start() first")
        who = self.hello.get("harness") or self.hello.get("person")
        assert who is not None
        return who["id"]

    # --- writing ------------------------------------------------------------------------

    def new_key(self, label: str = "w") -> str:
        """A fresh idempotency key, unique to this client's life."""
        return f"{self.name}-{self._session}-{label}-{next(self._keys)}"

    async def send(self, event: Mapping[str, Any], *, key: str | None = None) -> Ack:
        """Write one event; return its ack once Chips has it in the log.

        The event is kept until Chips answers for its key, and sent again with the same
        key after a reconnect. A refusal raises the matching :class:`ChipsError`.
        """
        if self._fatal is not None:
            raise self._fatal
        if self._closed.is_set():
            raise ConnectionClosed("closed", "the client is closed")
        body = dict(event)
        k = key or str(body.get("idempotency_key") or self.new_key(str(body.get("type", "w"))))
        body["idempotency_key"] = k
        if k in self._pending:
            return await asyncio.shield(self._pending[k][1])
        future: asyncio.Future[Ack] = asyncio.get_running_loop().create_future()
        self._pending[k] = (body, future)
        if self._ready and self._ws is not None:
            # A socket that dies under us is fine: the write stays pending and goes again.
            self._sent_before.add(k)
            with contextlib.suppress(websockets.ConnectionClosed):
                await self._ws.send(json.dumps({"frame": "event", "event": body}))
        return await asyncio.shield(future)

    async def post(self, space_id: str, text: str, **fields: Any) -> Ack:
        """Say ``text`` in a space (``message.post``)."""
        return await self.send(
            {"type": "message.post", "space_id": space_id, "text": text, **fields}
        )

    async def reply(self, message: Mapping[str, Any], text: str, **fields: Any) -> Ack:
        """Answer a message in its room, as a reply to it: as the one agent it is for
        (``for``), unless ``actor`` names another (spec/websocket.md, Speaking as one)."""
        speaker = speaker_for(message)
        if speaker is not None:
            fields.setdefault("actor", speaker)
        return await self.post(
            message["space_id"], text, reply_to=message.get("message_id"), **fields
        )

    def report_run(
        self,
        message_or_space: Mapping[str, Any] | str,
        goal: str | None = None,
        *,
        run_id: str | None = None,
    ) -> Run:
        """A run reported as it goes: ``async with client.report_run(message) as run:``.

        Logs ``run.started`` on entry, ``run.completed`` (with the last reply as its
        summary) on a clean exit, and ``run.failed`` (with the exception) when the block
        raises. See :class:`chips_sdk.runs.Run` for steps, usage, approvals and questions.
        """
        return Run(self, message_or_space, goal, run_id=run_id)

    # --- reading ------------------------------------------------------------------------

    async def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float | None = None
    ) -> dict[str, Any]:
        """The next delivered event for which ``predicate`` is true."""
        future = self.expect(predicate)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        finally:
            self.forget(future)

    def expect(self, predicate: Callable[[dict[str, Any]], bool]) -> asyncio.Future[dict[str, Any]]:
        """Start listening now for the next event ``predicate`` accepts; await the future.

        Listening before the write that provokes the event means no answer is missed.
        Call :meth:`forget` with the future when you stop waiting.
        """
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return future

    def forget(self, future: asyncio.Future[dict[str, Any]]) -> None:
        self._waiters = [(p, f) for p, f in self._waiters if f is not future]

    def stream(self) -> AsyncIterator[dict[str, Any]]:
        """Every event delivered from now on, in seq order, across reconnects.

        It listens from the moment it is called, so call it before :meth:`start` to miss
        nothing of a replay: ``events = client.stream(); await client.start()``.
        """
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._streams.append(queue)
        return self._drain(queue)

    async def _drain(
        self, queue: asyncio.Queue[dict[str, Any] | None]
    ) -> AsyncIterator[dict[str, Any]]:
        try:
            while True:
                event = await queue.get()
                if event is None:
                    if self._fatal is not None:
                        raise self._fatal
                    return
                yield event
        finally:
            self._streams.remove(queue)

    # --- the connection loop -------------------------------------------------------------

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
                    log.info("could not connect to %s: %s", url, exc)
                    self._url_turn += 1
                    await asyncio.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, self.backoff[1])
                    continue
                delay = self.backoff[0]
                await self._serve(ws)
                self._ready = False
                self._ws = None
                if self._fatal is not None or self._closed.is_set():
                    return
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
            self.hello = cast(Hello, answer)
            # Unanswered writes first, before anything else (websocket.md, Writing).
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
