"""What the room sheet says its reader may do is what the door then takes (docs/adr/0142).

For a room's owner, a member, a guest, a workspace admin, a locked room, an archived one, a
direct room and a thread, each act is tried over HTTP after reading the sheet's ``may``:
every act it calls false is refused, and every act it calls true, tried on a room built
afresh the same way, lands. The card answers are held to the same: an approval or a
question is answerable exactly by whom ``may`` says it is ``open`` to.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.e2e.client import Api, Identity, key
from tests.e2e.test_run_cards import approval, decide, question
from tests.e2e.test_runs import start


@dataclass
class Case:
    """One room as a scenario builds it, and whose eyes it is read through."""

    arjun: Identity  # the workspace's owner
    reader: Identity
    space: str  # the room, or the thread
    other: str  # somebody else in it, to take out
    theirs: str  # a message of somebody else's there
    newcomer: str  # a person not in it, to add
    seq: int


async def build(api: Api, scenario: str) -> Case:
    """Maya opens a room with Olga, Gus as a guest; the scenario reads it as one of them."""
    arjun = await api.create_workspace()
    maya = await api.add_person(arjun, "Maya Chen")
    olga = await api.add_person(arjun, "Olga Other")
    gus = await api.add_person(arjun, "Gus Guest")
    pat = await api.add_person(arjun, "Pat New")
    if scenario == "direct":
        seq = await api.append(
            maya, {"type": "space.created", "kind": "direct", "members": [olga.participant_id]}
        )
        room = (await api.read(maya, since=seq - 1, limit=1))[0]["space_id"]
    else:
        room = await api.open_space(maya, "Board", [olga.participant_id])
        r = await api.add_to_room(maya, room, gus.participant_id, standing="guest")
        assert r.status_code == 200, r.text
    if scenario == "admin":
        await api.add_to_room(maya, room, arjun.participant_id)
    space = room
    root = await api.say(olga, room, "Olga's line")
    if scenario == "thread":
        said = await api.lines(maya, room, root)
        space = await api.open_thread(maya, room, next(x["id"] for x in said if x["seq"] == root))
    readers = {"member": olga, "guest": gus, "admin": arjun}
    reader = readers.get(scenario, maya)
    other = maya if reader.participant_id != maya.participant_id else olga
    seq = await api.say(other, space, "somebody else's line")
    theirs = next(line["id"] for line in await api.lines(maya, space, seq) if line["seq"] == seq)
    if scenario == "locked":
        seq = (await api.lock(maya, room)).json()["seq"]
    if scenario == "archived":
        seq = (await api.change_room(maya, room, state="closed")).json()["seq"]
    return Case(arjun, reader, space, other.participant_id, theirs, pat.participant_id, seq)


def event(api: Api, case: Case, body: dict[str, Any]) -> Awaitable[httpx.Response]:
    return api.post_event(case.reader, {**body, "space_id": case.space, "idempotency_key": key()})


Act = Callable[[Api, Case], Awaitable[httpx.Response]]
Allowed = Callable[[dict[str, Any], Case], bool]

# Each act the app offers: whether ``may`` offers it, and the request the door decides.
ACTS: dict[str, tuple[Allowed, Act]] = {
    "rename": (
        lambda may, c: may["rename"],
        lambda api, c: api.change_room(c.reader, c.space, title="Renamed"),
    ),
    "archive": (
        lambda may, c: may["archive"],
        lambda api, c: api.change_room(c.reader, c.space, state="closed"),
    ),
    "unarchive": (
        lambda may, c: may["unarchive"],
        lambda api, c: api.change_room(c.reader, c.space, state="open"),
    ),
    "lock": (lambda may, c: may["lock"], lambda api, c: api.lock(c.reader, c.space)),
    "unlock": (lambda may, c: may["unlock"], lambda api, c: api.lock(c.reader, c.space, False)),
    "delete": (
        lambda may, c: may["delete"] is not None,
        lambda api, c: api.http.delete(f"/v1/spaces/{c.space}", headers=api.auth(c.reader)),
    ),
    "pause": (
        lambda may, c: may["pause"],
        lambda api, c: event(api, c, {"type": "exchange.set", "state": "paused"}),
    ),
    "pin": (
        lambda may, c: may["pin"],
        lambda api, c: event(api, c, {"type": "message.pinned", "message_id": c.theirs}),
    ),
    "take back": (
        lambda may, c: may["take_back"],
        lambda api, c: event(api, c, {"type": "message.deleted", "message_id": c.theirs}),
    ),
    "remove": (
        lambda may, c: c.other in may["remove"],
        lambda api, c: api.remove_from_room(c.reader, c.space, c.other),
    ),
    "leave": (
        lambda may, c: c.reader.participant_id in may["remove"],
        lambda api, c: api.remove_from_room(c.reader, c.space, c.reader.participant_id),
    ),
    "add": (
        lambda may, c: c.newcomer in may["add"],
        lambda api, c: api.add_to_room(c.reader, c.space, c.newcomer),
    ),
}

EVERY = set(ACTS)
# What each scenario's reader may do, as the product has it (docs/product/spaces.md).
OFFERED = {
    "owner": EVERY - {"unarchive", "unlock"},
    "member": {"rename", "archive", "pause", "pin", "leave", "add"},
    "guest": {"pause", "leave"},
    "admin": {"rename", "archive", "lock", "delete", "pause", "pin", "take back", "leave", "add"},
    "locked": {"unlock", "pause", "pin", "take back", "remove", "leave", "add"},
    "archived": EVERY - {"archive", "unlock"},
    "direct": EVERY - {"unarchive", "unlock"},
    "thread": {"pause", "pin", "take back"},
}


async def offered(api: Api, case: Case) -> tuple[dict[str, Any], set[str]]:
    may: dict[str, Any] = (await api.sheet(case.reader, case.space, case.seq))["may"]
    return may, {name for name, (allowed, _) in ACTS.items() if allowed(may, case)}


@pytest.mark.parametrize("scenario", list(OFFERED))
async def test_what_may_offers_the_door_takes_and_nothing_else(
    stack, api: Api, scenario: str
) -> None:
    case = await build(api, scenario)
    may, yes = await offered(api, case)
    assert yes == OFFERED[scenario], may
    for name in sorted(EVERY - yes):
        r = await ACTS[name][1](api, case)
        assert r.status_code in (403, 409, 422), f"{name}: {r.status_code} {r.text}"
    for name in sorted(yes):
        fresh = await build(api, scenario)
        assert (await offered(api, fresh))[1] == yes
        r = await ACTS[name][1](api, fresh)
        assert r.status_code == 200, f"{name}: {r.text}"


async def test_deleting_a_direct_room_archives_it_as_may_says(stack, api: Api) -> None:
    case = await build(api, "direct")
    may, _ = await offered(api, case)
    assert may["delete"] == "archive"
    r = await ACTS["delete"][1](api, case)
    assert r.status_code == 200, r.text
    assert (await api.sheet(case.reader, case.space, r.json()["seq"]))["state"] == "closed"


def soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


async def cards(api: Api) -> tuple[Identity, dict[str, Identity], str, dict[str, str], int]:
    """Arjun's harness asks, in a room with Maya (named on one approval) and Olga: an
    approval naming Maya, a question, an approval past its expiry, and one of a run that
    ended."""
    arjun = await api.create_workspace()
    maya = await api.add_person(arjun, "Maya Chen")
    olga = await api.add_person(arjun, "Olga Other")
    jacobian, _ = await api.connect_harness(arjun, "Jacobian")
    room = await api.open_space(
        arjun, "Orders", [maya.participant_id, olga.participant_id, jacobian.participant_id]
    )
    run = await start(api, jacobian, room)
    asked = {
        "named": await approval(api, jacobian, run, answerers=[maya.participant_id]),
        "question": await question(api, jacobian, run),
        "expired": await approval(api, jacobian, run, expires_at=soon(1)),
    }
    ended = await start(api, jacobian, room)
    asked["ended"] = await approval(api, jacobian, ended)
    seq = await api.append(jacobian, {"type": "run.completed", "run_id": ended, "summary": "x"})
    readers = {"arjun": arjun, "maya": maya, "olga": olga}
    return jacobian, readers, room, asked, seq


def answer(kind: str, card_id: str) -> dict[str, Any]:
    if kind == "question":
        return {"type": "question.answered", "question_id": card_id, "value": "acme"}
    return decide(card_id)


OPEN = {
    "arjun": {"named", "question"},
    "maya": {"named", "question"},
    "olga": {"question"},
}


@pytest.mark.parametrize("reader", list(OPEN))
async def test_a_card_is_answerable_by_exactly_whom_may_says(stack, api: Api, reader: str) -> None:
    _, readers, room, asked, seq = await cards(api)
    who = readers[reader]
    expiry = datetime.fromisoformat(
        next(
            e["expires_at"]
            for e in await api.read(who, space_id=room)
            if e.get("approval_id") == asked["expired"]
        )
    )
    # Until the clock passes the card's expiry, an instant the card names.
    await asyncio.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 0.05)
    may = (await api.sheet(who, room, seq))["may"]
    states = {c["id"]: c for c in may["cards"]}
    by_name = {name: states[card_id] for name, card_id in asked.items()}
    assert {n for n, c in by_name.items() if c["state"] == "open"} == OPEN[reader], may
    assert by_name["expired"]["state"] == "expired" and by_name["ended"]["state"] == "ended"
    arjun_id, maya_id = readers["arjun"].participant_id, readers["maya"].participant_id
    assert by_name["named"]["deciders"] == [arjun_id, maya_id]
    for name, card in sorted(by_name.items()):
        body = {**answer(card["kind"], asked[name]), "idempotency_key": key()}
        r = await api.post_event(who, body)
        if card["state"] == "open":
            assert r.status_code == 200, f"{name}: {r.text}"
        else:
            assert r.status_code in (403, 409, 422), f"{name}: {r.status_code} {r.text}"
