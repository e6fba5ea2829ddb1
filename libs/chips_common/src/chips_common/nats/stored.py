"""JetStream publishes whose store acks come back as futures, read without ceremony.

nats-py's ``publish_async`` gives each publish a semaphore slot taken through
``wait_for``, and reads each ack with the standard library's json and a dataclass
``from_response`` that reflects on the class's fields for every message. The gateway
publishes every append request that way and the eventlog every event it logged, so that
cost was paid on every message twice (ADR 0119). Here a publish is one write, and its
ack is decoded with orjson into the same ``PubAck``, or the same errors.

The server answers on a subject under this publisher's own inbox, one token per publish.
A future that is cancelled (its caller stopped waiting) is forgotten, and an ack that
comes after that is dropped.
"""

from __future__ import annotations

import asyncio
import itertools

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import PubAck
from nats.js.errors import APIError, NoStreamResponseError

NO_RESPONDERS = "503"


class StoredPublisher:
    """Publishes to JetStream, each publish answered by a future of the stream's ack."""

    def __init__(self, nc: NATS) -> None:
        self.nc = nc
        self.prefix = ""
        self.sub: Subscription | None = None
        self.waiting: dict[str, asyncio.Future[PubAck]] = {}
        self.tokens = itertools.count(1)

    async def publish(
        self, subject: str, payload: bytes, headers: dict[str, str] | None = None
    ) -> asyncio.Future[PubAck]:
        """Write the message to the connection (no waiting for the server) and return the
        future of its ack: a ``PubAck``, or ``NoStreamResponseError`` when no stream takes
        the subject, or the ``APIError`` the stream answered with."""
        if self.sub is None:
            self.prefix = self.nc.new_inbox()
            self.sub = await self.nc.subscribe(f"{self.prefix}.*", cb=self._on_ack)
        token = str(next(self.tokens))
        future: asyncio.Future[PubAck] = asyncio.get_running_loop().create_future()
        self.waiting[token] = future
        future.add_done_callback(lambda _: self.waiting.pop(token, None))
        try:
            await self.nc.publish(subject, payload, reply=f"{self.prefix}.{token}", headers=headers)
        except BaseException:
            future.cancel()
            raise
        return future

    async def _on_ack(self, msg: Msg) -> None:
        future = self.waiting.pop(msg.subject[len(self.prefix) + 1 :], None)
        if future is None or future.done():
            return
        if msg.headers and msg.headers.get("Status") == NO_RESPONDERS:
            future.set_exception(NoStreamResponseError())
            return
        try:
            answer = orjson.loads(msg.data)
            if "error" in answer:
                future.set_exception(refusal(answer["error"]))
                return
            future.set_result(
                PubAck(
                    stream=answer["stream"],
                    seq=answer["seq"],
                    domain=answer.get("domain"),
                    duplicate=answer.get("duplicate"),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            future.set_exception(exc)


def refusal(error: dict[str, object]) -> Exception:
    """The error a stream answered with, as nats-py's own class of it (``from_error``
    raises it rather than returning it)."""
    try:
        APIError.from_error(error)
    except Exception as exc:  # the class for its code, or what a malformed one raised
        return exc
    return APIError(description=str(error))
