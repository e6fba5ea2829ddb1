"""The Jacobian walkthrough replayed by a scripted harness (spec/jacobian-channel.md).

A person's message starts a run; the harness reports status and three steps; an approval
is approved from a second device (first answer wins, the loser is refused and the other
device is told it was decided elsewhere); a question is answered by typing (wreply); the
run hands a job on to the Shopping room without waiting (a lane, whose route card shows in
both rooms); usage is reported and the run completes. A second person's message during the
run is answered with a queued receipt, and a run.steer interrupt with a steered one. The
job's turn in Shopping then takes over the lane and ends it with its answer and cost after
the run that opened it ended; the answer comes back in J's room. Then the run reads back as
its receipt, with its lane.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.client import Api, Socket


def of_type(kind: str, **match: Any) -> Any:
    def predicate(f: dict[str, Any]) -> bool:
        return (
            f["frame"] == "event"
            and f["event"]["type"] == kind
            and all(f["event"].get(k) == v for k, v in match.items())
        )

    return predicate


async def test_the_jacobian_walkthrough(stack, api: Api) -> None:
    arjun = await api.create_workspace(owner="Arjun Rao")
    jacobian, room = await api.connect_harness(arjun, "Jacobian")
    maya = await api.add_person(arjun, "Maya Chen")
    assert (await api.add_to_room(arjun, room, maya.participant_id)).status_code == 200
    shop = await api.open_space(arjun, "Shopping", [jacobian.participant_id])

    harness = await Socket.open(stack.gateway_b, jacobian)
    phone = await Socket.open(stack.gateway_a, arjun)
    desk = await Socket.open(stack.gateway_b, arjun)
    maya_s = await Socket.open(stack.gateway_a, maya)
    for sock in (harness, phone, desk, maya_s):
        await sock.subscribe(arjun.workspace_id)
        await sock.attached()

    # A turn begins on a message from Chips: no run is going, so only the ack.
    ask = await phone.write(
        {"type": "message.post", "space_id": room, "text": "Order the PO for Northwind"}
    )
    assert (await phone.answer(ask))["frame"] == "ack"
    heard = (await harness.wait_for(of_type("message.new")))["event"]

    async def send(event: dict[str, Any]) -> dict[str, Any]:
        answer = await harness.answer(await harness.write(event))
        assert answer["frame"] == "ack", answer
        return answer

    run = "run_jacobian-1"
    await send(
        {
            "type": "run.started",
            "run_id": run,
            "space_id": room,
            "goal": heard["text"],
            "message_id": heard["message_id"],
            "chips": True,
            "session_id": "telegram-less",
        }
    )
    await send({"type": "run.status", "run_id": run, "phase": "thinking", "text": "Reading"})
    titles = ["jacobian.read_file", "jacobian.search", "jacobian.shell.execute"]
    for i, title in enumerate(titles, 1):
        if i > 1:  # the previous step is done when the next begins
            await send(
                {
                    "type": "step.log",
                    "run_id": run,
                    "step_id": f"stp_{i - 1}",
                    "status": "done",
                    "summary": f"step {i - 1} done",
                }
            )
        await send(
            {
                "type": "step.log",
                "run_id": run,
                "step_id": f"stp_{i}",
                "status": "started",
                "title": title,
            }
        )

    # Maya speaks while the run works: ack, then a queued receipt; the harness too.
    said = await maya_s.write(
        {"type": "message.post", "space_id": room, "text": "Use the March prices"}
    )
    assert (await maya_s.answer(said))["frame"] == "ack"
    queued = await maya_s.wait_for(
        lambda f: f["frame"] == "receipt" and f["idempotency_key"] == said
    )
    assert queued["disposition"] == "queued" and queued["run_ids"] == [run]
    await harness.wait_for(lambda f: f["frame"] == "receipt" and f["idempotency_key"] == said)

    # A card with Approve and Deny, answered from two of Arjun's devices at once.
    asked = await send(
        {
            "type": "approval.request",
            "approval_id": "perm-1",
            "run_id": run,
            "action": "jacobian.shell.execute",
            "preview": "send PO.pdf to Northwind",
            "risk": "external_communication",
        }
    )
    waiting = await api.http.get(
        "/v1/approvals",
        params={"waiting": "true", "after_seq": asked["seq"]},
        headers=api.auth(arjun),
    )
    decision = {"type": "approval.resolved", "approval_id": "perm-1", "decision": "approve"}
    k_phone, k_desk = await asyncio.gather(phone.write(decision), desk.write(decision))
    answers = {"phone": await phone.answer(k_phone), "desk": await desk.answer(k_desk)}
    frames = sorted(a["frame"] for a in answers.values())
    assert frames == ["ack", "error"], answers
    loser = next(a for a in answers.values() if a["frame"] == "error")
    assert loser["code"] == "invalid_event" and "first by Arjun Rao (approve)" in loser["message"]
    winner, other = (phone, desk) if answers["phone"]["frame"] == "ack" else (desk, phone)
    assert (
        "resolved_elsewhere" not in (await winner.wait_for(of_type("approval.resolved")))["event"]
    )
    assert (await other.wait_for(of_type("approval.resolved")))["event"]["resolved_elsewhere"]
    assert (await maya_s.wait_for(of_type("approval.resolved")))["event"]["resolved_elsewhere"]
    assert [a["id"] for a in waiting.json()["approvals"]] == ["perm-1"]  # before the decision

    # Maya interrupts: ack, then steered.
    steer = await maya_s.write(
        {
            "type": "run.steer",
            "run_id": run,
            "mode": "interrupt",
            "text": "Stop: Northwind changed the slot",
        }
    )
    assert (await maya_s.answer(steer))["frame"] == "ack"
    steered = await maya_s.wait_for(
        lambda f: f["frame"] == "receipt" and f["idempotency_key"] == steer
    )
    assert steered["disposition"] == "steered"
    await harness.wait_for(lambda f: f["frame"] == "receipt" and f["idempotency_key"] == steer)

    # A Space's question, answered by typing in the composer.
    await send(
        {
            "type": "question.ask",
            "question_id": "q-7",
            "run_id": run,
            "prompt": "Which slot?",
            "options": [{"label": "Friday", "value": "fri"}],
            "free_text": True,
        }
    )
    typed = await phone.write(
        {"type": "message.post", "space_id": room, "text": "wreply q-7 Monday morning"}
    )
    assert (await phone.answer(typed))["frame"] == "ack"
    answered = (await harness.wait_for(of_type("question.answered", question_id="q-7")))["event"]
    assert answered["text"] == "Monday morning" and answered["actor"]["id"] == arjun.participant_id

    # A hand_down that does not wait: a lane opened at once into Shopping, from the run.
    lane = "lane_jacobian-1.1"
    await send(
        {
            "type": "lane.opened",
            "lane_id": lane,
            "run_id": run,
            "to_space_id": shop,
            "task": {"goal": "Find a cheaper carrier for the PO", "autonomy": "act"},
            "worker": "Shopping",
        }
    )
    card = await maya_s.wait_for(of_type("lane.opened", lane_id=lane))
    assert card["event"]["space_id"] == room and card["event"]["to_space_id"] == shop
    await phone.wait_for(of_type("lane.opened", lane_id=lane, space_id=shop))

    await send(
        {
            "type": "step.log",
            "run_id": run,
            "step_id": "stp_3",
            "status": "done",
            "summary": "Sent PO.pdf",
        }
    )
    await send(
        {"type": "usage", "run_id": run, "tokens_in": 5200, "tokens_out": 800, "cost_usd": 0.42}
    )
    done = await send(
        {"type": "run.completed", "run_id": run, "summary": "The PO is with Northwind"}
    )

    # After the end, a person's message is a message: an ack and nothing more.
    after = await maya_s.write({"type": "message.post", "space_id": room, "text": "thanks"})
    assert (await maya_s.answer(after))["frame"] == "ack"

    # The job's first turn in Shopping takes over the lane's run and ends the lane with its
    # answer and cost, after the run that opened it ended; the answer lands in J's room too.
    job = "run_jacobian-2"
    await send(
        {
            "type": "run.started",
            "run_id": job,
            "space_id": shop,
            "goal": "Find a cheaper carrier for the PO",
            "lane_id": lane,
        }
    )
    await send({"type": "step.log", "run_id": job, "step_id": "stp_1", "status": "started"})
    await send(
        {"type": "usage", "run_id": job, "tokens_in": 900, "tokens_out": 120, "cost_usd": 0.08}
    )
    await send({"type": "run.completed", "run_id": job, "summary": "DHL at $31"})
    ended = await send(
        {"type": "lane.completed", "lane_id": lane, "summary": "DHL at $31", "cost_usd": 0.08}
    )
    answer = (await maya_s.wait_for(of_type("lane.completed", lane_id=lane)))["event"]
    assert answer["space_id"] == room and answer["summary"] == "DHL at $31"
    await phone.wait_for(of_type("lane.completed", lane_id=lane, space_id=shop))

    # The run reads back as its receipt, with the lane it opened.
    r = await api.http.get(
        f"/v1/runs/{run}", params={"after_seq": ended["seq"]}, headers=api.auth(maya)
    )
    assert r.status_code == 200, r.text
    receipt = r.json()
    assert receipt["state"] == "completed" and receipt["summary"] == "The PO is with Northwind"
    assert receipt["chips"] is True and receipt["message_id"] == heard["message_id"]
    assert [(s["step_id"], s["status"], s["title"]) for s in receipt["steps"]] == [
        (f"stp_{i}", "done", title) for i, title in enumerate(titles, 1)
    ]
    assert receipt["usage"] == {
        "tokens_in": 5200,
        "tokens_out": 800,
        "cost_usd": 0.42,
        "uncosted": 0,
    }
    [handed] = receipt["lanes"]
    assert (handed["lane_id"], handed["to_space_id"], handed["working_run_id"]) == (
        lane,
        shop,
        job,
    )
    assert (handed["state"], handed["summary"], handed["cost_usd"]) == (
        "completed",
        "DHL at $31",
        0.08,
    )
    assert handed["ended_seq"] > done["seq"]  # it outlived the run that opened it
    cards = {c["id"]: c for c in receipt["cards"]}
    assert cards["perm-1"]["answer"]["decision"] == "approve"
    assert cards["q-7"]["answer"]["text"] == "Monday morning"
    listed = await api.http.get(f"/v1/spaces/{room}/runs", headers=api.auth(arjun))
    assert [x["run_id"] for x in listed.json()["runs"]] == [run]
    assert listed.json()["usage"]["cost_usd"] == 0.42
    assert not [
        f for f in maya_s.frames if f["frame"] == "receipt" and f["idempotency_key"] == after
    ]
    for sock in (harness, phone, desk, maya_s):
        await sock.close()
