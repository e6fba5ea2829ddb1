"""An engine on a migrated database of its own (the root conftest's ``database_url``), for
the tests of the referee's handler against Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    # As the service builds it (app.py): no ping as a connection leaves the pool.
    built = create_async_engine(database_url, pool_size=4, pool_pre_ping=False)
    yield built
    await built.dispose()
