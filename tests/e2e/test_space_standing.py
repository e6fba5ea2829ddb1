"""Standing in a space, decided at the door (docs/product/spaces.md, Who may do what in a space).

owner: everything a member may, remove somebody else, delete. member: talk, add somebody,
retitle, archive and unarchive, leave. guest: talk, and leave. A harness in a space talks
and works; it retitles or closes only a space it opened itself. Each allowed action lands
and every member is sent it; each forbidden one is refused with its code and a reason,
and the log does not move.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.e2e.client import Api, Identity, Socket


@dataclass
class Room:
    owner: Identity
    maya: Identity  # member
    gus: Identity  # guest
    scout: Identity  # a harness, member
    space_id: str
    home: str  # Scout's home, Arjun's direct space with it


async def room_with_everyone(api: Api) -> Room:
    owner = await api.create_workspace()
    scout, home = await api.connect_harness(owner, "Scout")
    maya = await api.add_person(owner, "Maya Chen")
    gus = await api.add_person(owner, "Gus Guest", role="guest")
    space_id = await api.open_space(owner, "Planning", [maya.participant_id, scout.participant_id])
    await api.append(
        owner,
        {
            "type": "membership.added",
            "space_id": space_id,
            "participant_id": gus.participant_id,
            "standing": "guest",
        },
    )
    return Room(owner, maya, gus, scout, space_id, home)


async def watchers(stack, room: Room, since: int) -> list[Socket]:
    """A socket per member of the room, subscribed from ``since``."""
    socks = []
    for i, who in enumerate((room.owner, room.maya, room.gus, room.scout)):
        sock = await Socket.open(stack.gateway_a if i % 2 else stack.gateway_b, who)
        await sock.subscribe(who.workspace_id, since=since)
        socks.append(sock)
    return socks


async def everyone_sees(socks: list[Socket], seq: int) -> None:
    for sock in socks:
        await sock.wait_for_seq(seq)


async def close_all(socks: list[Socket]) -> None:
    for sock in socks:
        await sock.close()


def update(space_id: str, **fields: object) -> dict[str, object]:
    return {"type": "space.updated", "space_id": space_id, **fields}


async def test_a_member_retitles_archives_and_unarchives_and_every_member_sees_it(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Who may do what in a space: a member may "retitle, archive and
    unarchive"; Retitling and archiving: the room shows a muted line saying who did it."""
    room = await room_with_everyone(api)
    socks = await watchers(stack, room, await api.head(room.owner))

    retitled = await api.append(room.maya, update(room.space_id, title="Launch"))
    archived = await api.append(room.maya, update(room.space_id, state="closed"))
    last = await api.append(room.maya, update(room.space_id, state="open"))
    await everyone_sees(socks[:3], last)
    # The unarchive brings back the agent Chips gave Scout there, which the archive
    # released (docs/adr/0154): its answer's last seq is that agent's, which a harness
    # before agents is not sent. The room's moves it is sent.
    (reopened,) = [
        e["seq"]
        for e in socks[0].events()
        if e["type"] == "space.updated" and e.get("state") == "open"
    ]
    for seq in (retitled, archived, reopened):
        await everyone_sees(socks, seq)
    seen = {e["seq"]: e for e in socks[3].events()}
    assert seen[retitled]["title"] == "Launch"
    assert seen[archived]["state"] == "closed" and seen[reopened]["state"] == "open"
    assert seen[archived]["actor"] == {"kind": "person", "id": room.maya.participant_id}

    sheet = await api.sheet(room.owner, room.space_id, reopened)
    assert sheet["title"] == "Launch" and sheet["state"] == "open"
    assert sheet["moved_by"] == room.maya.participant_id and sheet["moved_seq"] == reopened
    lines = [
        (x["kind"], x["author_id"], x["text"]) for x in await api.lines(room.gus, room.space_id)
    ]
    maya = room.maya.participant_id
    assert ("system", maya, "Maya Chen renamed the room to “Launch”") in lines
    assert ("system", maya, "Maya Chen archived the room") in lines
    assert ("system", maya, "Maya Chen unarchived the room") in lines
    await close_all(socks)


async def test_the_owner_retitles_and_archives_too(stack, api: Api) -> None:
    """docs/product/spaces.md, Who may do what in a space: an owner may everything a member may."""
    room = await room_with_everyone(api)
    seq = await api.append(room.owner, update(room.space_id, title="Q3", state="closed"))
    sheet = await api.sheet(room.owner, room.space_id, seq)
    assert (sheet["title"], sheet["state"]) == ("Q3", "closed")


