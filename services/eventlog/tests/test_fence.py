"""The fence, against a real Postgres: a replica whose lease was taken over writes nothing.

docs/adr/0022. Replica A holds partition 0 and appends; it stops renewing, its lease
expires, and replica B takes the partition at the next epoch. A, still believing it holds
the lease (as a process paused mid-batch would), tries to append: the transaction is
refused by the fence, nothing of it is written, and A forgets the workspace's door state.
B then appends, deciding from the state as committed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.trace import INVALID_SPAN
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.append import Actor, AppendRequest, IssuedCredential
from chips_common.nats.streams import Names
from chips_eventlog.consumer import Appender, Pending
from chips_eventlog.leases import Fenced, Held, Leases

pytestmark = pytest.mark.integration


def request(key: str, actor: Actor, *events: dict[str, Any], **more: Any) -> Pending:
    req = AppendRequest(
        request_id=key,
        workspace_id="ws_fence",
        credential_id=f"crd_{actor.id}",
        actor=actor,
        idempotency_key=key,
        events=list(events),
        **more,
    )
    return Pending(msg=None, request=req, span=INVALID_SPAN)  # type: ignore[arg-type]


async def head(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        found = await conn.execute(text("SELECT head_seq FROM workspaces WHERE id = 'ws_fence'"))
        return int(found.scalar() or 0)


async def taken_over(b: Leases, timeout: float = 10) -> Held:
    deadline = asyncio.get_running_loop().time() + timeout
    while (held := await b.take(0)) is None:
        assert asyncio.get_running_loop().time() < deadline, "the lease never expired"
        await asyncio.sleep(0.05)
    return held


async def test_a_replica_that_lost_its_lease_can_never_write(engine: AsyncEngine) -> None:
    a, b = Leases(engine, 1, ttl=0.5), Leases(engine, 1, ttl=5)
    await a.open()
    await b.open()
    try:
        held_a = await a.take(0)
        assert held_a is not None
        assert await b.take(0) is None, "a live lease is not taken"
        appender = Appender(engine, None, None, Names("CHIPS", "chips", 1))  # type: ignore[arg-type]
        owner = Actor(kind="person", id="usr_own")
        created = [
            request(
                "create",
                Actor(kind="operator", id="operator"),
                {"type": "workspace.created", "name": "Fenced"},
                {
                    "type": "participant.joined",
                    "participant_id": "usr_own",
                    "kind": "person",
                    "name": "Arjun",
                    "role": "owner",
                },
                credentials=[
                    IssuedCredential(
                        credential_id="crd_usr_own", participant_id="usr_own", token_hash="h1"
                    )
                ],
            ),
            request("room", owner, {"type": "space.created", "kind": "group", "title": "Room"}),
        ]
        await appender.append_group("ws_fence", created, held_a)
        assert [p.answer.ok for p in created] == [True, True]  # type: ignore[union-attr]
        assert "ws_fence" in held_a.states
        room = created[1].answer.events[0]["space_id"]  # type: ignore[union-attr]
        head_before = await head(engine)

        # A renews nothing; its lease expires and B takes the partition at the next epoch.
        held_b = await taken_over(b)
        assert (held_b.holder, held_b.epoch) == (b.holder, held_a.epoch + 1)

        late = [request("late", owner, {"type": "message.post", "space_id": room, "text": "x"})]
        with pytest.raises(Fenced):
            await appender.append_group("ws_fence", late, held_a)
        assert await head(engine) == head_before, "nothing of the late batch was written"
        assert held_a.fenced and not held_a.fresh()
        assert "ws_fence" not in held_a.states, "the door state went with the lease"

        # B reads the door state of the partition's workspaces as it takes the lease.
        await appender.load_states(held_b)
        assert held_b.states["ws_fence"].head_seq == head_before
        assert held_b.states["ws_fence"].space(room) is not None

        fresh = [request("late", owner, {"type": "message.post", "space_id": room, "text": "x"})]
        await appender.append_group("ws_fence", fresh, held_b)
        assert fresh[0].answer is not None and fresh[0].answer.ok
        assert fresh[0].answer.seqs == [head_before + 1]
    finally:
        await a.close()
        await b.close()
