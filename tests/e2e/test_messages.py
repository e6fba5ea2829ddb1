"""Who a message is for, and what a harness is told with it.

docs/product/spaces.md, Several harnesses and people in one space (the five rules);
docs/product/websocket.md, What a harness hears, What you're told with a question, Who is in the
room.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket, key


async def room_with_two_harnesses(stack, api: Api, accepts=None, context=None):
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(
        owner, "Planning", [maya.participant_id, scout.participant_id, ledger.participant_id]
    )
    socks = {}
    for name, who in (("scout", scout), ("ledger", ledger)):
        sock = await Socket.open(stack.gateway_b, who, accepts=accepts)
        if context is not None:
            sock = await reopen_with_context(stack, who, context)
        await sock.subscribe(owner.workspace_id)
        await sock.attached()
        socks[name] = sock
    return owner, maya, scout, ledger, room, socks


async def reopen_with_context(stack, who: Identity, context: dict[str, int]) -> Socket:
    sock = await Socket.open(stack.gateway_b, who, hello=False)
    await sock.send({"frame": "hello", "protocol": {"min": 1, "max": 1}, "context": context})
    sock.hello_frame = await sock.wait_for(lambda f: f["frame"] == "hello")
    return sock


async def heard(sock: Socket, seq: int) -> dict[str, Any]:
    frame = await sock.wait_for(lambda f: f["frame"] == "event" and f["event"]["seq"] == seq)
    return frame["event"]


async def post(api: Api, who: Identity, room: str, text: str, **fields: Any) -> int:
    return await api.append(who, {"type": "message.post", "space_id": room, "text": text, **fields})


async def test_rule_1_an_at_mention_makes_it_that_harness_s(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    seq = await post(api, owner, room, "@Ledger can you check the invoice?")
    to_ledger = await heard(socks["ledger"], seq)
    to_scout = await heard(socks["scout"], seq)
    assert to_ledger["type"] == "message.new" and to_scout["type"] == "message.overheard"
    assert to_ledger["addressed_to"] == [ledger.participant_id]
    assert to_ledger["mentions"] == [ledger.participant_id]
    assert "context" not in to_scout and "room" not in to_scout
    assert {k: v for k, v in to_scout.items() if k != "type"} == {
        k: v for k, v in to_ledger.items() if k not in ("type", "context", "room", "from")
    }


async def test_rule_1_at_all_is_every_harness_and_people_only_is_none(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    everyone = await post(api, owner, room, "@all standup in five")
    for sock in socks.values():
        assert (await heard(sock, everyone))["type"] == "message.new"
    people = await post(api, owner, room, "@Maya can you take this one?")
    for sock in socks.values():
        event = await heard(sock, people)
        assert event["type"] == "message.overheard"
        assert event["addressed_to"] == [] and event["mentions"] == [maya.participant_id]


async def test_rule_1_a_senders_own_mentions_are_replaced(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    seq = await post(api, owner, room, "@Scout please", mentions=[ledger.participant_id])
    event = await heard(socks["scout"], seq)
    assert event["mentions"] == [scout.participant_id]
    assert event["addressed_to"] == [scout.participant_id]


async def test_rule_2_the_composers_to_picks_the_harness(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    seq = await post(api, owner, room, "what do you think?", to=[scout.participant_id])
    assert (await heard(socks["scout"], seq))["type"] == "message.new"
    assert (await heard(socks["ledger"], seq))["type"] == "message.overheard"
    both = await post(api, owner, room, "and everyone?", to=["everyone"])
    assert (await heard(socks["ledger"], both))["type"] == "message.new"
    assert (await heard(socks["scout"], both))["type"] == "message.new"


async def test_rule_3_a_reply_to_a_harness_message_is_that_harness_s(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    said = await post(api, ledger, room, "The slot holds until Friday.")
    ledger_said = await heard(socks["scout"], said)
    assert ledger_said["type"] == "message.overheard" and ledger_said["addressed_to"] == []
    reply = await post(api, owner, room, "Which Friday?", reply_to=ledger_said["message_id"])
    assert (await heard(socks["ledger"], reply))["type"] == "message.new"
    assert (await heard(socks["scout"], reply))["type"] == "message.overheard"


async def test_rule_4_the_only_harness_in_a_room_hears_everything(stack, api: Api) -> None:
    owner = await api.create_workspace()
    scout, direct = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_b, scout)
    await sock.subscribe(owner.workspace_id)
    await sock.attached()
    for text in ("hello", "@Arjun note to self", "plain words"):
        seq = await post(api, owner, direct, text)
        event = await heard(sock, seq)
        expected = "message.overheard" if text.startswith("@Arjun") else "message.new"
        assert event["type"] == expected, text


async def test_rule_5_where_your_last_message_went(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    first = await post(api, owner, room, "before any pick, every harness")
    assert set((await heard(socks["scout"], first))["addressed_to"]) == {
        scout.participant_id,
        ledger.participant_id,
    }
    await post(api, owner, room, "@Ledger you take it")
    follow = await post(api, owner, room, "and the totals too")
    assert (await heard(socks["ledger"], follow))["type"] == "message.new"
    assert (await heard(socks["scout"], follow))["type"] == "message.overheard"

    await post(api, owner, room, "@all new topic")
    late, _ = await api.connect_harness(owner, "Auditor")
    await api.append(
        owner, {"type": "membership.added", "space_id": room, "participant_id": late.participant_id}
    )
    later = await post(api, owner, room, "everyone stays everyone")
    event = await heard(socks["scout"], later)
    assert set(event["addressed_to"]) == {
        scout.participant_id,
        ledger.participant_id,
        late.participant_id,
    }


async def test_a_harness_message_is_for_the_people_unless_it_names_a_harness(
    stack, api: Api
) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    plain = await post(api, scout, room, "Done with the draft.")
    event = await heard(socks["ledger"], plain)
    assert event["type"] == "message.overheard" and event["addressed_to"] == []
    assert (await heard(socks["scout"], plain))["type"] == "message.post"
    handed = await post(api, scout, room, "@Ledger over to you for the numbers")
    assert (await heard(socks["ledger"], handed))["type"] == "message.new"


async def test_message_new_carries_room_with_handles_and_a_note(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    seq = await post(api, owner, room, "@Scout hello")
    event = await heard(socks["scout"], seq)
    members = event["room"]["members"]
    assert [m["kind"] for m in members] == ["person", "person", "harness", "harness"]
    # Each harness is in the room as the agent Chips gave it there, named after it and
    # numbered (docs/adr/0154); Scout, before agents, reads its own as itself, and
    # Ledger's as Ledger, each by its harness's name.
    assert [m["name"] for m in members] == ["Arjun Rao", "Maya Chen", "Ledger", "Scout"]
    assert [m["participant_id"] for m in members][2:] == [
        ledger.participant_id,
        scout.participant_id,
    ]
    assert members[0]["handle"] == "@ArjunRao"
    note = event["room"]["notes"][scout.participant_id]
    assert "Ledger" in note and "@Ledger" in note and "NO_REPLY" in note
    assert "@-mention" in event["room"]["rules"][scout.participant_id]


async def test_context_is_what_was_said_since_the_harness_last_spoke(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    await post(api, scout, room, "I looked at it earlier.")
    said = [
        await post(api, maya, room, "Northwind want the PO first."),
        await post(api, ledger, room, "Their slot holds until Friday."),
    ]
    ask = await post(api, owner, room, "@Scout can you send it?")
    event = await heard(socks["scout"], ask)
    context = event["context"]
    assert [line["seq"] for line in context["lines"]] == said
    assert [line["kind"] for line in context["lines"]] == ["said", "said"]
    assert context["lines"][0]["from"]["name"] == "Maya Chen"
    assert context["lines"][1]["addressed_to"] == []
    assert context["truncated"] is False and context["before"] == said[0]


async def test_context_budget_drops_the_oldest_and_says_so(stack, api: Api) -> None:
    owner = await api.create_workspace()
    scout, direct = await api.connect_harness(owner, "Scout")
    sock = await reopen_with_context(stack, scout, {"lines": 2, "chars": 32000})
    await sock.subscribe(owner.workspace_id)
    quiet = await reopen_with_context(stack, scout, {"lines": 0})
    await quiet.subscribe(owner.workspace_id)
    await sock.attached()
    await quiet.attached()
    seqs = [await post(api, owner, direct, f"line {i}") for i in range(5)]
    last = await heard(sock, seqs[-1])
    assert [line["seq"] for line in last["context"]["lines"]] == seqs[2:4]
    assert last["context"]["truncated"] is True and last["context"]["before"] == seqs[2]
    assert "context" not in await heard(quiet, seqs[-1])


async def test_context_is_the_same_live_on_replay_and_over_http(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    first = await post(api, maya, room, "one")
    for i in range(3):
        await post(api, ledger, room, f"two {i}")
    ask = await post(api, owner, room, "@Scout go")
    live = await heard(socks["scout"], ask)

    replay = await Socket.open(stack.gateway_a, scout, accepts=["events"])
    await replay.subscribe(owner.workspace_id, since=first - 1)
    replayed = await heard_in_batches(replay, ask)
    assert replayed == live

    r = await api.http.get(
        f"/v1/spaces/{room}/context", params={"before": ask, "limit": 40}, headers=api.auth(scout)
    )
    assert r.status_code == 200
    http_seqs = [line["seq"] for line in r.json()["lines"]]
    assert http_seqs[-len(live["context"]["lines"]) :] == [
        line["seq"] for line in live["context"]["lines"]
    ]
    await replay.close()


async def heard_in_batches(sock: Socket, seq: int) -> dict[str, Any]:
    await sock.wait_for_seq(seq)
    return next(e for e in sock.events() if e["seq"] == seq)


async def test_context_over_http_is_a_harness_s_in_its_rooms_only(stack, api: Api) -> None:
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    r = await api.http.get(f"/v1/spaces/{room}/context", headers=api.auth(owner))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    other = await api.open_space(owner, "Elsewhere")
    r = await api.http.get(f"/v1/spaces/{other}/context", headers=api.auth(scout))
    assert r.status_code == 403
    seqs = [await post(api, maya, room, f"m{i}") for i in range(5)]
    r = await api.http.get(
        f"/v1/spaces/{room}/context", params={"limit": 2}, headers=api.auth(scout)
    )
    body = r.json()
    assert [line["seq"] for line in body["lines"]] == seqs[-2:]
    assert body["truncated"] is True and body["before"] == seqs[-2]
    older = await api.http.get(
        f"/v1/spaces/{room}/context",
        params={"limit": 2, "before": body["before"]},
        headers=api.auth(scout),
    )
    assert [line["seq"] for line in older.json()["lines"]] == seqs[1:3]


async def test_a_reply_to_a_message_of_another_space_is_refused(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    r = await api.post_event(
        owner,
        {
            "type": "message.post",
            "space_id": room,
            "text": "re",
            "reply_to": "msg_01NOTAMESSAGE",
            "idempotency_key": key(),
        },
    )
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_context_starts_where_the_turn_that_said_its_last_words_began(
    stack, api: Api
) -> None:
    """What was said while a turn worked is handed over with the next turn
    (docs/product/websocket.md, What you're told with a question)."""
    owner, maya, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    asked = await post(api, owner, room, "@Scout draft the PO")
    meanwhile = await post(api, maya, room, "Northwind called: make it 40 units")
    await post(api, scout, room, "Drafted.")
    again = await post(api, owner, room, "@Scout send it")
    event = await heard(socks["scout"], again)
    lines = event["context"]["lines"]
    assert [x["seq"] for x in lines] == [meanwhile]
    assert event["context"]["since_seq"] == asked
    # The window of a gateway that saw it live and the log of one that did not agree.
    fresh = await Socket.open(stack.gateway_a, scout)
    await fresh.subscribe(owner.workspace_id, since=again - 1)
    assert (await heard(fresh, again))["context"] == event["context"]
    await fresh.close()


async def test_context_with_its_budget_is_the_same_live_on_replay_and_after_a_gateway_restart(
    stack, api: Api
) -> None:
    """A truncated context, with edits and a take-back in it, is handed over the same by a
    gateway that folded it live and by a gateway restarted since (docs/product/websocket.md)."""
    owner, maya, scout, ledger, room, _ = await room_with_two_harnesses(stack, api)
    live = await reopen_with_context(stack, scout, {"lines": 3, "chars": 400})
    await live.subscribe(owner.workspace_id)
    await live.attached()
    start = await post(api, maya, room, "warm-up")
    ids = []
    for i in range(6):
        seq = await post(api, maya if i % 2 else ledger, room, f"point {i} " + "x" * 40 * i)
        ids.append(next(e for e in await api.read(owner, since=seq - 1) if e["seq"] == seq))
    await api.append(
        maya,
        {
            "type": "message.edited",
            "space_id": room,
            "message_id": ids[5]["message_id"],
            "text": "point 5, edited",
        },
    )
    await api.append(
        ledger,
        {"type": "message.deleted", "space_id": room, "message_id": ids[4]["message_id"]},
    )
    ask = await post(api, owner, room, "@Scout sum it up")
    heard_live = await heard(live, ask)
    context = heard_live["context"]
    assert context["truncated"] is True and len(context["lines"]) <= 3
    assert context["lines"][-1]["text"] == "point 5, edited"
    assert ids[4]["seq"] not in [x["seq"] for x in context["lines"]]
    await live.close()

    stack.restart("gateway_b")
    after = await reopen_with_context(stack, scout, {"lines": 3, "chars": 400})
    await after.subscribe(owner.workspace_id, since=start)
    assert (await heard(after, ask)) == heard_live
    await after.close()
