"""GET /v1/search (docs/product/messages.md, Search; docs/architecture/search.md).

"GET /v1/search?q= finds messages and receipts — a step's title and summary — with the
words in them, from the spaces you are in and their threads, newest first, by page. Every
word is required and the last is a prefix, so a search narrows as it is typed; a hit
carries a snippet with the match marked, and opens the room at the line … so an edit is
found, a deletion is not, and a hit is never stale."

Who may find what (the leak matrix) is in test_search_scope.py; a rebuild from the log in
test_search_rebuild.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.e2e.client import Api, Identity
from tests.e2e.test_changing_words import about, said
from tests.e2e.test_erase import db_url
from tests.e2e.test_runs import start


async def search(api: Api, who: Identity, q: str, **params: Any) -> dict[str, Any]:
    """GET /v1/search; the answer, which must be a 200."""
    r = await api.http.get("/v1/search", params={"q": q, **params}, headers=api.auth(who))
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    seqs = [h["seq"] for h in data["hits"]]
    assert seqs == sorted(seqs, reverse=True) and len(set(seqs)) == len(seqs), "newest first"
    if "after_seq" in params:
        assert data["as_of_seq"] >= params["after_seq"]
    return data


async def found(api: Api, who: Identity, q: str, **params: Any) -> list[dict[str, Any]]:
    """The hits of a search (one page)."""
    return list((await search(api, who, q, **params))["hits"])


async def found_ids(api: Api, who: Identity, q: str, **params: Any) -> list[str]:
    return [h["message_id"] or h["step_id"] for h in await found(api, who, q, **params)]


def marked(hit: dict[str, Any]) -> list[str]:
    """The words a hit's snippet marks as the match."""
    return [s["text"] for s in hit["snippet"] if s["match"]]


def snippet_text(hit: dict[str, Any]) -> str:
    return "".join(s["text"] for s in hit["snippet"])


async def room_of_two(api: Api) -> tuple[Identity, Identity, str]:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    room = await api.open_space(owner, "Finance", [maya.participant_id])
    return owner, maya, room


async def test_every_word_is_required_and_the_last_is_a_prefix(api: Api) -> None:
    owner, maya, room = await room_of_two(api)
    _, both = await said(api, owner, room, "The quarterly invoice from Acme is late")
    _, invoice = await said(api, maya, room, "An invoice from Zenith arrived")
    _, report = await said(api, owner, room, "Quarterly report is done")
    last, cafe = await said(api, maya, room, "Meet at the Café in Zürich, ÉCOLE side")

    assert await found_ids(api, owner, "invoice", after_seq=last) == [invoice, both]
    assert await found_ids(api, owner, "quarterly invoice") == [both]
    assert await found_ids(api, owner, "QUARTERLY") == [report, both]
    # The last word is a prefix, so the search narrows as it is typed …
    assert await found_ids(api, owner, "quarterly inv") == [both]
    assert await found_ids(api, owner, "quar") == [report, both]
    # … and every other word is whole.
    assert await found_ids(api, owner, "inv quarterly") == []
    assert await found_ids(api, owner, "invoice nowhere") == []
    # Accents are folded both ways: typed without, found with, and the other way round.
    assert await found_ids(api, maya, "cafe zur") == [cafe]
    assert await found_ids(api, maya, "école") == [cafe]
    assert await found_ids(api, maya, "CAFÉ") == [cafe]

    hits = await found(api, owner, "quarterly inv")
    assert hits[0]["space_id"] == hits[0]["room_id"] == room
    assert hits[0]["kind"] == "message" and hits[0]["message_kind"] == "text"
    assert hits[0]["author_id"] == owner.participant_id
    assert marked(hits[0]) == ["quarterly", "invoice"]
    (cafe_hit,) = await found(api, maya, "cafe zur")
    assert marked(cafe_hit) == ["Café", "Zürich"]
    assert cafe_hit["seq"] == last and cafe_hit["ts"].endswith("Z")


