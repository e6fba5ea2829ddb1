"""The live fan-out's shared pieces (docs/adr/0161): a person's event frames written from
the feed in the order the socket is owed them, the same bytes the socket library writes,
a socket's waiting frames in one write, and one membership view folded once for every
live socket of a participant in the same state.

The session is driven with a socket and a connection of the test's own; both write into
one list, so that the order of what a client reads is the order in that list.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import orjson
import pytest
from websockets.frames import Frame, Opcode

from chips_common.events.wire import EventJson
from chips_common.ids import new_id
from chips_common.rules.context import Budget
from chips_common.rules.scope import MembershipView
from chips_gateway import runs
from chips_gateway.auth import Principal
from chips_gateway.config import GatewaySettings
from chips_gateway.fanout import Outbox, SharedView, as_logged_to_people
from chips_gateway.feeds import Feed
from chips_gateway.intake import PARSED_WAITING, RAW_OUT, text_frame
from chips_gateway.shaping import Shaper
from chips_gateway.sockets import Sockets
from chips_gateway.ws import Session
from chips_gateway.ws.flag import Frames
from chips_gateway.ws.session import Subscription

pytestmark = pytest.mark.unit

ROOM = "spc_room"


def read_frames(data: bytes) -> list[Any]:
    """The text frames a client reads from ``data`` (unmasked, unfragmented)."""
    frames, i = [], 0
    while i < len(data):
        assert data[i] == 0x81, "a final text frame"
        n, i = data[i + 1] & 0x7F, i + 2
        if n == 126:
            (n,), i = struct.unpack("!H", data[i : i + 2]), i + 2
        elif n == 127:
            (n,), i = struct.unpack("!Q", data[i : i + 8]), i + 8
        frames.append(orjson.loads(data[i : i + n]))
        i += n
    return frames


class Wire:
    """What the client reads, in order, from both ways of writing to it."""

    def __init__(self) -> None:
        self.read: list[Any] = []
        self.writes = 0


class Raw:
    """The connection as the intake lends it to a session."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.open = True

    def may_write_raw(self) -> bool:
        return self.open

    def takes_raw(self) -> bool:
        return True

    def open_for_raw(self) -> bool:
        return self.open

    def write_raw(self, data: bytes) -> bool:
        if not self.open:
            return False
        self.wire.writes += 1
        self.wire.read += read_frames(data)
        return True


class Socket:
    def __init__(self, wire: Wire, raw: Raw | None) -> None:
        self.wire = wire
        extensions: dict[str, Any] = {PARSED_WAITING: {"count": lambda: 0}}
        if raw is not None:
            extensions[RAW_OUT] = raw
        self.scope = {"extensions": extensions}

    async def send_text(self, text: str) -> None:
        self.wire.read.append(orjson.loads(text))


class Ctx:
    def __init__(self, **settings: Any) -> None:
        self.settings = GatewaySettings(**settings)
        self.sockets = Sockets()
        self.reader = None
        self.links = None


def post(seq: int, space_id: str = ROOM) -> EventJson:
    event: Any = {
        "seq": seq,
        "type": "message.post",
        "space_id": space_id,
        "text": f"m{seq}",
        "actor": {"id": "usr_writer", "kind": "person"},
    }
    return event  # type: ignore[no-any-return]


def person_socket(
    feed: Feed,
    wire: Wire,
    raw: bool = True,
    pid: str = "usr_reader",
    direct: bool = True,
    **settings: Any,
) -> tuple[Session, Subscription, Raw | None]:
    """A live person's socket, as its subscription goes live; ``direct=False`` offers it
    every event the whole way (``Delivery.write_now``), as ADR 0161 had it."""
    lent = Raw(wire) if raw else None
    principal = Principal(new_id("cred"), feed.workspace_id, pid, "person", "P", "member", None)
    s = Session(Socket(wire, lent), Ctx(**settings), principal)  # type: ignore[arg-type]
    s.feed = feed
    sub = Subscription(s, MembershipView(pid, [ROOM]), 0)
    s.subscription = sub
    feed.attach(sub)
    sub.go_live(feed)
    if not direct:
        sub.direct = None
    return s, sub, lent


def new_feed() -> Feed:
    return Feed("ws_1", None, None, None)  # type: ignore[arg-type]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def seqs(read: list[Any]) -> list[Any]:
    return [f["event"]["seq"] if f["frame"] == "event" else f["frame"] for f in read]


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 70000])
def test_a_text_frame_is_the_bytes_the_socket_library_writes(size: int) -> None:
    payload = b"x" * size
    assert text_frame(payload) == Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=[])


