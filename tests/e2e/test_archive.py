"""Archiving (docs/product/spaces.md, Retitling and archiving; Deleting one).

"An archived space is off the list: the archived ones sit behind one row at the foot of
it, Archived, which says how many there are and shows them when it is pressed. Its history
and its members stay, and anyone in it can unarchive it." "A harness's home ... is never
deleted or archived."
"""

from __future__ import annotations

from tests.e2e.client import Api


async def test_an_archived_space_is_off_the_list_and_counted_behind_the_archived_row(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Retitling and archiving: off the list, behind one Archived row that
    says how many there are and shows them; its history and its members stay."""
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    keep = await api.open_space(owner, "Keep", [maya.participant_id])
    old = await api.open_space(owner, "Old project", [maya.participant_id])
    older = await api.open_space(owner, "Older project", [maya.participant_id])
    await api.say(maya, old, "the last word")
    await api.change_room(owner, old, state="closed")
    last = (await api.change_room(maya, older, state="closed")).json()["seq"]

    for who in (owner, maya):
        listed = await api.spaces(who, last)
        assert [s["id"] for s in listed["spaces"]] == [keep]
        assert listed["archived_count"] == 2
        archived = await api.spaces(who, last, archived=True)
        assert {s["id"] for s in archived["spaces"]} == {old, older}
        assert all(s["state"] == "closed" for s in archived["spaces"])
        assert archived["archived_count"] == 2
    shelved = next(
        s for s in (await api.spaces(maya, last, archived=True))["spaces"] if s["id"] == old
    )
    assert {m["participant_id"] for m in shelved["members"]} == {
        owner.participant_id,
        maya.participant_id,
    }
    history = await api.read(maya, space_id=old)
    assert "the last word" in [e.get("text") for e in history]


async def test_anyone_in_an_archived_space_can_unarchive_it(stack, api: Api) -> None:
    """docs/product/spaces.md, Retitling and archiving: "anyone in it can unarchive it" — here a
    member who did not archive it; it comes back on everyone's list."""
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    room = await api.open_space(owner, "Q3", [maya.participant_id])
    await api.change_room(owner, room, state="closed")
    r = await api.change_room(maya, room, state="open")
    assert r.status_code == 200, r.text
    back = r.json()["seq"]
    for who in (owner, maya):
        listed = await api.spaces(who, back)
        assert room in {s["id"] for s in listed["spaces"]} and listed["archived_count"] == 0


async def test_a_harness_home_is_never_archived_from_the_sheet_or_the_composer(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Deleting one: "A harness's home, the room its lead speaks in, is
    never deleted or archived"; docs/product/jacobian-channel.md: "Nobody archives or deletes
    it"."""
    owner = await api.create_workspace()
    scout, home = await api.connect_harness(owner, "Scout")
    head = await api.head(owner)
    r = await api.change_room(owner, home, state="closed")
    assert r.status_code == 403 and r.json()["message"] == "a harness's home is never archived"
    await api.refused(
        owner,
        {"type": "message.post", "space_id": home, "text": "/archive"},
        "forbidden",
        "a harness's home is never archived",
    )
    assert await api.head(owner) == head
    listed = await api.spaces(owner, head)
    assert home in {s["id"] for s in listed["spaces"]}
    home_row = next(s for s in listed["spaces"] if s["id"] == home)
    assert home_row["home_of"] == scout.participant_id and home_row["state"] == "open"


async def test_a_room_a_harness_opened_by_key_may_be_archived(stack, api: Api) -> None:
    """Only the home is kept open: a room a harness opened by key is archived like any
    other (docs/product/spaces.md, Retitling and archiving), by the person or by the harness."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    room = (await api.open_by_key(scout, "jspace-3", "Kalshi desk")).json()["space_id"]
    r = await api.change_room(owner, room, state="closed")
    assert r.status_code == 200, r.text
    listed = await api.spaces(owner, r.json()["seq"])
    assert room not in {s["id"] for s in listed["spaces"]} and listed["archived_count"] == 1
