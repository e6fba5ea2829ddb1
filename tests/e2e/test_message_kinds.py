"""The eleven kinds of message, each a typed card, and who may post which.

docs/product/messages.md, the table of kinds: text and hand-offs are anyone's; status, approval,
question, receipt, artifact, checkpoint and summary are a harness's; a task is given by a
person; a system line is Chips's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.client import Api, Socket
from tests.e2e.test_messages import heard, room_with_two_harnesses

CARDS: dict[str, dict[str, Any]] = {
    "status": {"phase": "working", "verb": "Reading the PO", "progress": 0.5},
    "approval": {"action": "send_po", "preview": "PO 4471", "risk": "high"},
    "question": {
        "prompt": "Which supplier?",
        "options": [{"label": "Northwind", "value": "nw"}],
        "free_text": True,
    },
    "receipt": {
        "steps": [{"title": "Read the PO", "status": "done"}],
        "tool_calls": 2,
        "cost_usd": 0.01,
    },
    "artifact": {"name": "po.csv", "form": "table", "version": 1},
    "checkpoint": {"milestone": "PO drafted", "next": "Send it"},
    "summary": {"outcome": "PO sent", "follow_ups": ["Chase Friday"]},
}


def card(space_id: str, kind: str, body: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "message.post", "space_id": space_id, "kind": kind, kind: body, **more}


@pytest.mark.parametrize("kind", sorted(CARDS))
async def test_a_harness_posts_each_card_and_every_member_sees_it(
    stack, api: Api, kind: str
) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    people = await Socket.open(stack.gateway_a, owner)
    await people.subscribe(owner.workspace_id, since=await api.head(owner))
    seq = await api.append(scout, card(room, kind, CARDS[kind]))
    seen = await heard(people, seq)
    assert seen["type"] == "message.post" and seen["kind"] == kind
    assert seen[kind] == {**seen[kind], **CARDS[kind]}  # what was sent, defaults filled in
    assert (await heard(socks["ledger"], seq))[kind] == seen[kind]
    line = next(x for x in await api.lines(owner, room, seq) if x["seq"] == seq)
    assert line["kind"] == kind and line["card"] == seen[kind]
    await people.close()


@pytest.mark.parametrize("kind", sorted(CARDS))
async def test_a_person_may_not_post_a_harness_s_card(stack, api: Api, kind: str) -> None:
    owner, _, _, _, room, _ = await room_with_two_harnesses(stack, api)
    before = await api.head(owner)
    await api.refused(owner, card(room, kind, CARDS[kind]), "forbidden", "a harness's to post")
    assert await api.head(owner) == before


async def test_a_task_is_given_by_a_person_not_a_harness(stack, api: Api) -> None:
    owner, _, scout, _, room, socks = await room_with_two_harnesses(stack, api)
    task = {"goal": "Get the PO out", "constraints": ["under $5k"], "autonomy": "suggest"}
    await api.refused(scout, card(room, "task", task), "forbidden", "given by a person")
    seq = await api.append(owner, card(room, "task", task, to=[scout.participant_id]))
    event = await heard(socks["scout"], seq)
    assert event["type"] == "message.new" and event["task"]["goal"] == "Get the PO out"


async def test_nobody_posts_a_system_line(stack, api: Api) -> None:
    owner, _, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    for who in (owner, scout):
        event = {"type": "message.post", "space_id": room, "kind": "system", "text": "x"}
        await api.refused(who, event, "forbidden", "Chips's own")


async def test_a_handoff_is_anyone_s_and_is_for_its_recipient(stack, api: Api) -> None:
    owner, _, scout, ledger, room, socks = await room_with_two_harnesses(stack, api)
    handoff = {"recipient": ledger.participant_id, "summary": "PO drafted", "open_items": ["sign"]}
    seq = await api.append(scout, card(room, "handoff", handoff))
    assert (await heard(socks["ledger"], seq))["type"] == "message.new"
    assert (await heard(socks["ledger"], seq))["addressed_to"] == [ledger.participant_id]
    stranger, _ = await api.connect_harness(owner, "Stranger")
    elsewhere = {**handoff, "recipient": stranger.participant_id}
    await api.refused(scout, card(room, "handoff", elsewhere), "not_found", "somebody in this room")


@pytest.mark.parametrize(
    ("event", "field", "says"),
    [
        ({"kind": "status"}, "status", "needs its status card"),
        ({"kind": "text"}, "text", "text is required"),
        ({"kind": "text", "text": "hi", "status": CARDS["status"]}, "status", "carries no"),
        ({"kind": "status", "status": {"phase": "x"}}, "status.verb", "required"),
        ({"kind": "question", "question": {"prompt": "?"}}, "question.options", "options"),
        ({"kind": "poem", "text": "hi"}, "kind", "kind"),
    ],
)
async def test_a_card_written_wrong_is_refused_naming_the_field(
    stack, api: Api, event: dict[str, Any], field: str, says: str
) -> None:
    owner, _, scout, _, room, _ = await room_with_two_harnesses(stack, api)
    body = await api.refused(
        scout, {"type": "message.post", "space_id": room, **event}, "invalid_event", says
    )
    assert body.get("field") == field, body
