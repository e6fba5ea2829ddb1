"""Lanes and their rules at the door (docs/product/jacobian-channel.md, ADR 0017).

A lane is work handed from one room into another: opened by a run of a harness (or by a
person) in the room it comes from, into a room the opener is in too; ended once, by the
harness working it (completed or failed) or from its route card (cancelled, which stops
the run working it while the opener's run carries on). It can outlive the run that opened
it. Each lane event is logged in both rooms. One test per rule; each refusal names its
code and reason and changes nothing.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, key


class Rooms:
    """Arjun, Jacobian, J's room (``home``) and a Shopping room both are in (``shop``)."""

    def __init__(self, owner: Identity, jacobian: Identity, home: str, shop: str) -> None:
        self.owner, self.jacobian, self.home, self.shop = owner, jacobian, home, shop


async def rooms(api: Api) -> Rooms:
    owner = await api.create_workspace(owner="Arjun Rao")
    jacobian, home = await api.connect_harness(owner, "Jacobian")
    shop = await api.open_space(owner, "Shopping", [jacobian.participant_id])
    return Rooms(owner, jacobian, home, shop)


async def start(api: Api, harness: Identity, room: str, **more: Any) -> str:
    run_id = key("run_j")
    await api.append(
        harness,
        {"type": "run.started", "run_id": run_id, "space_id": room, "goal": "Order", **more},
    )
    return run_id


def opened(lane_id: str, to: str, **more: Any) -> dict[str, Any]:
    return {
        "type": "lane.opened",
        "lane_id": lane_id,
        "to_space_id": to,
        "task": {"goal": "Find a cheaper carrier", "autonomy": "act"},
        **more,
    }


async def open_lane(api: Api, r: Rooms) -> tuple[str, str]:
    """A run in J's room and the lane it opens into Shopping."""
    run = await start(api, r.jacobian, r.home)
    lane = key("lane_j")
    await api.append(r.jacobian, opened(lane, r.shop, run_id=run))
    return run, lane


async def refused(
    api: Api, r: Rooms, who: Identity, event: dict[str, Any], code: str, reason: str
) -> None:
    """Refused with ``code`` and ``reason``, and the log is as it was."""
    before = await api.head(r.owner)
    await api.refused(who, event, code, reason)
    assert await api.head(r.owner) == before


def lane_events(events: list[dict[str, Any]], lane: str) -> list[tuple[str, str]]:
    return [(e["type"], e["space_id"]) for e in events if e.get("lane_id") == lane]


async def test_a_lane_is_logged_in_both_of_its_rooms(api: Api) -> None:
    r = await rooms(api)
    maya = await api.add_person(r.owner, "Maya Chen")  # in Shopping only
    assert (await api.add_to_room(r.owner, r.shop, maya.participant_id)).status_code == 200
    run, lane = await open_lane(api, r)
    events = await api.read(r.owner)
    copies = [e for e in events if e.get("lane_id") == lane]
    assert [(e["type"], e["space_id"]) for e in copies] == [
        ("lane.opened", r.shop),
        ("lane.opened", r.home),
    ]
    for copy in copies:
        assert copy["from_space_id"] == r.home and copy["to_space_id"] == r.shop
        assert copy["run_id"] == run and copy["task"]["goal"] == "Find a cheaper carrier"
    # Maya, in the room the lane went to only, sees the copy at home there.
    assert lane_events(await api.read(maya), lane) == [("lane.opened", r.shop)]


async def test_a_lane_outlives_the_run_that_opened_it(api: Api) -> None:
    r = await rooms(api)
    run, lane = await open_lane(api, r)
    await api.append(r.jacobian, {"type": "run.completed", "run_id": run, "summary": "Handed on"})
    worker = await start(api, r.jacobian, r.shop, lane_id=lane)
    done = await api.append(
        r.jacobian,
        {"type": "lane.completed", "lane_id": lane, "summary": "DHL at $31", "cost_usd": 0.12},
    )
    assert lane_events(await api.read(r.owner), lane)[-2:] == [
        ("lane.completed", r.shop),
        ("lane.completed", r.home),
    ]
    # The run reads back with the lane it opened, the lane's run with the lane it works.
    seen = {"after_seq": done}
    receipt = (await api.http.get(f"/v1/runs/{run}", params=seen, headers=api.auth(r.owner))).json()
    assert receipt["state"] == "completed" and receipt["lane_id"] is None
    [card] = receipt["lanes"]
    assert (card["lane_id"], card["state"], card["summary"], card["cost_usd"]) == (
        lane,
        "completed",
        "DHL at $31",
        0.12,
    )
    assert card["working_run_id"] == worker and card["task"]["goal"] == "Find a cheaper carrier"
    working = await api.http.get(f"/v1/runs/{worker}", params=seen, headers=api.auth(r.owner))
    assert working.json()["lane_id"] == lane
    # Each room lists it: out of J's room, into Shopping.
    for room, direction in ((r.home, "out"), (r.shop, "in")):
        listed = await api.http.get(
            f"/v1/spaces/{room}/lanes", params=seen, headers=api.auth(r.owner)
        )
        assert [(x["lane_id"], x["direction"]) for x in listed.json()["lanes"]] == [
            (lane, direction)
        ]


