"""chips_common.db.direct: the hot statements' connections, against a real Postgres.

A connection is handed out again once given back; one whose server side went away is
replaced and the work sent once more; an error of the statement itself is not sent
again; no more than ``size`` are open at once; and a block that failed inside a
transaction leaves no transaction behind for the next one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import psycopg
import pytest
from sqlalchemy import bindparam, select, text

from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct, compiled, plain_url

pytestmark = pytest.mark.integration

URL = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture
async def direct() -> AsyncIterator[Direct]:
    try:
        with psycopg.connect(plain_url(URL), connect_timeout=3):
            pass
    except psycopg.OperationalError as exc:
        pytest.skip(f"no Postgres to test against: {exc}")
    made = Direct(URL, size=2)
    yield made
    await made.close()


async def backend(conn: Conn) -> int:
    row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
    assert row is not None
    return int(row.pid)


async def test_the_connection_given_back_is_handed_out_next(direct: Direct) -> None:
    first = await direct.run(backend)
    assert await direct.run(backend) == first
    assert direct.opened == 1


async def test_a_connection_whose_server_went_away_is_replaced_once(direct: Direct) -> None:
    gone = await direct.run(backend)
    with psycopg.connect(plain_url(URL), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [gone])
    tries: list[int] = []

    async def work(conn: Conn) -> int:
        tries.append(1)
        return await backend(conn)

    now = await direct.run(work)
    assert now != gone and len(tries) == 2
    assert direct.opened == 1, "the broken one was dropped"


async def test_every_idle_connection_cut_with_the_one_found_broken_is_replaced(
    direct: Direct,
) -> None:
    """A restart of Postgres cuts them all: with two idle and both cut, the statement is
    tried once more on a fresh connection, not on the other cut one."""
    async with direct.connection() as one, direct.connection() as two:
        pids = [await backend(one), await backend(two)]
    assert len(direct.idle) == 2
    with psycopg.connect(plain_url(URL), autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    now = await direct.run(backend)
    assert now not in pids
    assert direct.opened == 1, "both cut ones were dropped"


async def test_an_error_of_the_statement_is_not_sent_again(direct: Direct) -> None:
    tries: list[int] = []

    async def work(conn: Conn) -> None:
        tries.append(1)
        await conn.execute("SELECT 1 / 0")

    with pytest.raises(psycopg.errors.DivisionByZero):
        await direct.run(work)
    assert len(tries) == 1
    assert await direct.run(backend) > 0, "the connection is still good"


async def test_no_more_than_size_are_open_and_a_third_waits(direct: Direct) -> None:
    release, both = asyncio.Event(), asyncio.Event()
    holding = 0

    async def hold(conn: Conn) -> int:
        nonlocal holding
        holding += 1
        if holding == 2:
            both.set()
        await release.wait()
        return await backend(conn)

    held = [asyncio.create_task(direct.run(hold)) for _ in range(2)]
    await both.wait()
    third = asyncio.create_task(direct.run(backend))
    release.set()
    pids = await asyncio.gather(*held)
    # The third ran on one of the two, once it was given back: no third connection.
    assert await third in pids
    assert direct.opened == 2


async def test_a_block_that_failed_in_a_transaction_leaves_none_open(direct: Direct) -> None:
    with pytest.raises(RuntimeError):
        async with direct.connection() as conn:
            await conn.execute("BEGIN")
            await conn.execute("SELECT 1")
            raise RuntimeError("the block failed")
    async with direct.connection() as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_statement_is_compiled_with_psycopg_placeholders() -> None:
    by_id = select(t.workspaces.c.head_seq).where(t.workspaces.c.id == bindparam("ws"))
    assert "%(ws)s" in compiled(by_id)
    assert compiled(text("SELECT :a + :b")) == "SELECT %(a)s + %(b)s"
