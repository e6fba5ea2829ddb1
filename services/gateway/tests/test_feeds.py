"""A feed opened for a subscriber offers it everything after the head the feed read.

An event that reaches a new feed while it is opening waits for the feed's lock; the first
subscriber is attached under that same hold, so the event is offered to it rather than
counted as before its attach point (feeds.py, Feed.start).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest

from chips_gateway.feeds import Feed, Feeds

pytestmark = pytest.mark.unit

WS = "ws_1"


class Nats:
    """Keeps the callback a feed subscribes with."""

    def __init__(self) -> None:
        self.cb: Callable[[Any], Awaitable[None]] | None = None

    async def subscribe(self, subject: str, cb: Callable[[Any], Awaitable[None]]) -> Any:
        self.cb = cb
        return SimpleNamespace(unsubscribe=self.unsubscribe)

    async def unsubscribe(self) -> None:
        self.cb = None


class Reader:
    """A log at seq 41 whose event 42 reaches the stream while the feed reads the head."""

    def __init__(self, nats: Nats) -> None:
        self.nats = nats
        self.arriving: asyncio.Task[None] | None = None

    async def head(self, workspace_id: str) -> int:
        assert self.nats.cb is not None
        event = {
            "seq": 42,
            "type": "participant.joined",
            "participant_id": "usr_b",
            "kind": "person",
            "name": "Bea",
        }
        message = SimpleNamespace(data=orjson.dumps(event), headers=None, subject="s")
        self.arriving = asyncio.create_task(self.nats.cb(message))
        await asyncio.sleep(0)  # it starts, and waits for the feed's lock
        return 41

    async def workspace_participants(self, workspace_id: str) -> dict[str, Any]:
        return {}

    async def agent_owners(self, workspace_id: str) -> dict[str, str]:
        return {}


class Listener:
    def __init__(self) -> None:
        self.offered: list[int] = []

    def offer(self, event: dict[str, Any]) -> None:
        self.offered.append(event["seq"])


async def test_an_event_arriving_while_the_feed_opens_is_offered_to_its_first_listener() -> None:
    nats = Nats()
    reader = Reader(nats)
    names = SimpleNamespace(events_subject=lambda workspace_id: f"chips.events.{workspace_id}")
    feeds = Feeds(cast(Any, reader), cast(Any, nats), cast(Any, names), 60)
    listener = Listener()
    feed, boundary = await feeds.attach(WS, listener)
    assert reader.arriving is not None
    await reader.arriving
    # Either it is before the attach point, or it is offered: here, offered.
    assert boundary == 41
    assert listener.offered == [42]
    assert feed.last == 42


def test_an_event_s_frame_is_encoded_once_for_every_socket_sent_it_as_it_is() -> None:
    """The event as offered, and a harness's message.overheard of it (only its type
    changed), are each encoded once for all sockets; a copy reshaped for its recipient is
    encoded by its socket (None here)."""
    one = Feed(WS, cast(Any, None), cast(Any, None), cast(Any, None))
    event = {"seq": 7, "type": "message.post", "space_id": "spc", "text": "hi", "to": ["a"]}
    as_is = one.frame_json(event, event)
    assert as_is is not None and orjson.loads(as_is) == {"frame": "event", "event": event}
    assert one.frame_json(event, event) is as_is
    overheard = {**event, "type": "message.overheard"}
    text = one.frame_json(overheard, event)
    assert text is not None and orjson.loads(text)["event"] == overheard
    assert one.frame_json({**event, "type": "message.overheard"}, event) is text
    assert one.frame_json({**event, "to": list(event["to"])}, event) is None
    assert one.frame_json({**event, "type": "message.new", "room": {}}, event) is None
