"""The harness door: ``POST /v1/harnesses/:id/spaces`` and ``GET /v1/harnesses/:id/spaces``.

docs/product/spaces.md, How one is opened: a harness opens a space through one door, with the key
its adapter names the work by; the key is unique in the workspace, so the same key finds
the same space; what it gets is a direct space with itself and its owner in it, opened for
the owner. A shared key lets a second harness join the first one's space with its owner.
Retitling and archiving: the same door with a new title retitles, and a person's rename
holds over it; the list says every space it opened by key, whether open, and who last
moved it.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_agents_view import directory


async def standings_of(api: Api, who: Identity, members: list[dict[str, Any]]) -> dict[str, str]:
    """Each member's standing, by who it is: a person or harness itself, or the harness
    behind the agent Chips gave it in the room (people see that agent, docs/adr/0154)."""
    listed = await directory(api, who)
    behind = {pid: p.get("harness_id") or pid for pid, p in listed.items()}
    return {behind[m["participant_id"]]: m["standing"] for m in members}


async def test_a_harness_opens_a_direct_space_with_itself_and_its_owner_opened_for_the_owner(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, How one is opened: "a direct space with itself and its owner in it,
    opened for the owner", which puts it on the owner's list with its title."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    head = await api.head(owner)
    person = await Socket.open(stack.gateway_a, owner)
    bot = await Socket.open(stack.gateway_b, scout)
    await person.subscribe(owner.workspace_id, since=head)
    await bot.subscribe(owner.workspace_id, since=head)

    r = await api.open_by_key(scout, "chips-main", "Chips · main")
    assert r.status_code == 201, r.text
    opened = r.json()
    assert opened["opened"] is True and opened["title"] == "Chips · main"
    assert opened["state"] == "open" and opened["seq"] > head
    space_id = opened["space_id"]

    for sock in (person, bot):
        await sock.wait_for_seq(opened["seq"])
    created = next(e for e in person.events() if e["seq"] == opened["seq"])
    assert created["type"] == "space.created" and created["kind"] == "direct"
    assert created["key"] == "chips-main" and created["opened_for"] == owner.participant_id
    assert created["actor"] == {"kind": "harness", "id": scout.participant_id}

    listed = await api.spaces(owner, opened["seq"])
    mine = next(s for s in listed["spaces"] if s["id"] == space_id)
    assert mine["title"] == "Chips · main" and mine["key"] == "chips-main"
    # People see the agent Chips gave the harness there (docs/adr/0154), its harness behind it.
    standings = await standings_of(api, owner, mine["members"])
    assert standings == {owner.participant_id: "owner", scout.participant_id: "member"}
    said = await api.say(owner, space_id, "hello")
    await bot.wait_for_seq(said)
    await person.close()
    await bot.close()


async def test_the_same_key_finds_the_same_space_and_logs_nothing(stack, api: Api) -> None:
    """docs/product/spaces.md, How one is opened: "a bridge that has lost everything finds
    yesterday's spaces rather than making a second set"."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    first = (await api.open_by_key(scout, "jspace-7", "Shopping")).json()
    head = await api.head(owner)
    again = await api.open_by_key(scout, "jspace-7", "Shopping")
    assert again.status_code == 200
    body = again.json()
    assert body["space_id"] == first["space_id"] and body["opened"] is False
    assert body["seq"] is None, "nothing changed, so nothing was logged"
    assert await api.head(owner) == head
    untitled = (await api.open_by_key(scout, "jspace-7")).json()
    assert untitled["space_id"] == first["space_id"] and untitled["title"] == "Shopping"


