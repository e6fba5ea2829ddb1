"""Who may delete a space, and what a delete becomes (docs/product/spaces.md, Deleting one).

"Delete is the room's owner's, or a workspace owner's or admin's … A thread goes with its
space, and a direct space nobody can open again … is archived instead. A room a harness
opened by key may be deleted. The harness is told." "A harness's home … is never deleted
or archived." docs/product/websocket.md: while a room's changes are locked, no person deletes it.
Each refusal carries its code and reason and changes nothing.
"""

from __future__ import annotations

import json

from tests.e2e.client import Api, Socket


async def delete(api: Api, who, space_id: str):  # type: ignore[no-untyped-def]
    return await api.http.delete(f"/v1/spaces/{space_id}", headers=api.auth(who))


async def test_erase_is_refused_to_all_but_the_owner_or_a_workspace_admin_and_changes_nothing(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    stranger = await api.add_person(owner, "Sam Stone")
    scout, home = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Plans", [maya.participant_id, scout.participant_id])
    said = await api.say(maya, room, "words that stay")
    root_id = next(e for e in await api.read(maya, space_id=room) if e["seq"] == said)["message_id"]
    thread = await api.open_thread(maya, room, root_id)
    locked = await api.open_space(owner, "Locked", [maya.participant_id])
    assert (await api.lock(owner, locked)).status_code == 200
    head = await api.head(owner)

    refusals = [
        (maya, room, 403, "only the room's owner, or a workspace owner or admin, deletes it"),
        (scout, room, 403, "a space is deleted by a person"),
        (stranger, room, 403, "you are not a member of this space"),
        (owner, home, 403, "a harness's home is never deleted"),
        (owner, locked, 403, "this room's changes are locked; unlock it to delete it"),
        (owner, thread, 422, "a thread goes with its room: delete the room"),
    ]
    for who, space_id, status, reason in refusals:
        r = await delete(api, who, space_id)
        assert r.status_code == status, r.text
        assert r.json()["message"].startswith(reason)
    # The same over the socket, as an event frame.
    sock = await Socket.open(stack.gateway_b, maya)
    k = await sock.write({"type": "space.erased", "space_id": room})
    err = await sock.answer(k)
    assert err["frame"] == "error" and err["code"] == "forbidden"
    await sock.close()

    assert await api.head(owner) == head
    assert "words that stay" in json.dumps(await api.read(maya, space_id=room))


async def test_a_workspace_admin_in_the_room_may_delete_it_and_a_follows_rooms_harness_archives(
    stack, api: Api
) -> None:
    """A room a harness opened by key may be deleted; the harness is told, and since the
    person deleting it does not own the harness, it archives its side (delete: false)."""
    owner = await api.create_workspace()
    admin = await api.add_person(owner, "Ada Admin", role="admin")
    scout, _ = await api.connect_harness(owner, "Scout")
    await api.append(
        owner,
        {
            "type": "harness.declared",
            "harness_id": scout.participant_id,
            "capabilities": ["follows_rooms"],
        },
    )
    room = (await api.open_by_key(scout, "jspace-9", "Kalshi desk")).json()["space_id"]
    await api.add_to_room(owner, room, admin.participant_id)
    await api.say(scout, room, "a harness's words")
    head = await api.head(owner)
    sock = await Socket.open(stack.gateway_a, scout)
    await sock.subscribe(scout.workspace_id, since=head)

    r = await delete(api, admin, room)
    assert r.status_code == 200, r.text
    frame = await sock.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "space.erased"
    )
    assert frame["event"]["follows"] == [{"harness_id": scout.participant_id, "delete": False}]
    assert frame["event"]["actor"]["id"] == admin.participant_id
    await sock.close()
    # docs/product/websocket.md: "what you post to a room that is gone is refused".
    await api.refused(
        scout,
        {"type": "message.post", "space_id": room, "text": "anyone there?"},
        "forbidden",
        "you are not a member of this space",
    )
    listed = await api.harness_spaces(scout, scout.participant_id, r.json()["seq"])
    assert room not in json.dumps(listed)
    # The key is free again: the harness's door opens a new space for it.
    again = await api.open_by_key(scout, "jspace-9", "Kalshi desk")
    assert again.status_code == 201 and again.json()["space_id"] != room


async def test_a_direct_space_nobody_could_open_again_is_archived_instead_of_deleted(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    r = await api.post_event(
        owner,
        {
            "type": "space.created",
            "kind": "direct",
            "members": [maya.participant_id],
            "idempotency_key": "dm-1",
        },
    )
    dm = (await api.read(owner, since=r.json()["seq"] - 1, limit=1))[0]["space_id"]
    await api.say(maya, dm, "between us")
    r = await delete(api, owner, dm)
    assert r.status_code == 200, r.text
    logged = (await api.read(owner, since=r.json()["seq"] - 1, limit=1))[0]
    assert logged["type"] == "space.updated" and logged["state"] == "closed"
    archived = await api.spaces(owner, r.json()["seq"], archived=True)
    assert dm in {s["id"] for s in archived["spaces"]}
    assert "between us" in json.dumps(await api.read(maya, space_id=dm))
    again = await delete(api, owner, dm)
    assert again.status_code == 422 and "archived already" in again.json()["message"]
