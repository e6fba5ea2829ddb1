"""Sending a statement again, once, on a connection the pool handed out dead.

An engine built without ``pool_pre_ping`` (``chips_common.db.engine.build_engine``) saves
a round trip on every checkout; a connection Postgres closed meanwhile (a restart, an idle
timeout) then fails on its first statement. SQLAlchemy marks that error
``connection_invalidated`` and discards every connection checked out before it, so the
second try is on a new connection. Only what is safe to send twice goes through here:
reads, and transactions that are undone whole when their connection dies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

T = TypeVar("T")


async def once_more(engine: AsyncEngine, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """``work`` on a connection of ``engine``; again on a new one if that one was dead."""
    try:
        async with engine.connect() as conn:
            return await work(conn)
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
    async with engine.connect() as conn:
        return await work(conn)
