"""Partition leases expire, and every commit is fenced by the lease's epoch.

docs/adr/0022: a replica that stops renewing (paused with SIGSTOP, killed) loses its
partitions to a live replica within a few seconds; what it tries to write after it wakes
is refused, never applied; and the replica that takes a workspace over decides its rules
from the door state as committed, not from anything it remembered before.
"""

from __future__ import annotations

import asyncio
import re
import zlib

import httpx
import psycopg

from tests.e2e.client import Api, Identity, Socket, key

PARTITIONS = 8  # CHIPS_APPEND_PARTITIONS's default, which the stack runs with


def partition_of(workspace_id: str) -> int:
    return zlib.crc32(workspace_id.encode()) % PARTITIONS


def leases(stack) -> dict[int, tuple[str | None, int]]:
    """Every partition's live holder (None when free or expired) and epoch."""
    url = stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT partition, CASE WHEN expires_at > clock_timestamp() THEN holder END, epoch"
            " FROM eventlog_leases ORDER BY partition"
        ).fetchall()
    return {p: (holder, epoch) for p, holder, epoch in rows}


def holder_of(stack, name: str) -> str:
    """The lease holder id of a replica (it names the process's pid)."""
    pid = stack.procs[name].pid
    for holder, _ in leases(stack).values():
        if holder is not None and f"/{pid}/" in holder:
            return holder
    raise AssertionError(f"{name} holds no partition")


async def wait_for(condition, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.2)


async def metric(stack, name: str, series: str) -> float:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{stack.url(name)}/metrics")).text
    found = re.search(re.escape(series) + r" ([0-9.e+]+)", text)
    return float(found.group(1)) if found else 0.0


async def workspaces_on(api: Api, partitions: set[int], count: int) -> list[tuple[Identity, str]]:
    found: list[tuple[Identity, str]] = []
    while len(found) < count:
        owner = await api.create_workspace(name="Leased")
        if partition_of(owner.workspace_id) in partitions:
            found.append((owner, await api.open_space(owner, "Room")))
    return found


def two_replicas_split(stack) -> bool:
    held: dict[str | None, int] = {}
    for holder, _ in leases(stack).values():
        held[holder] = held.get(holder, 0) + 1
    return None not in held and sorted(held.values()) == [4, 4]


async def test_a_paused_replica_loses_its_partitions_and_what_it_held_is_served(
    stack, api: Api
) -> None:
    stack.start("eventlog_2")
    stack.wait_ready("eventlog_2")
    paused = False
    try:
        await wait_for(lambda: two_replicas_split(stack), 30, "two replicas share 4 and 4")
        sleeper, waker = holder_of(stack, "eventlog"), holder_of(stack, "eventlog_2")
        before = leases(stack)
        mine = {p for p, (holder, _) in before.items() if holder == sleeper}
        people = await workspaces_on(api, mine, 3)
        for owner, room in people:
            await api.say(owner, room, "before the pause")

        stack.pause("eventlog")  # SIGSTOP: its connections stay open, it renews nothing
        paused = True
        # Within 10 s the live replica holds every partition, each taken at a new epoch.
        await wait_for(
            lambda: all(holder == waker for holder, _ in leases(stack).values()),
            10,
            "the live replica takes the paused one's partitions",
        )
        after = leases(stack)
        assert all(after[p][1] > before[p][1] for p in mine), "taken over at the next epoch"
        during = [await api.say(owner, room, "while it sleeps") for owner, room in people]

        stack.resume("eventlog")
        paused = False
        # Awake, it finds its leases gone and stops writing to those partitions.
        await wait_for_async(
            lambda: metric(stack, "eventlog", "chips_eventlog_leases_lost_total"),
            lambda lost: lost >= len(mine),
            10,
            "the woken replica counts the leases it lost",
        )
        after_wake = [await api.say(owner, room, "after it woke") for owner, room in people]
        for (owner, room), seq, later in zip(people, during, after_wake, strict=True):
            said = [e for e in await api.read(owner, space_id=room) if e["type"] == "message.post"]
            texts = [e["text"] for e in said]
            assert texts == ["before the pause", "while it sleeps", "after it woke"]
            assert [e["seq"] for e in said][1:] == [seq, later]
            seqs = [e["seq"] for e in await api.read(owner)]
            assert seqs == list(range(1, len(seqs) + 1)), "one writer: no gap, no repeat"
    finally:
        if paused:
            stack.resume("eventlog")
        stack.stop("eventlog_2")


