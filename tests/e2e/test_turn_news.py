"""What a turn carries beyond the words: who said them and their standing, and the note's
news (a harness's joining, who joined since its last turn, why the message is its turn,
lines left out), the same live and on a replay.

docs/product/websocket.md, What a harness hears; Who is in the room; What you're told with a
question.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_messages import heard, post, reopen_with_context


async def replayed(stack, who: Identity, since: int, seq: int, context=None) -> dict[str, Any]:
    """The same message as a harness catching up from ``since`` is handed it (a replay)."""
    if context is None:
        sock = await Socket.open(stack.gateway_a, who)
    else:
        sock = await reopen_with_context(stack, who, context)
    await sock.subscribe(who.workspace_id, since=since)
    event = await heard(sock, seq)
    await sock.close()
    return event


def opening(event: dict[str, Any], who: Identity) -> str:
    return event["room"]["notes"][who.participant_id].split("In this space:")[0].strip()


async def live_harness(stack, who: Identity, context=None) -> Socket:
    sock = (
        await reopen_with_context(stack, who, context)
        if context is not None
        else await Socket.open(stack.gateway_b, who)
    )
    await sock.subscribe(who.workspace_id)
    return sock


async def test_the_speaker_and_every_member_come_with_their_standing(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    guest = await api.add_person(owner, "Gus Guest")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [maya.participant_id, scout.participant_id])
    r = await api.add_to_room(owner, room, guest.participant_id, standing="guest")
    assert r.status_code == 200, r.text
    bot = await live_harness(stack, scout)
    start = await api.head(owner)

    for who, standing in ((owner, "owner"), (maya, "member"), (guest, "guest")):
        seq = await post(api, who, room, "@Scout a word")
        live = await heard(bot, seq)
        assert live["from"]["id"] == who.participant_id
        assert live["from"]["kind"] == "person"
        assert live["from"]["standing"] == standing
        assert await replayed(stack, scout, start, seq) == live

    members = {m["name"]: m["standing"] for m in live["room"]["members"]}
    assert members == {
        "Arjun Rao": "owner",
        "Maya Chen": "member",
        "Gus Guest": "guest",
        "Scout": "member",
    }
    await bot.close()


async def test_a_harness_added_to_a_room_already_talking_is_told_so(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning")
    await post(api, owner, room, "We need the PO from Northwind.")
    bot = await live_harness(stack, scout)
    before = await api.head(owner)
    r = await api.add_to_room(owner, room, scout.participant_id)
    assert r.status_code == 200, r.text
    seq = await post(api, owner, room, "@Scout can you find it?")
    live = await heard(bot, seq)
    assert (
        opening(live, scout) == "You joined this space less than a minute ago, added by Arjun Rao."
    )
    assert await replayed(stack, scout, before, seq) == live

    # Its own words are its turn: the next message's note has no news.
    await post(api, scout, room, "On it.")
    again = await heard(bot, await post(api, owner, room, "@Scout thanks"))
    assert opening(again, scout) == ""
    await bot.close()


async def test_who_joined_since_the_last_turn_is_news(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    bot = await live_harness(stack, scout)
    before = await api.head(owner)
    await post(api, owner, room, "@Scout first")
    await post(api, scout, room, "Done.")
    r = await api.add_to_room(owner, room, ledger.participant_id)
    assert r.status_code == 200, r.text
    seq = await post(api, owner, room, "@Scout next")
    live = await heard(bot, seq)
    assert (
        opening(live, scout)
        == "New since your last turn: Ledger (agent, @Ledger), added by Arjun Rao."
    )
    assert await replayed(stack, scout, before, seq) == live
    await bot.close()


async def test_a_message_chosen_for_it_without_an_at_or_for_everyone_says_why(
    stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [scout.participant_id, ledger.participant_id])
    bot = await live_harness(stack, scout)
    before = await api.head(owner)

    picked = await post(api, owner, room, "what do you make of it?", to=[scout.participant_id])
    live = await heard(bot, picked)
    assert live["type"] == "message.new"
    assert opening(live, scout) == (
        "Arjun Rao sent this message to you without an @: it is yours to answer."
    )
    assert await replayed(stack, scout, before, picked) == live

    everyone = await post(api, owner, room, "status, please", to=["everyone"])
    live = await heard(bot, everyone)
    assert opening(live, scout) == (
        "Arjun Rao sent this message to every agent here, so each of you has it: answer it "
        "yourself, and don\u2019t pass it on with an @."
    )
    assert await replayed(stack, scout, before, everyone) == live

    named = await heard(bot, await post(api, owner, room, "@Scout go ahead"))
    assert opening(named, scout) == ""
    await bot.close()


async def test_lines_left_out_of_the_context_are_said_in_the_note(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    budget = {"lines": 3, "chars": 16000}
    bot = await live_harness(stack, scout, context=budget)
    before = await api.head(owner)
    for n in range(6):
        await post(api, owner, room, f"line {n}")
    await post(api, scout, room, "Noted.")
    for n in range(5):
        await post(api, owner, room, f"after {n}")
    seq = await post(api, owner, room, "@Scout what now?")
    live = await heard(bot, seq)
    assert live["context"]["truncated"] is True and len(live["context"]["lines"]) == 3
    assert opening(live, scout) == (
        "Only the newest 3 lines of what was said here since your last turn come with this "
        "one: older lines were left out."
    )
    assert await replayed(stack, scout, before, seq, context=budget) == live
    await bot.close()


async def test_context_lines_say_who_joined_left_renamed_and_archived(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    bot = await live_harness(stack, scout)
    await post(api, scout, room, "Ready.")
    assert (await api.add_to_room(owner, room, maya.participant_id)).status_code == 200
    assert (await api.remove_from_room(owner, room, maya.participant_id)).status_code == 200
    assert (await api.change_room(owner, room, title="Planning Q3")).status_code == 200
    assert (await api.change_room(owner, room, state="closed")).status_code == 200
    assert (await api.change_room(owner, room, state="open")).status_code == 200
    seq = await post(api, owner, room, "@Scout where are we?")
    lines = (await heard(bot, seq))["context"]["lines"]
    kinds = [line["kind"] for line in lines]
    assert kinds == ["joined", "left", "renamed", "archived", "unarchived"]
    joined, left, renamed, archived, unarchived = lines
    assert joined["from"]["id"] == maya.participant_id and joined["from"]["name"] == "Maya Chen"
    assert left["from"]["id"] == maya.participant_id
    assert renamed["title"] == "Planning Q3" and renamed["from"]["name"] == "Arjun Rao"
    assert archived["from"]["id"] == unarchived["from"]["id"] == owner.participant_id
    await bot.close()


async def test_a_resume_from_beyond_the_head_is_told_so(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, space = await api.connect_harness(owner, "Scout")
    head = await api.head(owner)
    sock = await Socket.open(stack.gateway_a, scout)
    await sock.subscribe(owner.workspace_id, since=head + 100)
    refused = await sock.wait_for(lambda f: f["frame"] == "error")
    assert refused["code"] == "since_ahead"
    assert refused["head"] >= head
    assert f"seq {refused['head']}" in refused["message"]

    # Nothing was subscribed: subscribing again from the head works as ever.
    await sock.subscribe(owner.workspace_id, since=head)
    seq = await post(api, owner, space, "still there?")
    assert (await heard(sock, seq))["type"] == "message.new"
    await sock.close()
