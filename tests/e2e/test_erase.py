"""Deleting a space erases it (docs/product/spaces.md, Deleting one; docs/adr/0010).

"Delete erases a space from the server: what was said in it, its threads, its files and
its search entries go, for everyone in it, and cannot be brought back. The log keeps one
line in their place, space.erased, naming the space and who erased it and nothing of what
was in it; every device is sent it and forgets the room."

Erasure is proven by looking for the erased words everywhere a client or an operator
could — HTTP, a replay from 0, every table in Postgres (the log, the door state, the read
models, before and after a rebuild), and the JetStream stream — and finding nothing.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import nats
import psycopg

from tests.e2e.client import Api, Identity, Socket


def db_url(stack: Any) -> str:
    return stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)


def tables_holding(stack: Any, word: str) -> list[str]:
    """Every table in the database with a row whose text holds ``word``."""
    found = []
    with psycopg.connect(db_url(stack)) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        for name in names:
            hit = conn.execute(
                f'SELECT 1 FROM "{name}" t WHERE t::text LIKE %s LIMIT 1', (f"%{word}%",)
            ).fetchone()
            if hit:
                found.append(name)
    return found


async def search_caught_up(api: Api, who: Identity, word: str, seq: int) -> None:
    """The search index has folded in ``seq`` (so an erasure's rows are gone from it), and
    a search for ``word`` finds nothing."""
    r = await api.http.get(
        "/v1/search", params={"q": word, "after_seq": seq}, headers=api.auth(who)
    )
    assert r.status_code == 200, r.text
    assert r.json()["as_of_seq"] >= seq and r.json()["hits"] == []


def logged_rows(stack: Any, workspace_id: str, space_id: str) -> list[dict[str, Any]]:
    with psycopg.connect(db_url(stack)) as conn:
        rows = conn.execute(
            "SELECT body FROM events WHERE workspace_id = %s AND space_id = %s ORDER BY seq",
            (workspace_id, space_id),
        ).fetchall()
    return [row[0] for row in rows]


async def stream_copies(stack: Any, workspace_id: str) -> list[str]:
    """Every message CHIPS_EVENTS still holds for the workspace, as text."""
    nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
    js = nc.jetstream()
    texts: list[str] = []
    try:
        subject = f"chips.events.{workspace_id}"
        info = await js.stream_info("CHIPS_EVENTS")
        seq = info.state.first_seq
        while seq <= info.state.last_seq:
            try:
                msg = await js.get_msg("CHIPS_EVENTS", seq, subject=subject, next=True)
            except nats.js.errors.NotFoundError:
                break
            texts.append(msg.data.decode())
            seq = (msg.seq or seq) + 1
    finally:
        await nc.close()
    return texts


async def test_erase_leaves_no_words_in_http_replay_tables_or_the_stream(stack, api: Api) -> None:
    """The whole promise: the words of an erased room and of its thread are nowhere a
    client or an operator could look, the log keeps one space.erased naming the space and
    who erased it, and every connected member's device is sent it."""
    word = f"zanzibar{secrets.token_hex(4)}"
    thread_word = f"quokka{secrets.token_hex(4)}"
    kept = f"lighthouse{secrets.token_hex(4)}"
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    await api.append(
        owner,
        {
            "type": "harness.declared",
            "harness_id": scout.participant_id,
            "capabilities": ["follows_rooms"],
        },
    )
    keep = await api.open_space(owner, "Keep", [maya.participant_id])
    room = await api.open_space(owner, f"Plans {word}", [maya.participant_id, scout.participant_id])
    root = await api.say(maya, room, f"the secret is {word}")
    root_id = next(e for e in await api.read(maya, space_id=room) if e["seq"] == root)["message_id"]
    thread = await api.open_thread(maya, room, root_id, title=f"about {thread_word}")
    await api.say(owner, thread, f"and {thread_word} too")
    await api.say(scout, room, f"noted: {word}")
    await api.say(owner, keep, f"this stays: {kept}")
    head = await api.head(owner)

    sockets = {
        "owner": await Socket.open(stack.gateway_a, owner),
        "maya": await Socket.open(stack.gateway_b, maya),
        "scout": await Socket.open(stack.gateway_a, scout),
    }
    who: dict[str, Identity] = {"owner": owner, "maya": maya, "scout": scout}
    for name, sock in sockets.items():
        await sock.subscribe(who[name].workspace_id, since=head)

    r = await api.http.delete(f"/v1/spaces/{room}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    erased_seq = r.json()["seq"]

    for name, sock in sockets.items():
        frame = await sock.wait_for(
            lambda f: f["frame"] == "event" and f["event"]["type"] == "space.erased"
        )
        event = frame["event"]
        assert event["seq"] == erased_seq and event["space_id"] == room, name
        assert event["actor"]["id"] == owner.participant_id
        assert event["threads"] == [thread]
        # The owner of Scout deleted it: Scout deletes its side too (docs/product/spaces.md).
        assert event["follows"] == [{"harness_id": scout.participant_id, "delete": True}]
        assert word not in json.dumps(event) and thread_word not in json.dumps(event)

    # The room's neighbours carry on, past the gap the erasure left.
    after = await api.say(maya, keep, "still here")
    for name in ("owner", "maya"):
        await sockets[name].wait_for_seq(after)
    for sock in sockets.values():
        await sock.close()

    # HTTP: lists, the room, its lines, its events, and every event from 0.
    for person in (owner, maya):
        listed = await api.spaces(person, after)
        assert room not in {s["id"] for s in listed["spaces"]}
        assert keep in {s["id"] for s in listed["spaces"]}
        for path in (f"/v1/spaces/{room}", f"/v1/spaces/{room}/messages"):
            gone = await api.http.get(path, headers=api.auth(person))
            assert gone.status_code == 403, gone.text
        gone = await api.http.get(
            "/v1/events", params={"space_id": thread}, headers=api.auth(person)
        )
        assert gone.status_code == 403
        everything = json.dumps(await api.read(person, since=0))
        assert word not in everything and thread_word not in everything
        assert kept in everything or person is maya

    # A replay from 0 over the socket, in events frames and one by one.
    for accepts in (["events"], []):
        replay = await Socket.open(stack.gateway_b, owner, accepts=accepts)
        await replay.subscribe(owner.workspace_id, since=0)
        await replay.wait_for_seq(after)
        text = json.dumps(replay.events())
        assert word not in text and thread_word not in text and kept in text
        seqs = replay.seqs()
        assert seqs == sorted(set(seqs))  # in order, once each, with the erased seqs missing
        await replay.close()

    # A device that was away reconnects with the seq it last saw, and is told.
    back = await Socket.open(stack.gateway_a, maya)
    await back.subscribe(maya.workspace_id, since=head)
    told = await back.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "space.erased"
    )
    assert told["event"]["space_id"] == room
    await back.close()

    # The log keeps one line for the room, and nothing for its thread: besides the
    # space.erased, only the agent Chips gave Scout in the room (docs/adr/0154), which
    # outlives it as any participant, and its release as the room's work stopped before it
    # went; neither holds words.
    assert [e["type"] for e in logged_rows(stack, owner.workspace_id, room)] == [
        "agent.registered",
        "agent.released",
        "space.erased",
    ]
    assert logged_rows(stack, owner.workspace_id, thread) == []

    # Every table (log, door state, read models, the search index), then again after a
    # rebuild from seq 0.
    await search_caught_up(api, owner, word, after)
    await search_caught_up(api, owner, thread_word, after)
    assert tables_holding(stack, word) == []
    assert tables_holding(stack, thread_word) == []
    before = stack.run_module("chips_projector", "digest").strip()
    stack.run_module("chips_projector", "rebuild")
    assert stack.run_module("chips_projector", "digest").strip() == before
    assert tables_holding(stack, word) == []
    assert tables_holding(stack, thread_word) == []
    assert "rm_messages" in tables_holding(stack, kept)

    # JetStream: no copy of the room's events is left in CHIPS_EVENTS.
    copies = await stream_copies(stack, owner.workspace_id)
    assert not [c for c in copies if word in c or thread_word in c]
    assert any(json.loads(c)["seq"] == erased_seq for c in copies)


async def test_words_sent_in_the_same_batch_as_the_delete_are_erased_too(stack, api: Api) -> None:
    """Posts pipelined just ahead of the delete are usually appended in its batch: they are
    acked, then erased with the room, and never published."""
    word = f"marmalade{secrets.token_hex(4)}"
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    room = await api.open_space(owner, "Batch", [maya.participant_id])
    head = await api.head(owner)
    watch = await Socket.open(stack.gateway_b, maya)
    await watch.subscribe(maya.workspace_id, since=head)
    sock = await Socket.open(stack.gateway_a, owner)
    keys = [
        await sock.write({"type": "message.post", "space_id": room, "text": f"{word} {i}"})
        for i in range(20)
    ]
    gone = await sock.write({"type": "space.erased", "space_id": room})
    answers = [await sock.answer(k) for k in [*keys, gone]]
    assert all(a["frame"] == "ack" and isinstance(a["seq"], int) for a in answers), answers
    erased_seq = answers[-1]["seq"]
    await watch.wait_for_seq(erased_seq)
    await sock.close()
    await watch.close()
    await api.spaces(owner, erased_seq)  # the read models have applied the erasure
    await search_caught_up(api, owner, word, erased_seq)  # and the search index
    assert tables_holding(stack, word) == []
    assert not [c for c in await stream_copies(stack, owner.workspace_id) if word in c]
    assert word not in json.dumps(await api.read(owner, since=0))
