"""Search, the referee, attachments and the notifier SIGKILLed under load: nothing lost,
nothing said (or mailed, or pushed) twice.

docs/architecture/design.md §10 (fault tests) and §5-§6: every consumer of the log keeps its
checkpoint in the transaction of its work, so one killed mid-batch and started again goes on
where its last commit left it. Afterwards the search index equals a rebuild from seq 0 (``python
-m chips_search rebuild``), the referee's rooms equal what it folds again when it has forgotten
the workspace, it handed no words twice, and every file whose upload was answered is fetched
whole."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import httpx
import psycopg
import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, key
from tests.e2e.push_endpoint import Endpoint
from tests.e2e.smtp_box import Box, Received, smtp_port
from tests.e2e.test_attachments import PDF, post
from tests.e2e.test_lead import crew, forget_workspace, led_room, logged

POSTS = 60


def database(stack: Stack) -> str:
    return stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)


def referee_rooms(stack: Stack, workspace_id: str, leave_out: str) -> list[Any]:
    with psycopg.connect(database(stack)) as conn:
        rows = conn.execute(
            "SELECT space_id, body, due_at FROM referee_rooms"
            " WHERE workspace_id = %s AND space_id <> %s ORDER BY space_id",
            (workspace_id, leave_out),
        ).fetchall()
    return [(s, json.dumps(b, sort_keys=True), d) for s, b, d in rows]


async def referee_at(stack: Stack, workspace_id: str, seq: int, timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        with psycopg.connect(database(stack)) as conn:
            row = conn.execute(
                "SELECT seq FROM referee_checkpoints WHERE workspace_id = %s", (workspace_id,)
            ).fetchone()
        if row is not None and row[0] >= seq:
            return
        assert asyncio.get_running_loop().time() < deadline, f"the referee is at {row}, not {seq}"
        await asyncio.sleep(0.2)


async def settled_post(api: Api, who: Identity, event: dict[str, Any]) -> int:
    """Post with a key, sending it again while the answer is unavailable; its seq."""
    k = key("kill")
    for _ in range(30):
        r = await api.post_event(who, {**event, "idempotency_key": k})
        if r.status_code == 200:
            return int(r.json()["seq"])
        assert r.status_code == 503, r.text
        await asyncio.sleep(0.5)
    raise AssertionError("never acknowledged")


async def settled_upload(api: Api, who: Identity, data: bytes, name: str) -> str:
    """An upload, sent again while the attachments service is away; its id."""
    for _ in range(60):
        try:
            r = await api.http.post(
                "/v1/uploads", params={"name": name}, content=data, headers=api.auth(who)
            )
        except httpx.HTTPError:
            await asyncio.sleep(0.5)
            continue
        if r.status_code == 201:
            return str(r.json()["upload_id"])
        assert r.status_code == 503 and r.json()["code"] == "unavailable", r.text
        await asyncio.sleep(0.5)
    raise AssertionError("the upload was never taken")


@pytest.mark.timeout(400)
@pytest.mark.parametrize("victim", ["search", "referee", "attachments"])
async def test_a_consumer_killed_under_load_loses_and_repeats_nothing(
    stack: Stack, api: Api, victim: str
) -> None:
    c = await crew(stack, api)
    rooms = [await led_room(api, c, f"Room {i}") for i in range(2)]
    trigger = await api.open_space(c.owner, "Trigger", [c.scout.participant_id])
    writers = [c.owner, c.scout, c.ledger]
    acked: dict[str, int] = {}
    files: dict[str, bytes] = {}

    async def load() -> None:
        for i in range(POSTS):
            who, room = writers[i % 3], rooms[i % 2].id
            text = f"quokka {victim} {i}"
            acked[text] = await settled_post(
                api, who, {"type": "message.post", "space_id": room, "text": text}
            )
            if i % 10 == 0:
                data = PDF + f"% file {victim} {i}\n".encode()
                upload_id = await settled_upload(api, c.owner, data, f"f{i}.pdf")
                await settled_post(api, c.owner, post(room, [upload_id], f"file {i}"))
                files[upload_id] = data

    loading = asyncio.create_task(load())
    while len(acked) < POSTS // 3:
        assert not loading.done(), loading
        await asyncio.sleep(0.05)
    stack.kill(victim)  # SIGKILL: no chance to finish the batch in flight
    await asyncio.sleep(1)
    stack.start(victim)
    stack.wait_ready(victim)
    await asyncio.wait_for(loading, 240)

    # Nothing acknowledged lost or logged twice.
    log: list[dict[str, Any]] = []
    while page := await api.read(c.owner, since=log[-1]["seq"] if log else 0):
        log.extend(page)
    head = log[-1]["seq"]
    assert [e["seq"] for e in log] == list(range(1, head + 1))
    posted = Counter(
        e["text"] for e in log if e["type"] == "message.post" and "quokka" in e["text"]
    )
    assert posted == Counter(list(acked)), "every acked post logged once"

    # The search index: every post found once caught up, and equal to a rebuild.
    r = await api.http.get(
        "/v1/search",
        params={"q": f"quokka {victim}", "after_seq": head, "limit": 100},
        headers=api.auth(c.owner),
    )
    assert r.status_code == 200, r.text
    assert sorted(h["seq"] for h in r.json()["hits"]) == sorted(acked.values())
    live = stack.run_module("chips_search", "digest").strip()
    stack.run_module("chips_search", "rebuild")
    assert stack.run_module("chips_search", "digest").strip() == live, "index == rebuild"

    # Every file whose upload was answered is there, whole.
    for upload_id, data in files.items():
        got = await api.http.get(f"/v1/attachments/{upload_id}", headers=api.auth(c.owner))
        assert got.status_code == 200 and got.content == data, got.text[:200]

    # The referee: its rooms equal what it folds again from the log, and it handed no
    # words twice (a rebuilt referee neither).
    await asyncio.sleep(3)  # the lead's quiet spell (two seconds here) runs out
    seq = await settled_post(
        api, c.scout, {"type": "message.post", "space_id": trigger, "text": "a"}
    )
    await referee_at(stack, c.owner.workspace_id, seq)
    before = referee_rooms(stack, c.owner.workspace_id, trigger)
    stack.kill("referee")
    try:
        forget_workspace(stack, c.owner.workspace_id)
    finally:
        stack.start("referee")
        stack.wait_ready("referee")
    seq = await settled_post(
        api, c.scout, {"type": "message.post", "space_id": trigger, "text": "b"}
    )
    await referee_at(stack, c.owner.workspace_id, seq)
    assert referee_rooms(stack, c.owner.workspace_id, trigger) == before, "rooms == rebuild"
    handed = [e["message_id"] for e in await logged(api, c.owner, "lead.handed")]
    assert len(handed) == len(set(handed)), "no words handed twice"
    print(f"{victim}: {len(acked)} posts, {len(files)} files, {len(handed)} hand-offs, head {head}")
    for sock in c.socks.values():
        await sock.close()


APPROVALS = 40


@pytest.mark.timeout(400)
async def test_the_notifier_killed_mid_burst_sends_nothing_twice_and_drops_nothing(
    stack: Stack, api: Api
) -> None:
    """A burst of approvals, each mailed at once and pushed to a browser, with the
    notifier SIGKILLed in the middle: each approval is one notification, one email and
    one push (docs/adr/0132: a claim is committed before each send, and what a dead
    sender claimed is sent again only if it never reached the point of no return)."""
    box = Box(smtp_port(stack)).start()
    olive = await api.create_workspace(owner="Olive")
    r = await api.http.get("/v1/push/vapid-public-key", headers=api.auth(olive))
    endpoint = Endpoint(r.json()["public_key"])
    try:
        r = await api.http.put(
            "/v1/notification-preferences",
            json={"email": "immediate", "email_address": "olive@example.test"},
            headers=api.auth(olive),
        )
        assert r.status_code == 200, r.text
        r = await api.http.post(
            "/v1/push/subscriptions",
            json=endpoint.subscription("olive"),
            headers=api.auth(olive),
        )
        assert r.status_code == 201, r.text
        harness, _ = await api.connect_harness(olive, "Ledger")
        room = await api.open_space(olive, "Burst", members=[harness.participant_id])
        run = key("run_k")
        await settled_post(
            api, harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "g"}
        )
        actions = [f"pay.burst{i:02d}.{key('x')}" for i in range(APPROVALS)]
        acked: list[str] = []

        async def ask(action: str) -> int:
            return await settled_post(
                api,
                harness,
                {
                    "type": "approval.request",
                    "approval_id": key("apv"),
                    "run_id": run,
                    "action": action,
                },
            )

        async def burst() -> None:
            for action in actions:
                await ask(action)
                acked.append(action)

        loading = asyncio.create_task(burst())
        while len(acked) < APPROVALS // 3:
            assert not loading.done(), loading
            await asyncio.sleep(0.05)
        stack.kill("notifier")  # SIGKILL, mid-burst: claims and sends in flight
        await asyncio.sleep(1)
        stack.start("notifier")
        stack.wait_ready("notifier")
        await asyncio.wait_for(loading, 240)

        def mailed(action: str) -> list[Received]:
            return box.matching(lambda m: action in m.text)

        def states() -> dict[str, tuple[str, str]]:
            with psycopg.connect(database(stack)) as conn:
                rows = conn.execute(
                    "SELECT body, email_state, push_state FROM notifications"
                    " WHERE workspace_id = %s AND kind = 'approval'",
                    (olive.workspace_id,),
                ).fetchall()
            return {body.split(":")[0]: (e, p) for body, e, p in rows}

        # A send the kill caught past its point of no return (the final dot, the last
        # byte) is "unsure": it may have gone, and is never sent again. Every other is
        # mailed and pushed.
        # Every approval has its notification (the notifier started again folds what the
        # killed one had not, asking for events at its pace), and each is sent or unsure.
        deadline = asyncio.get_running_loop().time() + 120

        def settled() -> bool:
            now = states()
            return set(actions) <= set(now) and all(
                set(pair) <= {"sent", "unsure"} for pair in now.values()
            )

        while not settled():
            assert asyncio.get_running_loop().time() < deadline, Counter(states().values())
            await asyncio.sleep(0.2)
        for action in actions:
            email_state, push_state = states()[action]
            if email_state == "sent":
                await box.wait_for(lambda m, a=action: a in m.text, timeout=60)
            if push_state == "sent":
                await endpoint.wait_for("olive", lambda p, a=action: a in p.payload["body"], 60)
        # One more, asked once everything came, and mailed and pushed in a later round:
        # whatever the burst's rounds sent has arrived by then.
        last = f"pay.last.{key('x')}"
        await ask(last)
        await box.wait_for(lambda m: last in m.text, timeout=60)
        await endpoint.wait_for("olive", lambda p: last in p.payload["body"], 60)
        final = states()
        assert set(final) == {*actions, last}, "one notification per approval"
        for action in actions:
            email_state, push_state = final[action]
            pushed = endpoint.received("olive", lambda p, a=action: a in p.payload["body"])
            # Sent: exactly once. Unsure (caught past its point of no return): at most once.
            assert len(mailed(action)) == 1 or (email_state == "unsure" and not mailed(action))
            assert len(pushed) == 1 or (push_state == "unsure" and not pushed)
        assert not endpoint.problems, endpoint.problems
        counts = Counter(state for pair in final.values() for state in pair)
        assert set(counts) <= {"sent", "unsure"}, counts
        assert counts["unsure"] <= 4, f"more sends caught in flight than a kill can: {counts}"
        print(f"notifier: {APPROVALS} approvals, states {dict(counts)}, pushes cut {endpoint.cut}")
    finally:
        endpoint.stop()
        box.stop()
