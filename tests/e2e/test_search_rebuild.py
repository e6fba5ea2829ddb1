"""The search index is a pure function of the log (docs/architecture/design.md §5;
docs/architecture/search.md).

``python -m chips_search rebuild`` empties the index and folds the log again from seq 0:
the rows (tsvectors included) and what every search answers are the same afterwards. And
the index does not depend on CHIPS_EVENTS delivering every message: what the stream lost
is read from the log.
"""

from __future__ import annotations

import random
from typing import Any

import nats

from tests.e2e.client import Api, Identity
from tests.e2e.test_changing_words import about, said
from tests.e2e.test_runs import start
from tests.e2e.test_search import found, search

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]
QUERIES = ["alpha", "bravo ch", "delta", "e", "golf hotel", "kilo", "lima", "step", "x"]


async def answers(api: Api, people: list[Identity], after_seq: int) -> list[Any]:
    """Every page of every query, for each person."""
    seen: list[Any] = []
    for who in people:
        for q in QUERIES:
            cursor = None
            while True:
                extra = {"cursor": cursor} if cursor else {}
                data = await search(api, who, q, limit=7, after_seq=after_seq, **extra)
                seen.append((who.participant_id, q, data["hits"]))
                cursor = data["next_cursor"]
                if not cursor:
                    break
    return seen


async def test_a_rebuild_from_the_log_gives_the_same_index_and_answers(stack, api: Api) -> None:
    rng = random.Random(13)
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    people = [owner, maya]
    rooms = [
        await api.open_space(owner, f"Room {i}", [maya.participant_id, scout.participant_id])
        for i in range(3)
    ]

    def phrase() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))

    said_ids: list[tuple[Identity, str, str]] = []
    for _ in range(60):
        who, room = rng.choice([owner, maya, scout]), rng.choice(rooms)
        _, mid = await said(api, who, room, phrase())
        said_ids.append((who, room, mid))
    _, root = await said(api, owner, rooms[0], "root of a thread " + phrase())
    thread = await api.open_thread(maya, rooms[0], root)
    for _ in range(5):
        await said(api, rng.choice(people), thread, phrase())
    for who, room, mid in rng.sample(said_ids, 15):
        await api.append(who, about("message.edited", room, mid, text=phrase()))
    for who, room, mid in rng.sample(said_ids, 8):
        await api.post_event(who, {**about("message.deleted", room, mid), "idempotency_key": mid})
    for _, room, mid in rng.sample(said_ids, 6):
        await api.post_event(
            maya, {**about("message.hidden", room, mid), "idempotency_key": "h" + mid}
        )
    run = await start(api, scout, rooms[1])
    for i in range(3):
        step = {"type": "step.log", "run_id": run, "step_id": f"s{i}", "status": "started"}
        await api.append(scout, {**step, "title": f"step {phrase()}"})
        await api.append(scout, {**step, "status": "done", "summary": phrase()})
    await api.append(
        scout,
        {
            "type": "message.post",
            "space_id": rooms[1],
            "kind": "receipt",
            "receipt": {"steps": [{"title": f"step {phrase()}", "summary": phrase()}]},
        },
    )
    r = await api.http.delete(f"/v1/spaces/{rooms[2]}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    head = await api.head(owner)

    before = await answers(api, people, head)
    assert sum(len(hits) for _, _, hits in before) > 50  # the index holds something
    digest = stack.run_module("chips_search", "digest").strip()
    assert "rebuilt the search index" in stack.run_module("chips_search", "rebuild")
    assert stack.run_module("chips_search", "digest").strip() == digest
    assert await answers(api, people, head) == before


async def test_what_the_stream_lost_is_indexed_from_the_log(stack, api: Api) -> None:
    """The search service is stopped, lines are said, and their copies in CHIPS_EVENTS are
    purged: when it comes back nothing prompts it, and it still finds them in the log."""
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await api.open_space(owner, "Lost", [])
    seq, _ = await said(api, owner, room, "before the outage")
    await found(api, owner, "outage", after_seq=seq)
    stack.stop("search")
    try:
        ids = [(await said(api, owner, room, f"said while away {i}"))[1] for i in range(5)]
        nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
        try:
            await nc.jetstream().purge_stream(
                "CHIPS_EVENTS", subject=f"chips.events.{owner.workspace_id}"
            )
        finally:
            await nc.close()
    finally:
        stack.start("search")
        stack.wait_ready("search")
    head = await api.head(owner)
    hits = await found(api, owner, "said while away", after_seq=head)
    assert [h["message_id"] for h in hits] == list(reversed(ids))
