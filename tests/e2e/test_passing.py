"""A harness with nothing to say posts NO_REPLY, logged as turn.passed
(docs/product/websocket.md)."""

from __future__ import annotations

from tests.e2e.client import Api, Socket
from tests.e2e.test_messages import heard, post, room_with_two_harnesses


async def test_no_reply_is_logged_as_turn_passed_shown_to_nobody(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    people = await Socket.open(stack.gateway_a, owner)
    await people.subscribe(owner.workspace_id, since=await api.head(owner))
    ask = await post(api, owner, room, "@all anything to add?")
    k = await socks["scout"].write(
        {"type": "message.post", "space_id": room, "text": "  NO_REPLY \n"}
    )
    ack = await socks["scout"].answer(k)
    assert ack["frame"] == "ack" and isinstance(ack["seq"], int)
    passed = ack["seq"]
    assert (await heard(socks["scout"], passed))["type"] == "turn.passed"
    marker = await post(api, owner, room, "@all thanks")
    await heard(people, marker)
    await heard(socks["ledger"], marker)
    assert passed not in people.seqs() and passed not in socks["ledger"].seqs()
    assert all(x["seq"] != passed for x in await api.lines(owner, room, marker))
    assert passed not in [e["seq"] for e in await api.read(owner, since=ask)]
    # It ends the turn: the next context starts after the message it passed on.
    context = (await heard(socks["scout"], marker))["context"]
    assert [x["seq"] for x in context["lines"]] == []
    await people.close()


async def test_a_person_s_no_reply_is_their_words(stack, api: Api) -> None:
    owner, _, _, _, room, socks = await room_with_two_harnesses(stack, api)
    seq = await post(api, owner, room, "NO_REPLY")
    assert (await heard(socks["scout"], seq))["text"] == "NO_REPLY"
