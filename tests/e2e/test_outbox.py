"""The outbox: a committed event that could not be published is published on start.

docs/architecture/design.md §2, Outbox: "A crash between commit and publish is repaired by
re-publishing unpublished outbox rows on start."
"""

from __future__ import annotations

import asyncio
import json

import nats
import psycopg

from tests.e2e.client import Api, Socket


def outbox_rows(stack, workspace_id: str) -> list[int]:
    url = stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq FROM outbox WHERE workspace_id = %s ORDER BY seq", (workspace_id,)
        ).fetchall()
    return [row[0] for row in rows]


async def test_unpublished_events_are_published_when_the_eventlog_starts(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
    js = nc.jetstream()
    try:
        # Take the events stream away, so the commit lands but its publish fails: the state
        # a crash between the two leaves behind.
        await js.delete_stream("CHIPS_EVENTS")
        seq = await api.say(owner, space_id, "committed, not yet published")
        # The rows of what was published before are cleared within a quarter second
        # (ADR 0118); the one the stream never took stays.
        for _ in range(100):
            if outbox_rows(stack, owner.workspace_id) == [seq]:
                break
            await asyncio.sleep(0.05)
        assert outbox_rows(stack, owner.workspace_id) == [seq]

        stack.restart("eventlog")  # declares the streams again and empties the outbox
        for _ in range(100):
            if not outbox_rows(stack, owner.workspace_id):
                break
            await asyncio.sleep(0.1)
        assert outbox_rows(stack, owner.workspace_id) == []
        published = await js.get_last_msg("CHIPS_EVENTS", f"chips.events.{owner.workspace_id}")
        event = json.loads(published.data)
        assert event["seq"] == seq and event["text"] == "committed, not yet published"
        assert published.headers and published.headers["Nats-Msg-Id"] == event["id"]
    finally:
        await nc.close()

    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id, since=seq - 1)
    await bot.wait_for_seq(seq)
    after = await api.say(owner, space_id, "and life goes on")
    await bot.wait_for_seq(after)
    await bot.close()
    # The consumers lost theirs with the stream and declared them again by themselves.
    r = await api.http.get("/v1/spaces", params={"after_seq": after}, headers=api.auth(owner))
    assert r.json()["as_of_seq"] >= after