async def test_what_a_person_types_is_only_words(api: Api) -> None:
    """Query syntax typed into the box is searched for as words, never obeyed."""
    owner, _, room = await room_of_two(api)
    last, mid = await said(api, owner, room, "don't wire the money; it's a scam")
    for q in ("don't", "wire & money", "it's", "scam:*", "(wire)", "'money'", "wire & | ! money"):
        assert await found_ids(api, owner, q, after_seq=last) == [mid], q
    assert await found_ids(api, owner, "!wire") == [mid]  # not a NOT
    assert await found_ids(api, owner, "wire | nothing") == []  # not an OR
    assert await found_ids(api, owner, "wire nothing") == []
    r = await api.http.get("/v1/search", params={"q": "\\' & ' :* |"}, headers=api.auth(owner))
    assert r.status_code == 400 and r.json()["field"] == "q"


async def test_a_snippet_marks_the_match_in_a_long_message(api: Api) -> None:
    owner, _, room = await room_of_two(api)
    filler = " ".join(f"word{i}" for i in range(300))
    last, _ = await said(api, owner, room, f"{filler} the needle is here {filler}")
    (hit,) = await found(api, owner, "needle", after_seq=last)
    assert marked(hit) == ["needle"]
    assert len(snippet_text(hit)) < 400 < len(filler)
    # The marks are segments, not markup: a client never parses HTML made from what
    # somebody wrote. (The parser reads HTML tags as tags: neither words nor snippet.)
    last, _ = await said(api, owner, room, "<b>bold</b> & <script>alert(1)</script> needlework")
    (hit,) = await found(api, owner, "needlew", after_seq=last)
    assert "alert(1)" in snippet_text(hit) and "<" not in snippet_text(hit)
    assert marked(hit) == ["needlework"]
    assert await found_ids(api, owner, "script") == []


async def test_pages_have_no_gaps_and_no_repeats_while_the_room_goes_on(api: Api) -> None:
    owner, maya, room = await room_of_two(api)
    said_ids = []
    for i in range(45):
        _, mid = await said(api, owner if i % 2 else maya, room, f"standup note {i}")
        said_ids.append(mid)
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 10}
        if cursor:
            params["cursor"] = cursor
        data = await search(api, owner, "standup note", **params)
        pages.append(data["hits"])
        if len(pages) == 2:  # the room goes on while a person pages
            for i in range(3):
                await said(api, maya, room, f"standup note late {i}")
        cursor = data.get("next_cursor")
        if not cursor:
            break
    assert [len(p) for p in pages] == [10, 10, 10, 10, 5]
    got = [h["message_id"] for p in pages for h in p]
    assert got == list(reversed(said_ids))  # every one, once, newest first
    # The first page again has the late ones on top.
    top = await found_ids(api, owner, "standup note", limit=3)
    assert top != got[:3] and len(top) == 3


async def test_an_edit_is_found_by_its_new_words_and_a_take_back_not_at_all(api: Api) -> None:
    owner, maya, room = await room_of_two(api)
    seq, mid = await said(api, owner, room, "Ship the alpha build on Monday")
    assert await found_ids(api, maya, "alpha", after_seq=seq) == [mid]
    edited = await api.append(
        owner, about("message.edited", room, mid, text="Ship the bravo build on Friday")
    )
    assert await found_ids(api, maya, "alpha", after_seq=edited) == []
    assert await found_ids(api, maya, "monday") == []
    assert await found_ids(api, maya, "bravo friday") == [mid]
    deleted = await api.append(owner, about("message.deleted", room, mid))
    assert await found_ids(api, maya, "bravo", after_seq=deleted) == []
    assert await found_ids(api, owner, "ship build") == []


async def test_a_hidden_line_is_not_found_by_who_hid_it_and_is_by_everyone_else(
    api: Api,
) -> None:
    owner, maya, room = await room_of_two(api)
    seq, mid = await said(api, owner, room, "Lunch order: falafel for everyone")
    hid = await api.append(maya, about("message.hidden", room, mid))
    assert await found_ids(api, maya, "falafel", after_seq=hid) == []
    assert await found_ids(api, owner, "falafel", after_seq=hid) == [mid]
    shown = await api.append(maya, about("message.shown", room, mid))
    assert await found_ids(api, maya, "falafel", after_seq=shown) == [mid]


