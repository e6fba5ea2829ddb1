"""The socket session's cheap waiting primitives behave as asyncio's do."""

from __future__ import annotations

import asyncio

import pytest

from chips_gateway.ws.flag import Flag, Frames, QueueFull


async def settle() -> None:
    """Let every ready callback and task step run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_flag_wakes_every_waiter_and_stays_set_until_cleared() -> None:
    flag = Flag()
    waiters = [asyncio.create_task(flag.wait()) for _ in range(3)]
    await settle()
    assert not any(w.done() for w in waiters)
    flag.set()
    await settle()
    assert all(w.done() for w in waiters)
    assert flag.is_set()
    await asyncio.wait_for(flag.wait(), 1)  # set: returns at once
    flag.clear()
    late = asyncio.create_task(flag.wait())
    await settle()
    assert not late.done()
    late.cancel()
    await settle()
    assert late.cancelled()


async def test_a_flag_holds_no_waiter_list_when_nobody_waits() -> None:
    flag = Flag()
    assert flag._waiters is None
    waiter = asyncio.create_task(flag.wait())
    await settle()
    assert flag._waiters is not None and len(flag._waiters) == 1
    waiter.cancel()
    await settle()
    assert not flag._waiters  # a cancelled waiter is taken off
    flag.set()
    assert flag._waiters is None


async def test_setting_a_reason_sets_the_flag_it_shares() -> None:
    ending = Flag()
    behind, revoked = Flag(also=ending), Flag(also=ending)
    waiting = asyncio.create_task(ending.wait())
    await settle()
    revoked.set()
    await settle()
    assert waiting.done() and ending.is_set() and not behind.is_set()


async def test_frames_come_out_in_order_and_join_waits_for_each_to_be_done() -> None:
    frames: Frames[int] = Frames(10)
    for n in range(3):
        frames.put_nowait(n)
    assert frames.qsize() == 3
    joined = asyncio.create_task(frames.join())
    got = [await frames.get() for _ in range(3)]
    assert got == [0, 1, 2]
    await settle()
    assert not joined.done()  # got, not yet done
    for _ in got:
        frames.task_done()
    await settle()
    assert joined.done()
    with pytest.raises(ValueError):
        frames.task_done()


async def test_a_get_waits_for_a_put() -> None:
    frames: Frames[str] = Frames(2)
    getting = asyncio.create_task(frames.get())
    await settle()
    assert not getting.done()
    frames.put_nowait("a")
    assert await asyncio.wait_for(getting, 1) == "a"
    assert frames._items is None  # an empty queue holds no deque


async def test_a_full_queue_refuses_put_nowait_and_holds_put_until_a_get() -> None:
    frames: Frames[int] = Frames(2)
    frames.put_nowait(1)
    frames.put_nowait(2)
    assert frames.full()
    with pytest.raises(QueueFull):
        frames.put_nowait(3)
    putting = asyncio.create_task(frames.put(3))
    await settle()
    assert not putting.done()
    assert await frames.get() == 1
    await asyncio.wait_for(putting, 1)
    assert [await frames.get(), await frames.get()] == [2, 3]