async def test_a_guest_talks_and_leaves_but_adds_retitles_and_archives_nothing(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Who may do what in a space: a guest may "Talk, and leave"."""
    room = await room_with_everyone(api)
    other = await api.add_person(room.owner, "Olga Other")
    said = await api.say(room.gus, room.space_id, "hello from a guest")
    head = await api.head(room.owner)
    assert head == said

    await api.refused(
        room.gus,
        {
            "type": "membership.added",
            "space_id": room.space_id,
            "participant_id": other.participant_id,
        },
        "forbidden",
        "a guest may talk and leave",
    )
    await api.refused(room.gus, update(room.space_id, title="Mine"), "forbidden", "a guest")
    await api.refused(room.gus, update(room.space_id, state="closed"), "forbidden", "a guest")
    await api.refused(
        room.gus,
        {
            "type": "membership.removed",
            "space_id": room.space_id,
            "participant_id": room.maya.participant_id,
        },
        "forbidden",
        "only the space's owner",
    )
    assert await api.head(room.owner) == head, "a refusal logs nothing"

    socks = await watchers(stack, room, head)
    left = await api.append(
        room.gus,
        {
            "type": "membership.removed",
            "space_id": room.space_id,
            "participant_id": room.gus.participant_id,
        },
    )
    await everyone_sees(socks, left)
    sheet = await api.sheet(room.owner, room.space_id, left)
    assert room.gus.participant_id not in {m["participant_id"] for m in sheet["members"]}
    assert sheet["title"] == "Planning" and sheet["state"] == "open"
    await close_all(socks)


async def test_a_member_adds_somebody_and_everyone_sees_who_did(stack, api: Api) -> None:
    """docs/product/spaces.md, Who may do what in a space: a member may "add somebody"."""
    room = await room_with_everyone(api)
    olga = await api.add_person(room.owner, "Olga Other")
    socks = await watchers(stack, room, await api.head(room.owner))
    added = await api.append(
        room.maya,
        {
            "type": "membership.added",
            "space_id": room.space_id,
            "participant_id": olga.participant_id,
        },
    )
    await everyone_sees(socks, added)
    lines = await api.lines(room.owner, room.space_id, added)
    assert lines[-1]["kind"] == "system" and lines[-1]["text"] == "Maya Chen added Olga Other"
    await close_all(socks)


async def test_only_the_owner_removes_somebody_else(stack, api: Api) -> None:
    """docs/product/spaces.md, Who may do what in a space: an owner may "remove somebody else"."""
    room = await room_with_everyone(api)
    head = await api.head(room.owner)
    gone = {
        "type": "membership.removed",
        "space_id": room.space_id,
        "participant_id": room.gus.participant_id,
    }
    await api.refused(room.maya, gone, "forbidden", "only the space's owner takes others out")
    assert await api.head(room.owner) == head

    socks = await watchers(stack, room, head)
    removed = await api.append(room.owner, gone)
    await everyone_sees(socks, removed)  # Gus too: he is told he was taken out
    lines = await api.lines(room.owner, room.space_id, removed)
    assert lines[-1]["text"] == "Arjun Rao removed Gus Guest"
    assert lines[-1]["author_id"] == room.owner.participant_id
    await close_all(socks)


async def test_a_harness_talks_but_retitles_or_closes_only_a_space_it_opened_itself(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Who may do what in a space: "A harness in a space talks and works;
    it retitles or closes only a space it opened itself." A person opened this one."""
    room = await room_with_everyone(api)
    olga = await api.add_person(room.owner, "Olga Other")
    said = await api.say(room.scout, room.space_id, "working on it")
    reason = "a harness retitles or closes only a space it opened itself"
    await api.refused(room.scout, update(room.space_id, title="Scout's"), "forbidden", reason)
    await api.refused(room.scout, update(room.space_id, state="closed"), "forbidden", reason)
    await api.refused(room.scout, update(room.home, title="My home"), "forbidden", reason)
    await api.refused(
        room.scout,
        {
            "type": "membership.added",
            "space_id": room.space_id,
            "participant_id": olga.participant_id,
        },
        "forbidden",
        "a harness talks and works",
    )
    await api.refused(
        room.scout,
        {
            "type": "membership.removed",
            "space_id": room.space_id,
            "participant_id": room.gus.participant_id,
        },
        "forbidden",
        "a harness talks and works",
    )
    assert await api.head(room.owner) == said


async def test_a_harness_home_is_never_archived(stack, api: Api) -> None:
    """docs/product/spaces.md, Deleting one: "A harness's home, the room its lead speaks in, is
    never deleted or archived"; its owner may still retitle it."""
    room = await room_with_everyone(api)
    head = await api.head(room.owner)
    await api.refused(
        room.owner,
        update(room.home, state="closed"),
        "forbidden",
        "a harness's home is never archived",
    )
    await api.refused(
        room.scout,
        {
            "type": "membership.removed",
            "space_id": room.home,
            "participant_id": room.scout.participant_id,
        },
        "forbidden",
        "a harness stays in its home",
    )
    assert await api.head(room.owner) == head
    seq = await api.append(room.owner, update(room.home, title="Scout · main"))
    assert (await api.sheet(room.owner, room.home, seq))["title"] == "Scout · main"


async def test_an_update_that_changes_nothing_is_refused_as_invalid(stack, api: Api) -> None:
    """space.updated changes a title or a state; one that changes neither is invalid_event."""
    room = await room_with_everyone(api)
    head = await api.head(room.owner)
    await api.refused(
        room.maya, update(room.space_id, state="open"), "invalid_event", "open already"
    )
    await api.refused(
        room.maya, update(room.space_id, title="Planning"), "invalid_event", "title already"
    )
    await api.refused(room.maya, update(room.space_id), "invalid_event", "a new title, a state")
    assert await api.head(room.owner) == head


async def test_a_stranger_is_refused_alike_whether_or_not_the_room_exists(stack, api: Api) -> None:
    """docs/product/websocket.md, Writing: a write into a space you are not in is forbidden, and the
    refusal says nothing about which rooms exist."""
    room = await room_with_everyone(api)
    olga = await api.add_person(room.owner, "Olga Other")
    real = await api.refused(olga, update(room.space_id, title="x"), "forbidden", "not a member")
    fake = await api.refused(olga, update("spc_nope", title="x"), "forbidden", "not a member")
    assert real["message"] == fake["message"]
