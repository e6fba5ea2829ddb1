"""Deleting a room stops its work first, and a stopped run's lanes stop with it.

docs/product/websocket.md, One room at a time: "Leaving a room stops the work, whatever the
reason. Each run … in the room it leaves is sent run.cancel while the agent is still
there, with the lanes that run opened … A room that is deleted stops every run in it the
same way before it goes." The run.cancel a deletion sends names only the run and why, so
it outlives the room: its harness hears it live and on a replay.
"""

from __future__ import annotations

from typing import Any

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket, key
from tests.e2e.test_lanes import opened
from tests.e2e.test_runs import start, step


async def erase(api: Api, who: Identity, room: str) -> int:
    return await api.append(who, {"type": "space.erased", "space_id": room})


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["type"], e.get("run_id") or e.get("lane_id")) for e in events]


async def test_deleting_a_room_cancels_its_runs_first_as_its_harness_hears_it(
    api: Api, stack: Stack
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    run = await start(api, scout, room)
    sock = await Socket.open(stack.gateway_a, scout)
    try:
        await sock.subscribe(owner.workspace_id)
        await sock.attached()
        erased = await erase(api, owner, room)
        gone = await sock.wait_for(
            lambda f: f["frame"] == "event" and f["event"]["type"] == "space.erased"
        )
        heard = [e for e in sock.events() if e.get("space_id") == room]
    finally:
        await sock.close()
    assert gone["event"]["seq"] == erased
    assert kinds(heard) == [("run.cancel", run), ("space.erased", None)]
    assert heard[0]["why"] == "the room was deleted"
    # What it posts for the run afterwards is refused: the run went with the room.
    await api.refused(scout, step(run), "not_found", f"no run {run}")
    # A harness catching up over HTTP from before the delete hears the same cancel, and
    # nothing else of the room.
    since = heard[0]["seq"] - 1  # the given agent's release between is not sent to it
    replay = [
        e for e in await api.read(scout, since=since, clock=False) if e.get("space_id") == room
    ]
    assert kinds(replay) == [("run.cancel", run), ("space.erased", None)]


async def test_deleting_a_room_cancels_the_lanes_its_runs_opened(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    jacobian, home = await api.connect_harness(owner, "Jacobian")
    shop = await api.open_space(owner, "Shopping", [jacobian.participant_id])
    run = await start(api, jacobian, shop)
    lane = key("lane_j")
    await api.append(jacobian, opened(lane, home, run_id=run))
    worker = key("run_j")
    await api.append(
        jacobian,
        {
            "type": "run.started",
            "run_id": worker,
            "space_id": home,
            "goal": "Find it",
            "lane_id": lane,
        },
    )
    await erase(api, owner, shop)
    # In the room that stays: the lane's cancel at home, and the run working it stopped.
    left = [
        e
        for e in await api.read(owner, space_id=home)
        if e["type"] in ("lane.cancelled", "run.cancel")
    ]
    assert kinds(left) == [
        ("lane.cancelled", lane),
        ("run.cancel", worker),
    ]
    assert left[0]["why"] == f"{run} was stopped: the room was deleted"
    await api.refused(jacobian, step(worker), "invalid_event", "cancelled")


async def test_removing_a_harness_cancels_its_run_s_lanes_too(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    jacobian, home = await api.connect_harness(owner, "Jacobian")
    shop = await api.open_space(owner, "Shopping", [jacobian.participant_id])
    run = await start(api, jacobian, shop)
    lane = key("lane_j")
    await api.append(jacobian, opened(lane, home, run_id=run))
    removed = await api.append(
        owner,
        {"type": "membership.removed", "space_id": shop, "participant_id": jacobian.participant_id},
    )
    events = await api.read(owner, since=removed - 6, clock=False)
    # The agent Chips gave it in the room goes first, then the harness behind it
    # (docs/adr/0154).
    assert [(e["type"], e["space_id"]) for e in events] == [
        ("run.cancel", shop),
        ("lane.cancelled", home),
        ("lane.cancelled", shop),
        ("agent.released", shop),
        ("membership.removed", shop),
        ("membership.removed", shop),
    ]
    assert events[-1]["participant_id"] == jacobian.participant_id
    # The lane has ended: nothing more is taken for it.
    await api.refused(
        jacobian,
        {"type": "lane.completed", "lane_id": lane, "summary": "Found"},
        "invalid_event",
        "has ended (cancelled)",
    )


async def test_archiving_a_room_cancels_the_lane_a_run_there_works(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    jacobian, home = await api.connect_harness(owner, "Jacobian")
    shop = await api.open_space(owner, "Shopping", [jacobian.participant_id])
    opener = await start(api, jacobian, home)
    lane = key("lane_j")
    await api.append(jacobian, opened(lane, shop, run_id=opener))
    worker = key("run_j")
    await api.append(
        jacobian,
        {"type": "run.started", "run_id": worker, "space_id": shop, "goal": "Go", "lane_id": lane},
    )
    archived = await api.append(
        owner, {"type": "space.updated", "space_id": shop, "state": "closed"}
    )
    events = await api.read(owner, since=archived - 6, clock=False)
    # The archive releases the agent Chips gave the harness there (docs/adr/0154).
    assert [(e["type"], e["space_id"]) for e in events] == [
        ("run.cancel", shop),
        ("lane.cancelled", shop),
        ("lane.cancelled", home),
        ("agent.released", shop),
        ("membership.removed", shop),
        ("space.updated", shop),
    ]
    # The run that opened the lane, in the room that stays open, carries on.
    await api.append(jacobian, step(opener))


async def test_a_direct_room_archived_instead_of_deleted_stops_its_runs_too(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    seq = await api.append(
        owner,
        {
            "type": "space.created",
            "kind": "direct",
            "title": "Scout",
            "members": [scout.participant_id],
        },
    )
    room = (await api.read(owner, since=seq - 1, limit=1))[0]["space_id"]
    run = await start(api, scout, room)
    archived = await erase(api, owner, room)
    events = await api.read(owner, since=archived - 4, space_id=room, clock=False)
    # The archive releases the agent Chips gave the harness there (docs/adr/0154).
    assert [(e["type"], e.get("state")) for e in events] == [
        ("run.cancel", None),
        ("agent.released", None),
        ("membership.removed", None),
        ("space.updated", "closed"),
    ]
    assert events[0]["run_id"] == run


async def test_a_run_in_a_thread_stops_with_its_room(api: Api) -> None:
    """docs/product/messages.md, Threads: whoever is in the room is in its threads "and leaves
    them with the room", and a thread goes with its room when it is deleted."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    said = await api.say(owner, room, "Which carrier?")
    root = (await api.read(owner, since=said - 1, limit=1))[0]["message_id"]
    thread = await api.open_thread(owner, room, root)
    in_thread = await start(api, scout, thread)
    removed = await api.append(
        owner,
        {"type": "membership.removed", "space_id": room, "participant_id": scout.participant_id},
    )
    events = await api.read(owner, since=removed - 4, clock=False)
    # The agent Chips gave it in the room goes first, then the harness (docs/adr/0154).
    assert kinds(events) == [
        ("run.cancel", in_thread),
        ("agent.released", None),
        ("membership.removed", None),
        ("membership.removed", None),
    ]
    assert events[0]["space_id"] == thread
    await api.append(
        owner,
        {"type": "membership.added", "space_id": room, "participant_id": scout.participant_id},
    )
    again = await start(api, scout, thread)
    erased = await erase(api, owner, room)
    # A harness before agents is not sent its given agent's release between the two.
    replay = await api.read(scout, since=erased - 3, clock=False)
    assert kinds(replay) == [("run.cancel", again), ("space.erased", None)]
