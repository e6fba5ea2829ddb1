"""Read models: the space list, and a rebuild from seq 0 (docs/architecture/design.md §5)."""

from __future__ import annotations

from tests.e2e.client import Api
from tests.e2e.test_agents_given import given_agents


async def test_get_spaces_lists_the_callers_spaces(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, direct = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning")
    last = await api.say(owner, room, "agenda")
    r = await api.http.get("/v1/spaces", params={"after_seq": last}, headers=api.auth(owner))
    assert r.status_code == 200
    body = r.json()
    assert body["as_of_seq"] >= last
    spaces = {s["id"]: s for s in body["spaces"]}
    assert set(spaces) == {direct, room}
    assert spaces[room]["title"] == "Planning" and spaces[room]["message_count"] == 1
    assert body["spaces"][0]["id"] == room, "newest activity first"
    # A person sees the agent Chips gave the harness there, which stands in its place
    # (docs/adr/0154); the harness itself still reads its direct room as before.
    given = await given_agents(api, owner, harness)
    assert {m["participant_id"] for m in spaces[direct]["members"]} == {
        owner.participant_id,
        given[direct]["participant_id"],
    }

    r = await api.http.get("/v1/spaces", params={"after_seq": last}, headers=api.auth(harness))
    assert [s["id"] for s in r.json()["spaces"]] == [direct]


async def test_a_rebuild_from_seq_zero_gives_identical_tables(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, direct = await api.connect_harness(owner, "Scout")
    maya = await api.add_person(owner, "Maya Chen")
    last = 0
    for i in range(5):
        room = await api.open_space(owner, f"Room {i}", [maya.participant_id])
        await api.say(owner, room, f"hello {i}")
        await api.append(
            owner,
            {
                "type": "membership.added",
                "space_id": room,
                "participant_id": harness.participant_id,
            },
        )
        await api.say(maya, room, f"reply {i}")
        last = await api.append(
            maya,
            {"type": "membership.removed", "space_id": room, "participant_id": maya.participant_id},
        )
    await api.say(harness, direct, "done")
    r = await api.http.get("/v1/spaces", params={"after_seq": last + 1}, headers=api.auth(owner))
    assert r.json()["as_of_seq"] >= last + 1

    before = stack.run_module("chips_projector", "digest").strip()
    stack.run_module("chips_projector", "rebuild")
    after = stack.run_module("chips_projector", "digest").strip()
    assert before == after
