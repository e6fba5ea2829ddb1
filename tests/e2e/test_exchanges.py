"""The referee at the door: what agents say to each other, counted, noted, held, handed back.

docs/product/websocket.md: "From half the stop (eight when there is no stop), and on a circle while
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
    await s.attached()
    await led.attached()
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


async def three_agents(stack, api: Api) -> tuple[Identity, list[Identity], str, list[Socket]]:
    """Scout, Ledger and Atlas in one room, each with a socket (two gateways between them)."""
    owner = await api.create_workspace(owner="Arjun Rao")
    crew = [(await api.connect_harness(owner, name))[0] for name in ("Scout", "Ledger", "Atlas")]
    room = await api.open_space(owner, "Planning", [h.participant_id for h in crew])
    socks = []
    for h, url in zip(crew, (stack.gateway_a, stack.gateway_b, stack.gateway_a), strict=True):
        sock = await Socket.open(url, h)
        await sock.subscribe(h.workspace_id)
        await sock.attached()
        socks.append(sock)
    return owner, crew, room, socks


NAMES = ("Scout", "Ledger", "Atlas")


def handed(sock: Socket) -> list[dict[str, Any]]:
    return [e for e in sock.events() if e.get("handed") is True]


async def test_three_agents_noted_from_half_the_stop_held_past_the_hold_and_handed_back(
    stack, api: Api
) -> None:
    owner, crew, room, socks = await three_agents(stack, api)
    await api.say(owner, room, "@Scout @Ledger @Atlas reconcile the PO between you")
    seqs: list[int] = []
    for i in range(48):  # in turn, each to the next, each saying something new
        to = NAMES[(i + 1) % 3]
        answer = await say(api, crew[i % 3], room, f"@{to} line {i} checked, {i + 1} next")
        assert "held" not in answer
        seqs.append(answer["seq"])
    for sock in socks:
        await sock.wait_for_seq(seqs[-1])

    def heard(i: int) -> dict[str, Any]:
        return delivered(socks[(i + 1) % 3], seqs[i])

    def overheard(i: int) -> dict[str, Any]:
        return delivered(socks[(i + 2) % 3], seqs[i])

    assert all(heard(i)["type"] == "message.new" for i in range(48))
    assert all(overheard(i)["type"] == "message.overheard" for i in range(48))
    assert all("exchange" not in heard(i) for i in range(7))
    eighth = heard(7)["exchange"]
    assert eighth["count"] == 8 and eighth["stop"] == 16 and eighth["allowance"] == 48
    assert "Stop now" not in eighth["note"]
    assert all("Stop now" not in heard(i)["exchange"]["note"] for i in range(7, 15))
    sixteenth = heard(15)["exchange"]
    assert sixteenth["count"] == 16 and "Stop now" in sixteenth["note"]
    assert "what is blocked" in sixteenth["note"]
    assert not any(heard(i)["exchange"].get("circle") for i in range(7, 48))  # turns alone

    # The 49th, sent on the socket: held for nobody, and the sender's ack says so.
    k = await socks[0].write({"type": "message.post", "space_id": room, "text": "@Ledger more"})
    ack = await socks[0].answer(k)
    assert ack["frame"] == "ack" and ack["held"] is True
    assert ack["exchange"] == {"count": 49, "allowance": 48}
    for sock in socks[1:]:
        await sock.wait_for_seq(ack["seq"])
        got = delivered(sock, ack["seq"])
        assert got["type"] == "message.overheard" and got["held"] is True
        assert got["addressed_to"] == []
    for_atlas = await say(api, crew[1], room, "@Atlas and one from me")
    assert for_atlas["held"] is True and for_atlas["exchange"] == {"count": 50, "allowance": 48}
    for_scout = await say(api, crew[2], room, "@Scout and from me")
    for_ledger = await say(api, crew[0], room, "@Ledger and another")  # newer than the 49th
    assert for_scout["held"] is True and for_ledger["held"] is True

    # A person's message hands each agent the newest held message that was for it.
    act = await api.say(owner, room, "Where are we?")
    for sock, want in zip(socks, (for_scout, for_ledger, for_atlas), strict=True):
        got = await sock.wait_for(
            lambda f: f["frame"] == "event" and f["event"].get("handed") is True, timeout=15
        )
        event = got["event"]
        assert event["type"] == "message.new" and event["seq"] == want["seq"]
        assert "context" in event and "room" in event
    logged = {e["seq"]: e for e in await api.read(owner, since=seqs[-1])}
    assert handed(socks[1])[0]["message_id"] == logged[for_ledger["seq"]]["message_id"]

    # Handed once: the act after it hands nothing more, and the count began again.
    again = await say(api, crew[0], room, "@Ledger the totals match")
    assert "held" not in again and "exchange" not in again
    await api.say(owner, room, "Thanks all")
    last = await say(api, crew[1], room, "@Atlas over to you")
    for sock in socks:
        await sock.wait_for_seq(last["seq"])
    assert [[e["seq"] for e in handed(sock)] for sock in socks] == [
        [for_scout["seq"]],
        [for_ledger["seq"]],
        [for_atlas["seq"]],
    ]

    # A replay from before the act hands the same over again.
    replay = await Socket.open(stack.gateway_b, crew[1])
    await replay.subscribe(crew[1].workspace_id, since=act - 1)
    got = await replay.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("handed") is True, timeout=15
    )
    assert got["event"]["seq"] == for_ledger["seq"]
    for sock in (*socks, replay):
        await sock.close()


async def test_three_agents_saying_again_what_they_said_go_in_a_circle(stack, api: Api) -> None:
    owner, crew, room, socks = await three_agents(stack, api)
    await api.say(owner, room, "@Scout @Ledger @Atlas check the PO")
    # The same three taking turns, then saying again what they said: Scout's second
    # "ready" is a circle, told before half the stop; the turns before it are not.
    said = [
        await say(api, crew[i % 3], room, f"@{NAMES[(i + 1) % 3]} part {i} is checked")
        for i in range(3)
    ]
    said += [
        await say(api, crew[i % 3], room, f"@{NAMES[(i + 1) % 3]} ready when you are")
        for i in range(4)
    ]
    for sock in socks:
        await sock.wait_for_seq(said[-1]["seq"])
    heard = [delivered(socks[(i + 1) % 3], a["seq"]) for i, a in enumerate(said)]
    assert all("exchange" not in h for h in heard[:6])
    circle = heard[6]["exchange"]
    assert circle["circle"] is True and circle["count"] == 7
    assert "circle" in circle["note"] and "what is blocked" in circle["note"]
    for sock in socks:
        await sock.close()


async def test_two_agents_thanking_each_other_are_told_they_go_in_a_circle(stack, api: Api) -> None:
    owner, scout, ledger, room, s, led = await two_agents(stack, api)
    await api.say(owner, room, "@Scout @Ledger sort the PO out")
    first = await say(api, scout, room, "@Ledger thanks!")
    second = await say(api, ledger, room, "@Scout thanks!")
    third = await say(api, scout, room, "@Ledger Thanks.")
    # Scout's socket is on the other gateway: it is waited for too, not assumed as far.
    await led.wait_for_seq(third["seq"])
    await s.wait_for_seq(second["seq"])
    assert "exchange" not in delivered(led, first["seq"])
    assert "exchange" not in delivered(s, second["seq"])
    circle = delivered(led, third["seq"])["exchange"]
    assert circle["circle"] is True and circle["count"] == 3
    assert "circle" in circle["note"] and "what is blocked" in circle["note"]
    for sock in (s, led):
        await sock.close()


async def test_posting_a_file_already_here_with_nothing_new_is_a_circle(stack, api: Api) -> None:
    owner, scout, ledger, room, s, led = await two_agents(stack, api)
    await api.say(owner, room, "@Scout @Ledger sort the PO out")
    await say(api, scout, room, "@Ledger I am on it")
    await say(api, ledger, room, "@Scout waiting for the PO")

    async def post_file(data: bytes, text: str) -> dict[str, Any]:
        r = await api.http.post(
            "/v1/uploads",
            params={"name": "po.txt"},
            content=data,
            headers={**api.auth(scout), "Content-Type": "text/plain"},
        )
        assert r.status_code == 201, r.text
        event = {"type": "message.post", "space_id": room, "text": text}
        r = await api.post_event(
            scout, {**event, "upload_ids": [r.json()["upload_id"]], "idempotency_key": key()}
        )
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    # A file new to the room is something new: the count begins again.
    first = await post_file(b"PO 4471: 12 crates", "@Ledger here is the PO")
    got_it = await say(api, ledger, room, "@Scout got it")
    # The same bytes again, with nothing beside them but the @: a circle.
    again = await post_file(b"PO 4471: 12 crates", "@Ledger")
    # New bytes are something new again.
    fixed = await post_file(b"PO 4471: 14 crates", "@Ledger here is the PO")
    await led.wait_for_seq(fixed["seq"])
    await s.wait_for_seq(got_it["seq"])
    assert "exchange" not in delivered(led, first["seq"])
    assert delivered(s, got_it["seq"]).get("exchange") is None
    circle = delivered(led, again["seq"])["exchange"]
    assert circle["circle"] is True and circle["count"] == 2, circle
    assert "exchange" not in delivered(led, fixed["seq"])
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
