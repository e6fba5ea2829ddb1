"""The intake's queue of parsed messages: in order, and a waiting reader is woken."""

from __future__ import annotations

import asyncio

from chips_gateway.intake import Inbox


async def test_messages_come_out_in_the_order_they_were_put() -> None:
    inbox = Inbox()
    assert inbox.empty()
    inbox.put_nowait({"type": "websocket.receive", "text": "a"})
    inbox.put_nowait({"type": "websocket.receive", "text": "b"})
    assert not inbox.empty()
    assert (await inbox.get()).get("text") == "a"
    assert (await inbox.get()).get("text") == "b"
    assert inbox.empty()


async def test_a_reader_waiting_on_an_empty_inbox_is_woken_by_the_next_message() -> None:
    inbox = Inbox()
    reading = asyncio.create_task(inbox.get())
    await asyncio.sleep(0)  # one turn of the loop: the reader starts, and waits
    assert inbox.waiter is not None and not reading.done()
    inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})
    assert (await asyncio.wait_for(reading, 5))["type"] == "websocket.disconnect"
    assert inbox.waiter is None
