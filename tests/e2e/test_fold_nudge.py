"""A read that waits for a seq has the projector, search and the notifier fold it at once
(docs/adr/0168).

The projector holds posts, and search every event, to fold them together a moment later;
search and the notifier ask the stream for events only that often while they come
(``CHIPS_CONSUMER_HOLD_SECONDS``). Here the three are started again holding for a minute, far
longer than a read waits for its seq (``CHIPS_READ_YOUR_WRITES_TIMEOUT_SECONDS``, 5 s):
a read that asks for the seq of a post just made still finds it, as of that seq, because
the gateway asks the holding consumer for the workspace while the read waits. Without the
ask the read would give up after its wait and answer without the post. (Search's sweep,
and the notifier's, which fold a workspace left behind, are slowed to a minute too.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api

HELD = ("projector", "search", "notifier")


@pytest.fixture(scope="module")
def holding(stack: Stack) -> Iterator[Stack]:
    """The suite's stack with the projector, search and the notifier holding for a minute,
    put back as it was afterwards."""
    before = {service: dict(stack.extra_env.get(service, {})) for service in HELD}
    try:
        for service in HELD:
            stack.extra_env[service] = {
                **before[service],
                "CHIPS_CONSUMER_HOLD_SECONDS": "60",
                # Search's and the notifier's sweeps would fold what waits on their own a
                # second or two later.
                "CHIPS_SEARCH_SWEEP_SECONDS": "60",
                "CHIPS_NOTIFIER_SWEEP_SECONDS": "60",
            }
            stack.restart(service)
        yield stack
    finally:
        for service in HELD:
            stack.extra_env[service] = before[service]
            stack.restart(service)


@pytest.mark.timeout(180)  # three services are started again, twice
async def test_a_read_asking_for_a_held_post_has_it_folded_at_once(
    holding: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Held")
    first = await api.say(owner, room, "the heron waits by the weir")
    second = await api.say(owner, room, "a second heron joins it")

    r = await api.http.get(
        f"/v1/spaces/{room}/messages", params={"after_seq": second}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["as_of_seq"] >= second, "the projector folded the held posts when asked"
    assert [m["seq"] for m in page["messages"] if m["seq"] in (first, second)] == [
        first,
        second,
    ]

    r = await api.http.get("/v1/search", params={"q": "heron"}, headers=api.auth(owner))
    assert r.status_code == 200, r.text
    found = r.json()
    assert found["as_of_seq"] >= second, "search folded to the log's head when asked"
    assert sorted(h["seq"] for h in found["hits"]) == [first, second]

    # A later post in the same workspace, asked for by seq: asked for again, folded again.
    third = await api.say(owner, room, "and the herons leave")
    r = await api.http.get(
        "/v1/search", params={"q": "leave", "after_seq": third}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    assert [h["seq"] for h in r.json()["hits"]] == [third]


async def test_a_read_of_notifications_asking_for_a_seq_has_the_notifier_ask_at_once(
    holding: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    harness, room = await api.connect_harness(owner, "Ledger")
    run = f"run_{owner.workspace_id[-8:]}"
    await api.append(
        harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "pay"}
    )
    head = await api.append(
        harness,
        {
            "type": "approval.request",
            "approval_id": f"apv_{owner.workspace_id[-8:]}",
            "run_id": run,
            "action": "ledger.pay",
            "preview": "pay the invoice",
        },
    )
    r = await api.http.get("/v1/notifications", params={"after_seq": head}, headers=api.auth(owner))
    assert r.status_code == 200, r.text
    inbox = r.json()
    assert inbox["as_of_seq"] >= head, "the notifier asked for the events when asked"
    assert [n["kind"] for n in inbox["notifications"]] == ["approval"]
