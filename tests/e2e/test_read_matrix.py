"""Every read route × every kind of reader: nothing said in a room reaches a non-member.

The room R is set up with a member person, a member harness, a person and a harness that
were in it and were taken out, a person of the workspace who never was, and a person of
another workspace. After the two left, R is retitled and spoken in, a run is started in
it and asks an approval, each carrying a secret. Then every GET route of the gateway is
called as each reader: no non-member's answer holds a secret, and each route that shows
the room shows the secrets to its members (so the check could fail).

The table below must list every GET route the gateway's OpenAPI document has: a route
added without joining the table fails ``test_every_read_route_is_in_the_matrix``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, key

SECRET = "SECRET-7f3a"


@dataclass
class World:
    owner: Identity  # a member (the room's owner)
    harness: Identity  # a member harness
    ex_person: Identity
    ex_harness: Identity  # opened R by key, then taken out
    stranger: Identity  # in the workspace, never in R
    outsider: Identity  # another workspace's person
    room: str
    run: str
    head: int


def member_of(w: World) -> list[str]:
    return ["owner", "harness"]


# route → (path params and query for a reader, whether a member's answer shows the secrets).
Params = Callable[[World, Identity], tuple[dict[str, str], dict[str, Any]]]


def room(w: World, _: Identity) -> tuple[dict[str, str], dict[str, Any]]:
    return {"space_id": w.room}, {"after_seq": w.head}


def none(w: World, _: Identity) -> tuple[dict[str, str], dict[str, Any]]:
    return {}, {"after_seq": w.head}


def harness_of(w: World, who: Identity) -> tuple[dict[str, str], dict[str, Any]]:
    # A harness reads its own; a person, the harness that was taken out of R.
    own = who.participant_id if who.kind == "harness" else w.ex_harness.participant_id
    return {"harness_id": own}, {"after_seq": w.head}


MATRIX: dict[str, tuple[Params, bool]] = {
    "/v1/events": (lambda w, _: ({}, {"since": 0, "limit": 500}), True),
    "/v1/spaces": (none, True),
    "/v1/spaces/{space_id}": (room, True),
    "/v1/spaces/{space_id}/messages": (room, True),
    "/v1/spaces/{space_id}/context": (lambda w, _: ({"space_id": w.room}, {}), True),
    "/v1/spaces/{space_id}/runs": (room, True),
    "/v1/spaces/{space_id}/lanes": (room, False),
    "/v1/runs/{run_id}": (lambda w, _: ({"run_id": w.run}, {"after_seq": w.head}), True),
    "/v1/approvals": (lambda w, _: ({}, {"after_seq": w.head, "waiting": "false"}), True),
    "/v1/participants": (lambda w, _: ({}, {}), False),
    "/v1/harnesses/{harness_id}/spaces": (harness_of, False),
    "/v1/harnesses/{harness_id}/usage": (harness_of, False),
    # The dial and its rules: the harness's owner's read, or the harness's own.
    "/v1/harnesses/{harness_id}/policy": (harness_of, False),
    "/v1/spaces/{space_id}/files": (lambda w, _: ({"space_id": w.room}, {}), False),
    # Figures only: what the room's job has spent, its ceiling and its runs' costs.
    "/v1/spaces/{space_id}/spend": (lambda w, _: ({"space_id": w.room}, {}), False),
    # A search for a word of the line said after they left: its snippet holds the secret.
    "/v1/search": (lambda w, _: ({}, {"q": "words", "after_seq": w.head}), True),
    # The owner's open invites (an email with the secret) and own devices (an API key
    # named with it, docs/adr/0125): an owner's or admin's read, or one's own.
    "/v1/invites": (lambda w, _: ({}, {}), True),
    "/v1/devices": (lambda w, _: ({}, {}), True),
    # The inbox (docs/adr/0132): the owner is told of the approval, whose preview holds
    # the secret; nobody else is told of it, and a room's mute is its members' alone.
    "/v1/notifications": (lambda w, _: ({}, {"filter": "all", "after_seq": w.head}), True),
    "/v1/spaces/{space_id}/notifications": (lambda w, _: ({"space_id": w.room}, {}), False),
    "/v1/notification-preferences": (lambda w, _: ({}, {}), False),
    "/v1/push/vapid-public-key": (lambda w, _: ({}, {}), False),
    # Sign-in with the team's identity provider (docs/adr/0135): public, of no workspace.
    "/v1/oidc": (lambda w, _: ({}, {}), False),
    # The caller's own name, role and time zone.
    "/v1/me": (lambda w, _: ({}, {}), False),
    "/v1/oidc/callback": (lambda w, _: ({}, {"state": "nope", "code": "nope"}), False),
    # Public, and reached by a signed URL: nothing of the room whoever asks.
    "/v1/uploads/caps": (lambda w, _: ({}, {}), False),
    # The workspace's referee settings: counts and a flag, nothing said in a room.
    "/v1/referee": (lambda w, _: ({}, {}), False),
    "/v1/attachments/{attachment_id}": (lambda w, _: ({"attachment_id": "att_nope"}, {}), False),
    "/v1/attachments/{attachment_id}/thumbnail": (
        lambda w, _: ({"attachment_id": "att_nope"}, {}),
        False,
    ),
}
# Routes with more than one way in: the other ways, each checked like a route.
VARIANTS: dict[str, tuple[Params, bool]] = {
    "/v1/events?space_id": (
        lambda w, _: ({}, {"since": 0, "limit": 500, "space_id": w.room}),
        True,
    ),
    # Another's devices: an owner's or admin's read, in their own workspace only.
    "/v1/devices?participant_id": (
        lambda w, _: ({}, {"participant_id": w.owner.participant_id}),
        True,
    ),
    "/v1/notifications?filter=needs_me": (
        lambda w, _: ({}, {"filter": "needs_me", "after_seq": w.head}),
        True,
    ),
    "/v1/search?space_id": (
        lambda w, _: ({}, {"q": "words", "space_id": w.room, "after_seq": w.head}),
        True,
    ),
}
READERS = ("owner", "harness", "ex_person", "ex_harness", "stranger", "outsider")
MEMBERS = {"owner", "harness"}


@pytest.fixture(scope="module")
async def world(stack: Stack) -> World:
    api = Api(stack.gateway_a)
    try:
        owner = await api.create_workspace()
        harness, _ = await api.connect_harness(owner, "Ledger")
        ex_harness, _ = await api.connect_harness(owner, "Scout")
        ex_person = await api.add_person(owner, "Eve")
        stranger = await api.add_person(owner, "Stan")
        outsider = await api.create_workspace(name="Elsewhere", owner="Olga")
        r = await api.http.post(
            "/v1/invites",
            json={"name": "Ines", "email": f"{SECRET}@example.com"},
            headers=api.auth(owner),
        )
        assert r.status_code == 201, r.text
        r = await api.http.post(
            "/v1/api-keys", json={"name": f"key {SECRET}"}, headers=api.auth(owner)
        )
        assert r.status_code == 201, r.text
        opened = await api.open_by_key(ex_harness, "matrix", "Before")
        assert opened.status_code == 201, opened.text
        room_id = opened.json()["space_id"]
        for who in (harness, ex_person):
            r = await api.add_to_room(owner, room_id, who.participant_id)
            assert r.status_code == 200, r.text
        await api.say(owner, room_id, "said while everyone was in")
        for who in (ex_person, ex_harness):
            r = await api.remove_from_room(owner, room_id, who.participant_id)
            assert r.status_code == 200, r.text
        # What happens after they left.
        r = await api.change_room(owner, room_id, title=f"Title {SECRET}")
        assert r.status_code == 200, r.text
        await api.say(owner, room_id, f"words {SECRET}")
        run = key("run_m")
        await api.append(
            harness,
            {"type": "run.started", "run_id": run, "space_id": room_id, "goal": f"goal {SECRET}"},
        )
        head = await api.append(
            harness,
            {
                "type": "approval.request",
                "approval_id": key("perm"),
                "run_id": run,
                "action": "ledger.pay",
                "preview": f"preview {SECRET}",
            },
        )
        # The read models hold it all before any reader asks (the projector may lag on a
        # loaded machine; a route's after_seq waits only a few seconds).
        for _ in range(600):
            r = await api.http.get(
                f"/v1/spaces/{room_id}/runs", params={"after_seq": head}, headers=api.auth(owner)
            )
            if r.status_code == 200 and r.json()["as_of_seq"] >= head:
                break
        else:
            raise AssertionError("the projector did not reach the room's last event")
        return World(owner, harness, ex_person, ex_harness, stranger, outsider, room_id, run, head)
    finally:
        await api.close()


def reader(w: World, name: str) -> Identity:
    who: Identity = getattr(w, name)
    return who


async def test_every_read_route_is_in_the_matrix(api: Api) -> None:
    document = (await api.http.get("/openapi.json")).json()
    reads = {path for path, methods in document["paths"].items() if "get" in methods}
    missing = reads - set(MATRIX)
    assert not missing, f"read routes not in the matrix (add them to MATRIX): {sorted(missing)}"
    assert set(MATRIX) <= reads, f"the matrix names routes that are gone: {set(MATRIX) - reads}"


CASES = [(route, name) for route in (*MATRIX, *VARIANTS) for name in READERS]


@pytest.mark.parametrize(("route", "name"), CASES)
async def test_no_read_route_shows_a_room_to_who_is_not_in_it(
    api: Api, world: World, route: str, name: str
) -> None:
    params_of, shows = {**MATRIX, **VARIANTS}[route]
    who = reader(world, name)
    path_params, query = params_of(world, who)
    path = route.split("?")[0].format(**path_params)
    r = await api.http.get(path, params=query, headers=api.auth(who))
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        body = r.json()
        assert body["code"] and body["message"], body
    if name in MEMBERS:
        if shows and r.status_code == 200:
            assert SECRET in r.text, f"{route} as a member did not show the room: {r.text[:300]}"
        return
    assert SECRET not in r.text, f"{route} shows {name} what was said after: {r.text[:400]}"
    if r.status_code == 200:  # a refusal may name the id it was asked about
        assert world.run not in r.text, f"{route} shows {name} the room's run"
    if "{space_id}" in route or "{run_id}" in route or "space_id" in query:
        assert r.status_code in (403, 404), f"{route} answered {name} {r.status_code}"


async def test_members_see_every_route_that_shows_the_room(api: Api, world: World) -> None:
    """The matrix's secret checks mean something: each route that shows the room shows
    its secrets to the owner (and the context route to the member harness)."""
    for route, (params_of, shows) in {**MATRIX, **VARIANTS}.items():
        if not shows:
            continue
        who = world.harness if route.endswith("/context") else world.owner
        path_params, query = params_of(world, who)
        path = route.split("?")[0].format(**path_params)
        r = await api.http.get(path, params=query, headers=api.auth(who))
        assert r.status_code == 200, (route, r.text)
        assert SECRET in r.text, f"{route} did not show the member the room"