async def test_events_come_in_order_around_the_frames_the_send_loop_sends() -> None:
    feed, wire = new_feed(), Wire()
    s, _, _ = person_socket(feed, wire)
    sender = asyncio.create_task(s.send_loop())
    feed._dispatch(post(1), None)
    await settle()
    # The send loop holds a frame: the next event waits behind it in the queue.
    s.push({"frame": "ack", "idempotency_key": "k", "seq": 2, "duplicate": False})
    feed._dispatch(post(2), None)
    feed._dispatch(post(3), None)
    await settle()
    # Written from the feed, then a frame of the send loop's: the waiting one goes first.
    feed._dispatch(post(4), None)
    await s.send_text('{"frame": "pong"}')
    feed._dispatch(post(5, "spc_other"), None)  # not its room's
    feed._dispatch(post(6), None)
    await settle()
    assert seqs(wire.read) == [1, "ack", 2, 3, 4, "pong", 6]
    sender.cancel()
    await asyncio.gather(sender, return_exceptions=True)


async def test_a_sockets_frames_offered_in_one_turn_are_written_in_one_call() -> None:
    feed, wire = new_feed(), Wire()
    person_socket(feed, wire)
    for seq in range(1, 6):
        feed._dispatch(post(seq), None)
    assert wire.read == [], "written at the loop's next turn"
    await settle()
    assert seqs(wire.read) == [1, 2, 3, 4, 5]
    assert wire.writes == 1


async def test_the_frame_written_from_the_feed_is_the_one_the_send_loop_would_send() -> None:
    feed, direct, queued = new_feed(), Wire(), Wire()
    person_socket(feed, direct)
    s, _, _ = person_socket(feed, queued, raw=False)
    sender = asyncio.create_task(s.send_loop())
    for seq in (1, 2):
        feed._dispatch(post(seq), None)
    await settle()
    assert direct.read == queued.read and seqs(direct.read) == [1, 2]
    sender.cancel()
    await asyncio.gather(sender, return_exceptions=True)


async def test_one_encoding_of_an_event_is_written_to_every_socket() -> None:
    feed = new_feed()
    event = post(1)
    first = feed.frame_bytes(event, event)
    assert feed.frame_bytes(event, event) is first
    copy: Any = {**event, "resolved_elsewhere": True}
    assert read_frames(feed.frame_bytes(copy, event)) == [{"frame": "event", "event": copy}]


async def test_a_connection_that_may_not_be_written_to_gets_its_frames_through_the_queue() -> None:
    feed, wire = new_feed(), Wire()
    s, _, raw = person_socket(feed, wire)
    assert raw is not None
    raw.open = False  # closing, compressed, or its transport full
    feed._dispatch(post(1), None)
    assert s.queue.qsize() == 1 and s.out is None


async def test_a_reader_that_does_not_keep_up_falls_behind_as_before() -> None:
    feed, wire = new_feed(), Wire()
    s, _, raw = person_socket(feed, wire, ws_max_queued_frames=3)
    assert raw is not None
    # Written from the feed while its connection takes them: as many as a queue holds in
    # one turn of the loop, then the rest are queued for the send loop.
    for seq in range(1, 6):
        feed._dispatch(post(seq), None)
    assert s.out is not None and len(s.out) == 3
    assert s.queue.qsize() == 2 and not s.behind.is_set()
    await settle()
    assert seqs(wire.read) == [1, 2, 3]
    # Its transport past its high-water mark: nothing more is written straight to it, and
    # past the queue's size the socket is too far behind, to be closed and resumed.
    raw.open = False
    for seq in range(6, 8):
        feed._dispatch(post(seq), None)
    assert s.behind.is_set()


async def test_a_socket_that_is_ending_is_written_nothing_more_from_the_feed() -> None:
    feed, wire = new_feed(), Wire()
    s, _, _ = person_socket(feed, wire)
    feed._dispatch(post(1), None)
    s.revoke("withdrawn")
    feed._dispatch(post(2), None)
    await settle()
    # What came before the end is written; what came after waits for a send loop that
    # the session cancels as it closes the socket.
    assert seqs(wire.read) == [1]
    assert s.queue.qsize() == 1


async def test_an_event_that_fails_to_shape_now_is_queued_for_the_send_loop() -> None:
    feed, wire = new_feed(), Wire()
    s, _, _ = person_socket(feed, wire)
    other, _, _ = person_socket(feed, Wire())
    # A decision without its actor: marking it for a person's socket fails.
    broken: Any = {"seq": 1, "type": "approval.resolved", "space_id": ROOM}
    feed._dispatch(broken, None)
    await settle()
    assert s.queue.qsize() == 1 and other.queue.qsize() == 1, "each socket's own"