async def test_a_hit_is_never_stale(api: Api) -> None:
    """Without after_seq a search answers as of the head when it arrived: whatever was
    acknowledged before it is found, at once, every time."""
    owner, maya, room = await room_of_two(api)
    for i in range(15):
        seq, mid = await said(api, owner, room, f"fresh word zq{i}x")
        data = await search(api, maya, f"zq{i}x")
        assert data["as_of_seq"] >= seq
        assert [h["message_id"] for h in data["hits"]] == [mid]


async def test_a_search_the_index_cannot_catch_up_with_says_how_far_it_got(stack, api: Api) -> None:
    """The search service is held still: a search as of a later seq waits its bounded
    while and answers as of the seq the index had, without the line (never as though it
    were fresh). A search waiting when the service goes on answers with the line, fresh."""
    owner, maya, room = await room_of_two(api)
    first, _ = await said(api, owner, room, "before the pause")
    assert len(await found(api, maya, "pause", after_seq=first)) == 1
    stack.pause("search")
    try:
        later, mid = await said(api, owner, room, "while held still zq9pause")
        r = await api.http.get(
            "/v1/search", params={"q": "zq9pause", "after_seq": later}, headers=api.auth(maya)
        )
        assert r.status_code == 200, r.text
        assert first <= r.json()["as_of_seq"] < later
        assert r.json()["hits"] == []
        waiting = asyncio.create_task(search(api, maya, "zq9pause", after_seq=later))
    finally:
        stack.resume("search")
    data = await waiting
    assert data["as_of_seq"] >= later
    assert [h["message_id"] for h in data["hits"]] == [mid]


async def test_the_index_says_when_it_has_folded_a_line(stack, api: Api) -> None:
    """Every move of a checkpoint is notified as "<workspace> <seq>" when its fold commits
    (docs/adr/0111): what a waiting search is woken by. Heard on a connection of the
    test's own; a seq heard is one the index already answers as of."""
    owner, maya, room = await room_of_two(api)
    async with await psycopg.AsyncConnection.connect(db_url(stack), autocommit=True) as conn:
        await conn.execute("LISTEN search_checkpoint")
        seq, mid = await said(api, owner, room, "a notified zq7line")
        heard = 0
        async with asyncio.timeout(60):  # a bound on a broken index, not a speed
            async for notice in conn.notifies():
                workspace_id, _, at = notice.payload.partition(" ")
                if workspace_id == owner.workspace_id:
                    heard = int(at)
                    if heard >= seq:
                        break
        data = await search(api, maya, "zq7line")
        assert data["as_of_seq"] >= heard >= seq
        assert [h["message_id"] for h in data["hits"]] == [mid]


async def test_threads_are_searched_with_their_room(api: Api) -> None:
    owner, maya, room = await room_of_two(api)
    other = await api.open_space(owner, "Elsewhere", [maya.participant_id])
    _, root = await said(api, owner, room, "Shall we order the kiwi crates?")
    thread = await api.open_thread(maya, room, root)
    _, in_thread = await said(api, maya, thread, "Yes, kiwi crates from the coast")
    last, elsewhere = await said(api, owner, other, "kiwi crates are elsewhere too")

    hits = await found(api, owner, "kiwi crates", after_seq=last)
    assert [h["message_id"] for h in hits] == [elsewhere, in_thread, root]
    assert (hits[1]["space_id"], hits[1]["room_id"]) == (thread, room)
    # A room narrows to itself and its threads; a thread to itself.
    assert await found_ids(api, maya, "kiwi", space_id=room) == [in_thread, root]
    assert await found_ids(api, maya, "kiwi", space_id=thread) == [in_thread]
    assert await found_ids(api, maya, "kiwi", space_id=other) == [elsewhere]