async def test_a_lane_nobody_opened_is_not_found(api: Api) -> None:
    r = await rooms(api)
    await refused(
        api,
        r,
        r.jacobian,
        {"type": "lane.completed", "lane_id": "lane_ghost", "summary": "done"},
        "not_found",
        "no lane lane_ghost",
    )


async def test_a_lane_is_opened_once(api: Api) -> None:
    r = await rooms(api)
    run, lane = await open_lane(api, r)
    await refused(
        api,
        r,
        r.jacobian,
        opened(lane, r.shop, run_id=run),
        "invalid_event",
        "was opened already",
    )


async def test_a_lane_names_the_room_it_comes_from(api: Api) -> None:
    r = await rooms(api)
    await refused(
        api, r, r.owner, opened("lane_p", r.shop), "invalid_event", "names the room it is opened"
    )


async def test_the_opener_is_in_the_room_the_lane_comes_from(api: Api) -> None:
    r = await rooms(api)
    maya = await api.add_person(r.owner, "Maya Chen")
    assert (await api.add_to_room(r.owner, r.shop, maya.participant_id)).status_code == 200
    other = await api.open_space(r.owner, "Other", [maya.participant_id])
    await refused(
        api,
        r,
        maya,
        opened("lane_m", other, from_space_id=r.home),
        "forbidden",
        "not in the room the lane is opened from",
    )


async def test_a_lane_goes_into_a_room_that_exists(api: Api) -> None:
    r = await rooms(api)
    run = await start(api, r.jacobian, r.home)
    await refused(
        api,
        r,
        r.jacobian,
        opened("lane_x", "spc_nowhere", run_id=run),
        "not_found",
        "no room spc_nowhere",
    )


async def test_a_lane_goes_only_into_a_room_the_opener_is_in(api: Api) -> None:
    r = await rooms(api)
    private = await api.open_space(r.owner, "Private")
    run = await start(api, r.jacobian, r.home)
    await refused(
        api,
        r,
        r.jacobian,
        opened("lane_x", private, run_id=run),
        "forbidden",
        "not in the room the lane goes to",
    )


async def test_a_lane_goes_into_another_room(api: Api) -> None:
    r = await rooms(api)
    run = await start(api, r.jacobian, r.home)
    await refused(
        api,
        r,
        r.jacobian,
        opened("lane_x", r.home, run_id=run),
        "invalid_event",
        "into another room",
    )


async def test_a_lane_is_opened_from_the_openers_own_run(api: Api) -> None:
    r = await rooms(api)
    scout, _ = await api.connect_harness(r.owner, "Scout")
    run = await start(api, r.jacobian, r.home)
    await refused(
        api, r, scout, opened("lane_x", r.shop, run_id=run), "forbidden", "is not your run"
    )


async def test_a_run_that_ended_opens_no_lane(api: Api) -> None:
    r = await rooms(api)
    run = await start(api, r.jacobian, r.home)
    await api.append(r.jacobian, {"type": "run.failed", "run_id": run, "why": "timed out"})
    await refused(
        api,
        r,
        r.jacobian,
        opened("lane_x", r.shop, run_id=run),
        "invalid_event",
        "it opens no lane",
    )


async def test_a_lane_ends_once(api: Api) -> None:
    r = await rooms(api)
    _, lane = await open_lane(api, r)
    await api.append(r.jacobian, {"type": "lane.failed", "lane_id": lane, "why": "no carrier"})
    for event in (
        {"type": "lane.completed", "lane_id": lane, "summary": "late"},
        {"type": "lane.failed", "lane_id": lane, "why": "again"},
        {"type": "lane.cancelled", "lane_id": lane},
    ):
        await refused(api, r, r.jacobian, event, "invalid_event", f"{lane} has ended (failed)")
    _, cancelled = await open_lane(api, r)
    await api.append(r.owner, {"type": "lane.cancelled", "lane_id": cancelled})
    await refused(
        api,
        r,
        r.jacobian,
        {"type": "lane.completed", "lane_id": cancelled, "summary": "late"},
        "invalid_event",
        "has ended (cancelled)",
    )


async def test_a_person_does_not_complete_a_lane(api: Api) -> None:
    r = await rooms(api)
    _, lane = await open_lane(api, r)
    await refused(
        api,
        r,
        r.owner,
        {"type": "lane.completed", "lane_id": lane, "summary": "done"},
        "forbidden",
        "written by the harness working the lane",
    )


