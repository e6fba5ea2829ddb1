"""The room sheet over HTTP (docs/product/spaces.md, Several harnesses and people in one space).

"The room sheet ... lists who is in it and their standing, adds anyone from the directory,
and takes anyone out"; on the desktop Archive and Unarchive are on the room sheet
(Retitling and archiving). Each call is the event it names, decided at the door.
"""

from __future__ import annotations

from tests.e2e.client import Api, Identity, Socket


async def room(api: Api) -> tuple[Identity, Identity, Identity, str]:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    gus = await api.add_person(owner, "Gus Guest", role="guest")
    space_id = await api.open_space(owner, "Planning", [maya.participant_id])
    return owner, maya, gus, space_id


async def test_the_room_sheet_adds_and_removes_and_every_member_sees_it(stack, api: Api) -> None:
    """docs/product/spaces.md, Several harnesses and people in one space: the room sheet "adds
    anyone from the directory, and takes anyone out"; a member adds, the owner removes."""
    owner, maya, gus, space_id = await room(api)
    head = await api.head(owner)
    socks = []
    for who, url in ((owner, stack.gateway_a), (maya, stack.gateway_b)):
        sock = await Socket.open(url, who)
        await sock.subscribe(who.workspace_id, since=head)
        socks.append(sock)

    r = await api.add_to_room(maya, space_id, gus.participant_id, "guest")
    assert r.status_code == 200, r.text
    added = r.json()["seq"]
    sheet = await api.sheet(owner, space_id, added)
    assert {m["participant_id"]: m["standing"] for m in sheet["members"]}[
        gus.participant_id
    ] == "guest"
    assert {m["name"] for m in sheet["members"]} == {"Arjun Rao", "Maya Chen", "Gus Guest"}

    r = await api.remove_from_room(owner, space_id, gus.participant_id)
    assert r.status_code == 200, r.text
    removed = r.json()["seq"]
    for sock in socks:
        await sock.wait_for_seq(added)
        await sock.wait_for_seq(removed)
    lines = [x["text"] for x in await api.lines(owner, space_id, removed)]
    assert lines[-2:] == ["Maya Chen added Gus Guest", "Arjun Rao removed Gus Guest"]
    for sock in socks:
        await sock.close()


async def test_the_room_sheet_refuses_what_the_standing_does_not_allow(stack, api: Api) -> None:
    """docs/product/spaces.md, Who may do what in a space: a guest adds nobody; only the owner
    removes somebody else; refusals over HTTP carry the code and the reason."""
    owner, maya, gus, space_id = await room(api)
    await api.add_to_room(owner, space_id, gus.participant_id, "guest")
    olga = await api.add_person(owner, "Olga Other")
    head = await api.head(owner)
    r = await api.add_to_room(gus, space_id, olga.participant_id)
    assert r.status_code == 403 and r.json() == {
        "code": "forbidden",
        "message": "a guest may talk and leave, not add anyone",
    }
    r = await api.remove_from_room(maya, space_id, gus.participant_id)
    assert r.status_code == 403 and "only the space's owner" in r.json()["message"]
    r = await api.change_room(gus, space_id, state="closed")
    assert r.status_code == 403 and "a guest" in r.json()["message"]
    r = await api.add_to_room(maya, space_id, "usr_nobody")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await api.change_room(maya, space_id)
    assert r.status_code == 422 and r.json()["code"] == "invalid_event"
    assert await api.head(owner) == head


async def test_the_room_sheet_retitles_archives_and_unarchives(stack, api: Api) -> None:
    """docs/product/spaces.md, Retitling and archiving: "on the desktop both are on the room
    sheet"."""
    owner, maya, _, space_id = await room(api)
    seqs = []
    for change in ({"title": "Launch"}, {"state": "closed"}, {"state": "open"}):
        r = await api.change_room(maya, space_id, **change)
        assert r.status_code == 200, r.text
        seqs.append(r.json()["seq"])
    sheet = await api.sheet(owner, space_id, seqs[-1])
    assert sheet["title"] == "Launch" and sheet["state"] == "open"
    assert sheet["moved_by"] == maya.participant_id


async def test_leaving_from_the_sheet_takes_the_space_off_your_list(stack, api: Api) -> None:
    """docs/product/spaces.md, Leaving one: "It is a membership.removed naming you ... anyone still
    in the space carries on ... Anyone still in the space can add you back"."""
    owner, maya, _, space_id = await room(api)
    r = await api.remove_from_room(maya, space_id, maya.participant_id)
    assert r.status_code == 200, r.text
    left = r.json()["seq"]
    assert space_id not in {s["id"] for s in (await api.spaces(maya, left))["spaces"]}
    said = await api.say(owner, space_id, "carrying on")
    back = (await api.add_to_room(owner, space_id, maya.participant_id)).json()["seq"]
    listed = await api.spaces(maya, back)
    assert space_id in {s["id"] for s in listed["spaces"]}
    assert said < back


async def test_someone_added_mid_conversation_reads_the_room_from_its_beginning(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Several harnesses and people in one space: "Somebody added to a room
    while their app is open reads it from its beginning (GET /v1/events?space_id=)"."""
    owner, maya, _, space_id = await room(api)
    olga = await api.add_person(owner, "Olga Other")
    first = await api.say(owner, space_id, "before Olga came")
    await api.add_to_room(maya, space_id, olga.participant_id)
    events = await api.read(olga, space_id=space_id)
    assert events[0]["type"] == "space.created"
    assert "before Olga came" in [e.get("text") for e in events]
    assert first in [e["seq"] for e in events]
