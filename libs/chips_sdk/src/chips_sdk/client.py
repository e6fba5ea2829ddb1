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
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, TypeVar

import websockets

from chips_sdk.connection import Connection, Handler
from chips_sdk.errors import ConnectionClosed
from chips_sdk.frames import Ack, Hello
from chips_sdk.http import Http
from chips_sdk.runs import Run
from chips_sdk.settings import SettingError, gateway_urls, harness_token
from chips_sdk.speaking import speaker_for

H = TypeVar("H", bound=Handler)


class Client(Connection):
    """A connection to Chips for a harness (or a person's tool), over ``/v1/ws``.

    Args:
        url: the gateway, or several (tried in turn on each reconnect). Defaults to
            ``$CHIPS_URL`` (comma-separated for several), else the gateway of the local
            stack, on ``$CHIPS_PORT_BASE`` when that moved it (:mod:`chips_sdk.settings`).
        token: the token to connect with. Defaults to the harness's,
            ``$CHIPS_HARNESS_TOKEN``; a person's token (``chips_pt_…``) is refused from
            the environment, with the sentence saying what to set. A person's tool that
            means to connect as its person passes the token itself.
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
        urls = gateway_urls() if url is None else [url] if isinstance(url, str) else list(url)
        if not urls:
            raise SettingError("give Chips's URL (or set CHIPS_URL)")
        self.urls = [u.rstrip("/") for u in urls]
        self.token = token or harness_token()
        self.name = name
        self.accepts = list(accepts)
        self.context_budget = dict(context) if context else None
        self.backoff = backoff
        self.ping_interval = ping_interval
        self.tickets = tickets
        self.subscribe = subscribe
        self.http = Http(self.urls[0], self.token)
        self.hello = None
        self.last_seq = since
        # Counters a test or a dashboard may read.
        self.reconnects = 0
        self.skipped = 0  # events at or below last_seq that a gateway sent again
        self.resent = 0  # writes sent again on a new socket, unanswered on the old one
        self._handlers = {}
        self._pending = {}
        self._sent_before = set()  # keys put on some socket already
        self._waiters = []
        self._streams = []
        self._ws = None
        self._ready = False
        self._url_turn = 0
        self._loop_task = None
        self._tasks = set()
        self._connected = asyncio.Event()
        self._closed = asyncio.Event()
        self._fatal = None
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
        (``for``), unless ``actor`` names another (docs/product/websocket.md, Speaking as one)."""
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
