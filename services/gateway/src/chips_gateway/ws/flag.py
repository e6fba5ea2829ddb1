"""Two small waiting primitives for a socket's session, cheap when nobody waits.

A gateway holds thousands of idle sockets, and each socket's session has a dozen things
to wait on. ``asyncio.Event`` and ``asyncio.Queue`` each allocate their waiter deques up
front (about 600 bytes a deque); these allocate a waiter only while someone waits, which
on an idle socket is almost never (docs/adr/0159). They are single-loop, as asyncio's are.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Flag:
    """``asyncio.Event``'s set, clear, is_set and wait, with its waiters made on demand.

    ``also`` is set whenever this one is: a socket's several reasons to end share one
    flag its session waits on, instead of a task per reason.
    """

    __slots__ = ("_also", "_value", "_waiters")

    def __init__(self, also: Flag | None = None) -> None:
        self._value = False
        self._waiters: list[asyncio.Future[None]] | None = None
        self._also = also

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            waiters, self._waiters = self._waiters, None
            for waiter in waiters or ():
                if not waiter.done():
                    waiter.set_result(None)
        if self._also is not None:
            self._also.set()

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> None:
        if self._value:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)


class QueueFull(Exception):
    """Raised by :meth:`Frames.put_nowait` on a full queue."""


class Frames(Generic[T]):
    """A bounded FIFO queue with ``asyncio.Queue``'s put, put_nowait, get, task_done and
    join, for one consumer (a socket's send loop) and any number of producers."""

    __slots__ = ("_finished", "_got", "_items", "_room", "_unfinished", "maxsize")

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[T] | None = None
        self._unfinished = 0
        self._got = Flag()  # something to get
        self._room = Flag()  # room to put
        self._room.set()
        self._finished = Flag()  # every item got is done
        self._finished.set()

    def qsize(self) -> int:
        return len(self._items) if self._items is not None else 0

    def idle(self) -> bool:
        """Nothing queued, and nothing got that is not done yet (its consumer is waiting)."""
        return self._unfinished == 0

    def full(self) -> bool:
        return self.qsize() >= self.maxsize > 0

    def put_nowait(self, item: T) -> None:
        if self.full():
            raise QueueFull
        if self._items is None:
            self._items = deque()
        self._items.append(item)
        self._unfinished += 1
        self._finished.clear()
        self._got.set()
        if self.full():
            self._room.clear()

    async def put(self, item: T) -> None:
        while self.full():
            await self._room.wait()
        self.put_nowait(item)

    async def get(self) -> T:
        while not self._items:
            self._got.clear()
            await self._got.wait()
        item = self._items.popleft()
        if not self._items:
            # An idle socket holds no deque (its block is ~600 bytes).
            self._items = None
            self._got.clear()
        self._room.set()
        return item

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1
        if self._unfinished == 0:
            self._finished.set()

    async def join(self) -> None:
        while self._unfinished:
            await self._finished.wait()
