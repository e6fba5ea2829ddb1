"""Edit, take back, delete for me, pin (docs/product/messages.md).

The log keeps the words; the room shows the latest. Each refusal leaves the log as it was.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_messages import heard, post, room_with_two_harnesses


def about(type_: str, room: str, message_id: str, **more: Any) -> dict[str, Any]:
    return {"type": type_, "space_id": room, "message_id": message_id, **more}


async def said(api: Api, who: Identity, room: str, text: str) -> tuple[int, str]:
    seq = await post(api, who, room, text)
    event = next(e for e in await api.read(who, since=seq - 1, space_id=room) if e["seq"] == seq)
    return seq, event["message_id"]


async def line(api: Api, who: Identity, room: str, seq: int, message_id: str) -> dict[str, Any]:
    return next(x for x in await api.lines(who, room, seq) if x["id"] == message_id)


async def test_the_author_edits_and_the_room_shows_the_latest_marked_edited(
    stack, api: Api
) -> None:
    owner, maya, scout, _, room, socks = await room_with_two_harnesses(stack, api)
    seq, mid = await said(api, owner, room, "The slot holds until Thursday.")
    edit = await api.append(owner, about("message.edited", room, mid, text="Until Friday."))
    assert (await heard(socks["scout"], edit))["text"] == "Until Friday."
    shown = await line(api, maya, room, edit, mid)
    assert shown["text"] == "Until Friday." and shown["edited"] is True
    logged = await api.read(owner, since=seq - 1, space_id=room)
    assert logged[0]["text"] == "The slot holds until Thursday."  # the log keeps the words


async def test_only_the_author_edits(stack, api: Api) -> None:
    owner, maya, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    _, mid = await said(api, owner, room, "mine")
    before = await api.head(owner)
    for who in (maya, scout):
        edit = about("message.edited", room, mid, text="theirs")
        await api.refused(who, edit, "forbidden", "only the author")
    assert await api.head(owner) == before


async def test_taking_back_leaves_a_tombstone_and_takes_nothing_more(stack, api: Api) -> None:
    owner, maya, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    _, mid = await said(api, scout, room, "A wrong total: $9,000.")
    await api.append(owner, about("message.pinned", room, mid))
    gone = await api.append(scout, about("message.deleted", room, mid))
    shown = await line(api, maya, room, gone, mid)
    assert shown["deleted"] is True and shown["text"] == "" and shown["pinned"] is False
    for event, code in (
        (about("message.edited", room, mid, text="again"), "taken back"),
        (about("message.pinned", room, mid), "taken back"),
        (about("message.deleted", room, mid), "taken back already"),
        (about("feedback", room, mid, kind="reaction", emoji="👍"), "taken back"),
    ):
        who = scout if event["type"] != "feedback" and event["type"] != "message.pinned" else owner
        await api.refused(who, event, "invalid_event", code)


async def test_the_room_owner_or_a_workspace_admin_may_take_back_anyone_s(stack, api: Api) -> None:
    owner, maya, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    admin = await api.add_person(owner, "Priya Admin", role="admin")
    await api.append(
        owner,
        {"type": "membership.added", "space_id": room, "participant_id": admin.participant_id},
    )
    _, first = await said(api, scout, room, "one")
    _, second = await said(api, scout, room, "two")
    await api.refused(maya, about("message.deleted", room, first), "forbidden", "its author")
    await api.append(owner, about("message.deleted", room, first))  # the room's owner
    await api.append(admin, about("message.deleted", room, second))  # a workspace admin


async def test_delete_for_me_is_told_only_to_that_person_s_devices(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    phone = await Socket.open(stack.gateway_a, owner)
    desk = await Socket.open(stack.gateway_b, owner)
    other = await Socket.open(stack.gateway_a, maya)
    start = await api.head(owner)
    for sock in (phone, desk, other):
        await sock.subscribe(owner.workspace_id, since=start)
    seq, mid = await said(api, scout, room, "noise")
    hide = await api.append(owner, about("message.hidden", room, mid))
    marker = await post(api, owner, room, "after the hide")
    for sock in (phone, desk):
        assert (await heard(sock, hide))["type"] == "message.hidden"
    for sock in (other, socks["scout"], socks["ledger"]):
        await heard(sock, marker)
        assert hide not in sock.seqs()
    assert all(x["id"] != mid for x in await api.lines(owner, room, marker))
    assert any(x["id"] == mid for x in await api.lines(maya, room, marker))
    assert hide not in [e["seq"] for e in await api.read(maya, since=start)]
    assert hide not in [e["seq"] for e in await api.read(maya, since=start, space_id=room)]

    shown = await api.append(owner, about("message.shown", room, mid))
    assert any(x["id"] == mid for x in await api.lines(owner, room, shown))
    await api.refused(owner, about("message.shown", room, mid), "invalid_event", "not hidden")
    for sock in (phone, desk, other):
        await sock.close()


async def test_a_harness_may_not_hide_a_message(stack, api: Api) -> None:
    owner, _, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    _, mid = await said(api, owner, room, "hello")
    await api.refused(scout, about("message.hidden", room, mid), "forbidden", "a person's")


async def test_anyone_but_a_guest_pins_and_unpins(stack, api: Api) -> None:
    owner, maya, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    guest = await api.add_person(owner, "Gus Guest")
    await api.append(
        owner,
        {
            "type": "membership.added",
            "space_id": room,
            "participant_id": guest.participant_id,
            "standing": "guest",
        },
    )
    _, mid = await said(api, scout, room, "The PO number is 4471.")
    await api.refused(guest, about("message.pinned", room, mid), "forbidden", "guest")
    pinned = await api.append(maya, about("message.pinned", room, mid))
    assert (await line(api, owner, room, pinned, mid))["pinned"] is True
    await api.refused(maya, about("message.pinned", room, mid), "invalid_event", "pinned already")
    unpinned = await api.append(owner, about("message.unpinned", room, mid))
    assert (await line(api, owner, room, unpinned, mid))["pinned"] is False
    await api.refused(owner, about("message.unpinned", room, mid), "invalid_event", "not pinned")


async def test_a_message_of_another_room_or_none_is_not_found(stack, api: Api) -> None:
    owner, _, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    other = await api.open_space(owner, "Elsewhere", [scout.participant_id])
    _, mid = await said(api, owner, other, "over here")
    for message_id in (mid, "msg_01J9ZQ5V1M3X8K2R7T4W6Y0KMN", "nonsense"):
        await api.refused(
            owner, about("message.pinned", room, message_id), "not_found", "no message"
        )


async def test_context_reads_edits_and_leaves_out_taken_back_words(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    await post(api, scout, room, "Scout here.")
    _, keep = await said(api, owner, room, "The slot is Thursday.")
    _, drop = await said(api, owner, room, "Ignore this.")
    await api.append(owner, about("message.edited", room, keep, text="The slot is Friday."))
    await api.append(owner, about("message.deleted", room, drop))
    ask = await post(api, owner, room, "@Scout when is the slot?")
    event = await heard(socks["scout"], ask)
    texts = [(x["text"], x.get("edited", False)) for x in event["context"]["lines"]]
    assert texts == [("The slot is Friday.", True)]
    # A replay hands over the same lines.
    again = await Socket.open(stack.gateway_a, scout)
    await again.subscribe(owner.workspace_id, since=ask - 1)
    assert (await heard(again, ask))["context"] == event["context"]
    await again.close()
    await asyncio.sleep(0)
