"""Restarts, and what a harness's face reads: connected, restarting, trouble (docs/adr/0080).

docs/product/websocket.md, Restarts: the owner of a harness that declared ``restarts`` (or an
owner or admin of the workspace) asks Chips to restart it, and Chips sends
``{"frame": "restart", "asked_by", "asked_at"}`` down each of its sockets that said
``restart`` in its hello's ``accepts``, on every gateway. The frame is not an event: it
is sent now or never. The harness then reads "Restarting" for everybody until its next
word (a socket that opens, or ``PUT /v1/harnesses/:id/status``), or until the wait is
over, when Chips says what is true: connected or not.

What is shown is kept in Redis, beside tickets and rate counters (a soft dependency: with
Redis away a harness's status is not said, and a restart cannot be asked):

- ``online:<harness>``: a sorted set of the harness's open sockets on every gateway, each
  scored by when it stops counting unless its gateway renews it (a gateway that dies
  takes its sockets with it within ``presence_ttl_seconds``); a socket that accepts
  ``restart`` is marked so in its member.
- ``restarting:<harness>``: who asked and when, set before the frames go out and living
  ``restart_wait_seconds``; gone at the harness's next word.
- ``status:<harness>``: ``trouble`` while the harness last reported it.

The frames themselves go over core NATS to every gateway, as a disconnect does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Protocol

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from redis.asyncio import Redis
from redis.exceptions import RedisError

from chips_gateway.frames import RestartFrame

log = logging.getLogger(__name__)

RESTARTABLE = "restart"


class Restartable(Protocol):
    def ask_restart(self, frame: RestartFrame) -> bool: ...


@dataclass(frozen=True)
class Face:
    """What a harness's face reads, and for how long it is restarting."""

    status: str  # "connected" | "disconnected" | "restarting" | "trouble"
    restart_asked_at: str | None = None


