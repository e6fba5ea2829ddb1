"""Delivery across gateways, and membership folded from the stream.

docs/product/websocket.md: What a harness hears; Subscribing and resuming (scope).
"""

from __future__ import annotations

from tests.e2e.client import Api, Socket


def is_event(seq: int):
    return lambda f: f["frame"] == "event" and f["event"]["seq"] == seq


async def test_person_on_gateway_a_reaches_harness_on_gateway_b_as_message_new(
    stack, api: Api
) -> None:
    """A person's message.post is heard by a harness as message.new; the sender gets it as sent."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    person = await Socket.open(stack.gateway_a, owner)
    bot = await Socket.open(stack.gateway_b, harness)
    await person.subscribe(owner.workspace_id)
    await bot.subscribe(owner.workspace_id)
    await bot.attached()  # from now: the person writes on the other gateway at once
    k = await person.write({"type": "message.post", "space_id": space_id, "text": "Find the PO"})
    ack = await person.answer(k)
    assert ack["frame"] == "ack" and ack["duplicate"] is False

    heard = (await bot.wait_for(is_event(ack["seq"])))["event"]
    assert heard["type"] == "message.new"
    assert heard["text"] == "Find the PO"
    assert heard["actor"] == {"kind": "person", "id": owner.participant_id}
    assert heard["message_id"] == "msg_" + heard["id"].removeprefix("evt_")

    own = (await person.wait_for(is_event(ack["seq"])))["event"]
    assert own["type"] == "message.post"
    # The person reads the agent Chips gave Scout in its home as who the words are for;
    # Scout, before agents, reads itself (docs/adr/0154).
    assert heard["addressed_to"] == [harness.participant_id]
    assert own["addressed_to"] != heard["addressed_to"]
    assert {k: v for k, v in own.items() if k not in ("type", "addressed_to")} == {
        k: v
        for k, v in heard.items()
        if k not in ("type", "context", "room", "from", "addressed_to")
    }
    await person.close()
    await bot.close()


async def test_harness_own_post_comes_back_as_sent_and_person_hears_it_as_posted(
    stack, api: Api
) -> None:
    """A harness's own message.post comes back as it was sent; a person hears it as posted."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_a, harness)
    person = await Socket.open(stack.gateway_b, owner)
    await bot.subscribe(owner.workspace_id)
    await person.subscribe(owner.workspace_id)
    await person.attached()  # from now: the bot writes on the other gateway at once
    k = await bot.write({"type": "message.post", "space_id": space_id, "text": "Done: PO found"})
    ack = await bot.answer(k)
    assert ack["frame"] == "ack"
    assert (await bot.wait_for(is_event(ack["seq"])))["event"]["type"] == "message.post"
    assert (await person.wait_for(is_event(ack["seq"])))["event"]["type"] == "message.post"
    await bot.close()
    await person.close()


async def test_hello_names_the_harness_its_owner_and_its_spaces(stack, api: Api) -> None:
    """docs/product/websocket.md, The handshake: hello carries the harness (id, name, owner_id) and
    autonomy."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_b, harness)
    hello = bot.hello_frame
    assert hello is not None and hello["frame"] == "hello"
    assert hello["harness"] == {
        "id": harness.participant_id,
        "name": "Scout",
        "owner_id": owner.participant_id,
        "capabilities": [],  # what it declared: nothing yet
    }
    assert "autonomy" in hello
    assert hello["spaces"] == [space_id]
    assert hello["protocol"]["version"] == 1
    person = await Socket.open(stack.gateway_a, owner)
    assert person.hello_frame and person.hello_frame["person"]["id"] == owner.participant_id
    await bot.close()
    await person.close()


async def test_membership_changes_open_and_close_a_space_live(stack, api: Api) -> None:
    """docs/architecture/design.md §4: the decision for event N uses membership as of N, folded
    live."""
    owner = await api.create_workspace()
    harness, _ = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id)
    room = await api.open_space(owner, "Planning")
    before = await api.say(owner, room, "before the harness joins")
    added = await api.append(
        owner,
        {"type": "membership.added", "space_id": room, "participant_id": harness.participant_id},
    )
    during = await api.say(owner, room, "while it is in")
    removed = await api.append(
        owner,
        {"type": "membership.removed", "space_id": room, "participant_id": harness.participant_id},
    )
    after = await api.say(owner, room, "after it left")
    marker_room = await api.open_space(owner, "Marker", [harness.participant_id])
    marker = await api.say(owner, marker_room, "marker")
    await bot.wait_for_seq(marker)
    seen = bot.seqs()
    assert before not in seen and after not in seen
    # The add's last event is the agent Chips gives Scout there, which a harness before
    # agents is not sent (docs/adr/0154); it is sent its own add, just before.
    (joined,) = [
        e["seq"]
        for e in bot.events()
        if e["type"] == "membership.added" and e.get("space_id") == room
    ]
    assert joined <= added and added not in seen
    assert during in seen and removed in seen
    assert seen == sorted(seen) and len(seen) == len(set(seen))
    await bot.close()
