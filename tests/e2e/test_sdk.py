"""The SDK against the real stack: failover mid-stream, writes applied once, disconnect.

Issue 14, Proven by: kill the gateway under an SDK client mid-stream — it reconnects to
the other gateway and loses and repeats nothing, and an unacked write is applied exactly
once; ``chips disconnect`` closes a live socket within a second, and the token is refused
on every gateway after.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chips_sdk import Client, Unauthorized
from tests.e2e.client import Api, Socket

CHIPS = str(Path(sys.executable).parent / "chips")


@pytest.fixture(scope="module")
def gateway_sdk(stack) -> str:
    """A gateway of this module's own, to kill under a client."""
    stack.start("gateway_sdk")
    stack.wait_ready("gateway_sdk")
    return str(stack.url("gateway_sdk"))


async def test_a_killed_gateway_loses_and_repeats_nothing_and_unacked_writes_land_once(
    stack, api: Api, gateway_sdk: str
) -> None:
    owner = await api.create_workspace()
    harness, home = await api.connect_harness(owner, "Scout")
    client = Client([gateway_sdk, stack.gateway_a], harness.token, name="failover")
    seen: list[dict[str, Any]] = []
    target = {"seq": 0}
    caught_up = asyncio.Event()
    events = client.stream()

    async def keep() -> None:
        async for event in events:
            seen.append(event)
            if target["seq"] and event["seq"] >= target["seq"]:
                caught_up.set()

    keeper = asyncio.create_task(keep())
    hello = await client.start()
    first = hello["head_seq"]
    assert hello["server"]["gateway"] == "gateway_sdk"

    async def person_talks() -> list[int]:
        return [await api.say(owner, home, f"person {i}") for i in range(60)]

    talking = asyncio.create_task(person_talks())
    sends = [asyncio.create_task(client.post(home, f"harness {i}")) for i in range(40)]
    await asyncio.sleep(0)  # every write is on the socket (or waiting for it) now
    more = [asyncio.create_task(client.post(home, f"burst {i}")) for i in range(20)]
    stack.kill("gateway_sdk")  # SIGKILL, with writes unanswered
    acks = await asyncio.wait_for(asyncio.gather(*sends, *more), 60)
    person_seqs = await talking

    assert client.reconnects >= 1 and client.resent >= 1
    texts = [f"harness {i}" for i in range(40)] + [f"burst {i}" for i in range(20)]
    logged = await api.read(owner, since=first, space_id=home)
    said = [e["text"] for e in logged if e["type"] == "message.post"]
    for text in texts:
        assert said.count(text) == 1, f"{text!r} logged {said.count(text)} times"
    ack_seqs = {a["seq"] for a in acks}
    assert len(ack_seqs) == len(texts)  # a resent write is answered with its first seq

    target["seq"] = max(max(ack_seqs), max(person_seqs))
    if not (seen and seen[-1]["seq"] >= target["seq"]):
        await asyncio.wait_for(caught_up.wait(), 30)
    everything = [e["seq"] for e in await api.read(harness, since=first)]
    got = [e["seq"] for e in seen]
    assert got == sorted(set(got)), "an event was handed over twice or out of order"
    assert got == everything, "an event was lost in the failover"
    assert client.skipped == 0
    keeper.cancel()
    await client.close()


async def test_chips_disconnect_closes_live_sockets_on_every_gateway_within_a_second(
    stack, api: Api, api_b: Api
) -> None:
    owner = await api.create_workspace()
    harness, home = await api.connect_harness(owner, "Courier")
    client = Client(stack.gateway_b, harness.token, name="courier")
    await client.start()
    watching = await Socket.open(stack.gateway_a, harness)  # hello only: never subscribed
    subscribed = await Socket.open(stack.gateway_b, harness)
    await subscribed.subscribe(harness.workspace_id)

    env = {**os.environ, "CHIPS_URL": stack.gateway_a, "CHIPS_TOKEN": owner.token}
    done = await asyncio.to_thread(
        subprocess.run,
        [CHIPS, "disconnect", "Courier"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Courier is disconnected" in done.stdout

    # Within a second of the command's answer, on both gateways, with a clear reason.
    with pytest.raises(Unauthorized, match="Courier was disconnected"):
        await asyncio.wait_for(client.run_forever(), 1)
    for sock in (subscribed, watching):
        error = await sock.wait_for(lambda f: f["frame"] == "error", timeout=1)
        assert error["code"] == "unauthorized" and "withdrawn" in error["message"]
        assert sock._reader is not None
        await asyncio.wait_for(asyncio.shield(sock._reader), 1)  # it ends when the socket does
        assert sock.conn.close_code == 4401

    # The token is refused everywhere after.
    for gateway in (api, api_b):
        r = await gateway.http.get("/v1/spaces", headers=gateway.auth(harness))
        assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    with pytest.raises(Unauthorized):
        await Client(stack.gateway_a, harness.token).start()


async def test_only_its_owner_or_an_admin_disconnects_a_harness(api: Api) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    harness, _ = await api.connect_harness(owner, "Scout")
    r = await api.http.post(
        f"/v1/harnesses/{harness.participant_id}/disconnect", headers=api.auth(maya)
    )
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    r = await api.http.post("/v1/harnesses/hrn_nobody/disconnect", headers=api.auth(owner))
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await api.http.get("/v1/spaces", headers=api.auth(harness))
    assert r.status_code == 200  # still connected
