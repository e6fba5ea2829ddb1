"""A rebuild from seq 0 after a scripted history of mixed message and run operations.

docs/architecture/design.md §5: the read models are a pure function of the log. The script mixes
posts of every kind a sender may post, edits, take-backs, pins, hides, reactions and corrections,
passes, runs with steps, cards and usage, from people and harnesses, and lets the door
refuse what it refuses; the digest of every read-model row is the same after a rebuild.
"""

from __future__ import annotations

import random
from typing import Any

from tests.e2e.client import Api, Identity, key

OPERATIONS = 400


async def test_a_rebuild_after_mixed_message_and_run_operations_gives_identical_tables(
    stack, api: Api
) -> None:
    rng = random.Random(5)
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    people, harnesses = [owner, maya], [scout, ledger]
    everyone = [*people, *harnesses]
    rooms = [
        await api.open_space(
            owner, f"Room {i}", [maya.participant_id, scout.participant_id, ledger.participant_id]
        )
        for i in range(2)
    ]
    said: list[tuple[str, str]] = []  # (room, message id)
    runs: list[tuple[Identity, str]] = []
    hidden: list[tuple[Identity, dict[str, str]]] = []  # what each person hid, to put back
    pinned: list[dict[str, str]] = []  # pins, to let go

    def card(who: Identity, room: str) -> dict[str, Any]:
        post: dict[str, Any] = {"type": "message.post", "space_id": room}
        if who in harnesses and rng.random() < 0.5:
            kind = rng.choice(["status", "checkpoint", "summary", "artifact"])
            post["kind"] = kind
            post[kind] = {
                "status": {"phase": "working", "verb": f"doing {rng.randrange(99)}"},
                "checkpoint": {"milestone": f"m{rng.randrange(99)}"},
                "summary": {"outcome": f"o{rng.randrange(99)}", "cost_usd": 0.1},
                "artifact": {"name": f"f{rng.randrange(9)}.csv", "form": "table"},
            }[kind]
        elif who in harnesses and rng.random() < 0.2:
            post["text"] = "NO_REPLY"
        else:
            post["text"] = f"note {rng.random():.4f}"
        return post

    def operation() -> tuple[Identity, dict[str, Any]]:
        who = rng.choice(everyone)
        room = rng.choice(rooms)
        roll = rng.random()
        if roll < 0.35 or not said:
            return who, card(who, room)
        space, message = rng.choice(said)
        about = {"space_id": space, "message_id": message}
        if roll < 0.45:
            return who, {"type": "message.edited", **about, "text": f"edit {rng.random():.3f}"}
        if roll < 0.50:
            return who, {"type": "message.deleted", **about}
        if roll < 0.58:
            if pinned and rng.random() < 0.5:
                return who, {"type": "message.unpinned", **pinned.pop(rng.randrange(len(pinned)))}
            return who, {"type": "message.pinned", **about}
        if roll < 0.66:
            if hidden and rng.random() < 0.5:
                person, what = hidden.pop(rng.randrange(len(hidden)))
                return person, {"type": "message.shown", **what}
            return who, {"type": "message.hidden", **about}
        if roll < 0.78:
            if rng.random() < 0.5:
                return who, {
                    "type": "feedback",
                    **about,
                    "kind": "reaction",
                    "emoji": rng.choice(["👍", "🎉"]),
                }
            return who, {"type": "feedback", **about, "kind": "correction", "note": "no"}
        harness = rng.choice(harnesses)
        if roll < 0.84 or not runs:
            run_id = key("run_r")
            runs.append((harness, run_id))
            return harness, {"type": "run.started", "run_id": run_id, "space_id": room, "goal": "g"}
        owner_of_run, run_id = rng.choice(runs)
        step = rng.choice(
            [
                {
                    "type": "step.log",
                    "step_id": f"s{rng.randrange(4)}",
                    "status": "done",
                    "title": "a step",
                },
                {
                    "type": "usage",
                    "tokens_in": 10,
                    "tokens_out": 2,
                    **({"cost_usd": 0.01} if rng.random() < 0.7 else {}),
                },
                {"type": "run.status", "phase": "working"},
                {"type": "run.completed", "summary": "done"},
            ]
        )
        return owner_of_run, {**step, "run_id": run_id}

    landed, last = 0, 0
    for _ in range(OPERATIONS):
        who, event = operation()
        r = await api.post_event(who, {**event, "idempotency_key": key("mr")})
        if r.status_code == 200:
            landed += 1
            last = max(last, r.json()["seq"] or 0)
            if event["type"] == "message.pinned":
                pinned.append({k: event[k] for k in ("space_id", "message_id")})
            if event["type"] == "message.hidden":
                hidden.append((who, {k: event[k] for k in ("space_id", "message_id")}))
            if event["type"] == "message.post" and "NO_REPLY" not in str(event.get("text")):
                logged = await api.read(owner, since=last - 1, space_id=event["space_id"])
                said.extend(
                    (e["space_id"], e["message_id"]) for e in logged if e["type"] == "message.post"
                )
        else:
            assert r.json()["code"] in ("forbidden", "invalid_event", "not_found"), r.text
    assert landed > OPERATIONS // 3

    seen: set[str] = set()
    since = 0
    while batch := await api.read(owner, since=since):
        seen |= {e["type"] for e in batch}
        since = batch[-1]["seq"]
    assert seen >= {
        "message.post",
        "message.edited",
        "message.deleted",
        "message.pinned",
        "message.unpinned",
        "message.hidden",
        "message.shown",
        "feedback",
        "run.started",
        "step.log",
        "usage",
    }, seen

    await api.spaces(owner, last)
    before = stack.run_module("chips_projector", "digest").strip()
    stack.run_module("chips_projector", "rebuild")
    assert stack.run_module("chips_projector", "digest").strip() == before
