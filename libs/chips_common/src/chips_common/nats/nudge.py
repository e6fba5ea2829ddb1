"""Asking a consumer that holds events to fold a workspace now (docs/adr/0168).

A consumer of the log may hold events whose fold can wait (``chips_common.service.held``)
and fold them a moment later, together. A read that must see a seq (read-your-writes)
would then wait out the hold; instead the reader publishes a nudge on the consumer's fold
subject (core NATS, no stream: every replica of the consumer hears it) naming the
workspace and the seq it waits for, and the replica holding that workspace folds it at
once. A nudge is a hint: a lost one costs the reader the hold (a second at most), never an
answer, since the reader still waits for the checkpoint itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson
from nats.aio.client import Client as NATS

from chips_common.nats.streams import Names

log = logging.getLogger(__name__)

# Asks ``service`` to fold ``workspace_id`` up to ``seq`` now: a :class:`Nudge`, or
# :func:`no_nudge` where nothing holds events (a test's wiring).
Nudger = Callable[[str, str, int], Awaitable[None]]


async def no_nudge(service: str, workspace_id: str, seq: int) -> None:
    """Nudges nobody."""


def fold_subject(names: Names, service: str) -> str:
    """Where the replicas of ``service`` hear nudges."""
    return f"{names.subject_prefix}.fold.{service}"


def encode(workspace_id: str, seq: int) -> bytes:
    return orjson.dumps({"workspace_id": workspace_id, "seq": seq})


def decode(data: bytes) -> tuple[str, int] | None:
    """The workspace and seq a nudge names, or None for one that names neither. Pure."""
    try:
        body = orjson.loads(data)
        workspace_id, seq = body["workspace_id"], body["seq"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(workspace_id, str) or not workspace_id:
        return None
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        return None
    return workspace_id, seq


class Nudge:
    """Publishes nudges to a consumer's replicas; a publish that fails is logged, not raised
    (the reader waits for the checkpoint either way)."""

    def __init__(self, nc: NATS, names: Names) -> None:
        self.nc = nc
        self.names = names

    async def __call__(self, service: str, workspace_id: str, seq: int) -> None:
        try:
            await self.nc.publish(fold_subject(self.names, service), encode(workspace_id, seq))
        except Exception as exc:
            log.warning("could not nudge %s for %s: %r", service, workspace_id, exc)
