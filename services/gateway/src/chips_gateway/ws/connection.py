"""A socket's whole life: authenticated, accepted, served, and closed with a reason."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math

from fastapi import WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from chips_common.db.away import DATABASE_AWAY, database_away
from chips_gateway import metrics
from chips_gateway.auth import (
    Principal,
    bearer,
    principal_for_credential,
    principal_for_token,
    signed_in,
)
from chips_gateway.context import Context
from chips_gateway.errors import ChipsError
from chips_gateway.ratelimit import retry_after
from chips_gateway.ws.frames_in import FramesIn
from chips_gateway.ws.session import CLOSE_BEHIND, CLOSE_POLICY, CLOSE_RATE, CLOSE_TRY_LATER

log = logging.getLogger(__name__)


async def authenticate(ws: WebSocket, ctx: Context) -> Principal:
    token = bearer(ws.headers.get("authorization"))
    if token is None and (ticket := ws.query_params.get("ticket")):
        credential_id = await ctx.tickets.spend(ticket)
        if credential_id is None:
            raise ChipsError(
                "unauthorized", "that ticket was used already, expired, or never issued"
            )
        principal = await signed_in(principal_for_credential(ctx.auth, credential_id))
        if principal is None:
            raise ChipsError("unauthorized", "the ticket's token was withdrawn")
        return principal
    if token is None and (token := ws.query_params.get("token")):
        # Deprecated (docs/product/websocket.md, Getting on): still taken, with a warning each time.
        # The token itself never reaches the log.
        log.warning("a socket opened with ?token= in its URL; use a ticket or a header instead")
    if token is None:
        raise ChipsError(
            "unauthorized", "send Authorization: Bearer <token>, or open with ?ticket="
        )
    principal = await signed_in(principal_for_token(ctx.auth, token, ctx.settings.signing_key))
    if principal is None:
        raise ChipsError("unauthorized", "that token is not known or was withdrawn")
    return principal


class Session(FramesIn):
    """One socket, one credential: its tasks, and how it ends."""

    __slots__ = ()

    async def close_kept_going(self, sender: asyncio.Task[None]) -> None:
        """Close a socket that went on writing through its rate_limited refusals.

        What it was let write is answered first, so that the client knows what was
        logged: the writes sent to the log with their acks (or errors), those still queued
        at the gateway refused (``refuse_queued``, docs/adr/0155); then the last refusal,
        and close code 4429.
        """
        metrics.RATE_LIMIT_CLOSES.inc()
        # Coming straight back on another socket gets nothing either (docs/adr/0065).
        await self.ctx.limiter.penalize(
            self.principal.credential_id, self.ctx.settings.rate_limit_penalty_seconds
        )
        answering = asyncio.create_task(self.answered_all())
        # Not past the appender's timeout (every write is answered by then), nor past the
        # send loop's end (the client went away).
        await asyncio.wait(
            {answering, sender},
            timeout=self.ctx.appender.timeout + 1.0,
            return_when=asyncio.FIRST_COMPLETED,
        )
        answering.cancel()
        sender.cancel()
        with contextlib.suppress(Exception):
            await self.send_text(
                json.dumps(
                    self.error(
                        "rate_limited",
                        "this socket went on writing after it was told to wait; "
                        "reconnect and keep to retry_after",
                    )
                )
            )
            await self.ws.close(CLOSE_RATE, reason="rate_limited")

    async def run(self) -> None:
        metrics.SOCKETS_OPEN.inc()
        sender = asyncio.create_task(self.send_loop())
        reader = asyncio.create_task(self.read_loop())
        # One task for every reason to end (behind, kept going, revoked, a replay failed).
        ending = asyncio.create_task(self.ending.wait())
        self.ctx.sockets.add(self.principal.participant_id, self, self.principal.credential_id)
        try:
            done, _ = await asyncio.wait(
                {sender, reader, ending},
                return_when=asyncio.FIRST_COMPLETED,
            )
            if self.replay_failed.is_set():
                sender.cancel()
                away = (
                    ChipsError.database_away()
                    if self.replay_error is not None and database_away(self.replay_error)
                    else ChipsError(
                        "unavailable", "what you missed could not be read; subscribe with since"
                    )
                )
                with contextlib.suppress(Exception):
                    await self.send_text(json.dumps({"frame": "error", **away.body()}))
                    await self.ws.close(CLOSE_TRY_LATER)
            elif self.revoked.is_set():
                sender.cancel()
                with contextlib.suppress(Exception):
                    await self.send_text(json.dumps(self.error("unauthorized", self.revoked_why)))
                    await self.ws.close(CLOSE_POLICY)
            elif self.kept_going.is_set() and not self.behind.is_set():
                await self.close_kept_going(sender)
            elif self.behind.is_set():
                metrics.TOO_FAR_BEHIND.inc()
                sender.cancel()
                with contextlib.suppress(Exception):
                    await self.send_text(
                        json.dumps(
                            self.error(
                                "too_far_behind",
                                f"more than {self.max_queued} frames were waiting for you; "
                                "reconnect and subscribe with since",
                            )
                        )
                    )
                    await self.ws.close(CLOSE_BEHIND)
            if self.pumping is not None and self.pumping.done():
                done.add(self.pumping)
            for task in done:
                if task is not ending and not task.cancelled():
                    exc = task.exception()
                    if exc is not None and not isinstance(exc, WebSocketDisconnect | RuntimeError):
                        log.error("socket task failed", exc_info=exc)
        finally:
            metrics.SOCKETS_OPEN.dec()
            self.ctx.sockets.discard(
                self.principal.participant_id, self, self.principal.credential_id
            )
            if self.presence is not None:
                await self.ctx.restarts.closed(self.presence)
            for future in list(self.waiting):
                future.cancel()
            for write in self.queued_writes:
                write.span.end()
            self.queued_writes.clear()
            pumping = (self.pumping,) if self.pumping is not None else ()
            tasks = (sender, reader, ending, *pumping, *self.tasks)
            for task in tasks:
                task.cancel()
            # Collect every ending, so that none is logged later as never retrieved.
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.feed is not None and self.subscription is not None:
                await self.ctx.feeds.detach(self.feed, self.subscription)


async def serve_socket(ws: WebSocket, ctx: Context) -> None:
    """Authenticate a socket, accept it and serve it; every refusal is an error frame.

    But one: a credential whose last socket was closed for writing through its refusals
    (4429) a moment ago is refused the upgrade itself, with HTTP 429 and Retry-After, so
    that nothing it would send is read (docs/adr/0065).
    """
    try:
        try:
            principal = await authenticate(ws, ctx)
        except DATABASE_AWAY:
            raise ChipsError.database_away() from None
    except ChipsError as exc:
        await ws.accept()
        with contextlib.suppress(Exception):
            await ws.send_text(json.dumps({"frame": "error", **exc.body()}))
            await ws.close(CLOSE_TRY_LATER if exc.code == "unavailable" else CLOSE_POLICY)
        return
    if (wait := await ctx.limiter.debt(principal.credential_id)) > 0.0:
        metrics.RATE_LIMITED.labels("upgrade").inc()
        body = {
            "code": "rate_limited",
            "message": "this credential's last socket went on writing after it was told to "
            f"wait; come back in {wait:.0f} s",
            "retry_after": retry_after(wait),
        }
        headers = {"Retry-After": str(max(1, math.ceil(wait)))}
        await ws.send_denial_response(JSONResponse(body, status_code=429, headers=headers))
        return
    await ws.accept()
    await Session(ws, ctx, principal).run()
