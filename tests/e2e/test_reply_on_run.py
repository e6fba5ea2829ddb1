"""A reply on the run (docs/product/jacobian-channel.md: "reply: message.post, on the run").

A harness answers on the run it is working: its ``message.post`` names ``run_id`` and no
``space_id``, lands in the run's room, and is listed by the run's receipt
(``GET /v1/runs/:id``). A post naming a run nobody started, another harness's run, or a
``space_id`` that is not the run's room is refused with the reason, and logs nothing.
"""

from __future__ import annotations

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Socket
from tests.e2e.test_runs import harness_room, start


async def test_a_reply_on_the_run_lands_in_its_room_and_on_its_receipt(
    api: Api, stack: Stack
) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    sock = await Socket.open(stack.gateway_a, jacobian)
    try:
        await sock.subscribe(owner.workspace_id)
        await sock.attached()
        sent = await sock.write(
            {"type": "message.post", "run_id": run, "text": "The PO went to Northwind."}
        )
        ack = await sock.answer(sent)
        assert ack["frame"] == "ack", ack
        # The harness's own post comes back as it was sent, with the room Chips filled in.
        back = await sock.wait_for(
            lambda f: f["frame"] == "event" and f["event"]["seq"] == ack["seq"]
        )
        said = back["event"]
        assert said["type"] == "message.post"
        assert (said["space_id"], said["run_id"]) == (room, run)
    finally:
        await sock.close()
    r = await api.http.get(
        f"/v1/runs/{run}", params={"after_seq": ack["seq"]}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    messages = r.json()["messages"]
    # A person reads the harness's words as said by the agent Chips gave it in the room
    # (docs/adr/0154); the harness, before agents, reads them as its own.
    sheet = await api.sheet(owner, room, ack["seq"])
    (given,) = [m["participant_id"] for m in sheet["members"] if m["kind"] == "agent"]
    assert [(m["message_id"], m["text"], m["author_id"]) for m in messages] == [
        (said["message_id"], "The PO went to Northwind.", given)
    ]
    mine = await api.http.get(
        f"/v1/runs/{run}", params={"after_seq": ack["seq"]}, headers=api.auth(jacobian)
    )
    assert [m["author_id"] for m in mine.json()["messages"]] == [jacobian.participant_id]
    # The room shows it as any other message, marked with the run it was said on.
    lines = await api.lines(owner, room, after_seq=ack["seq"])
    assert [line.get("run_id") for line in lines if line["id"] == said["message_id"]] == [run]


async def test_a_reply_on_a_run_nobody_started_is_not_found(api: Api) -> None:
    owner, jacobian, _ = await harness_room(api)
    before = await api.head(owner)
    await api.refused(
        jacobian,
        {"type": "message.post", "run_id": "run_ghost", "text": "Done."},
        "not_found",
        "no run run_ghost was started",
    )
    assert await api.head(owner) == before


async def test_a_reply_on_another_harness_s_run_is_forbidden(api: Api) -> None:
    owner, jacobian, _ = await harness_room(api)
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [jacobian.participant_id, ledger.participant_id])
    run = await start(api, jacobian, room)
    stranger = await api.add_person(owner, "Maya Chen")
    before = await api.head(owner)
    await api.refused(
        ledger,
        {"type": "message.post", "run_id": run, "text": "Done."},
        "forbidden",
        f"{run} is another harness's run",
    )
    # A harness in another room is refused the same way, and a person who is not in the
    # run's room may not talk there either.
    await api.refused(
        stranger,
        {"type": "message.post", "run_id": run, "text": "Done?"},
        "forbidden",
        "not a member of this space",
    )
    assert await api.head(owner) == before


async def test_a_reply_naming_another_room_than_its_run_s_is_refused(api: Api) -> None:
    owner, jacobian, home = await harness_room(api)
    room = await api.open_space(owner, "Planning", [jacobian.participant_id])
    run = await start(api, jacobian, room)
    before = await api.head(owner)
    await api.refused(
        jacobian,
        {"type": "message.post", "run_id": run, "space_id": home, "text": "Done."},
        "invalid_event",
        f"{run} is a run of another space",
    )
    assert await api.head(owner) == before
    # Naming the run's own room as well is the same reply.
    seq = await api.append(
        jacobian, {"type": "message.post", "run_id": run, "space_id": room, "text": "Done."}
    )
    said = await api.read(owner, since=seq - 1, space_id=room)
    assert (said[0]["run_id"], said[0]["space_id"]) == (run, room)


async def test_a_post_naming_neither_room_nor_run_is_refused(api: Api) -> None:
    owner, jacobian, _ = await harness_room(api)
    before = await api.head(owner)
    await api.refused(jacobian, {"type": "message.post", "text": "Hi"}, "invalid_event", "space_id")
    assert await api.head(owner) == before
