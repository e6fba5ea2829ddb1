"""A migrated database of its own, for the tests of the referee's handler against Postgres."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.db.scratch import scratch_database

ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    """A fresh database migrated to the head, dropped after the module."""
    database = scratch_database(ADMIN, "chips_referee", migrate_timeout=120)
    try:
        url = database.__enter__()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no Postgres to test against: {exc}")
    try:
        yield url
    finally:
        database.__exit__(None, None, None)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    # As the service builds it (app.py): no ping as a connection leaves the pool.
    built = create_async_engine(database_url, pool_size=4, pool_pre_ping=False)
    yield built
    await built.dispose()
