"""Leaving a room stops the work (docs/product/websocket.md, One room at a time).

A harness taken out of a room has its runs there sent run.cancel while it is still in the
room, and archiving a room cancels every run in it first. A refused operation stops nothing.
"""

from __future__ import annotations

from tests.e2e.client import Api
from tests.e2e.test_runs import start, step


async def test_removing_a_harness_cancels_its_runs_there_first(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [scout.participant_id, ledger.participant_id])
    mine = await start(api, scout, room)
    theirs = await start(api, ledger, room)
    removed = await api.append(
        owner,
        {"type": "membership.removed", "space_id": room, "participant_id": scout.participant_id},
    )
    # Scout stands behind the agent Chips gave it there (docs/adr/0154): the agent is
    # released with it, after its runs are cancelled.
    events = await api.read(owner, since=removed - 4, space_id=room, clock=False)
    assert [(e["type"], e.get("run_id")) for e in events] == [
        ("run.cancel", mine),
        ("agent.released", None),
        ("membership.removed", None),
        ("membership.removed", None),
    ]
    assert events[-1]["participant_id"] == scout.participant_id
    assert events[0]["why"] == "its agent was taken out of the room"
    await api.refused(ledger, step(mine), "forbidden", "another harness")
    await api.append(ledger, step(theirs))  # the other harness's run carries on


async def test_archiving_a_room_cancels_every_run_in_it_first(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    run = await start(api, scout, room)
    archived = await api.append(
        owner, {"type": "space.updated", "space_id": room, "state": "closed"}
    )
    # Then the agent Chips gave Scout there is released (docs/adr/0154), and the room closes.
    events = await api.read(owner, since=archived - 4, space_id=room, clock=False)
    assert [e["type"] for e in events] == [
        "run.cancel",
        "agent.released",
        "membership.removed",
        "space.updated",
    ]
    await api.refused(scout, step(run), "invalid_event", "cancelled")


async def test_a_refused_removal_stops_nothing(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [maya.participant_id, scout.participant_id])
    run = await start(api, scout, room)
    before = await api.head(owner)
    await api.refused(
        maya,
        {"type": "membership.removed", "space_id": room, "participant_id": scout.participant_id},
        "forbidden",
        "",
    )
    assert await api.head(owner) == before
    await api.append(scout, step(run))  # still running
