"""hello lists what a harness declared (docs/product/websocket.md, Saying you speak agents: "hello
lists your agents"; the capabilities are the harness's, as harness.declared recorded)."""

from __future__ import annotations

from tests.e2e.client import Api, Socket


async def test_hello_lists_the_capabilities_a_harness_declared(stack, api: Api) -> None:
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_a, scout)
    assert sock.hello_frame is not None
    assert sock.hello_frame["harness"]["capabilities"] == []
    await sock.close()
    await api.append(
        owner,
        {
            "type": "harness.declared",
            "harness_id": scout.participant_id,
            "capabilities": ["new_spaces", "follows_rooms"],
        },
    )
    sock = await Socket.open(stack.gateway_b, scout)
    assert sock.hello_frame is not None
    assert sock.hello_frame["harness"]["capabilities"] == ["follows_rooms", "new_spaces"]
    await sock.close()