def test_frames_are_idle_only_once_what_was_got_is_done() -> None:
    frames: Frames[int] = Frames(4)
    assert frames.idle()
    frames.put_nowait(1)
    assert not frames.idle()

    async def take() -> None:
        await frames.get()
        assert not frames.idle(), "got, and not done"
        frames.task_done()

    asyncio.run(take())
    assert frames.idle()


class Counting(MembershipView):
    folds = 0

    def visible(self, event: EventJson) -> bool:
        Counting.folds += 1
        return super().visible(event)


def events_of_a_room() -> list[EventJson]:
    raw: list[Any] = [
        {"seq": 2, "type": "message.post", "space_id": ROOM, "actor": {"id": "usr_b"}},
        {"seq": 3, "type": "membership.removed", "space_id": ROOM, "participant_id": "usr_a"},
        {"seq": 4, "type": "message.post", "space_id": ROOM, "actor": {"id": "usr_b"}},
        {"seq": 5, "type": "membership.added", "space_id": ROOM, "participant_id": "usr_a"},
        {"seq": 6, "type": "message.post", "space_id": ROOM, "actor": {"id": "usr_b"}},
    ]
    return raw


def test_a_shared_view_folds_each_event_once_and_decides_as_a_view_of_ones_own() -> None:
    Counting.folds = 0
    shared = SharedView(Counting("usr_a", [ROOM]), 1)
    shared.holders = 3
    own = MembershipView("usr_a", [ROOM])
    for event in events_of_a_room():
        alone = own.visible(event)
        assert [shared.visible(event) for _ in range(3)] == [alone] * 3
    assert Counting.folds == 5


def test_a_view_is_taken_only_in_the_same_state_and_folded_as_far() -> None:
    mine = MembershipView("usr_a", [ROOM])
    shared = SharedView(MembershipView("usr_a", [ROOM]), 7)
    assert not shared.may_take(mine, 7), "nobody holds it"
    shared.holders = 1
    assert shared.may_take(mine, 7)
    assert not shared.may_take(mine, 6)
    assert not shared.may_take(MembershipView("usr_a", [ROOM, "spc_2"]), 7)
    assert not shared.may_take(MembershipView("usr_a", [ROOM], role="guest"), 7)
    # A cache is not state: the frozen own agents are made again from the same set.
    harness = MembershipView("hrn_a", kind="harness", own_agents=["agt_1"])
    assert harness.pre_agents() == {"agt_1": "hrn_a"}
    assert harness.same_as(MembershipView("hrn_a", kind="harness", own_agents=["agt_1"]))


async def test_a_participants_live_sockets_share_a_view_until_the_last_goes() -> None:
    feed, wire = new_feed(), Wire()
    _, sub_a, _ = person_socket(feed, wire)
    _, sub_b, _ = person_socket(feed, Wire())
    _, sub_c, _ = person_socket(feed, Wire(), pid="usr_other")
    assert sub_a.shared is not None and sub_b.shared is sub_a.shared
    assert sub_b.view is sub_a.view and sub_c.shared is not sub_a.shared
    feed._dispatch(post(1), None)
    feed._dispatch(
        {"seq": 2, "type": "membership.removed", "space_id": ROOM, "participant_id": "usr_reader"},  # type: ignore[typeddict-unknown-key]
        None,
    )
    feed._dispatch(post(3), None)
    await settle()
    # Told of its removal, and of nothing in the room after it.
    assert seqs(wire.read) == [1, 2]
    feed.detach(sub_a)
    feed.detach(sub_b)
    assert "usr_reader" not in feed.views and "usr_other" in feed.views


async def test_a_writer_that_fails_does_not_keep_the_others_frames() -> None:
    written: list[str] = []

    class Failing:
        def flush_out(self) -> int:
            raise ConnectionResetError

    class Writing:
        def flush_out(self) -> int:
            written.append("w")
            return 1

    outbox = Outbox()
    outbox.mark(Failing())
    outbox.mark(Writing())
    await settle()
    assert written == ["w"] and outbox.handle is None


async def test_a_persons_event_is_shaped_now_as_the_send_loop_shapes_it() -> None:
    principal = Principal("cred_1", "ws_1", "usr_a", "person", "A", "member", None)
    shaper = Shaper(None, principal, Budget())  # type: ignore[arg-type]
    for event in events_of_a_room():
        assert shaper.shape_now(event) == await shaper.shape(event)
    harness = Principal("cred_2", "ws_1", "hrn_a", "harness", "H", "member", None)
    assert Shaper(None, harness, Budget()).shape_now(post(1)) is None  # type: ignore[arg-type]


