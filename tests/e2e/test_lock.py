"""Locking a room's changes (docs/product/websocket.md, after the spend ceiling).

"POST /v1/spaces/:id/lock {locked} (space.lock_set): while a room's changes are
locked no person renames, archives or deletes it, and your own rename or close of a room
you opened still lands." Locking is "a person's".
"""

from __future__ import annotations

from tests.e2e.client import Api, Socket


async def test_while_a_room_is_locked_no_person_renames_or_archives_it(stack, api: Api) -> None:
    """docs/product/websocket.md: "while a room's changes are locked no person renames, archives or
    deletes it" — not a member, not its owner, not from the composer; unlocked, they can."""
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    room = await api.open_space(owner, "Board", [maya.participant_id])
    head = await api.head(owner)
    watch = await Socket.open(stack.gateway_b, maya)
    await watch.subscribe(maya.workspace_id, since=head)
    r = await api.lock(owner, room)
    assert r.status_code == 200, r.text
    locked = r.json()["seq"]
    await watch.wait_for_seq(locked)
    assert next(e for e in watch.events() if e["seq"] == locked)["locked"] is True

    reason = "this room's changes are locked"
    for who in (maya, owner):
        for change in ({"title": "Mine"}, {"state": "closed"}):
            r = await api.change_room(who, room, **change)
            assert r.status_code == 403 and reason in r.json()["message"], r.text
    await api.refused(
        maya, {"type": "message.post", "space_id": room, "text": "/archive"}, "forbidden", reason
    )
    assert await api.head(owner) == locked
    said = await api.say(maya, room, "talking still works")
    added = await api.add_person(owner, "Olga Other")
    assert (await api.add_to_room(maya, room, added.participant_id)).status_code == 200

    sheet = await api.sheet(owner, room, said)
    assert sheet["locked"] is True
    lines = [x["text"] for x in await api.lines(owner, room, said)]
    assert "Arjun Rao locked the room's changes" in lines

    unlocked = (await api.lock(owner, room, locked=False)).json()["seq"]
    r = await api.change_room(maya, room, title="Board 2027")
    assert r.status_code == 200, r.text
    sheet = await api.sheet(owner, room, r.json()["seq"])
    assert sheet["locked"] is False and sheet["title"] == "Board 2027"
    assert unlocked < r.json()["seq"]
    await watch.close()


async def test_the_opening_harness_own_rename_and_close_still_land_while_locked(
    stack, api: Api
) -> None:
    """docs/product/websocket.md: "your own rename or close of a room you opened still lands"."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    room = (await api.open_by_key(scout, "jspace-9", "Shopping")).json()["space_id"]
    assert (await api.lock(owner, room)).status_code == 200
    r = await api.change_room(owner, room, title="Groceries")
    assert r.status_code == 403

    renamed = (await api.open_by_key(scout, "jspace-9", "Shopping list")).json()
    assert renamed["retitled"] is True
    sock = await Socket.open(stack.gateway_a, scout)
    for change in ({"title": "Shopping 2026"}, {"state": "closed"}):
        k = await sock.write({"type": "space.updated", "space_id": room, **change})
        ack = await sock.answer(k)
        assert ack["frame"] == "ack", ack
    sheet = await api.sheet(owner, room, ack["seq"])
    assert (sheet["title"], sheet["state"], sheet["locked"]) == ("Shopping 2026", "closed", True)
    await sock.close()


async def test_only_the_rooms_owner_or_a_workspace_owner_or_admin_locks_it(stack, api: Api) -> None:
    """Locking is a person's (docs/product/websocket.md): here the room's owner or a workspace owner
    or admin in the room; a member, a guest and a harness are refused with the reason."""
    owner = await api.create_workspace()
    admin = await api.add_person(owner, "Ada Admin", role="admin")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(
        maya, "Maya's", [admin.participant_id, owner.participant_id, scout.participant_id]
    )
    olga = await api.add_person(owner, "Olga Other")
    head = await api.head(owner)
    r = await api.lock(scout, room)
    assert r.status_code == 403 and "a person's" in r.json()["message"]
    r = await api.lock(olga, room)
    assert r.status_code == 403 and "not a member" in r.json()["message"]
    await api.add_to_room(maya, room, olga.participant_id)
    r = await api.lock(olga, room)
    assert r.status_code == 403 and "only the room's owner" in r.json()["message"]
    head = await api.head(owner)

    assert (await api.lock(admin, room)).status_code == 200
    r = await api.lock(maya, room)
    assert r.status_code == 422 and "locked already" in r.json()["message"]
    assert (await api.lock(owner, room, locked=False)).status_code == 200
    assert (await api.lock(maya, room)).status_code == 200
    assert await api.head(owner) == head + 3