async def test_a_key_is_a_harness_own_unless_shared(stack, api: Api) -> None:
    """docs/product/spaces.md, How one is opened: "A key is the harness's own unless the adapter
    marks it shared"; the key is unique in the workspace."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    await api.open_by_key(scout, "chips-main", "Chips · main")
    head = await api.head(owner)
    for shared in (False, True):
        r = await api.open_by_key(ledger, "chips-main", shared=shared)
        assert r.status_code == 403 and r.json()["code"] == "forbidden"
        assert "another harness's space" in r.json()["message"]
    assert await api.head(owner) == head


async def test_a_shared_key_makes_a_second_harness_join_the_first_ones_space_with_its_owner(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, How one is opened: "Two harnesses in one worktree share one space —
    the second to open it joins the space the first opened, with its owner beside it if
    that is somebody else"."""
    arjun = await api.create_workspace()
    maya = await api.add_person(arjun, "Maya Chen", role="admin")
    scout, _ = await api.connect_harness(arjun, "Scout")
    ledger, _ = await api.connect_harness(maya, "Ledger")
    first = (await api.open_by_key(scout, "worktree:/src/chips", "chips", shared=True)).json()
    head = await api.head(arjun)
    watch = await Socket.open(stack.gateway_b, arjun)
    await watch.subscribe(arjun.workspace_id, since=head)

    r = await api.open_by_key(ledger, "worktree:/src/chips", shared=True)
    assert r.status_code == 200, r.text
    joined = r.json()
    assert joined["space_id"] == first["space_id"] and joined["joined"] is True
    await watch.wait_for_seq(joined["seq"])
    sheet = await api.sheet(maya, first["space_id"], joined["seq"])
    standings = await standings_of(api, maya, sheet["members"])
    assert standings == {
        arjun.participant_id: "owner",
        scout.participant_id: "member",
        ledger.participant_id: "member",
        maya.participant_id: "member",
    }
    texts = [x["text"] for x in await api.lines(maya, first["space_id"], joined["seq"])]
    # Ledger comes in as the agent Chips gives it there, numbered (docs/adr/0154).
    assert texts[-2:] == ["Ledger added Maya Chen", "Ledger added Ledger 2"], texts
    for harness in (scout, ledger):
        listed = await api.harness_spaces(harness, harness.participant_id, joined["seq"])
        assert [s["space_id"] for s in listed["spaces"]] == [first["space_id"]]
    again = (await api.open_by_key(ledger, "worktree:/src/chips", shared=True)).json()
    assert again["seq"] is None and again["joined"] is False
    await watch.close()


