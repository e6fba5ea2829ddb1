"""The referee at the door: what agents say to each other, counted, noted, held, handed back.

spec/websocket.md: "From half the stop (eight when there is no stop), and on a circle while
circles count … each message.new an agent sent carries exchange … At the stop, or on a
circle, the note says to stop … Past the hold … Chips posts the next with addressed_to: []
and held: true, the others overhear it with held, and the sender's ack says held: true with
exchange: { count, allowance } … The first thing a person does after that hands each agent
the newest held message that was for it, as message.new with handed: true, its message_id
the message's own."
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket, key


async def two_agents(stack, api: Api) -> tuple[Identity, Identity, Identity, str, Socket, Socket]:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [scout.participant_id, ledger.participant_id])
    s = await Socket.open(stack.gateway_a, scout)
    await s.subscribe(scout.workspace_id)
    led = await Socket.open(stack.gateway_b, ledger)
    await led.subscribe(ledger.workspace_id)
    return owner, scout, ledger, room, s, led


def delivered(sock: Socket, seq: int) -> dict[str, Any]:
    found = [e for e in sock.events() if e["seq"] == seq and not e.get("handed")]
    assert len(found) == 1, found
    return found[0]


async def say(api: Api, who: Identity, room: str, text: str) -> dict[str, Any]:
    r = await api.post_event(
        who, {"type": "message.post", "space_id": room, "text": text, "idempotency_key": key()}
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_notes_from_half_the_stop_the_stop_the_hold_and_the_hand_back(
    stack, api: Api
) -> None:
    owner, scout, ledger, room, s, led = await two_agents(stack, api)
    await api.say(owner, room, "@Scout @Ledger reconcile the PO between you")
    seqs: list[int] = []
    for i in range(48):  # taking turns, each saying something new
        who, to = (scout, "Ledger") if i % 2 == 0 else (ledger, "Scout")
        answer = await say(api, who, room, f"@{to} line {i} checked, {i + 1} next")
        assert "held" not in answer
        seqs.append(answer["seq"])
    await led.wait_for_seq(seqs[-2])
    await s.wait_for_seq(seqs[-1])

    def heard(i: int) -> dict[str, Any]:
        return delivered(led if i % 2 == 0 else s, seqs[i])

    assert all(heard(i)["type"] == "message.new" for i in range(48))
    assert all("exchange" not in heard(i) for i in range(7))
    eighth = heard(7)["exchange"]
    assert eighth["count"] == 8 and eighth["stop"] == 16 and eighth["allowance"] == 48
    assert "Stop now" not in eighth["note"]
    assert "Stop now" in heard(15)["exchange"]["note"]  # the 16th: the stop
    assert not any(heard(i)["exchange"].get("circle") for i in range(7, 48))  # turns alone

    # The 49th, sent on the socket: held, and the ack says so.
    k = await s.write({"type": "message.post", "space_id": room, "text": "@Ledger one more"})
    ack = await s.answer(k)
    assert ack["frame"] == "ack" and ack["held"] is True
    assert ack["exchange"] == {"count": 49, "allowance": 48}
    held_for_ledger = ack["seq"]
    await led.wait_for_seq(held_for_ledger)
    overheard = delivered(led, held_for_ledger)
    assert overheard["type"] == "message.overheard" and overheard["held"] is True
    assert overheard["addressed_to"] == []
    answer = await say(api, ledger, room, "@Scout and one from me")
    assert answer["held"] is True and answer["exchange"] == {"count": 50, "allowance": 48}
    await say(api, scout, room, "@Ledger and another")  # newer: this one is handed over
    newest_for_ledger = (await api.read(owner, since=answer["seq"]))[0]

    # A person's act hands each agent the newest held message that was for it.
    act = await api.say(owner, room, "Where are we?")
    got = await led.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("handed") is True, timeout=15
    )
    handed = got["event"]
    assert handed["type"] == "message.new"
    assert handed["message_id"] == newest_for_ledger["message_id"]
    assert handed["seq"] == newest_for_ledger["seq"] and "context" in handed and "room" in handed
    got = await s.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("handed") is True, timeout=15
    )
    assert got["event"]["seq"] == answer["seq"]  # Ledger's held message, for Scout
    # Handed once: the act after it hands nothing more, and the count began again.
    again = await say(api, scout, room, "@Ledger the totals match")
    assert "held" not in again
    await api.say(owner, room, "Thanks both")
    await led.wait_for_seq(again["seq"])
    assert [e["seq"] for e in led.events() if e.get("handed")] == [newest_for_ledger["seq"]]

    # A replay from before the act hands the same over again.
    replay = await Socket.open(stack.gateway_a, ledger)
    await replay.subscribe(ledger.workspace_id, since=act - 1)
    got = await replay.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("handed") is True, timeout=15
    )
    assert got["event"]["message_id"] == handed["message_id"]
    for sock in (s, led, replay):
        await sock.close()


async def test_two_agents_thanking_each_other_are_told_they_go_in_a_circle(stack, api: Api) -> None:
    owner, scout, ledger, room, s, led = await two_agents(stack, api)
    await api.say(owner, room, "@Scout @Ledger sort the PO out")
    first = await say(api, scout, room, "@Ledger thanks!")
    second = await say(api, ledger, room, "@Scout thanks!")
    third = await say(api, scout, room, "@Ledger Thanks.")
    await led.wait_for_seq(third["seq"])
    assert "exchange" not in delivered(led, first["seq"])
    assert "exchange" not in delivered(s, second["seq"])
    circle = delivered(led, third["seq"])["exchange"]
    assert circle["circle"] is True and circle["count"] == 3
    assert "circle" in circle["note"] and "what is blocked" in circle["note"]
    for sock in (s, led):
        await sock.close()


async def test_an_owner_sets_the_referee_and_a_paused_room_holds(stack, api: Api) -> None:
    owner, scout, ledger, room, s, led = await two_agents(stack, api)
    r = await api.post_event(
        owner,
        {"type": "workspace.referee_set", "stop": "never", "hold": 3, "idempotency_key": key()},
    )
    assert r.status_code == 200, r.text
    member = await api.add_person(owner, "Maya Chen")
    await api.refused(member, {"type": "workspace.referee_set", "hold": 9}, "forbidden", "owner")
    await api.say(owner, room, "@Scout @Ledger go")
    answers = [await say(api, scout, room, f"@Ledger part {i}") for i in range(4)]
    assert [a.get("held", False) for a in answers] == [False, False, False, True]
    assert answers[-1]["exchange"] == {"count": 4, "allowance": 3}

    # Paused by a person: held from the first, whatever the count.
    r = await api.post_event(
        owner,
        {"type": "exchange.set", "space_id": room, "state": "paused", "idempotency_key": key()},
    )
    assert r.status_code == 200, r.text
    assert (await say(api, scout, room, "@Ledger still there?")).get("held") is True
    # The pause reads back for the people's banner, and a person's words don't end it.
    await say(api, owner, room, "hold on a moment")
    r = await api.http.get(f"/v1/spaces/{room}/spend", headers=api.auth(owner))
    paused = r.json()["paused"]
    assert (paused["why"], paused["by"]) == ("person", owner.participant_id), paused
    r = await api.post_event(
        owner,
        {"type": "exchange.set", "space_id": room, "state": "running", "idempotency_key": key()},
    )
    assert r.status_code == 200, r.text
    assert "held" not in await say(api, scout, room, "@Ledger back to it")
    r = await api.http.get(f"/v1/spaces/{room}/spend", headers=api.auth(owner))
    assert r.json()["paused"] is None
    for sock in (s, led):
        await sock.close()
