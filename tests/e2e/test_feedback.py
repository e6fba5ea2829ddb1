"""Feedback on a harness's words: reactions and corrections (docs/product/messages.md, Feedback)."""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Socket
from tests.e2e.test_changing_words import line, said
from tests.e2e.test_messages import heard, post, room_with_two_harnesses


def feedback(room: str, message_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": "feedback", "space_id": room, "message_id": message_id, **fields}


async def test_a_correction_reaches_the_harness_whose_words_and_the_room_not_another_harness(
    stack, api: Api
) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    people = await Socket.open(stack.gateway_a, maya)
    await people.subscribe(owner.workspace_id, since=await api.head(owner))
    _, mid = await said(api, scout, room, "The total is $9,000.")
    seq = await api.append(
        owner,
        feedback(room, mid, kind="correction", note="It is $900", reasons=["wrong_facts"]),
    )
    to_scout = await heard(socks["scout"], seq)
    assert to_scout["type"] == "feedback" and to_scout["message_id"] == mid
    assert to_scout["about"] == scout.participant_id and to_scout["standing"] == "owner"
    assert to_scout["actor"]["id"] == owner.participant_id and to_scout["note"] == "It is $900"
    assert (await heard(people, seq))["note"] == "It is $900"
    marker = await post(api, owner, room, "@all next")
    await heard(socks["ledger"], marker)
    assert seq not in socks["ledger"].seqs()
    assert seq not in [e["seq"] for e in await api.read(ledger, since=seq - 1, space_id=room)]
    shown = await line(api, maya, room, seq, mid)
    assert shown["feedback"] == [
        {
            "from": owner.participant_id,
            "kind": "correction",
            "note": "It is $900",
            "reasons": ["wrong_facts"],
        }
    ]
    await people.close()


async def test_the_same_emoji_again_takes_the_reaction_back(stack, api: Api) -> None:
    owner, _, scout, _, room, socks = await room_with_two_harnesses(stack, api)
    _, mid = await said(api, scout, room, "Done.")
    first = await api.append(owner, feedback(room, mid, kind="reaction", emoji="🎉"))
    assert (await line(api, owner, room, first, mid))["feedback"][0]["emoji"] == "🎉"
    again = await api.append(owner, feedback(room, mid, kind="reaction", emoji="🎉"))
    assert (await heard(socks["scout"], again))["withdrawn"] is True
    assert (await line(api, owner, room, again, mid))["feedback"] == []


async def test_a_reaction_is_taken_on_anybody_s_message(stack, api: Api) -> None:
    owner, maya, _, _, room, socks = await room_with_two_harnesses(stack, api)
    _, mid = await said(api, maya, room, "Lunch?")
    seq = await api.append(owner, feedback(room, mid, kind="reaction", emoji="👍"))
    logged = next(e for e in await api.read(owner, since=seq - 1) if e["seq"] == seq)
    assert logged["type"] == "feedback" and logged["message_id"] == mid
    assert logged["kind"] == "reaction" and logged["emoji"] == "👍"
    # The room shows it on Maya's line, from the owner; Maya sees it too.
    shown = await line(api, maya, room, seq, mid)
    assert shown["feedback"] == [{"from": owner.participant_id, "kind": "reaction", "emoji": "👍"}]


async def test_feedback_refusals(stack, api: Api) -> None:
    owner, maya, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    _, person_s = await said(api, maya, room, "my words")
    _, harness_s = await said(api, scout, room, "its words")
    other = await api.open_space(owner, "Elsewhere", [scout.participant_id])
    _, elsewhere = await said(api, scout, other, "words over there")
    before = await api.head(owner)
    correction = {"kind": "correction", "note": "wrong"}
    await api.refused(
        owner, feedback(room, person_s, **correction), "invalid_event", "a harness's words"
    )
    await api.refused(
        owner, feedback(room, elsewhere, **correction), "invalid_event", "another space"
    )
    await api.refused(
        owner,
        feedback(room, "msg_01J9ZQ5V1M3X8K2R7T4W6Y0KMN", **correction),
        "not_found",
        "no message",
    )
    await api.refused(
        owner, feedback(room, harness_s, kind="reaction"), "invalid_event", "needs its emoji"
    )
    await api.refused(
        owner, feedback(room, harness_s, kind="correction"), "invalid_event", "needs its note"
    )
    await api.refused(
        scout, feedback(room, harness_s, kind="reaction", emoji="👍"), "forbidden", "a person's"
    )
    assert await api.head(owner) == before


async def test_wrong_in_the_composer_corrects_the_harness_s_last_message(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    await post(api, scout, room, "First answer.")
    _, last = await said(api, ledger, room, "The slot is Thursday.")
    seq = await post(api, owner, room, "/wrong it is Friday")
    event = await heard(socks["ledger"], seq)
    assert event["type"] == "feedback" and event["kind"] == "correction"
    assert event["message_id"] == last and event["note"] == "it is Friday"
    await api.refused(
        owner,
        {"type": "message.post", "space_id": room, "text": "/wrong"},
        "invalid_event",
        "needs what is wrong",
    )
    empty = await api.open_space(owner, "Quiet", [])
    await api.refused(
        owner,
        {"type": "message.post", "space_id": empty, "text": "/wrong nope"},
        "not_found",
        "no harness",
    )
