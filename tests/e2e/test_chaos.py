"""A bounded chaos run: mixed traffic while every service is SIGKILLed and started in turn.

People and a harness post (every tenth post with a file) through one gateway while a
watcher follows the workspace on the other, resuming by seq whenever its socket goes; a
scheduler kills each service in turn (both of the eventlog's replicas, the projector,
search, the referee, attachments, the watcher's gateway, a node of the three-node NATS
cluster, then Postgres) and starts it again. Then a checker in the Jepsen style reads the
log and every derived table and prints its figures:

- 0 acknowledged writes lost, 0 logged twice, 0 gaps in the seqs;
- the read models and the search index equal a rebuild from the log, the referee's rooms
  equal what it folds again, and no words were handed to a lead twice;
- the watcher saw every acknowledged event once, in seq order, across its resumes;
- every file whose upload was answered is fetched whole.

``CHIPS_CHAOS_ROUNDS`` (default 1) runs the kill schedule more times, for a longer run.
The run has a stack of its own: a Postgres it started, which the schedule restarts last
(immediate shutdown: every connection cut), and a NATS cluster of three nodes keeping
every stream on all of them, as deploy/k8s runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api, Identity, Socket, key
from tests.e2e.test_attachments import PDF, post
from tests.e2e.test_consumer_kills import referee_at, referee_rooms, settled_upload
from tests.e2e.test_lead import crew, forget_workspace, led_room, logged

VICTIMS = (
    "eventlog",
    "projector",
    "search",
    "eventlog_2",
    "referee",
    "attachments",
    "gateway_b",
    "infra-nats-1",
    "postgres",
)
ROUNDS = int(os.environ.get("CHIPS_CHAOS_ROUNDS", "1"))


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """A stack of the module's own, on a Postgres it started (so it may restart it) and a
    NATS cluster of three nodes, with a second replica of the eventlog."""
    with local_stack(
        prefix="chips-chaos-",
        own_postgres=True,
        nats_nodes=3,
        env=UNLIMITED,
        extra_env={"referee": {"CHIPS_LEAD_HANDOFF_SECONDS": "2"}},
    ) as running:
        running.start("eventlog_2")
        running.wait_ready("eventlog_2")
        try:
            yield running
        finally:
            running.stop("eventlog_2")


async def post_until_acked(api: Api, who: Identity, event: dict[str, Any]) -> int:
    """Send with one key until acknowledged (503s and lost answers are sent again)."""
    k = key("chaos")
    for _ in range(120):
        try:
            r = await api.post_event(who, {**event, "idempotency_key": k})
        except httpx.HTTPError:
            await asyncio.sleep(0.5)
            continue
        if r.status_code == 200:
            return int(r.json()["seq"])
        assert r.status_code == 503 and r.json()["code"] == "unavailable", r.text
        await asyncio.sleep(float(r.headers.get("Retry-After", "1")) / 2)
    raise AssertionError("never acknowledged")


class Watcher:
    """A person's socket on gateway B that resumes from its last seq whenever it goes."""

    def __init__(self, stack: Stack, who: Identity) -> None:
        self.stack, self.who = stack, who
        self.seen: list[int] = []
        self.resumes = 0
        self.resumed_at: list[int] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            try:
                sock = await Socket.open(self.stack.gateway_b, self.who)
                await sock.subscribe(self.who.workspace_id, since=self.seen[-1] if self.seen else 0)
            except Exception:  # the gateway is down: try again
                await asyncio.sleep(0.5)
                continue
            taken = 0
            while not sock.closed and not self.stop.is_set():
                events = sock.events()
                self.seen += [e["seq"] for e in events[taken:]]
                taken = len(events)
                await asyncio.sleep(0.1)
            events = sock.events()
            self.seen += [e["seq"] for e in events[taken:]]
            with contextlib.suppress(Exception):
                await sock.close()
            self.resumes += 1
            self.resumed_at.append(self.seen[-1] if self.seen else 0)


