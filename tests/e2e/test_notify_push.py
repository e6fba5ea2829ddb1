"""Web Push of what waits for a person (docs/notifications.md; docs/adr/0132).

The test runs the push service: an endpoint on 127.0.0.1 that checks each push's VAPID
signature against the key the server publishes and decrypts it with the keys the test's
"browser" subscribed with. An approval asked of Olive reaches both her browsers, naming
the room and the line; Bea, who turned push off, gets none, and a muted room pushes only
what only Olive answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.e2e.client import Api, Identity, key
from tests.e2e.push_endpoint import Endpoint


@pytest.fixture
async def endpoint(api: Api) -> AsyncIterator[Endpoint]:
    who = await api.create_workspace(owner="Key reader")
    r = await api.http.get("/v1/push/vapid-public-key", headers=api.auth(who))
    assert r.status_code == 200, r.text
    started = Endpoint(r.json()["public_key"])
    yield started
    started.stop()


async def subscribe(api: Api, who: Identity, endpoint: Endpoint, name: str) -> None:
    r = await api.http.post(
        "/v1/push/subscriptions", json=endpoint.subscription(name), headers=api.auth(who)
    )
    assert r.status_code == 201, r.text


async def test_an_approval_is_pushed_to_each_browser(api: Api, endpoint: Endpoint) -> None:
    olive = await api.create_workspace(owner="Olive")
    bea = await api.add_person(olive, "Bea")
    harness, _ = await api.connect_harness(olive, "Ledger")
    room = await api.open_space(
        olive, "Payments", members=[bea.participant_id, harness.participant_id]
    )
    for name in ("olive-phone", "olive-laptop"):
        await subscribe(api, olive, endpoint, name)
    await subscribe(api, bea, endpoint, "bea")
    r = await api.http.put(
        "/v1/notification-preferences", json={"push": False}, headers=api.auth(bea)
    )
    assert r.status_code == 200, r.text
    run, approval = key("run_p"), key("apv")
    await api.append(
        harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "pay"}
    )
    seq = await api.append(
        harness,
        {"type": "approval.request", "approval_id": approval, "run_id": run, "action": "pay.now"},
    )
    for name in ("olive-phone", "olive-laptop"):
        push = await endpoint.wait_for(name, lambda p: p.payload["ref_id"] == approval)
        body = push.payload
        assert (body["kind"], body["space_id"], body["space_name"]) == (
            "approval",
            room,
            "Payments",
        )
        assert body["seq"] == seq and body["url"].endswith(f"/#/room/{room}/at/{seq}")
        # Asked by the agent Chips gave Ledger in the room, named after it and numbered
        # (docs/adr/0154): its first agent is in its direct room.
        assert body["title"] == "Ledger 2 asks for your approval in Payments"
        assert push.headers.get("urgency") == "high" and push.headers.get("ttl")
    # A question for the whole room, asked after: Olive is pushed it; Bea, who turned
    # push off, was pushed neither (her question was decided in the same round).
    question = key("q")
    await api.append(
        harness,
        {
            "type": "question.ask",
            "question_id": question,
            "run_id": run,
            "prompt": "Which supplier?",
            "free_text": True,
        },
    )
    await endpoint.wait_for("olive-phone", lambda p: p.payload["ref_id"] == question)
    assert endpoint.received("bea") == []
    # Mute the room: a question others may answer is not pushed; an approval only Olive
    # decides still is.
    r = await api.http.put(
        f"/v1/spaces/{room}/notifications", json={"muted": True}, headers=api.auth(olive)
    )
    assert r.status_code == 200, r.text
    quiet, loud = key("q"), key("apv")
    await api.append(
        harness,
        {
            "type": "question.ask",
            "question_id": quiet,
            "run_id": run,
            "prompt": "?",
            "free_text": True,
        },
    )
    await api.append(
        harness,
        {"type": "approval.request", "approval_id": loud, "run_id": run, "action": "pay.later"},
    )
    await endpoint.wait_for("olive-laptop", lambda p: p.payload["ref_id"] == loud)
    assert endpoint.received("olive-laptop", lambda p: p.payload["ref_id"] == quiet) == []
    # Each push went once to each browser.
    for name in ("olive-phone", "olive-laptop"):
        ids = [p.payload["id"] for p in endpoint.received(name)]
        assert len(ids) == len(set(ids))
    assert not endpoint.problems, endpoint.problems


async def test_a_subscription_its_push_service_dropped_is_pushed_no_more(
    api: Api, endpoint: Endpoint
) -> None:
    """A 410 from the push service: the notifier stops pushing there, and pushes there
    again once the browser subscribes anew."""
    olive = await api.create_workspace(owner="Olive")
    harness, _ = await api.connect_harness(olive, "Ledger")
    room = await api.open_space(olive, "Payments", members=[harness.participant_id])
    for name in ("old-phone", "laptop"):
        await subscribe(api, olive, endpoint, name)
    endpoint.drop("old-phone")
    run = key("run_p")
    await api.append(
        harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "pay"}
    )

    async def ask() -> str:
        approval = key("apv")
        await api.append(
            harness,
            {"type": "approval.request", "approval_id": approval, "run_id": run, "action": "x"},
        )
        await endpoint.wait_for("laptop", lambda p: p.payload["ref_id"] == approval)
        return approval

    await ask()
    # Each push is staged to every browser before any is finished, so by the time a later
    # push has reached the laptop, any push to the old phone from the one before was sent.
    await ask()
    await ask()
    assert endpoint.tried_after_drop("old-phone") == 1
    # Subscribed again (the push service knows it once more): pushed there again.
    endpoint.gone.pop("old-phone")
    await subscribe(api, olive, endpoint, "old-phone")
    again = await ask()
    await endpoint.wait_for("old-phone", lambda p: p.payload["ref_id"] == again)
    assert not endpoint.problems, endpoint.problems