async def test_a_harness_outside_the_lanes_room_does_not_end_it(api: Api) -> None:
    r = await rooms(api)
    scout, _ = await api.connect_harness(r.owner, "Scout")
    _, lane = await open_lane(api, r)
    await refused(
        api,
        r,
        scout,
        {"type": "lane.failed", "lane_id": lane, "why": "mine"},
        "forbidden",
        "not in the room",
    )


async def test_only_the_harness_whose_run_works_a_lane_ends_it(api: Api) -> None:
    r = await rooms(api)
    scout, _ = await api.connect_harness(r.owner, "Scout")
    assert (await api.add_to_room(r.owner, r.shop, scout.participant_id)).status_code == 200
    _, lane = await open_lane(api, r)
    await start(api, r.jacobian, r.shop, lane_id=lane)
    await refused(
        api,
        r,
        scout,
        {"type": "lane.completed", "lane_id": lane, "summary": "mine"},
        "forbidden",
        "worked by another harness's run",
    )


async def test_a_run_works_an_open_lane_of_its_own_room_alone(api: Api) -> None:
    r = await rooms(api)
    _, lane = await open_lane(api, r)
    await refused(
        api,
        r,
        r.jacobian,
        {
            "type": "run.started",
            "run_id": "run_w",
            "space_id": r.home,
            "goal": "x",
            "lane_id": lane,
        },
        "invalid_event",
        "went to another room",
    )
    worker = await start(api, r.jacobian, r.shop, lane_id=lane)
    await refused(
        api,
        r,
        r.jacobian,
        {
            "type": "run.started",
            "run_id": "run_w",
            "space_id": r.shop,
            "goal": "x",
            "lane_id": lane,
        },
        "invalid_event",
        f"is worked by {worker} already",
    )
    await refused(
        api,
        r,
        r.jacobian,
        {
            "type": "run.started",
            "run_id": "run_w",
            "space_id": r.shop,
            "goal": "x",
            "lane_id": "lane_no",
        },
        "not_found",
        "no lane lane_no",
    )


async def test_cancel_from_the_route_card_stops_the_lanes_run_not_the_openers(api: Api) -> None:
    r = await rooms(api)
    maya = await api.add_person(r.owner, "Maya Chen")  # in Shopping, where the lane went
    assert (await api.add_to_room(r.owner, r.shop, maya.participant_id)).status_code == 200
    opener, lane = await open_lane(api, r)
    worker = await start(api, r.jacobian, r.shop, lane_id=lane)
    last = await api.append(maya, {"type": "lane.cancelled", "lane_id": lane, "why": "not needed"})
    events = [e for e in await api.read(r.owner, since=last - 3)]
    assert [(e["type"], e["space_id"]) for e in events] == [
        ("lane.cancelled", r.shop),
        ("lane.cancelled", r.home),
        ("run.cancel", r.shop),
    ]
    assert events[-1]["run_id"] == worker and events[-1]["actor"]["id"] == maya.participant_id
    # The lane's run has ended; the run that opened the lane carries on.
    await refused(
        api,
        r,
        r.jacobian,
        {"type": "step.log", "run_id": worker, "step_id": "s1", "status": "started"},
        "invalid_event",
        "has ended (cancelled)",
    )
    await api.append(
        r.jacobian, {"type": "step.log", "run_id": opener, "step_id": "s1", "status": "started"}
    )


async def test_a_person_outside_both_rooms_does_not_cancel_a_lane(api: Api) -> None:
    r = await rooms(api)
    maya = await api.add_person(r.owner, "Maya Chen")
    _, lane = await open_lane(api, r)
    await refused(
        api,
        r,
        maya,
        {"type": "lane.cancelled", "lane_id": lane},
        "forbidden",
        "by a person in one of its rooms",
    )


async def test_another_harness_does_not_cancel_a_lane(api: Api) -> None:
    r = await rooms(api)
    scout, _ = await api.connect_harness(r.owner, "Scout")
    assert (await api.add_to_room(r.owner, r.shop, scout.participant_id)).status_code == 200
    _, lane = await open_lane(api, r)
    await refused(
        api,
        r,
        scout,
        {"type": "lane.cancelled", "lane_id": lane},
        "forbidden",
        "the harness that opened it or works it",
    )


async def test_a_lane_does_not_go_into_an_archived_room(api: Api) -> None:
    r = await rooms(api)
    run = await start(api, r.jacobian, r.home)
    await api.append(r.owner, {"type": "space.updated", "space_id": r.shop, "state": "closed"})
    await refused(
        api, r, r.jacobian, opened(key("lane_j"), r.shop, run_id=run), "invalid_event", "archived"
    )
