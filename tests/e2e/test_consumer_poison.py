"""A poison event in each consumer of the log: set aside after its cap, and everything
else goes on (docs/adr/0148).

Each of the projector, search, the referee, attachments and the notifier is started again
with the test hook ``CHIPS_TEST_FOLD_FAILS_IN`` naming a room: every event in that room
fails its fold in that consumer, as an event its fold cannot take would. One such event is
logged, then one in another room of the same workspace and one in another workspace. The
consumer tries the poison's workspace again with a growing delay, sets the event aside on
the dead-letter stream once it has failed its cap of deliveries (with why, where from, and
how often it was tried), reads past it, and folds what follows; the other workspace is
folded meanwhile. The attachments service acts on erasures only: its events are erasures.
The notifier acts only on what may notify somebody (``rules.may_act``): the poison event
mentions a person in its room.

The module runs on a stack of its own: an event set aside is, by design, missing from that
consumer's read model until someone fixes the cause and rebuilds, and the suite's shared
stack is compared with rebuilds by other tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import nats
import psycopg
import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from chips_common.nats.streams import Names
from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api, Identity

CAP = 3


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """This module's own stack, in place of the suite's (see above)."""
    with local_stack(gateways=1, env=UNLIMITED) as running:
        yield running


CHECKPOINTS = {
    "projector": "projector_checkpoints",
    "search": "search_checkpoints",
    "referee": "referee_checkpoints",
    "attachments": "attachments_checkpoints",
    "notifier": "notifier_checkpoints",
}


def database(stack: Stack) -> str:
    return stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)


def checkpoint(stack: Stack, service: str, workspace_id: str) -> int:
    with psycopg.connect(database(stack)) as conn:
        row = conn.execute(
            f"SELECT seq FROM {CHECKPOINTS[service]} WHERE workspace_id = %s",
            (workspace_id,),
        ).fetchone()
    return int(row[0]) if row is not None else 0


async def folded_to(stack: Stack, service: str, workspace_id: str, seq: int) -> None:
    deadline = asyncio.get_running_loop().time() + 90
    while (at := checkpoint(stack, service, workspace_id)) < seq:
        assert asyncio.get_running_loop().time() < deadline, f"{service} is at {at}, not {seq}"
        await asyncio.sleep(0.1)


async def dead_letters(stack: Stack) -> list[Any]:
    """Every message on the dead-letter stream."""
    names = Names("CHIPS", "chips")  # the e2e stack's, the defaults
    nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
    try:
        js = nc.jetstream()
        found: list[Any] = []
        with contextlib.suppress(NotFoundError):
            sub = await js.pull_subscribe(
                names.dead_letter_subject,
                stream=names.dead_letter_stream,
                config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
            )
            while True:
                try:
                    batch = await sub.fetch(256, timeout=1)
                except TimeoutError:
                    break
                found += batch
                for msg in batch:
                    await msg.ack()
            await sub.unsubscribe()
        return found
    finally:
        await nc.close()


async def act(api: Api, service: str, who: Identity, space_id: str, text: str) -> int:
    """The event this consumer acts on, in ``space_id``: an erasure for attachments, a
    post for the others. Its seq."""
    if service == "attachments":
        r = await api.http.delete(f"/v1/spaces/{space_id}", headers=api.auth(who))
        assert r.status_code == 200, r.text
        return int(r.json()["seq"])
    return await api.say(who, space_id, text)


@pytest.mark.timeout(400)  # the consumer is started again twice
@pytest.mark.parametrize("service", sorted(CHECKPOINTS))
async def test_a_poison_event_is_set_aside_after_its_cap_and_the_rest_goes_on(
    stack: Stack, api: Api, service: str
) -> None:
    owner = await api.create_workspace()
    bea = await api.add_person(owner, "Bea")
    poison_room = await api.open_space(owner, "Poison", members=[bea.participant_id])
    next_room = await api.open_space(owner, "Next")
    other = await api.create_workspace()
    other_room = await api.open_space(other, "Elsewhere")
    # Started again with the hook on, past everything logged so far in these workspaces:
    # what it still has to fold of them fails only in the poison room.
    before = dict(stack.extra_env.get(service, {}))
    stack.extra_env[service] = {
        **before,
        "CHIPS_TEST_FOLD_FAILS_IN": poison_room,
        "CHIPS_CONSUMER_MAX_ATTEMPTS": str(CAP),
        "CHIPS_CONSUMER_FIRST_DELAY_SECONDS": "0.05",
    }
    try:
        stack.restart(service)
        bad = await act(api, service, owner, poison_room, "@Bea this one fails its fold")
        after = await act(api, service, owner, next_room, "the same workspace goes on")
        elsewhere = await act(api, service, other, other_room, "another workspace goes on")

        await folded_to(stack, service, other.workspace_id, elsewhere)
        await folded_to(stack, service, owner.workspace_id, after)

        ours = [
            m
            for m in await dead_letters(stack)
            if m.headers
            and m.headers.get("Chips-Consumer") == service
            and m.headers.get("Chips-Workspace") == owner.workspace_id
        ]
        assert len(ours) == 1, [m.headers for m in ours]
        [dead] = ours
        event = json.loads(dead.data)
        assert (event["seq"], event["space_id"]) == (bad, poison_room)
        assert dead.headers["Chips-Seq"] == str(bad)
        assert dead.headers["Chips-Deliveries"] == str(CAP), "set aside at its cap, not before"
        assert "CHIPS_TEST_FOLD_FAILS_IN" in dead.headers["Chips-Dead-Reason"]
        assert dead.headers["Chips-Subject"].endswith(f".{owner.workspace_id}")
    finally:
        stack.extra_env[service] = before
        stack.restart(service)
