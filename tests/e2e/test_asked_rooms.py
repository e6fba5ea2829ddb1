"""Rooms a person asks of a harness (docs/product/spaces.md, Retitling and archiving, last part).

"The room's space.created names the harness in asked_of, and only a harness that declares
new_spaces may be asked. The harness is sent that event, and claims the room through the
same door: POST /v1/harnesses/:id/spaces with its own key, a title if it has one, and the
room's space_id. The room takes the key (space.claimed), and from then on it is the
harness's room as if it had opened it ... Rooms asked of a harness and not yet claimed are
listed as asked beside spaces in GET /v1/harnesses/:id/spaces."
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket


async def declared(api: Api, owner: Identity, name: str, *caps: str) -> Identity:
    harness, _ = await api.connect_harness(owner, name)
    r = await api.http.put(
        f"/v1/harnesses/{harness.participant_id}/capabilities",
        json={"capabilities": list(caps)},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    return harness


def asking(harness: Identity, title: str, **more: Any) -> dict[str, Any]:
    return {"type": "space.created", "title": title, "asked_of": harness.participant_id, **more}


async def test_a_person_asks_a_room_of_a_harness_and_the_harness_is_sent_it(
    stack, api: Api
) -> None:
    """docs/product/spaces.md: "The room's space.created names the harness in asked_of ... The
    harness is sent that event"; every face picked is put in the room (docs/product/spaces.md, Rooms
    asked of a harness)."""
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    jacobian = await declared(api, owner, "Jacobian", "new_spaces", "follows_rooms")
    bot = await Socket.open(stack.gateway_b, jacobian)
    await bot.subscribe(owner.workspace_id, since=await api.head(owner))

    seq = await api.append(maya, asking(jacobian, "Taxes 2026"))
    frame = await bot.wait_for(lambda f: f["frame"] == "event" and f["event"]["seq"] == seq)
    event = frame["event"]
    assert event["type"] == "space.created" and event["asked_of"] == jacobian.participant_id
    assert jacobian.participant_id in event["members"]
    listed = await api.harness_spaces(jacobian, jacobian.participant_id, seq)
    assert listed["asked"] == [
        {
            "space_id": event["space_id"],
            "title": "Taxes 2026",
            "state": "open",
            "asked_by": maya.participant_id,
            "asked_seq": seq,
        }
    ]
    assert listed["spaces"] == []
    await bot.close()


async def test_only_a_harness_that_declares_new_spaces_may_be_asked(stack, api: Api) -> None:
    """docs/product/spaces.md: "only a harness that declares new_spaces may be asked"."""
    owner = await api.create_workspace()
    plain = await declared(api, owner, "Plain", "agents")
    head = await api.head(owner)
    await api.refused(owner, asking(plain, "Please"), "forbidden", "does not take new spaces")
    await api.refused(
        owner, {"type": "space.created", "asked_of": "hrn_nobody"}, "not_found", "no such harness"
    )
    assert await api.head(owner) == head


async def test_the_harness_claims_the_room_through_its_door_and_it_is_its_own_from_then_on(
    stack, api: Api
) -> None:
    """docs/product/spaces.md: "The room takes the key (space.claimed), and from then on it is the
    harness's room as if it had opened it: asking for the key finds it, and the harness
    retitles, archives and follows it"."""
    owner = await api.create_workspace()
    jacobian = await declared(api, owner, "Jacobian", "new_spaces")
    seq = await api.append(owner, asking(jacobian, "Trip"))
    space_id = (await api.read(owner, since=seq - 1))[0]["space_id"]
    person = await Socket.open(stack.gateway_a, owner)
    await person.subscribe(owner.workspace_id, since=seq)

    r = await api.open_by_key(jacobian, "jspace-88", "India trip 2026", space_id=space_id)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["space_id"] == space_id and body["claimed"] is True and body["retitled"] is True
    await person.wait_for_seq(body["seq"])
    claimed = [e for e in person.events() if e["type"] == "space.claimed"]
    assert claimed and claimed[0]["key"] == "jspace-88"
    assert claimed[0]["actor"] == {"kind": "harness", "id": jacobian.participant_id}

    listed = await api.harness_spaces(jacobian, jacobian.participant_id, body["seq"])
    assert listed["asked"] == []
    assert [(s["space_id"], s["key"], s["title"]) for s in listed["spaces"]] == [
        (space_id, "jspace-88", "India trip 2026")
    ]
    found = (await api.open_by_key(jacobian, "jspace-88")).json()
    assert found["space_id"] == space_id and found["seq"] is None
    again = (await api.open_by_key(jacobian, "jspace-88", space_id=space_id)).json()
    assert again["space_id"] == space_id and again["claimed"] is False

    archived = await api.append(
        jacobian, {"type": "space.updated", "space_id": space_id, "state": "closed"}
    )
    sheet = await api.sheet(owner, space_id, archived)
    assert sheet["state"] == "closed" and sheet["moved_by"] == jacobian.participant_id
    assert sheet["key"] == "jspace-88"
    await person.close()


async def test_a_harness_claims_only_a_room_asked_of_it_and_only_once(stack, api: Api) -> None:
    """A room asked of another harness, or of nobody, is not this harness's to claim; a
    claimed room keeps its key; a key already naming a space cannot be reused."""
    owner = await api.create_workspace()
    jacobian = await declared(api, owner, "Jacobian", "new_spaces")
    other = await declared(api, owner, "Other", "new_spaces")
    seq = await api.append(owner, asking(jacobian, "Mine"))
    asked = (await api.read(owner, since=seq - 1))[0]["space_id"]
    plain_room = await api.open_space(owner, "Not asked", [jacobian.participant_id])
    await api.open_by_key(jacobian, "taken", "Taken")
    head = await api.head(owner)

    for harness, space_id, key, code, says in (
        (other, asked, "k1", 403, "not asked of you"),
        (jacobian, plain_room, "k2", 403, "not asked of you"),
        (jacobian, "spc_nope", "k3", 403, "not asked of you"),
        (jacobian, asked, "taken", 422, "names another space"),
    ):
        r = await api.open_by_key(harness, key, space_id=space_id)
        assert r.status_code == code and says in r.json()["message"], r.text
    assert await api.head(owner) == head

    assert (await api.open_by_key(jacobian, "mine", space_id=asked)).json()["claimed"] is True
    r = await api.open_by_key(jacobian, "another", space_id=asked)
    assert r.status_code == 422 and "claimed already" in r.json()["message"]
