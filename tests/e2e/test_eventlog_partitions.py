"""Eventlog replicas share the append partitions, and take over a dead one's.

docs/architecture/design.md §3: workspaces map to partitions; a replica owns a partition through a
lease (a row of ``eventlog_leases`` renewed by heartbeat, ADR 0022); one writer per workspace at
a time.
"""

from __future__ import annotations

import asyncio
import re

import httpx
import psycopg

from tests.e2e.client import Api, Identity


def leases_by_process(stack) -> dict[str, int]:
    """How many live partition leases each replica holds (what an operator would look at)."""
    url = stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT holder, count(*) FROM eventlog_leases"
            " WHERE holder IS NOT NULL AND expires_at > clock_timestamp() GROUP BY holder"
        ).fetchall()
    return {holder: count for holder, count in rows}


async def appended_by(stack, name: str) -> float:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{stack.url(name)}/metrics")).text
    found = re.search(r'chips_eventlog_appends_total\{outcome="ok"\} ([0-9.e+]+)', text)
    return float(found.group(1)) if found else 0.0


async def wait_for_split(stack, expected: list[int], timeout: float = 20) -> dict[str, int]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        held = leases_by_process(stack)
        if sorted(held.values()) == expected or asyncio.get_running_loop().time() > deadline:
            return held
        await asyncio.sleep(0.3)


async def test_two_replicas_split_the_partitions_and_one_takes_over_when_the_other_dies(
    stack, api: Api
) -> None:
    stack.start("eventlog_2")
    stack.wait_ready("eventlog_2")
    try:
        assert sorted((await wait_for_split(stack, [4, 4])).values()) == [4, 4]

        # Enough workspaces that both replicas' partitions get some.
        people: list[tuple[Identity, str]] = []
        for i in range(12):
            owner = await api.create_workspace(name=f"Shard {i}")
            people.append((owner, await api.open_space(owner, "Room")))
        for owner, room in people:
            await api.say(owner, room, "both replicas write")
        assert await appended_by(stack, "eventlog_2") > 0
        assert await appended_by(stack, "eventlog") > 0

        stack.kill("eventlog")  # its leases expire, unrenewed
        assert sorted((await wait_for_split(stack, [8])).values()) == [8]
        seqs = [await api.say(owner, room, "after the takeover") for owner, room in people]
        assert all(seq > 0 for seq in seqs)
        for (owner, room), seq in zip(people, seqs, strict=True):
            events = await api.read(owner, space_id=room)
            assert [e["seq"] for e in events if e["type"] == "message.post"][-1] == seq
    finally:
        stack.start("eventlog")
        stack.wait_ready("eventlog")
        stack.stop("eventlog_2")