async def test_the_same_door_with_a_new_title_retitles_and_a_persons_rename_holds_over_it(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Retitling and archiving: "POST /v1/harnesses/:id/spaces with the key
    and the new title retitles the space it finds. A person's rename holds over it
    afterwards." """
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    first = (await api.open_by_key(scout, "branch-9", "wip")).json()
    renamed = (await api.open_by_key(scout, "branch-9", "fix-login")).json()
    assert renamed["retitled"] is True and renamed["title"] == "fix-login"
    sheet = await api.sheet(owner, first["space_id"], renamed["seq"])
    assert sheet["title"] == "fix-login"

    by_person = await api.append(
        owner, {"type": "space.updated", "space_id": first["space_id"], "title": "Login bug"}
    )
    head = await api.head(owner)
    held = (await api.open_by_key(scout, "branch-9", "fix-login-2")).json()
    assert held["retitled"] is False and held["title"] == "Login bug" and held["seq"] is None
    assert await api.head(owner) == head
    assert (await api.sheet(owner, first["space_id"], by_person))["title"] == "Login bug"


async def test_a_harness_retitles_archives_and_unarchives_a_space_it_opened(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Who may do what in a space: a harness "retitles or closes only a
    space it opened itself"; Retitling and archiving: "A harness archives and unarchives
    the spaces it opened, with the same event"."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    space_id = (await api.open_by_key(scout, "jspace-1", "India trip")).json()["space_id"]
    bot = await Socket.open(stack.gateway_a, scout)
    person = await Socket.open(stack.gateway_b, owner)
    await person.subscribe(owner.workspace_id, since=await api.head(owner))
    acks = []
    for change in ({"title": "India trip 2026"}, {"state": "closed"}, {"state": "open"}):
        k = await bot.write({"type": "space.updated", "space_id": space_id, **change})
        ack = await bot.answer(k)
        assert ack["frame"] == "ack", ack
        acks.append(ack["seq"])
    for seq in acks:
        await person.wait_for_seq(seq)
    listed = await api.harness_spaces(scout, scout.participant_id, acks[-1])
    (only,) = listed["spaces"]
    assert only["title"] == "India trip 2026" and only["open"] is True
    # The unarchive is the room's last move; the agent Chips gave the harness there, which
    # the archive released, comes back after it in the same answer (docs/adr/0154).
    (reopened,) = [
        e["seq"]
        for e in person.events()
        if e["type"] == "space.updated" and e.get("state") == "open" and e["seq"] <= acks[-1]
    ]
    assert only["moved_by"] == scout.participant_id and only["moved_seq"] == reopened
    lines = [x["text"] for x in await api.lines(owner, space_id, acks[-1])]
    # The agent Chips gave Scout there is released by the archive and comes back with the
    # unarchive (docs/adr/0154), and the room says so.
    assert lines == [
        "Scout added Scout 2",
        "Scout renamed the room to “India trip 2026”",
        "Scout removed Scout 2",
        "Scout archived the room",
        "Scout unarchived the room",
        "Scout added Scout 2",
    ], lines
    await bot.close()
    await person.close()


async def test_the_harness_list_says_whether_each_space_is_open_and_who_last_moved_it(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Retitling and archiving: GET /v1/harnesses/:id/spaces lists "every
    space it opened by key, whether each is open, and who last moved it"."""
    owner = await api.create_workspace()
    scout, home = await api.connect_harness(owner, "Scout")
    a = (await api.open_by_key(scout, "a", "Alpha")).json()["space_id"]
    b = (await api.open_by_key(scout, "b", "Beta")).json()["space_id"]
    moved = await api.append(owner, {"type": "space.updated", "space_id": b, "state": "closed"})
    listed = await api.harness_spaces(scout, scout.participant_id, moved)
    by_key = {s["key"]: s for s in listed["spaces"]}
    assert set(by_key) == {"a", "b"}, "its home was handed to it, not opened by key"
    assert by_key["a"]["space_id"] == a and by_key["a"]["open"] is True
    assert by_key["a"]["moved_by"] is None
    assert by_key["b"]["open"] is False and by_key["b"]["state"] == "closed"
    assert by_key["b"]["moved_by"] == owner.participant_id and by_key["b"]["moved_seq"] == moved
    assert home not in {s["space_id"] for s in listed["spaces"]}
    # Its owner may read the list too; nobody else may.
    assert (await api.harness_spaces(owner, scout.participant_id, moved))["spaces"]
    maya = await api.add_person(owner, "Maya Chen")
    r = await api.http.get(f"/v1/harnesses/{scout.participant_id}/spaces", headers=api.auth(maya))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"


async def test_only_the_harness_itself_opens_spaces_through_its_door(stack, api: Api) -> None:
    """docs/product/spaces.md, How one is opened: the door is the harness's own ("the server
    enforces it, not the adapter"); a harness does not open spaces with space.created."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    head = await api.head(owner)
    as_owner = await api.http.post(
        f"/v1/harnesses/{scout.participant_id}/spaces",
        json={"key": "k"},
        headers=api.auth(owner),
    )
    as_other = await api.http.post(
        f"/v1/harnesses/{scout.participant_id}/spaces",
        json={"key": "k"},
        headers=api.auth(ledger),
    )
    for r in (as_owner, as_other):
        assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    await api.refused(
        scout,
        {"type": "space.created", "kind": "direct", "members": [owner.participant_id]},
        "forbidden",
        "through its door",
    )
    await api.refused(
        owner,
        {"type": "space.created", "title": "x", "key": "sneaky"},
        "invalid_event",
        "through a harness's door",
    )
    assert await api.head(owner) == head


async def test_a_harness_taken_out_of_its_keyed_space_is_not_let_back_in_by_the_door(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Leaving one: "Anyone still in the space can add you back from its
    room sheet" — the door does not undo a removal."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    space_id = (await api.open_by_key(scout, "k1", "One")).json()["space_id"]
    await api.append(
        owner,
        {
            "type": "membership.removed",
            "space_id": space_id,
            "participant_id": scout.participant_id,
        },
    )
    r = await api.open_by_key(scout, "k1", "One")
    assert r.status_code == 403 and "add you back" in r.json()["message"]
    await api.append(
        owner,
        {"type": "membership.added", "space_id": space_id, "participant_id": scout.participant_id},
    )
    assert (await api.open_by_key(scout, "k1")).json()["space_id"] == space_id
