"""The referee's three clocks on one look (``run_clocks``; docs/adr/0166)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chips_referee import consumer
from chips_referee.consumer import Look, run_clocks


async def test_each_clock_runs_what_the_look_found_and_a_slow_one_holds_back_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = [Look(["ws_a"], True, True), Look(["ws_b"], False, True), Look([], False, False)]

    async def look(_: Any) -> Look:
        return looks.pop(0) if looks else Look([], False, False)

    monkeypatch.setattr(consumer, "look", look)
    rooms: list[list[str] | None] = []
    questions: list[int] = []
    gives: list[int] = []
    release = asyncio.Event()

    async def tick(workspaces: list[str] | None = None) -> int:
        rooms.append(workspaces)
        return 1

    async def expiry_tick() -> int:
        questions.append(1)
        return 1

    async def give_tick() -> int:
        gives.append(1)
        await release.wait()  # slow: the second look finds it still running
        return 1

    stop = asyncio.Event()
    clocks = asyncio.create_task(run_clocks(None, tick, expiry_tick, give_tick, 0.01, stop))  # type: ignore[arg-type]
    await asyncio.sleep(0.1)
    assert rooms == [["ws_a"], ["ws_b"]]  # not held back by the give clock
    assert questions == [1]
    assert gives == [1]  # still running at the second look: not started again
    stop.set()
    await asyncio.sleep(0.02)
    assert not clocks.done()  # a look under way finishes before the clocks stop
    release.set()
    await asyncio.wait_for(clocks, 1)


async def test_a_failed_look_or_tick_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0

    async def look(_: Any) -> Look:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("the database is away")
        return Look(["ws_a"], False, False)

    monkeypatch.setattr(consumer, "look", look)
    tried: list[int] = []

    async def tick(workspaces: list[str] | None = None) -> int:
        tried.append(1)
        if len(tried) == 1:
            raise RuntimeError("a look failed")
        return 1

    async def nothing() -> int:
        raise AssertionError("not due")

    stop = asyncio.Event()
    clocks = asyncio.create_task(run_clocks(None, tick, nothing, nothing, 0.01, stop))  # type: ignore[arg-type]
    await asyncio.sleep(0.1)
    stop.set()
    await asyncio.wait_for(clocks, 1)
    assert len(tried) >= 2
