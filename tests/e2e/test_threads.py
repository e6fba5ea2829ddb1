"""Threads (docs/product/messages.md, Threads).

"space.created with kind: "thread", parent_space_id and root_message_id — and no members
of its own: whoever is in the room is in its threads, sees them, and leaves them with the
room. A message roots one thread; a thread is not opened inside a thread, in a closed
space, or from a message taken back. A reply is the room's news: the room comes forward
in the list."
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket


async def message_id(api: Api, who: Identity, space_id: str, seq: int) -> str:
    events = await api.read(who, space_id=space_id)
    return str(next(e for e in events if e["seq"] == seq)["message_id"])


def thread_of(parent: str, root: str, **more: Any) -> dict[str, Any]:
    return {
        "type": "space.created",
        "kind": "thread",
        "parent_space_id": parent,
        "root_message_id": root,
        **more,
    }


async def test_whoever_is_in_the_room_is_in_its_threads_and_leaves_them_with_the_room(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    sam = await api.add_person(owner, "Sam Stone")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Plans", [maya.participant_id, scout.participant_id])
    root = await message_id(api, owner, room, await api.say(owner, room, "shall we go?"))
    head = await api.head(owner)
    watch = await Socket.open(stack.gateway_b, maya)
    await watch.subscribe(maya.workspace_id, since=head)

    thread = await api.open_thread(scout, room, root)  # a harness in the room may open one
    said = await api.say(owner, thread, "in the thread")
    await watch.wait_for_seq(said)
    assert [e["type"] for e in watch.events()] == ["space.created", "message.post"]
    assert "in the thread" in [e.get("text") for e in await api.read(maya, space_id=thread)]
    lines = await api.lines(maya, thread, said)
    assert [line["text"] for line in lines] == ["in the thread"]
    # Somebody not in the room is not in its threads.
    await api.refused(
        sam,
        {"type": "message.post", "space_id": thread, "text": "let me in"},
        "forbidden",
        "you are not a member of this space",
    )
    outside = await api.http.get("/v1/events", params={"space_id": thread}, headers=api.auth(sam))
    assert outside.status_code == 403
    # A thread has no members of its own to add.
    await api.refused(
        owner,
        {"type": "membership.added", "space_id": thread, "participant_id": sam.participant_id},
        "invalid_event",
        "a thread has no members, title or state of its own",
    )

    left = await api.append(
        maya,
        {"type": "membership.removed", "space_id": room, "participant_id": maya.participant_id},
    )
    await api.refused(
        maya,
        {"type": "message.post", "space_id": thread, "text": "still here?"},
        "forbidden",
        "you are not a member of this space",
    )
    later = await api.say(owner, thread, "after maya left")
    # A room Maya is in, opened after: her socket delivers in seq order, so once it has
    # this, it has passed `later` (and said it or not).
    after = await api.append(
        owner, {"type": "space.created", "title": "After", "members": [maya.participant_id]}
    )
    await watch.wait_for_seq(after)
    assert left in watch.seqs() and later not in watch.seqs()
    await watch.close()
    # A replay from before the thread scopes it by the room, as the live feed did.
    replay = await Socket.open(stack.gateway_a, maya)
    await replay.subscribe(maya.workspace_id, since=head)
    await replay.wait_for_seq(after)  # past `later`, in order
    seen = [e.get("text") for e in replay.events()]
    assert "in the thread" in seen and "after maya left" not in seen
    await replay.close()


async def test_a_message_in_a_thread_brings_its_room_forward(stack, api: Api) -> None:
    owner = await api.create_workspace()
    older = await api.open_space(owner, "Older")
    root = await message_id(api, owner, older, await api.say(owner, older, "root"))
    newer = await api.open_space(owner, "Newer")
    await api.say(owner, newer, "newer news")
    thread = await api.open_thread(owner, older, root)
    listed = await api.spaces(owner, await api.head(owner))
    assert [s["id"] for s in listed["spaces"]][:2] == [newer, older]
    reply = await api.say(owner, thread, "a reply")
    listed = await api.spaces(owner, reply)
    assert [s["id"] for s in listed["spaces"]][:2] == [older, newer]
    assert thread not in {s["id"] for s in listed["spaces"]}  # threads are not list rows
    sheet = await api.sheet(owner, thread, reply)
    assert sheet["kind"] == "thread" and sheet["parent_space_id"] == older
    assert sheet["root_message_id"] == root
    assert [m["participant_id"] for m in sheet["members"]] == [owner.participant_id]


async def test_a_thread_is_refused_inside_a_thread_in_a_closed_space_or_twice_from_one_message(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    room = await api.open_space(owner, "Plans", [maya.participant_id])
    other = await api.open_space(owner, "Other")
    root = await message_id(api, owner, room, await api.say(owner, room, "root"))
    thread = await api.open_thread(maya, room, root)
    inner = await message_id(api, owner, thread, await api.say(owner, thread, "inner"))
    second = await message_id(api, owner, room, await api.say(owner, room, "second"))
    closed = await api.open_space(owner, "Closed")
    shut = await message_id(api, owner, closed, await api.say(owner, closed, "shut"))
    await api.change_room(owner, closed, state="closed")
    head = await api.head(owner)

    refusals = [
        (thread_of(thread, inner), "invalid_event", "a thread is not opened inside a thread"),
        (thread_of(closed, shut), "invalid_event", "a thread is not opened in a closed space"),
        (thread_of(room, root), "invalid_event", "that message roots a thread already"),
        (thread_of(other, second), "not_found", "root_message_id names no message of that room"),
        (
            thread_of(room, second, members=[maya.participant_id]),
            "invalid_event",
            "a thread has no members of its own",
        ),
        (
            {"type": "space.created", "parent_space_id": room, "root_message_id": second},
            "invalid_event",
            "only a thread has a parent and a root message",
        ),
    ]
    for event, code, reason in refusals:
        await api.refused(owner, event, code, reason)
    assert await api.head(owner) == head


async def test_a_harness_hears_a_thread_with_its_rooms_members_the_same_live_and_on_replay(
    stack, api: Api
) -> None:
    """A thread's members are its room's, so a harness's turn there is handed the room's
    members, and the thread's lines as context; a replay hands over the same frame."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    root = await message_id(api, owner, room, await api.say(owner, room, "the plan"))
    sock = await Socket.open(stack.gateway_b, scout)
    await sock.subscribe(owner.workspace_id)
    thread = await api.open_thread(owner, room, root)
    first = await api.say(owner, thread, "first in the thread")
    await sock.wait_for_seq(first)
    # Somebody joins the room after the thread's window was made: they are in the thread.
    await api.add_to_room(owner, room, maya.participant_id)
    said = await api.say(maya, thread, "maya in the thread")
    ask = await api.say(owner, thread, "@Scout what now?")
    frame = await sock.wait_for(lambda f: f["frame"] == "event" and f["event"]["seq"] == ask)
    live = frame["event"]
    assert live["type"] == "message.new"
    assert [m["name"] for m in live["room"]["members"]] == ["Arjun Rao", "Maya Chen", "Scout"]
    assert [line["seq"] for line in live["context"]["lines"]] == [first, said]
    await sock.close()

    replay = await Socket.open(stack.gateway_a, scout)
    await replay.subscribe(owner.workspace_id, since=first - 1)
    await replay.wait_for_seq(ask)
    assert next(e for e in replay.events() if e["seq"] == ask) == live
    await replay.close()


async def test_a_harness_that_opened_a_thread_is_handed_the_same_context_live_and_on_replay(
    stack, api: Api
) -> None:
    """Opening a thread is not joining it: the opener was in the thread since it joined the
    room, live and on replay alike."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    root = await message_id(api, owner, room, await api.say(owner, room, "the plan"))
    sock = await Socket.open(stack.gateway_b, scout)
    await sock.subscribe(owner.workspace_id)
    thread = await api.open_thread(scout, room, root)
    ask = await api.say(owner, thread, "@Scout go on")
    live = (await sock.wait_for(lambda f: f["frame"] == "event" and f["event"]["seq"] == ask))[
        "event"
    ]
    await sock.close()
    replay = await Socket.open(stack.gateway_a, scout)
    await replay.subscribe(owner.workspace_id, since=ask - 1)
    await replay.wait_for_seq(ask)
    assert next(e for e in replay.events() if e["seq"] == ask) == live
    await replay.close()
