"""Approvals, questions, receipts and steering (docs/product/websocket.md, Receipts, First answer
wins; docs/product/jacobian-channel.md, What Chips says, and what it settles)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.client import Api, Identity, Socket, key
from tests.e2e.test_runs import harness_room, start


async def approval(
    api: Api, harness: Identity, run: str, approval_id: str | None = None, **fields: Any
) -> str:
    approval_id = approval_id or key("perm")
    await api.append(
        harness,
        {
            "type": "approval.request",
            "approval_id": approval_id,
            "run_id": run,
            "action": "jacobian.shell.execute",
            "preview": "rm -rf build/",
            **fields,
        },
    )
    return approval_id


async def question(api: Api, harness: Identity, run: str, **fields: Any) -> str:
    question_id = key("q")
    await api.append(
        harness,
        {
            "type": "question.ask",
            "question_id": question_id,
            "run_id": run,
            "prompt": "Which supplier?",
            "options": [{"label": "Acme", "value": "acme"}, {"label": "Globex", "value": "g"}],
            **fields,
        },
    )
    return question_id


def decide(approval_id: str, decision: str = "approve") -> dict[str, Any]:
    return {"type": "approval.resolved", "approval_id": approval_id, "decision": decision}


async def test_a_second_decision_is_refused_naming_who_was_first(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run)
    await api.append(owner, decide(card))
    await api.refused(owner, decide(card, "deny"), "invalid_event", "first by Arjun Rao (approve)")


async def test_an_approval_nobody_asked_is_not_found(api: Api) -> None:
    owner, _, _ = await harness_room(api)
    await api.refused(owner, decide("perm-nope"), "not_found", "no approval perm-nope")


async def test_a_harness_decides_no_other_harness_s_approval(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    scout, _ = await api.connect_harness(owner, "Scout")
    await api.add_to_room(owner, room, scout.participant_id)
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run)
    await api.refused(scout, decide(card), "forbidden", "no policy handed it to you")


async def test_a_harness_reports_its_own_run_s_approval_decided(api: Api) -> None:
    # Decided on Jacobian's other surface first (Telegram): one record, first answer wins.
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run)
    await api.append(jacobian, decide(card, "deny"))
    await api.refused(owner, decide(card), "invalid_event", "first by Jacobian (deny)")


async def test_only_the_owner_or_the_named_decide_an_approval(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    maya = await api.add_person(owner, "Maya Chen")
    priya = await api.add_person(owner, "Priya Shah")
    for who in (maya, priya):
        await api.add_to_room(owner, room, who.participant_id)
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run, answerers=[priya.participant_id])
    await api.refused(maya, decide(card), "forbidden", "decided by the harness's owner")
    await api.append(priya, decide(card))


async def test_an_expired_card_decides_nothing(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run, expires_at="2020-01-01T00:00:00Z")
    await api.refused(owner, decide(card), "invalid_event", "its expiry decides nothing")


async def test_a_card_of_an_ended_run_is_not_answered(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run)
    await api.append(jacobian, {"type": "run.completed", "run_id": run})
    await api.refused(owner, decide(card), "invalid_event", "has ended (completed)")


async def test_a_stranger_decides_nothing(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    maya = await api.add_person(owner, "Maya Chen")
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run, answerers=[maya.participant_id])
    await api.refused(maya, decide(card), "forbidden", "not a member")


async def test_resolved_elsewhere_on_the_sockets_that_did_not_decide(stack, api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    phone = await Socket.open(stack.gateway_a, owner)
    desk = await Socket.open(stack.gateway_b, owner)
    harness = await Socket.open(stack.gateway_b, jacobian)
    for sock in (phone, desk, harness):
        await sock.subscribe(owner.workspace_id)
        await sock.attached()
    run = await start(api, jacobian, room)
    card = await approval(api, jacobian, run)
    won, lost = await asyncio.gather(
        phone.write(decide(card), "phone-1"), desk.write(decide(card, "deny"), "desk-1")
    )
    answers = [await phone.answer(won), await desk.answer(lost)]
    assert sorted(a["frame"] for a in answers) == ["ack", "error"]
    loser = next(a for a in answers if a["frame"] == "error")
    assert loser["code"] == "invalid_event" and "first by Arjun Rao" in loser["message"]
    winner = phone if answers[0]["frame"] == "ack" else desk
    other = desk if winner is phone else phone

    def resolved(f: dict[str, Any]) -> bool:
        return f["frame"] == "event" and f["event"]["type"] == "approval.resolved"

    assert "resolved_elsewhere" not in (await winner.wait_for(resolved))["event"]
    assert (await other.wait_for(resolved))["event"]["resolved_elsewhere"] is True
    assert "resolved_elsewhere" not in (await harness.wait_for(resolved))["event"]
    for sock in (phone, desk, harness):
        await sock.close()


async def test_a_question_is_answered_by_a_tap(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    q = await question(api, jacobian, run)
    seq = await api.append(owner, {"type": "question.answered", "question_id": q, "value": "g"})
    answered = (await api.read(owner, since=seq - 1, limit=1))[0]
    assert answered["value"] == "g" and answered["run_id"] == run


async def test_a_second_answer_is_refused_naming_who_was_first(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    maya = await api.add_person(owner, "Maya Chen")
    await api.add_to_room(owner, room, maya.participant_id)
    run = await start(api, jacobian, room)
    q = await question(api, jacobian, run)
    await api.append(maya, {"type": "question.answered", "question_id": q, "value": "acme"})
    await api.refused(
        owner,
        {"type": "question.answered", "question_id": q, "value": "g"},
        "invalid_event",
        "first by Maya Chen (acme)",
    )


async def test_a_tap_names_one_of_the_options(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    q = await question(api, jacobian, run)
    await api.refused(
        owner,
        {"type": "question.answered", "question_id": q, "value": "initech"},
        "invalid_event",
        "not an option",
    )


async def test_typed_words_answer_any_question(api: Api) -> None:
    """Every card takes a written answer (docs/adr/0134), by wreply as in the app."""
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    q = await question(api, jacobian, run)
    seq = await api.say(owner, room, f"wreply {q} Neither, wait for the audit")
    answered = (await api.read(owner, since=seq - 1, limit=1))[0]
    assert answered["type"] == "question.answered"
    assert answered["text"] == "Neither, wait for the audit" and "value" not in answered


async def test_wreply_is_a_typed_answer(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    q = await question(api, jacobian, run, free_text=True)
    seq = await api.say(owner, room, f"wreply {q} Initech, the usual terms")
    answered = (await api.read(owner, since=seq - 1, limit=1))[0]
    assert answered["type"] == "question.answered"
    assert answered["text"] == "Initech, the usual terms" and "value" not in answered
    # Typed words that are an option's label are that option.
    q2 = await question(api, jacobian, run)
    seq = await api.say(owner, room, f"wreply {q2} acme")
    assert (await api.read(owner, since=seq - 1, limit=1))[0]["value"] == "acme"


async def test_wreply_names_a_question_of_this_room(api: Api) -> None:
    owner, _, room = await harness_room(api)
    await api.refused(
        owner,
        {"type": "message.post", "space_id": room, "text": "wreply q-404 yes"},
        "not_found",
        "no question q-404",
    )


async def test_receipts_queued_and_steered(stack, api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    person = await Socket.open(stack.gateway_a, owner)
    harness = await Socket.open(stack.gateway_b, jacobian)
    for sock in (person, harness):
        await sock.subscribe(owner.workspace_id)
        await sock.attached()
    quiet = await person.write({"type": "message.post", "space_id": room, "text": "hello"})
    assert (await person.answer(quiet))["frame"] == "ack"
    run = await start(api, jacobian, room)
    said = await person.write({"type": "message.post", "space_id": room, "text": "also X"})
    steer = await person.write(
        {"type": "run.steer", "run_id": run, "mode": "interrupt", "text": "stop, use March"}
    )
    later = await person.write(
        {"type": "run.steer", "run_id": run, "mode": "followup", "text": "then invoice"}
    )
    for k, disposition in ((said, "queued"), (steer, "steered"), (later, "queued")):
        ack = await person.answer(k)
        assert ack["frame"] == "ack", ack
        receipt = await person.wait_for(
            lambda f, k=k: f["frame"] == "receipt" and f["idempotency_key"] == k
        )
        assert person.frames.index(ack) < person.frames.index(receipt)
        assert receipt["disposition"] == disposition and receipt["run_ids"] == [run]
        beside = await harness.wait_for(
            lambda f, k=k: f["frame"] == "receipt" and f["idempotency_key"] == k
        )
        assert beside["disposition"] == disposition
    # A message when no run is going gets an ack and nothing more.
    assert not [
        f for f in person.frames if f.get("idempotency_key") == quiet and f["frame"] == "receipt"
    ]
    # A harness replaying, one frame per event or in batches, is sent the same receipts.
    live = [f for f in harness.frames if f["frame"] == "receipt"]
    for accepts in (None, ["events"]):
        again = await Socket.open(stack.gateway_a, jacobian, accepts=accepts)
        await again.subscribe(owner.workspace_id, since=0)
        await again.wait_for(lambda f: f["frame"] == "receipt" and f["idempotency_key"] == later)
        assert [f for f in again.frames if f["frame"] == "receipt"] == live
        await again.close()
    for sock in (person, harness):
        await sock.close()


async def test_a_steer_of_an_ended_run_is_refused(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.append(jacobian, {"type": "run.completed", "run_id": run})
    await api.refused(
        owner,
        {"type": "run.steer", "run_id": run, "mode": "steer", "text": "wait"},
        "invalid_event",
        "has ended",
    )


async def test_stop_cancels_the_rooms_live_runs(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    seq = await api.say(owner, room, "/stop")
    cancel = (await api.read(owner, since=seq - 1, limit=1))[0]
    assert cancel["type"] == "run.cancel" and cancel["run_id"] == run
    assert cancel["actor"]["id"] == owner.participant_id
    await api.refused(
        jacobian,
        {"type": "step.log", "run_id": run, "step_id": "s", "status": "done"},
        "invalid_event",
        "has ended (cancelled)",
    )


async def test_stop_with_nothing_running_is_refused(api: Api) -> None:
    owner, _, room = await harness_room(api)
    await api.refused(
        owner,
        {"type": "message.post", "space_id": room, "text": "/stop"},
        "invalid_event",
        "nothing is running",
    )
