"""The door's refusals for spaces and membership (rules/spaces.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.unit


def created(**fields: Any) -> dict[str, Any]:
    return {"type": "space.created", "kind": "group", **fields}


def added(space_id: str, pid: str, standing: str = "member") -> dict[str, Any]:
    return {
        "type": "membership.added",
        "space_id": space_id,
        "participant_id": pid,
        "standing": standing,
    }


def removed(space_id: str, pid: str) -> dict[str, Any]:
    return {"type": "membership.removed", "space_id": space_id, "participant_id": pid}


def updated(space_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": "space.updated", "space_id": space_id, **fields}


def locked(space_id: str, on: bool = True) -> dict[str, Any]:
    return {"type": "space.lock_set", "space_id": space_id, "locked": on}


def lock(w: Any) -> Any:
    w.ok(w.p(w.OWN), locked(w.room))
    return w


def closed(w: Any) -> Any:
    w.ok(w.p(w.OWN), updated(w.room, state="closed"))
    return w


def opened_by_scout(w: Any) -> str:
    logged = w.ok(w.h(w.H1), {"command": "harness.open_space", "key": "po-7", "title": "PO 7"})
    return str(logged[0]["space_id"])


Case = tuple[Callable[[Any], tuple[Any, Any]], str, str]
CASES: dict[str, Case] = {
    # space.created
    "a harness creates a space": (
        lambda w: (w.h(w.H1), created()),
        "forbidden",
        "a harness opens spaces through its door",
    ),
    "a key on space.created": (
        lambda w: (w.p(w.OWN), created(key="k")),
        "invalid_event",
        "a key is given to a space through a harness's door",
    ),
    "shared on space.created": (
        lambda w: (w.p(w.OWN), created(shared=True)),
        "invalid_event",
        "a key is given to a space through a harness's door",
    ),
    "opened_for from a client": (
        lambda w: (w.p(w.OWN), created(opened_for=w.OWN)),
        "invalid_event",
        "opened_for is filled in by Chips",
    ),
    "a space id without spc_": (
        lambda w: (w.p(w.OWN), created(space_id="room_1")),
        "invalid_event",
        "a space's id starts with spc_",
    ),
    "a space id taken": (
        lambda w: (w.p(w.OWN), created(space_id=w.room)),
        "invalid_event",
        "that space already exists",
    ),
    "a space id taken in another workspace": (
        lambda w: (
            w.state.taken_space_ids.add("spc_elsewhere") or w.p(w.OWN),
            created(space_id="spc_elsewhere"),
        ),
        "invalid_event",
        "that space already exists",
    ),
    "asked of a person": (
        lambda w: (w.p(w.OWN), created(asked_of=w.MEM)),
        "not_found",
        "no such harness in this workspace",
    ),
    "asked of a harness that takes no new spaces": (
        lambda w: (w.p(w.OWN), created(asked_of=w.H2)),
        "forbidden",
        "it never declared new_spaces",
    ),
    "a member who is not in the workspace": (
        lambda w: (w.p(w.OWN), created(members=["usr_nobody"])),
        "not_found",
        "no participant usr_nobody in this workspace",
    ),
    "a direct space with nobody": (
        lambda w: (w.p(w.OWN), created(kind="direct")),
        "invalid_event",
        "a direct space names who it is with",
    ),
    "a home for another's harness": (
        lambda w: (w.p(w.MEM), created(kind="direct", members=[w.H1], home_of=w.H1)),
        "forbidden",
        "a home is opened for a harness you connect",
    ),
    "a home that is a group": (
        lambda w: (w.p(w.OWN), created(members=[w.H2], home_of=w.H2)),
        "invalid_event",
        "a home is a direct space with you and the harness",
    ),
    "a second home": (
        lambda w: (w.p(w.OWN), created(kind="direct", members=[w.H1], home_of=w.H1)),
        "invalid_event",
        "that harness has its home already",
    ),
    # membership.added
    "a stranger adds": (
        lambda w: (w.p(w.OUT), added(w.room, w.OUT)),
        "forbidden",
        "you are not a member of this space",
    ),
    "a harness adds": (
        lambda w: (w.h(w.H1), added(w.room, w.OUT)),
        "forbidden",
        "a harness talks and works in a space; it adds nobody",
    ),
    "a guest adds": (
        lambda w: (w.p(w.GST), added(w.room, w.OUT)),
        "forbidden",
        "a guest may talk and leave, not add anyone",
    ),
    "a member makes an owner": (
        lambda w: (w.p(w.MEM), added(w.room, w.OUT, "owner")),
        "forbidden",
        "only the space's owner makes another owner",
    ),
    "adding nobody": (
        lambda w: (w.p(w.OWN), added(w.room, "usr_nobody")),
        "not_found",
        "no such participant in this workspace",
    ),
    "adding a member again": (
        lambda w: (w.p(w.OWN), added(w.room, w.MEM)),
        "invalid_event",
        "already a member of this space",
    ),
    # membership.removed
    "a stranger removes": (
        lambda w: (w.p(w.OUT), removed(w.room, w.MEM)),
        "forbidden",
        "you are not a member of this space",
    ),
    "a harness removes another": (
        lambda w: (w.h(w.H1), removed(w.room, w.MEM)),
        "forbidden",
        "a harness talks and works in a space; it removes nobody",
    ),
    "a member removes another": (
        lambda w: (w.p(w.MEM), removed(w.room, w.ADM)),
        "forbidden",
        "only the space's owner takes others out of it",
    ),
    "removing who is not in it": (
        lambda w: (w.p(w.OWN), removed(w.room, w.OUT)),
        "invalid_event",
        "not a member of this space",
    ),
    "a harness leaves its home": (
        lambda w: (w.h(w.H1), removed(w.home, w.H1)),
        "forbidden",
        "a harness stays in its home",
    ),
    # space.updated
    "a stranger retitles": (
        lambda w: (w.p(w.OUT), updated(w.room, title="X")),
        "forbidden",
        "you are not a member of this space",
    ),
    "a harness retitles a room it did not open": (
        lambda w: (w.h(w.H1), updated(w.room, title="X")),
        "forbidden",
        "a harness retitles or closes only a space it opened itself",
    ),
    "a guest retitles": (
        lambda w: (w.p(w.GST), updated(w.room, title="X")),
        "forbidden",
        "a guest may talk and leave, not retitle or archive",
    ),
    "a person retitles a locked room": (
        lambda w: (lock(w).p(w.MEM), updated(w.room, title="X")),
        "forbidden",
        "this room's changes are locked; unlock it to rename or archive it",
    ),
    "archiving a home": (
        lambda w: (w.p(w.OWN), updated(w.home, state="closed")),
        "forbidden",
        "a harness's home is never archived",
    ),
    "archiving twice": (
        lambda w: (closed(w).p(w.OWN), updated(w.room, state="closed")),
        "invalid_event",
        "this space is archived already",
    ),
    "opening an open space": (
        lambda w: (w.p(w.OWN), updated(w.room, state="open")),
        "invalid_event",
        "this space is open already",
    ),
    "the same title": (
        lambda w: (w.p(w.OWN), updated(w.room, title="Room")),
        "invalid_event",
        "that is the space's title already",
    ),
    # space.lock_set
    "a stranger locks": (
        lambda w: (w.p(w.OUT), locked(w.room)),
        "forbidden",
        "you are not a member of this space",
    ),
    "a harness locks": (
        lambda w: (w.h(w.H1), locked(w.room)),
        "forbidden",
        "locking a room's changes is a person's to do",
    ),
    "a member locks": (
        lambda w: (w.p(w.MEM), locked(w.room)),
        "forbidden",
        "only the room's owner, or a workspace owner or admin, locks its changes",
    ),
    "locking twice": (
        lambda w: (lock(w).p(w.OWN), locked(w.room)),
        "invalid_event",
        "the room's changes are locked already",
    ),
    "unlocking an unlocked room": (
        lambda w: (w.p(w.OWN), locked(w.room, False)),
        "invalid_event",
        "the room's changes are not locked already",
    ),
    # the generic ones
    "space.claimed from a client": (
        lambda w: (w.h(w.H1), {"type": "space.claimed", "space_id": w.room, "key": "k"}),
        "forbidden",
        "a harness claims a space through its door",
    ),
    "an event that is not one": (
        lambda w: (w.p(w.OWN), {"type": "nonsense.event"}),
        "invalid_event",
        "",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_refusal(w: Any, case: str) -> None:
    build, code, fragment = CASES[case]
    actor, event = build(w)
    w.says_no(actor, event, code, fragment)


def test_a_harness_retitles_a_space_it_opened(w: Any) -> None:
    space_id = opened_by_scout(w)
    w.ok(w.h(w.H1), updated(space_id, title="PO 7, paid"))
    assert w.state.space(space_id).title == "PO 7, paid"
    assert not w.state.space(space_id).title_held


def test_a_space_is_created_with_its_members_as_the_log_orders_them(w: Any) -> None:
    space_id = w.created(w.p(w.OWN), created(members=[w.MEM, w.H1], asked_of=w.H1))
    # By the seq they came in at, then by id (as the membership table was read).
    assert [m.id for m in w.state.room_members(space_id)] == [w.H1, w.MEM, w.OWN]
    assert w.state.standing(space_id, w.OWN) == "owner"
