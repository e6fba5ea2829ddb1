"""The publisher clears the outbox rows of several rounds in one statement (ADR 0118).

The stream's acks are futures resolved by the test and the clearing statement is recorded
instead of run, so no Postgres or NATS is needed: what is tested is when the publisher
clears, and what.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chips_common.nats.streams import Names
from chips_eventlog import publishing
from chips_eventlog.consumer import Appender


class Clears:
    def __init__(self) -> None:
        self.calls: list[list[tuple[str, int]]] = []
        self.came = asyncio.Event()

    async def __call__(self, engine: Any, events: list[dict[str, Any]], unsynced: Any) -> None:
        if events:
            self.calls.append([(e["workspace_id"], e["seq"]) for e in events])
            self.came.set()

    async def next(self) -> list[tuple[str, int]]:
        await asyncio.wait_for(self.came.wait(), 5)
        self.came.clear()
        return self.calls[-1]


def published(seq: int) -> tuple[dict[str, Any], asyncio.Future[Any]]:
    acked: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    acked.set_result(object())  # the stream took it
    return {"workspace_id": "ws_a", "seq": seq, "type": "message.post"}, acked


@pytest.fixture
async def clears(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Clears]:
    recorder = Clears()
    monkeypatch.setattr(publishing, "clear_outbox", recorder)
    yield recorder


class NoDatabase:
    """Stands for the engines: the clearing statement is recorded, never run."""

    def execution_options(self, **options: Any) -> NoDatabase:
        return self


def make(**options: Any) -> Appender:
    return Appender(NoDatabase(), None, None, Names("CHIPS", "chips", 1), **options)  # type: ignore[arg-type]


async def run(appender: Appender) -> asyncio.Task[None]:
    return asyncio.create_task(appender.publisher())


async def rounds_confirmed(appender: Appender, sent: list[Any]) -> None:
    appender.hand_over(sent)
    await asyncio.wait_for(appender.publish_idle.wait(), 5)


async def test_rounds_are_cleared_together_once_the_oldest_is_due(clears: Clears) -> None:
    appender = make(clear_every=1.0)
    task = await run(appender)
    try:
        for seq in (1, 2, 3):
            await rounds_confirmed(appender, [published(seq)])
        assert clears.calls == [], "nothing is cleared before the oldest row is due"
        assert [e["seq"] for e in appender.to_clear] == [1, 2, 3]
        assert await clears.next() == [("ws_a", 1), ("ws_a", 2), ("ws_a", 3)]
        assert appender.to_clear == [] and appender.clear_due is None
    finally:
        task.cancel()


async def test_enough_rows_waiting_are_cleared_at_once(clears: Clears) -> None:
    appender = make(clear_every=3600, clear_at_most=3)
    task = await run(appender)
    try:
        await rounds_confirmed(appender, [published(1), published(2)])
        assert clears.calls == []
        await rounds_confirmed(appender, [published(3)])
        assert await clears.next() == [("ws_a", 1), ("ws_a", 2), ("ws_a", 3)]
    finally:
        task.cancel()


async def test_rows_the_stream_did_not_take_are_left_for_the_sweeper(clears: Clears) -> None:
    appender = make(clear_every=3600)
    refused: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    refused.set_exception(RuntimeError("no stream"))
    task = await run(appender)
    try:
        refused_event = {"workspace_id": "ws_a", "seq": 2, "type": "message.post"}
        await rounds_confirmed(appender, [published(1), (refused_event, refused)])
        assert [e["seq"] for e in appender.to_clear] == [1]
        # On the way out, what waits is cleared; the refused row stays in the outbox.
        await appender.drain_publisher(5)
        assert clears.calls == [[("ws_a", 1)]]
    finally:
        task.cancel()


async def test_the_sweeper_clears_what_waits_before_it_reads_the_outbox(
    clears: Clears, monkeypatch: pytest.MonkeyPatch
) -> None:
    appender = make(clear_every=3600)
    read_after: list[list[tuple[str, int]]] = []

    async def unpublished(engine: Any, **_: Any) -> list[Any]:
        read_after.append([c for call in clears.calls for c in call])
        return []

    async def sweep(*args: Any) -> int:
        return 0

    monkeypatch.setattr(publishing.store, "unpublished", unpublished)
    monkeypatch.setattr(publishing.purge, "sweep", sweep)
    task = await run(appender)
    try:
        await rounds_confirmed(appender, [published(7)])
        await appender.sweep_outbox()
        assert read_after == [[("ws_a", 7)]], "a published row is not published again"
    finally:
        task.cancel()