class Restarts:
    """Presence of harness sockets, the restart frames, and each harness's status."""

    def __init__(
        self,
        redis: Redis,
        prefix: str,
        replica_id: str,
        presence_ttl_seconds: float,
        restart_wait_seconds: float,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.replica_id = replica_id
        self.ttl = presence_ttl_seconds
        self.wait = restart_wait_seconds
        # This gateway's harness sockets: member -> (harness, socket).
        self.open: dict[str, tuple[str, Restartable]] = {}
        self.nc: Nats | None = None
        self.subject = ""
        self.renewer: asyncio.Task[None] | None = None
        self._count = 0

    # --- keys ------------------------------------------------------------------------

    def online_key(self, harness_id: str) -> str:
        return f"{self.prefix}:online:{harness_id}"

    def restarting_key(self, harness_id: str) -> str:
        return f"{self.prefix}:restarting:{harness_id}"

    def status_key(self, harness_id: str) -> str:
        return f"{self.prefix}:status:{harness_id}"

    # --- life ------------------------------------------------------------------------

    async def start(self, nc: Nats, subject: str) -> None:
        self.nc, self.subject = nc, subject
        await nc.subscribe(subject, cb=self._on_notice)
        self.renewer = asyncio.create_task(self._renew())

    async def stop(self) -> None:
        if self.renewer is not None:
            self.renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.renewer
        with contextlib.suppress(RedisError, OSError):
            for member, (harness_id, _) in list(self.open.items()):
                await self.redis.zrem(self.online_key(harness_id), member)

    # --- sockets ---------------------------------------------------------------------

    async def opened(self, harness_id: str, socket: Restartable, accepts: frozenset[str]) -> str:
        """A harness socket said hello: it is online, and it is the harness's next word."""
        self._count += 1
        member = f"{self.replica_id}:{self._count}"
        if RESTARTABLE in accepts:
            member += ":r"
        self.open[member] = (harness_id, socket)
        with contextlib.suppress(RedisError, OSError):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zadd(self.online_key(harness_id), {member: time.time() + self.ttl})
                pipe.expire(self.online_key(harness_id), int(self.ttl) + 1)
                pipe.delete(self.restarting_key(harness_id))
                await pipe.execute()
        return member

    async def closed(self, member: str) -> None:
        found = self.open.pop(member, None)
        if found is None:
            return
        with contextlib.suppress(RedisError, OSError):
            await self.redis.zrem(self.online_key(found[0]), member)

    async def _renew(self) -> None:
        """Keep this gateway's sockets counted: a dead gateway's lapse within the ttl."""
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    until = time.time() + self.ttl
                    for member, (harness_id, _) in list(self.open.items()):
                        pipe.zadd(self.online_key(harness_id), {member: until})
                        pipe.expire(self.online_key(harness_id), int(self.ttl) + 1)
                    await pipe.execute()
            except (RedisError, OSError):
                log.warning("harness presence could not be renewed in Redis")

    # --- asking, and being asked -------------------------------------------------------

    async def online(self, harness_id: str) -> list[str]:
        """The harness's sockets that count as open now, on every gateway."""
        members = await self.redis.zrangebyscore(self.online_key(harness_id), time.time(), "+inf")
        return [m.decode() if isinstance(m, bytes) else str(m) for m in members]

    async def ask(self, harness_id: str, asked_by: str, asked_at: str) -> int:
        """Mark the harness restarting and send the frame down every socket of it that
        accepts one; the number of such sockets counted online (0: nothing was asked)."""
        restartable = [m for m in await self.online(harness_id) if m.endswith(":r")]
        if not restartable:
            return 0
        # Marked before the frames go, so a harness that comes straight back clears it.
        mark = json.dumps({"asked_by": asked_by, "asked_at": asked_at})
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(self.restarting_key(harness_id), mark, ex=max(1, round(self.wait)))
            pipe.delete(self.status_key(harness_id))
            await pipe.execute()
        frame = RestartFrame(frame="restart", asked_by=asked_by, asked_at=asked_at)
        if self.nc is not None:
            body = {"harness_id": harness_id, "frame": frame}
            await self.nc.publish(self.subject, json.dumps(body).encode())
        return len(restartable)

    async def _on_notice(self, msg: Msg) -> None:
        try:
            body = json.loads(msg.data)
            harness_id, said = str(body["harness_id"]), body["frame"]
            frame = RestartFrame(
                frame="restart", asked_by=str(said["asked_by"]), asked_at=str(said["asked_at"])
            )
        except (ValueError, KeyError, TypeError):
            log.warning("a restart notice that is not one was ignored")
            return
        for owner, socket in list(self.open.values()):
            if owner == harness_id:
                socket.ask_restart(frame)

    async def report(self, harness_id: str, status: str) -> None:
        """The harness said how it came back (``ok`` or ``trouble``): its next word."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(self.restarting_key(harness_id))
            if status == "trouble":
                pipe.set(self.status_key(harness_id), "trouble")
            else:
                pipe.delete(self.status_key(harness_id))
            await pipe.execute()

    async def faces(self, harness_ids: list[str]) -> dict[str, Face]:
        """What each harness's face reads now; empty when Redis does not answer."""
        if not harness_ids:
            return {}
        now = time.time()
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for harness_id in harness_ids:
                    pipe.get(self.restarting_key(harness_id))
                    pipe.get(self.status_key(harness_id))
                    pipe.zcount(self.online_key(harness_id), now, "+inf")
                answers = await pipe.execute()
        except (RedisError, OSError):
            return {}
        found: dict[str, Face] = {}
        for i, harness_id in enumerate(harness_ids):
            restarting, status, online = answers[3 * i : 3 * i + 3]
            if restarting is not None:
                asked = json.loads(restarting)
                found[harness_id] = Face("restarting", asked.get("asked_at"))
            elif status in (b"trouble", "trouble"):
                found[harness_id] = Face("trouble")
            else:
                found[harness_id] = Face("connected" if online else "disconnected")
        return found