@pytest.mark.timeout(900)
async def test_chaos_loses_repeats_and_reorders_nothing(stack: Stack, api: Api) -> None:
    c = await crew(stack, api)
    maya = await api.add_person(c.owner, "Maya Chen")
    rooms = [await led_room(api, c, f"Room {i}") for i in range(2)]
    for room in rooms:
        added = await api.add_to_room(c.owner, room.id, maya.participant_id)
        assert added.status_code in (200, 201), added.text
    trigger = await api.open_space(c.owner, "Trigger", [c.scout.participant_id])
    writers = [c.owner, maya, c.scout]
    acked: dict[str, int] = {}
    files: dict[str, bytes] = {}
    running = asyncio.Event()
    running.set()

    async def write(n: int) -> None:
        who = writers[n % 3]
        i = 0
        while running.is_set():
            room = rooms[i % 2].id
            text = f"chaos {n} {i}"
            acked[text] = await post_until_acked(
                api, who, {"type": "message.post", "space_id": room, "text": text}
            )
            if n == 0 and i % 10 == 0:
                data = PDF + f"% chaos {i}\n".encode()
                upload_id = await settled_upload(api, c.owner, data, f"c{i}.pdf")
                await post_until_acked(api, c.owner, post(room, [upload_id], f"file {i}"))
                files[upload_id] = data
            i += 1

    watcher = Watcher(stack, c.owner)
    watching = asyncio.create_task(watcher.run())
    load = [asyncio.create_task(write(n)) for n in range(3)]
    killed = []
    for _ in range(ROUNDS):
        for victim in VICTIMS:
            floor = len(acked) + 15
            while len(acked) < floor:
                assert not any(t.done() for t in load), [t for t in load if t.done()]
                await asyncio.sleep(0.05)
            if victim == "postgres":  # cut as a crash or a failover does, then started
                stack.stop_postgres()
                await asyncio.sleep(2)
                await asyncio.to_thread(stack.start_postgres)
            elif victim.startswith("infra-nats"):  # a node of the cluster, SIGKILLed
                node = stack.procs[victim]
                node.kill()
                await asyncio.sleep(2)
                node.start()
                await asyncio.to_thread(stack.wait_nats_healthy)
            else:
                stack.kill(victim)  # SIGKILL
                await asyncio.sleep(0.5)
                stack.start(victim)
                await asyncio.to_thread(stack.wait_ready, victim)
            killed.append(victim)
    running.clear()
    await asyncio.wait_for(asyncio.gather(*load), 120)

    # The checker.
    log: list[dict[str, Any]] = []
    while page := await api.read(c.owner, since=log[-1]["seq"] if log else 0):
        log.extend(page)
    head = log[-1]["seq"]
    seqs = [e["seq"] for e in log]
    gaps = len(set(range(1, head + 1)) - set(seqs))
    logged_posts = Counter(e["text"] for e in log if e["type"] == "message.post")
    lost = [t for t in acked if logged_posts[t] == 0]
    twice = [t for t in acked if logged_posts[t] > 1]
    wrong_seq = [t for t, s in acked.items() if logged_posts[t] == 1 and s not in seqs]

    for _ in range(600):  # up to a minute for the watcher to reach the head
        if watcher.seen and watcher.seen[-1] >= head:
            break
        await asyncio.sleep(0.1)
    reached = bool(watcher.seen) and watcher.seen[-1] >= head
    watcher.stop.set()
    await watching
    delivered = watcher.seen
    unseen = sorted(set(acked.values()) - set(delivered))
    repeated = len(delivered) - len(set(delivered))
    disordered = sum(1 for a, b in itertools.pairwise(delivered) if b <= a)

    broken_files = []
    for upload_id, data in files.items():
        got = await api.http.get(f"/v1/attachments/{upload_id}", headers=api.auth(c.owner))
        if got.status_code != 200 or got.content != data:
            broken_files.append(upload_id)

    await asyncio.sleep(3)  # the lead's quiet spell runs out
    seq = await post_until_acked(
        api, c.scout, {"type": "message.post", "space_id": trigger, "text": "a"}
    )
    await referee_at(stack, c.owner.workspace_id, seq)
    rooms_before = referee_rooms(stack, c.owner.workspace_id, trigger)
    stack.kill("referee")
    try:
        forget_workspace(stack, c.owner.workspace_id)
    finally:
        stack.start("referee")
        stack.wait_ready("referee")
    seq = await post_until_acked(
        api, c.scout, {"type": "message.post", "space_id": trigger, "text": "b"}
    )
    await referee_at(stack, c.owner.workspace_id, seq)
    referee_rebuilt = referee_rooms(stack, c.owner.workspace_id, trigger) == rooms_before
    handed = [e["message_id"] for e in await logged(api, c.owner, "lead.handed")]
    handed_twice = len(handed) - len(set(handed))

    # Read models and the index equal a rebuild from the log, once the log is still (the
    # referee's last words are in) and they hold all of it.
    still = await api.head(c.owner)
    await api.lines(c.owner, trigger, after_seq=still)
    found = await api.http.get(
        "/v1/search", params={"q": "chaos", "after_seq": still}, headers=api.auth(c.owner)
    )
    assert found.status_code == 200, found.text
    assert await api.head(c.owner) == still, "the log moved while the read models were compared"
    projector = stack.run_module("chips_projector", "digest").strip()
    stack.run_module("chips_projector", "rebuild")
    projector_rebuilt = stack.run_module("chips_projector", "digest").strip() == projector
    index = stack.run_module("chips_search", "digest").strip()
    stack.run_module("chips_search", "rebuild")
    index_rebuilt = stack.run_module("chips_search", "digest").strip() == index

    print(
        f"chaos: killed {killed}; {len(acked)} acked writes, {len(files)} files, head {head};"
        f" lost {len(lost)}, duplicated {len(twice)}, wrong seq {len(wrong_seq)}, gaps {gaps};"
        f" watcher resumed {watcher.resumes}x, unseen {len(unseen)}, repeated {repeated},"
        f" out of order {disordered} (unseen {unseen[:30]}, resumed after {watcher.resumed_at},"
        f" reached the head {reached}); projector == rebuild {projector_rebuilt},"
        f" index == rebuild {index_rebuilt}, referee == refold {referee_rebuilt},"
        f" handed twice {handed_twice}, broken files {len(broken_files)}"
    )
    assert (len(lost), len(twice), len(wrong_seq), gaps) == (0, 0, 0, 0)
    assert (len(unseen), repeated, disordered) == (0, 0, 0)
    assert projector_rebuilt and index_rebuilt and referee_rebuilt
    assert handed_twice == 0 and broken_files == []
    for sock in c.socks.values():
        await sock.close()
