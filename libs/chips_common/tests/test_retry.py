"""chips_common.db.retry: a statement goes once more on a new connection, only when the
first one was found dead."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db.retry import once_more


class Engine:
    def __init__(self) -> None:
        self.checked_out = 0

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[int]:
        self.checked_out += 1
        yield self.checked_out


def failing(times: int, invalidated: bool) -> Any:
    seen: list[int] = []

    async def work(conn: AsyncConnection) -> int:
        seen.append(cast(int, conn))
        if len(seen) <= times:
            raise DBAPIError(
                "SELECT 1", None, Exception("gone"), connection_invalidated=invalidated
            )
        return cast(int, conn)

    return work


async def test_a_dead_connection_is_replaced_once() -> None:
    engine = Engine()
    assert await once_more(cast(AsyncEngine, engine), failing(1, True)) == 2


async def test_a_second_dead_connection_is_an_error() -> None:
    engine = Engine()
    with pytest.raises(DBAPIError):
        await once_more(cast(AsyncEngine, engine), failing(2, True))
    assert engine.checked_out == 2


async def test_an_error_of_the_statement_is_not_sent_again() -> None:
    engine = Engine()
    with pytest.raises(DBAPIError):
        await once_more(cast(AsyncEngine, engine), failing(1, False))
    assert engine.checked_out == 1
