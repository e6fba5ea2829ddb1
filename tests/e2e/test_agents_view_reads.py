"""Every read route, as a harness written before agents reads it (docs/product/websocket.md,
Saying you speak agents; docs/adr/0079).

Scout has not declared ``agents``, yet it has an agent in room R, and so does Ledger (which
has declared them). Scout speaks in R as itself, which the door logs as its agent's: a
run with a step, an approval, a lane, a reply on the run and a file. Ledger's agent says
something with a file too. Then every GET route of the gateway is called with Scout's
token: no answer holds its agent's id, nor a participant of kind ``agent``, nor an agent
event; each route that shows what its agent did shows it as Scout's own id (so the check
could fail).

The table must list every GET route the gateway's OpenAPI document has, so a read route
added later joins it or fails ``test_every_read_route_is_in_the_table``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, key
from tests.e2e.test_agents_view import AGENT_EVENTS, declare, new_agent
from tests.e2e.test_attachments import post, uploaded

WORD = "quillwort"  # a word for the search to find, said by Scout's agent and Ledger's


@dataclass
class World:
    owner: Identity
    scout: Identity  # written before agents
    agent: str  # Scout's agent in R
    other: str  # Ledger's agent in R
    room: str
    home: str  # Scout's home, where its lane goes
    run: str
    head: int


Params = Callable[[World], tuple[dict[str, str], dict[str, Any]]]


def room(w: World) -> tuple[dict[str, str], dict[str, Any]]:
    return {"space_id": w.room}, {"after_seq": w.head}


def none(w: World) -> tuple[dict[str, str], dict[str, Any]]:
    return {}, {"after_seq": w.head}


def own(w: World) -> tuple[dict[str, str], dict[str, Any]]:
    return {"harness_id": w.scout.participant_id}, {"after_seq": w.head}


# route → (its parameters, whether it shows what Scout's agent did there).
TABLE: dict[str, tuple[Params, bool]] = {
    "/v1/events": (lambda w: ({}, {"since": 0, "limit": 500}), True),
    "/v1/spaces": (none, False),
    "/v1/spaces/{space_id}": (room, True),
    "/v1/spaces/{space_id}/messages": (room, True),
    "/v1/spaces/{space_id}/context": (lambda w: ({"space_id": w.room}, {}), True),
    "/v1/spaces/{space_id}/runs": (room, True),
    "/v1/spaces/{space_id}/lanes": (room, True),
    "/v1/runs/{run_id}": (lambda w: ({"run_id": w.run}, {"after_seq": w.head}), True),
    "/v1/approvals": (lambda w: ({}, {"after_seq": w.head, "waiting": "false"}), True),
    "/v1/participants": (lambda w: ({}, {}), True),
    "/v1/harnesses/{harness_id}/spaces": (own, False),
    "/v1/harnesses/{harness_id}/usage": (own, False),
    "/v1/harnesses/{harness_id}/policy": (own, False),
    "/v1/invites": (none, False),
    "/v1/devices": (none, False),
    # Sign-in with the team's identity provider (docs/adr/0135): public, of no workspace.
    "/v1/oidc": (lambda w: ({}, {}), False),
    "/v1/me": (lambda w: ({}, {}), False),
    "/v1/oidc/callback": (lambda w: ({}, {"state": "nope", "code": "nope"}), False),
    "/v1/spaces/{space_id}/files": (lambda w: ({"space_id": w.room}, {}), True),
    "/v1/spaces/{space_id}/spend": (lambda w: ({"space_id": w.room}, {}), False),
    "/v1/search": (lambda w: ({}, {"q": WORD, "after_seq": w.head}), True),
    "/v1/uploads/caps": (lambda w: ({}, {}), False),
    # People's own: a harness is refused them (docs/adr/0132).
    "/v1/notifications": (lambda w: ({}, {"filter": "all", "after_seq": w.head}), False),
    "/v1/spaces/{space_id}/notifications": (lambda w: ({"space_id": w.room}, {}), False),
    "/v1/notification-preferences": (lambda w: ({}, {}), False),
    "/v1/push/vapid-public-key": (lambda w: ({}, {}), False),
    "/v1/referee": (lambda w: ({}, {}), False),
    "/v1/attachments/{attachment_id}": (lambda w: ({"attachment_id": "att_nope"}, {}), False),
    "/v1/attachments/{attachment_id}/thumbnail": (
        lambda w: ({"attachment_id": "att_nope"}, {}),
        False,
    ),
}
VARIANTS: dict[str, tuple[Params, bool]] = {
    "/v1/events?space_id": (
        lambda w: ({}, {"since": 0, "limit": 500, "space_id": w.room}),
        True,
    ),
    "/v1/spaces/{space_id}/files?name": (
        lambda w: ({"space_id": w.room}, {"name": "notes.txt"}),
        True,
    ),
}


@pytest.fixture(scope="module")
async def world(stack: Stack) -> World:
    api = Api(stack.gateway_a)
    try:
        owner = await api.create_workspace(owner="Arjun Rao")
        maya = await api.add_person(owner, "Maya Chen")
        scout, home = await api.connect_harness(owner, "Scout")  # written before agents
        ledger, _ = await api.connect_harness(owner, "Ledger")
        await declare(api, owner, ledger, "agents")
        agent = await new_agent(api, scout, "oc", "OpenClaw")
        other = await new_agent(api, ledger, "l1", "Lena")
        room_id = await api.open_space(owner, "Planning", [maya.participant_id])
        for who in (agent, other):
            await api.append(
                owner, {"type": "membership.added", "space_id": room_id, "participant_id": who}
            )
        await api.say(maya, room_id, f"Morning: the {WORD} order?")
        # Scout as itself in R is its one agent there: its run, step, card, lane and words.
        run = key("run_s")
        await api.append(
            scout, {"type": "run.started", "run_id": run, "space_id": room_id, "goal": "Order"}
        )
        await api.append(
            scout, {"type": "step.log", "run_id": run, "step_id": "stp_1", "status": "started"}
        )
        await api.append(
            scout,
            {
                "type": "approval.request",
                "approval_id": key("perm"),
                "run_id": run,
                "action": "scout.pay",
            },
        )
        await api.append(
            scout,
            {
                "type": "lane.opened",
                "lane_id": key("lane_s"),
                "run_id": run,
                "to_space_id": home,
                "task": {"goal": "Check the stock", "autonomy": "act"},
            },
        )
        await api.append(
            scout,
            {"type": "message.post", "space_id": room_id, "run_id": run, "text": f"{WORD} done"},
        )
        upload = await uploaded(api, scout, b"what Scout found", "notes.txt")
        await api.append(scout, post(room_id, [upload], "the notes"))
        theirs = await uploaded(api, ledger, b"what Ledger found", "ledger.txt")
        head = await api.append(ledger, post(room_id, [theirs], f"{WORD} too"))
        for _ in range(600):  # the read models and the index hold it all before any read
            r = await api.http.get(
                "/v1/search", params={"q": WORD, "after_seq": head}, headers=api.auth(owner)
            )
            runs = await api.http.get(
                f"/v1/spaces/{room_id}/runs", params={"after_seq": head}, headers=api.auth(owner)
            )
            if r.status_code == 200 and runs.json()["as_of_seq"] >= head:
                break
        else:
            raise AssertionError("the read models did not reach the last event")
        return World(owner, scout, agent, other, room_id, home, run, head)
    finally:
        await api.close()


async def test_every_read_route_is_in_the_table(api: Api) -> None:
    document = (await api.http.get("/openapi.json")).json()
    reads = {path for path, methods in document["paths"].items() if "get" in methods}
    assert reads == set(TABLE), f"add to TABLE: {reads - set(TABLE)}; gone: {set(TABLE) - reads}"


@pytest.mark.parametrize("route", [*TABLE, *VARIANTS])
async def test_a_harness_before_agents_reads_its_agents_as_itself(
    api: Api, world: World, route: str
) -> None:
    params_of, shows = {**TABLE, **VARIANTS}[route]
    path_params, query = params_of(world)
    path = route.split("?")[0].format(**path_params)
    r = await api.http.get(path, params=query, headers=api.auth(world.scout))
    assert r.status_code < 500, r.text
    assert world.agent not in r.text, f"{route} shows Scout its agent: {r.text[:600]}"
    assert '"agent"' not in r.text, f"{route} shows Scout a participant of kind agent"
    for event_type in AGENT_EVENTS:
        assert f'"{event_type}"' not in r.text, f"{route} sends Scout {event_type}"
    if shows:
        assert r.status_code == 200, r.text
        assert world.scout.participant_id in r.text, f"{route} did not show Scout's doing"


async def test_what_scout_s_agent_did_reads_as_scout_s(api: Api, world: World) -> None:
    """The translation is right, not only silent: the run, its words, the file and the
    search hit are Scout's; Ledger's agent is a participant of kind harness."""
    me = world.scout.participant_id
    r = await api.http.get(
        f"/v1/runs/{world.run}", params={"after_seq": world.head}, headers=api.auth(world.scout)
    )
    run = r.json()
    assert (run["harness_id"], run["agent_id"]) == (me, me)
    assert [m["author_id"] for m in run["messages"]] == [me]
    r = await api.http.get(f"/v1/spaces/{world.room}/files", headers=api.auth(world.scout))
    by = {f["name"]: f["by"] for f in r.json()["files"]}
    assert (by["notes.txt"]["id"], by["notes.txt"]["kind"]) == (me, "harness")
    assert (by["ledger.txt"]["id"], by["ledger.txt"]["kind"]) == (world.other, "harness")
    r = await api.http.get(
        "/v1/search", params={"q": WORD, "after_seq": world.head}, headers=api.auth(world.scout)
    )
    authors = {h["author_id"] for h in r.json()["hits"]}
    assert me in authors and world.other in authors
    # Whoever speaks agents reads the agent: the owner sees the run's agent as itself.
    r = await api.http.get(
        f"/v1/runs/{world.run}", params={"after_seq": world.head}, headers=api.auth(world.owner)
    )
    assert (r.json()["harness_id"], r.json()["agent_id"]) == (me, world.agent)