async def test_receipts_are_found_by_a_step_s_title_and_summary(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, home = await api.connect_harness(owner, "Scout")
    run = await start(api, scout, home)
    started = await api.append(
        scout,
        {
            "type": "step.log",
            "run_id": run,
            "step_id": "s1",
            "status": "started",
            "title": "Reconcile the ledger",
        },
    )
    (hit,) = await found(api, owner, "reconcile ledg", after_seq=started)
    assert (hit["kind"], hit["run_id"], hit["step_id"], hit["seq"]) == ("step", run, "s1", started)
    assert hit["space_id"] == home and hit["message_id"] is None
    assert marked(hit) == ["Reconcile", "ledger"]
    done = await api.append(
        scout,
        {
            "type": "step.log",
            "run_id": run,
            "step_id": "s1",
            "status": "done",
            "summary": "Found 3 mismatched payouts",
        },
    )
    (hit,) = await found(api, owner, "mismatched payouts", after_seq=done)
    assert hit["seq"] == started  # a step keeps its place as it moves on
    assert await found_ids(api, owner, "reconcile") == ["s1"]  # its title stays
    # A receipt card is found by its steps' titles and summaries too.
    card = await api.append(
        scout,
        {
            "type": "message.post",
            "space_id": home,
            "kind": "receipt",
            "receipt": {
                "steps": [
                    {"title": "Fetched statements", "summary": "twelve months"},
                    {"title": "Filed the VAT return", "status": "done"},
                ]
            },
        },
    )
    (hit,) = await found(api, owner, "twelve month", after_seq=card)
    assert hit["kind"] == "message" and hit["message_kind"] == "receipt"
    assert await found_ids(api, owner, "vat return") == [hit["message_id"]]


async def test_bad_searches_are_told_in_one_sentence(api: Api) -> None:
    owner, _, _ = await room_of_two(api)
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": " ?! … "}, "q"),
        ({"q": "x" * 501}, "q"),
        ({"q": "ok", "cursor": "forged"}, "cursor"),
        ({"q": "ok", "limit": 0}, "limit"),
        ({"q": "ok", "limit": 101}, "limit"),
        ({"q": "ok", "after_seq": -1}, "after_seq"),
        ({"q": "ok", "space_id": "spc_\x00x"}, "space_id"),
    ]
    for params, field in cases:
        r = await api.http.get("/v1/search", params=params, headers=api.auth(owner))
        assert r.status_code == 400, (params, r.text)
        body = r.json()
        assert body["code"] == "invalid_request" and body["message"], body
        # The edge refuses a NUL before any route reads the query: its sentence names it.
        assert body.get("field") == field or body["message"].startswith(f"{field}:"), body
    r = await api.http.get("/v1/search", params={"q": "ok"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


CHIPS = str(Path(sys.executable).parent / "chips")


async def test_chips_search_on_the_command_line(stack, api: Api) -> None:
    owner, maya, room = await room_of_two(api)
    for i in range(3):
        last, _ = await said(api, maya, room, f"Budget draft {i} for the offsite")
    env = {**os.environ, "CHIPS_URL": stack.gateway_a, "CHIPS_TOKEN": owner.token}

    def chips(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CHIPS, *args], env=env, capture_output=True, text=True, timeout=60)

    shown = chips("search", "budget off", "--limit", "2", "--after-seq", str(last))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("*Budget*") == 2 and "*offsite*" in shown.stdout
    assert "*Budget* draft 2" in shown.stdout and "more: chips search" in shown.stdout
    cursor = shown.stdout.rsplit("--cursor ", 1)[1].strip()
    rest = chips("search", "budget off", "--limit", "2", "--cursor", cursor, "--json")
    assert rest.returncode == 0, rest.stderr
    data = json.loads(rest.stdout)
    assert [marked(h) for h in data["hits"]] == [["Budget", "offsite"]]
    assert data["next_cursor"] is None
    refused = chips("search", "...")
    assert refused.returncode == 1 and "invalid_request" in refused.stderr
    assert "Traceback" not in refused.stderr


async def test_the_search_service_says_what_it_has_built(stack, api: Api) -> None:
    owner, _, room = await room_of_two(api)
    seq, _ = await said(api, owner, room, "health check words")
    await found(api, owner, "health", after_seq=seq)
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{stack.url('search')}/readyz")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ready"] and body["checks"]["index"] is True
    about_it = body["about"]
    assert about_it["text_search_config"] == "chips_search"
    assert "tsvector" in about_it["builds"] and about_it["workspaces"] >= 1
    assert isinstance(about_it["behind"], int) and about_it["behind"] >= 0
