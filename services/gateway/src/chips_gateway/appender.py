"""The gateway's appender: the library's (``chips_common.nats.appender``) with its policy.

The sending, the pipelining and the waiting are the library's, shared with every writer to
the log. What the gateway adds is its own: a request's fingerprint taken from what the
client sent, a request the path cannot carry refused before it goes, the client's error
for a request that got no answer, its metrics, and the hold a subscribe without since puts
on a workspace's writes while it reads the head.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nats.aio.client import Client as NATS
from pydantic import ValidationError

from chips_common.append import (
    Actor,
    AppendAnswer,
    InviteSecret,
    IssuedCredential,
    fingerprint_of,
)
from chips_common.events import JsonObject
from chips_common.nats.appender import Appender, Outcome, Why
from chips_common.nats.streams import Names
from chips_gateway import metrics
from chips_gateway.edge import has_nul
from chips_gateway.errors import ChipsError

# Well under NATS's default max payload (1 MB), headers and all.
MAX_REQUEST_BYTES = 900 * 1024

UNREACHABLE = "the log is not reachable right now; send it again"
NO_ANSWER = "the log did not answer in time; send it again with the same key"


class AppendClient(Appender):
    def __init__(self, nc: NATS, names: Names, replica_id: str, timeout: float) -> None:
        super().__init__(nc, names, timeout, replica_id)
        # Workspaces whose head a subscribe without since is reading, with how many such
        # reads are under way and what opens once none is (hold).
        self.held: dict[str, tuple[int, asyncio.Event]] = {}

    def hold(self, workspace_id: str) -> Callable[[], None]:
        """Hold the workspace's writes sent from now until the returned release is called.

        A subscribe without since starts at the log's head as it is read: a write this
        gateway is sent after that subscribe waits for the read, so its seq is beyond it
        and the subscriber is sent it, whatever the machine's load.
        """
        count, opened = self.held.get(workspace_id, (0, asyncio.Event()))
        self.held[workspace_id] = (count + 1, opened)
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            left, _ = self.held[workspace_id]
            if left > 1:
                self.held[workspace_id] = (left - 1, opened)
            else:
                del self.held[workspace_id]
                opened.set()

        return release

    def check(self, payload: bytes) -> None:
        # Nothing the path cannot carry reaches the eventlog, whatever route built it: a NUL
        # character (Postgres refuses it) or more than a NATS message holds (docs/adr/0040).
        if has_nul(payload):
            raise ChipsError("invalid_request", "text may not hold the NUL character (\\u0000)")
        if len(payload) > MAX_REQUEST_BYTES:
            raise ChipsError("too_large", f"a request is at most {MAX_REQUEST_BYTES} bytes")

    def failure(self, why: Why) -> Exception:
        return ChipsError("unavailable", NO_ANSWER if why == "timeout" else UNREACHABLE)

    def observe(self, outcome: Outcome, seconds: float | None) -> None:
        if seconds is not None:
            metrics.APPEND_LATENCY.observe(seconds)
        metrics.APPENDS.labels(outcome).inc()

    async def send(
        self,
        workspace_id: str,
        credential_id: str,
        actor: Actor | dict[str, str],
        idempotency_key: str,
        events: list[JsonObject],
        credentials: list[IssuedCredential] | None = None,
        invite: InviteSecret | None = None,
        fingerprint: str | None = None,
    ) -> asyncio.Future[AppendAnswer]:
        """As the library's, after any hold on the workspace, and with a fingerprint.

        ``fingerprint`` is by default taken from who sends the request and its events,
        which is what the client sent when the events are its own. A route that adds fresh
        ids to the events passes the fingerprint of the client's request instead.
        """
        if (held := self.held.get(workspace_id)) is not None:
            await held[1].wait()
        try:
            who = actor if isinstance(actor, Actor) else Actor.model_validate(actor)
            if fingerprint is None:
                fingerprint = fingerprint_of({"actor": who.model_dump(), "events": events})
            return await super().send(
                workspace_id,
                credential_id,
                who,
                idempotency_key,
                events,
                credentials,
                invite,
                fingerprint,
            )
        except ValidationError as exc:
            field = ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise ChipsError("invalid_request", f"{field}: {exc.errors()[0]['msg']}") from None

    async def append(self, *args: Any, **kwargs: Any) -> AppendAnswer:
        return await self.wait(await self.send(*args, **kwargs))
