"""Who finds what: the leak matrix of GET /v1/search (docs/product/messages.md, Search).

A search reads the spaces the caller is in *now* (and their threads), checked against
membership when it runs, never taken from the index: an ex-member, a stranger in the same
workspace and another workspace's user find nothing of a room, whatever ``q``,
``space_id`` or cursor they send. The members of the room are the control: they find
every planted line, so a matrix that found nothing for anyone would fail.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from tests.e2e.client import Api, Identity
from tests.e2e.test_changing_words import said
from tests.e2e.test_runs import start
from tests.e2e.test_search import found, search


def variants(word: str) -> list[str]:
    return [
        word,
        word[:6],
        word.upper(),
        f"{word} thread",
        f"{word}:*",
        f"!{word}",
        f"{word} | x",
        f"'{word}'",
        f"{word[:4]}\\",
        "the",
        "t",
    ]


async def test_nobody_outside_a_room_finds_anything_of_it(api: Api) -> None:
    word = f"kumquat{secrets.token_hex(3)}"
    owner = await api.create_workspace(owner="Arjun Rao")
    lee = await api.add_person(owner, "Lee Park")
    maya = await api.add_person(owner, "Maya Chen")
    sam = await api.add_person(owner, "Sam Ortiz")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(
        owner, "Secret", [lee.participant_id, maya.participant_id, scout.participant_id]
    )
    planted: set[str] = set()
    for who in (owner, maya, scout, lee):
        for i in range(2):
            _, mid = await said(api, who, room, f"the {word} plan, part {i}")
            planted.add(mid)
    _, root = await said(api, owner, room, f"thread about the {word}")
    planted.add(root)
    thread = await api.open_thread(lee, room, root)
    for who in (maya, lee):
        _, mid = await said(api, who, thread, f"in the thread: {word} again")
        planted.add(mid)
    run = await start(api, scout, room)
    await api.append(
        scout,
        {"type": "step.log", "run_id": run, "step_id": "s1", "status": "done", "title": word},
    )
    planted.add("s1")

    # What the outsiders may find: their own rooms hold the same word, several times.
    sams_room = await api.open_space(sam, "Sam's", [])
    other = await api.create_workspace(name="Other Co", owner="Bea Other")
    bs_room = await api.open_space(other, "Bea's", [])
    theirs: dict[str, set[str]] = {sam.participant_id: set(), other.participant_id: set()}
    for i in range(3):
        theirs[sam.participant_id].add((await said(api, sam, sams_room, f"my {word} {i}"))[1])
        theirs[other.participant_id].add((await said(api, other, bs_room, f"our {word} {i}"))[1])

    # Maya and Scout leave (are removed); they were there when every line was said.
    for gone in (maya, scout):
        r = await api.remove_from_room(owner, room, gone.participant_id)
        assert r.status_code == 200, r.text
    heads = {owner.workspace_id: await api.head(owner), other.workspace_id: await api.head(other)}

    def ids(hits: list[dict[str, Any]]) -> set[str]:
        return {h["message_id"] or h["step_id"] for h in hits}

    async def everything(who: Identity, q: str, **params: Any) -> list[dict[str, Any]]:
        """Every page of a search, following its cursors."""
        hits: list[dict[str, Any]] = []
        cursor = None
        while True:
            extra = {"cursor": cursor} if cursor else {}
            data = await search(
                api, who, q, limit=2, after_seq=heads[who.workspace_id], **params, **extra
            )
            hits += data["hits"]
            cursor = data["next_cursor"]
            if not cursor:
                return hits

    # The control: the members find every planted line, in the room and in its thread.
    for member in (owner, lee):
        assert ids(await everything(member, word)) == planted
        assert ids(await everything(member, word, space_id=room)) == planted
        assert len(await everything(member, word, space_id=thread)) == 2
    member_page = await search(api, owner, word, limit=1)
    member_cursor = member_page["next_cursor"]
    assert member_cursor

    outsiders = {"ex-member": maya, "ex-member harness": scout, "stranger": sam, "other": other}
    for name, who in outsiders.items():
        allowed = theirs.get(who.participant_id, set())
        for q in variants(word):
            hits = await everything(who, q)
            assert not ids(hits) & planted, (name, q)
            assert {h["room_id"] for h in hits} <= {sams_room, bs_room}, (name, q)
            assert ids(hits) <= allowed, (name, q)
            for space in (room, thread):
                r = await api.http.get(
                    "/v1/search",
                    params={"q": q, "space_id": space},
                    headers=api.auth(who),
                )
                assert r.status_code == 403, (name, q, r.text)
                assert r.json()["code"] == "forbidden"
                assert word not in r.text
        # Their own search finds their own lines, page by page, and nothing more.
        assert ids(await everything(who, word)) == allowed, name
        # A member's cursor, or a forged one, is refused; it can never open the room.
        forged = base64.urlsafe_b64encode(b"\x7f" + b"\xff" * 7 + b"\x00" * 16).decode()
        for cursor in (member_cursor, forged, member_cursor[:-2] + "AA"):
            for params in ({}, {"space_id": room}):
                r = await api.http.get(
                    "/v1/search",
                    params={"q": word, "cursor": cursor, **params},
                    headers=api.auth(who),
                )
                assert r.status_code in (400, 403), (name, r.text)
                assert word not in r.text, name

    # Erasing the room takes it from everyone, its members too.
    r = await api.http.delete(f"/v1/spaces/{room}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    erased = r.json()["seq"]
    for member in (owner, lee):
        assert await found(api, member, word, after_seq=erased) == []
        r = await api.http.get(
            "/v1/search", params={"q": word, "space_id": thread}, headers=api.auth(member)
        )
        assert r.status_code == 403
    assert ids(await everything(sam, word)) == theirs[sam.participant_id]


async def test_a_withdrawn_token_finds_nothing_though_the_gateway_knew_it(api: Api) -> None:
    """The gateway remembers who a token is after its first search (docs/adr/0066); that
    the credential still stands is read by every search. Withdrawn, it gets 401 at once,
    whatever else is wrong with its request, and its gateway forgets it."""
    word = f"quince{secrets.token_hex(3)}"
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Plans", [scout.participant_id])
    seq, _ = await said(api, owner, room, f"the {word} plan")
    for who in (scout, owner):  # each remembered now
        assert len(await found(api, who, word, after_seq=seq)) == 1
    await api.append(owner, {"type": "harness.disconnected", "harness_id": scout.participant_id})
    for params in ({"q": word}, {"q": word, "space_id": room}, {"q": word, "cursor": "x"}):
        for _ in range(2):
            r = await api.http.get("/v1/search", params=params, headers=api.auth(scout))
            assert r.status_code == 401, (params, r.text)
            assert r.json()["code"] == "unauthorized"
            assert word not in r.text
    # The owner's token stands, and still finds it.
    assert len(await found(api, owner, word)) == 1
