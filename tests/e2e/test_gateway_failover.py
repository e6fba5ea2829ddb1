"""Gateways scale out and fail over: a client resumes on another with since.

Issue 6: three gateways, clients spread across them, one killed mid-traffic; its
clients reconnect to another with since, and nobody misses or repeats an event.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.client import Api, Identity, Socket


@pytest.fixture(scope="module")
def gateway_c(stack) -> str:
    stack.start("gateway_c")
    stack.wait_ready("gateway_c")
    return str(stack.url("gateway_c"))


class Follower:
    """A client that keeps every event it is sent and, when its socket dies, resumes elsewhere."""

    def __init__(self, who: Identity, gateways: list[str], home: int) -> None:
        self.who = who
        self.gateways = gateways
        self.home = home
        self.seqs: list[int] = []
        self.reconnects = 0
        self.following = asyncio.Event()  # its first socket is subscribed

    async def follow(self, until_seq: asyncio.Future[int]) -> None:
        attempt = self.home
        since = 0
        while True:
            try:
                sock = await Socket.open(self.gateways[attempt % len(self.gateways)], self.who)
            except OSError:
                attempt += 1
                await asyncio.sleep(0.1)
                continue
            await sock.subscribe(self.who.workspace_id, since=since)
            await sock.attached()
            self.following.set()
            while not sock.closed:
                await asyncio.sleep(0.05)
                if until_seq.done() and sock.seqs() and sock.seqs()[-1] >= until_seq.result():
                    self.seqs.extend(sock.seqs())
                    await sock.close()
                    return
            self.seqs.extend(sock.seqs())
            since = self.seqs[-1] if self.seqs else since
            self.reconnects += 1
            attempt += 1


async def test_a_gateway_killed_mid_traffic_loses_and_repeats_nothing(
    stack, api: Api, gateway_c: str
) -> None:
    owner = await api.create_workspace()
    harnesses = [(await api.connect_harness(owner, f"Bot {i}"))[0] for i in range(6)]
    room = await api.open_space(owner, "Busy room", [h.participant_id for h in harnesses])
    gateways = [stack.gateway_a, stack.gateway_b, gateway_c]
    followers = [Follower(h, gateways, i) for i, h in enumerate(harnesses)]
    last: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    following = [asyncio.create_task(f.follow(last)) for f in followers]
    await asyncio.wait_for(asyncio.gather(*(f.following.wait() for f in followers)), 30)

    writer = await Socket.open(stack.gateway_a, owner)
    keys = []
    for i in range(300):
        keys.append(await writer.write({"type": "message.post", "space_id": room, "text": f"m{i}"}))
        if i == 100:
            stack.kill("gateway_c")  # SIGKILL: its sockets drop without a goodbye
        await asyncio.sleep(0.005)
    acks = [await writer.answer(k, timeout=30) for k in keys]
    assert all(a["frame"] == "ack" for a in acks)
    last.set_result(max(a["seq"] for a in acks))
    await asyncio.wait_for(asyncio.gather(*following), 60)

    posted = {a["seq"] for a in acks}
    for follower in followers:
        assert len(follower.seqs) == len(set(follower.seqs)), "an event was delivered twice"
        assert follower.seqs == sorted(follower.seqs), "events came out of order"
        assert posted <= set(follower.seqs), "an event was missed"
    moved = [f for f in followers if f.home % 3 == 2]
    assert moved and all(f.reconnects >= 1 for f in moved), "gateway C's clients moved"
    await writer.close()
