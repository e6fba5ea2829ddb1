"""Connecting to NATS, with bounded retries at start-up."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import MsgAlreadyAckdError, NotJSMessageError
from nats.js import JetStreamContext

from chips_common.config import Settings

log = logging.getLogger(__name__)


def header_lines(raw: bytes) -> dict[str, str]:
    """A message's header block (``Name: Value`` lines) read as nats-py reads it, with
    fewer Python calls.

    nats-py tells a header name with whitespace in it by a generator over the name's
    characters: about 25 calls a message in every process that receives one (the event's
    ``Nats-Msg-Id`` and ``traceparent``), more than anything else these processes call
    a message. Here the name is split once, in C: a name that splits into anything but
    itself had whitespace in it (``str.isspace``'s, as nats-py asks). Property-tested
    against nats-py's own reading.
    """
    out: dict[str, str] = {}
    for line in raw.split(b"\r\n"):
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue
        if key and key.split() != [key]:
            continue
        out[key] = value.strip().decode("utf-8", "replace")
    return out


class Client(NATS):
    """nats-py's client, reading headers with :func:`header_lines`, and acking many
    messages as one write (:meth:`ack_all`)."""

    _parse_header_lines = staticmethod(header_lines)

    async def ack_all(self, msgs: Sequence[Msg]) -> None:
        """Ack JetStream messages, as ``Msg.ack`` does one by one, in one command.

        ``Msg.ack`` is a publish of an empty body to the message's reply subject, and
        nats-py's publish checks the subject, the connection and the payload, formats the
        command and queues it, about fifteen Python calls an ack, for every event in each
        consumer. Here the commands are formatted together and queued once. While the
        connection is down, each goes through ``Msg.ack`` (which knows what to buffer).
        """
        if not msgs:
            return
        if not self.is_connected:
            for msg in msgs:
                await msg.ack()
            return
        commands = []
        for msg in msgs:
            if not msg.reply:
                raise NotJSMessageError
            if msg._ackd:
                raise MsgAlreadyAckdError(msg)
            commands.append(b"PUB %b  0\r\n\r\n" % msg.reply.encode())
        for msg in msgs:
            msg._ackd = True
        self.stats["out_msgs"] += len(msgs)
        await self._send_command(b"".join(commands))
        if self._flush_queue is not None and self._flush_queue.empty():
            await self._flush_pending()


async def ack_all(msgs: Sequence[Msg]) -> None:
    """Ack messages together through :meth:`Client.ack_all` when they came on such a
    client, else one by one."""
    if not msgs:
        return
    client = getattr(msgs[0], "_client", None)
    if isinstance(client, Client):
        await client.ack_all(msgs)
        return
    for msg in msgs:
        await msg.ack()


async def build_nats(settings: Settings, *, name: str, attempts: int = 30) -> NATS:
    """Connect to NATS, waiting up to ``attempts`` seconds for it to answer."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            # Several URLs, comma separated, name a cluster's nodes; the client learns the
            # rest from the server and moves to another node when its own goes.
            nc = Client()
            await nc.connect(
                [url.strip() for url in settings.nats_url.split(",") if url.strip()],
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,  # type: ignore[arg-type]  # slept: a float is fine
                connect_timeout=2,
            )
            return nc
        except Exception as exc:  # any failure to connect is worth another try
            last = exc
            await asyncio.sleep(1)
    raise RuntimeError(f"NATS at {settings.nats_url} did not answer: {last}")


def jetstream(nc: NATS) -> JetStreamContext:
    return nc.jetstream(timeout=10)
