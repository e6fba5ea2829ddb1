"""The harness door's refusals and what it logs (rules/harness_door.py, docs/adr/0007)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def open_space(key: str = "po-7", **fields: Any) -> dict[str, Any]:
    return {"command": "harness.open_space", "key": key, **fields}


# A harness with no agents of its own is given one in each room it opens, joins or claims
# (docs/adr/0146, 0154).
GIFT = ["agent.registered", "membership.added", "agent.attached", "membership.replaced"]


def given_here(w: Any, room: str, harness_id: str) -> str:
    """The agent the harness was given in ``room``."""
    (agent,) = [a.id for a in w.state.agents_of(harness_id) if w.state.room_of_agent(a.id) == room]
    return str(agent)


def asked(w: Any) -> str:
    return str(w.created(w.p(w.OWN), {"type": "space.created", "kind": "group", "asked_of": w.H1}))


def test_a_person_uses_the_harness_door(w: Any) -> None:
    w.says_no(w.p(w.OWN), open_space(), "forbidden", "only a harness opens spaces through its door")


def test_a_command_with_a_bad_field(w: Any) -> None:
    w.says_no(w.h(w.H1), open_space(key=""), "invalid_event", "key:")


def test_a_claim_of_a_room_not_asked(w: Any) -> None:
    w.says_no(w.h(w.H1), open_space(space_id=w.room), "forbidden", "that room was not asked of you")


def test_a_claim_under_another_key(w: Any) -> None:
    room = asked(w)
    w.ok(w.h(w.H1), open_space("first", space_id=room))
    w.says_no(w.h(w.H1), open_space("second", space_id=room), "invalid_event", "under another key")


def test_a_claim_with_a_key_of_another_space(w: Any) -> None:
    room = asked(w)
    w.ok(w.h(w.H1), open_space("taken"))
    w.says_no(
        w.h(w.H1),
        open_space("taken", space_id=room),
        "invalid_event",
        "that key names another space already",
    )


def test_a_claim_after_being_taken_out(w: Any) -> None:
    room = asked(w)
    w.ok(w.p(w.OWN), {"type": "membership.removed", "space_id": room, "participant_id": w.H1})
    w.says_no(w.h(w.H1), open_space(space_id=room), "forbidden", "you are no longer in that room")


def test_a_key_of_another_harness(w: Any) -> None:
    w.ok(w.h(w.H1), open_space("mine"))
    w.says_no(w.h(w.H2), open_space("mine"), "forbidden", "that key names another harness's space")


def test_a_key_after_being_taken_out(w: Any) -> None:
    space_id = w.ok(w.h(w.H1), open_space("mine"))[0]["space_id"]
    agent = given_here(w, space_id, w.H1)  # taken out with the agent it stands behind
    w.ok(w.p(w.OWN), {"type": "membership.removed", "space_id": space_id, "participant_id": agent})
    w.says_no(
        w.h(w.H1),
        open_space("mine"),
        "forbidden",
        "you are no longer in the space that key names",
    )


def test_the_same_key_finds_the_same_space_and_logs_nothing(w: Any) -> None:
    first = w.ok(w.h(w.H1), open_space("mine", title="PO"))
    assert [e["type"] for e in first] == ["space.created", *GIFT]
    assert w.ok(w.h(w.H1), open_space("mine", title="PO")) == []
    retitled = w.ok(w.h(w.H1), open_space("mine", title="PO, paid"))
    assert [e["type"] for e in retitled] == ["space.updated"]


def test_a_shared_key_joins_with_the_owner_and_claims(w: Any) -> None:
    space_id = w.ok(w.h(w.H1), open_space("both", shared=True))[0]["space_id"]
    logged = w.ok(w.h(w.H2), open_space("both", shared=True))
    assert [e["type"] for e in logged] == ["membership.added", "space.claimed", *GIFT]
    assert [e["seq"] for e in logged] == list(range(logged[0]["seq"], logged[0]["seq"] + 6))
    assert w.state.opened(space_id, w.H2)
    assert w.state.standing(space_id, w.H2) == "agents"  # behind the agent it was given


def test_a_claim_logs_the_claim_and_the_title(w: Any) -> None:
    room = asked(w)
    logged = w.ok(w.h(w.H1), open_space("po", space_id=room, title="PO"))
    types = [e["type"] for e in logged]
    assert types == ["space.claimed", "space.updated", *GIFT, "space.lead_set"], types
    # Led, from its claim, by who claimed it: its agent there (docs/product/websocket.md,
    # Who leads; docs/adr/0146).
    assert logged[-1]["agent_id"] == given_here(w, room, w.H1)
    assert w.state.space_by_key("po").id == room
    assert w.state.openers[(room, w.H1)] == logged[0]["seq"]
