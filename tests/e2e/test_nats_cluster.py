"""A lost NATS node: a three-node JetStream cluster, R3 streams, one node SIGKILLed and
restarted mid-load (as deploy/k8s runs it, docs/adr/0041).

Writers append over HTTP as a careful client does: an answer of 503 or no answer is sent
again with the same key until it is acked. The history is then checked against the log
of record: no acked append lost or logged twice, no gap in the workspace's seqs, and a
socket subscribed before the fault is delivered every event. A Jepsen-style summary of
the history is printed.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api, Identity, Socket

WRITERS = 4
PER_WRITER = 150


@pytest.fixture(scope="module")
def cluster() -> Iterator[Stack]:
    with local_stack(
        prefix="chips-e2e-cluster-", gateways=2, nats_nodes=3, env=UNLIMITED
    ) as running:
        yield running


@dataclass
class History:
    attempts: int = 0
    failed_attempts: int = 0
    acked: dict[str, int] = field(default_factory=dict)  # key -> seq
    started: float = field(default_factory=time.monotonic)
    ack_gaps: list[float] = field(default_factory=list)
    last_ack: float = field(default_factory=time.monotonic)


async def write_until_acked(
    api: Api, who: Identity, space_id: str, text: str, history: History
) -> None:
    event = {"type": "message.post", "space_id": space_id, "text": text, "idempotency_key": text}
    for _ in range(60):
        history.attempts += 1
        try:
            r = await api.http.post("/v1/events", json=event, headers=api.auth(who), timeout=15)
        except httpx.HTTPError:
            r = None
        if r is not None and r.status_code == 200:
            history.acked[text] = r.json()["seq"]
            now = time.monotonic()
            history.ack_gaps.append(now - history.last_ack)
            history.last_ack = now
            return
        assert r is None or r.status_code == 503, r.text
        history.failed_attempts += 1
        await asyncio.sleep(0.2)
    raise AssertionError(f"{text} was never acked")


async def test_a_killed_nats_node_loses_and_repeats_nothing(cluster: Stack) -> None:
    api = Api(cluster.gateway_a)
    api_b = Api(cluster.gateway_b)
    try:
        owner = await api.create_workspace()
        _, space_id = await api.connect_harness(owner, "Scout")
        head = await api.head(owner)
        watcher = await Socket.open(cluster.gateway_b, owner)
        await watcher.subscribe(owner.workspace_id, since=head)
        history = History()
        halfway = asyncio.Event()

        async def writer(n: int) -> None:
            client = api if n % 2 == 0 else api_b
            for i in range(PER_WRITER):
                await write_until_acked(client, owner, space_id, f"w{n}-{i}", history)
                if len(history.acked) >= WRITERS * PER_WRITER // 3:
                    halfway.set()

        writing = [asyncio.create_task(writer(n)) for n in range(WRITERS)]
        await asyncio.wait_for(halfway.wait(), 120)
        victim = cluster.procs["infra-nats-1"]
        os.kill(victim.pid, 9)
        victim.popen.wait(5)  # type: ignore[union-attr]
        acked_at_kill = len(history.acked)
        # Load goes on while the node is down: wait for a third more acks, then restart it.
        while len(history.acked) < acked_at_kill + WRITERS * PER_WRITER // 3:
            if all(t.done() for t in writing):
                break
            await asyncio.sleep(0.05)
        victim.start()
        await asyncio.wait_for(asyncio.gather(*writing), 300)

        # The log of record against the history.
        events = await read_all(api, owner, head)
        said = [e["text"] for e in events if e["type"] == "message.post"]
        keys = [f"w{n}-{i}" for n in range(WRITERS) for i in range(PER_WRITER)]
        lost = [k for k in keys if k in history.acked and k not in said]
        duplicated = sorted({t for t in said if said.count(t) > 1})
        seqs = [e["seq"] for e in events]
        gaps = [b for a, b in itertools.pairwise(seqs) if b != a + 1]
        by_seq = {e["seq"]: e["text"] for e in events if e["type"] == "message.post"}
        wrong_seq = [k for k, s in history.acked.items() if by_seq.get(s) != k]
        print(
            "\nJepsen-style history: "
            f"attempts={history.attempts} failed_attempts={history.failed_attempts} "
            f"acked={len(history.acked)}/{len(keys)} lost={len(lost)} "
            f"duplicated={len(duplicated)} gaps={len(gaps)} acked_at_wrong_seq={len(wrong_seq)} "
            f"longest_ack_gap={max(history.ack_gaps):.2f}s "
            f"elapsed={time.monotonic() - history.started:.1f}s"
        )
        assert len(history.acked) == len(keys)
        assert not lost and not duplicated and not gaps and not wrong_seq

        # Delivery went on: the socket subscribed before the fault got every event.
        await watcher.wait_for_seq(seqs[-1], timeout=60)
        delivered = [s for s in watcher.seqs() if s > head]
        assert delivered == seqs, "the watcher missed or repeated an event"
        await watcher.close()

        # Everything reconnected by itself and is ready, the restarted node too.
        for name in ("gateway_a", "gateway_b", "eventlog", "projector"):
            r = await api.http.get(f"{cluster.url(name)}/readyz", timeout=5)
            assert r.status_code == 200, (name, r.text)
    finally:
        await api.close()
        await api_b.close()


async def read_all(api: Api, who: Identity, since: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    while True:
        r = await api.http.get(
            "/v1/events", params={"since": since, "limit": 500}, headers=api.auth(who)
        )
        assert r.status_code == 200, r.text
        body = r.json()
        out.extend(body["events"])
        if body["next_since"] == since:
            return out
        since = body["next_since"]