def mixed_events() -> list[EventJson]:
    """A room's events of every way a person's socket is sent them: as logged, with a file
    to link, a decision to mark, one that may end a socket, and one of another room."""
    actor = {"id": "usr_writer", "kind": "person"}
    raw: list[Any] = [
        post(1),
        {**post(2), "attachments": [{"file_id": "fil_1", "name": "a.txt", "size": 1}]},
        {"seq": 3, "type": "approval.resolved", "space_id": ROOM, "actor": actor},
        {"seq": 4, "type": "membership.removed", "space_id": ROOM, "participant_id": "usr_x"},
        post(5),
        {"seq": 6, "type": "person.updated", "participant_id": "usr_x", "active": True},
        post(7, "spc_other"),
        post(8),
    ]
    return raw


def test_an_event_as_logged_to_people_is_what_shaping_and_marking_leave_as_it_is() -> None:
    principal = Principal("cred_1", "ws_1", "usr_reader", "person", "P", "member", None)
    shaper = Shaper(None, principal, Budget())  # type: ignore[arg-type]
    plain = [e["seq"] for e in mixed_events() if as_logged_to_people(e)]
    assert plain == [1, 4, 5, 7, 8]
    for event in mixed_events():
        if as_logged_to_people(event):
            assert shaper.shape_now(event) is event
            assert runs.mark_elsewhere(principal, event, set()) is event
    for kind in ("device.revoked", "harness.disconnected", "message.new", "agent.attached"):
        assert not as_logged_to_people({"seq": 1, "type": kind})  # type: ignore[typeddict-item]
    files: Any = {**post(1), "context": {"files": [{"id": "fil_1"}]}}
    assert not as_logged_to_people(files)


async def test_a_socket_handed_the_feeds_frames_reads_what_the_whole_way_sends() -> None:
    feed, direct, whole = new_feed(), Wire(), Wire()
    _, sub, _ = person_socket(feed, direct)
    _, other, _ = person_socket(feed, whole, direct=False)
    assert sub.direct is feed and other.direct is None
    for event in mixed_events():
        feed._dispatch(event, None)
        assert feed.plain is None, "only while the event is offered"
    await settle()
    assert direct.read == whole.read
    assert seqs(direct.read) == [1, 2, 3, 4, 5, 6, 8]
    assert direct.read[2]["event"]["resolved_elsewhere"] is True


async def test_an_event_that_ends_a_socket_is_offered_the_whole_way() -> None:
    feed, wire = new_feed(), Wire()
    s, _, _ = person_socket(feed, wire)
    revoked: Any = {"seq": 2, "type": "device.revoked", "device_id": s.principal.credential_id}
    for event in (post(1), revoked, post(3)):
        feed._dispatch(event, None)
    await settle()
    assert s.revoked.is_set()
    assert seqs(wire.read) == [1], "nothing written from the feed after the end"
    assert s.queue.qsize() == 1


def test_only_a_persons_socket_whose_connection_takes_raw_frames_is_handed_them() -> None:
    feed = new_feed()
    _, queued_only, _ = person_socket(feed, Wire(), raw=False)
    assert queued_only.direct is None

    class Compressed(Raw):
        def takes_raw(self) -> bool:
            return False

    compressed = Session(Socket(Wire(), Compressed(Wire())), Ctx(), queued_only.session.principal)  # type: ignore[arg-type]
    sub = Subscription(compressed, MembershipView("usr_reader", [ROOM]), 0)
    sub.go_live(feed)
    assert sub.direct is None
    principal = Principal("cred_h", "ws_1", "hrn_a", "harness", "H", "member", None)
    raw = Raw(Wire())
    harness = Session(Socket(Wire(), raw), Ctx(), principal)  # type: ignore[arg-type]
    sub = Subscription(harness, MembershipView("hrn_a", [ROOM], kind="harness"), 0)
    sub.go_live(feed)
    assert sub.direct is None and not sub.replaying


async def test_an_event_that_cannot_be_encoded_once_is_each_sockets_own_failure() -> None:
    feed = new_feed()
    sockets = [person_socket(feed, Wire())[0] for _ in range(2)]
    broken: Any = {**post(1), "text": {"not", "json"}}
    feed._dispatch(broken, None)
    feed._dispatch(post(2), None)
    assert [s.queue.qsize() for s in sockets] == [2, 2], "queued, each for its send loop"