async def wait_for_async(read, good, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not good(await read()):
        assert asyncio.get_running_loop().time() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.2)


async def test_the_replica_taking_over_decides_from_the_state_as_committed(stack, api: Api) -> None:
    """Kill the lease holder mid-load: the replica taking over (which served the workspace
    before, and remembered it then) decides from what was committed since."""
    # One replica serves every partition, and so learns a workspace whose partition it
    # will hand back when a second replica comes (it gives back its highest ones).
    # (Right after another test the first replica may still be taking its partitions back.)
    pid = stack.procs["eventlog"].pid
    await wait_for(
        lambda: all(
            holder is not None and f"/{pid}/" in holder for holder, _ in leases(stack).values()
        ),
        30,
        "one replica holds every partition",
    )
    ((owner, room),) = await workspaces_on(api, {4, 5, 6, 7}, 1)
    maya = await api.add_person(owner, "Maya Chen")
    assert (await api.add_to_room(owner, room, maya.participant_id)).status_code == 200
    await api.say(maya, room, "I am in the room")  # the first replica decides this

    stack.start("eventlog_2")
    stack.wait_ready("eventlog_2")
    try:
        await wait_for(
            lambda: (
                leases(stack)[partition_of(owner.workspace_id)][0] is not None
                and f"/{stack.procs['eventlog_2'].pid}/"
                in (leases(stack)[partition_of(owner.workspace_id)][0] or "")
            ),
            30,
            "the second replica takes the workspace's partition",
        )
        taken_at = leases(stack)[partition_of(owner.workspace_id)][1]
        # The second replica takes Maya out; the first one never saw that.
        assert (await api.remove_from_room(owner, room, maya.participant_id)).status_code == 200

        writer = await Socket.open(stack.gateway_a, owner)
        texts = {f"lease-{i}": f"load {i}" for i in range(150)}

        async def send_all() -> None:
            for k, text in texts.items():
                await writer.write({"type": "message.post", "space_id": room, "text": text}, k)
                await asyncio.sleep(0.005)

        sending = asyncio.create_task(send_all())
        await writer.wait_for(
            lambda f: f["frame"] == "ack" and f["idempotency_key"] == "lease-30", 30
        )
        stack.kill("eventlog_2")  # mid-load, holding the workspace's lease
        await sending
        await wait_for(
            lambda: (
                leases(stack)[partition_of(owner.workspace_id)][1] > taken_at
                and leases(stack)[partition_of(owner.workspace_id)][0] is not None
            ),
            20,
            "the first replica takes the partition back at a new epoch",
        )

        for _ in range(20):  # as a client would: re-send what was not acked
            acked = {f["idempotency_key"] for f in writer.frames if f["frame"] == "ack"}
            missing = [k for k in texts if k not in acked]
            if not missing:
                break
            for k in missing:
                await writer.write({"type": "message.post", "space_id": room, "text": texts[k]}, k)
            await asyncio.sleep(1)
        # Decided from the state as committed: Maya is out, whatever the replica knew. (A
        # 503 means the log was still busy with the backlog: a client sends it again.)
        said = {"type": "message.post", "space_id": room, "text": "am I still in?"}
        for _ in range(10):
            r = await api.post_event(maya, {**said, "idempotency_key": key("maya")})
            if r.status_code != 503:
                break
        body = r.json()
        assert (body.get("code"), "not a member" in body.get("message", "")) == (
            "forbidden",
            True,
        ), body
        acks = {f["idempotency_key"]: f["seq"] for f in writer.frames if f["frame"] == "ack"}
        assert set(acks) == set(texts), f"{len(set(texts) - set(acks))} never acked"
        logged: dict[str, list[int]] = {}
        since = 0
        while True:
            page = await api.read(owner, since=since)
            if not page:
                break
            for event in page:
                if event["type"] == "message.post" and event["text"].startswith("load "):
                    logged.setdefault(event["text"], []).append(event["seq"])
            since = page[-1]["seq"]
        assert all(len(seqs) == 1 for seqs in logged.values()), "an event was logged twice"
        assert {texts[k]: [seq] for k, seq in acks.items()} == logged
        await writer.close()
    finally:
        stack.stop("eventlog_2")  # (already gone when the test got as far as the kill)
