"""What a room's job has spent, its ceiling, and the referee's warnings and pause.

docs/product/websocket.md, What the job has spent; At the ceiling: "$3 unless a person in the room
sets another, from $0.25 to $100 … After each usage in a room it weighs the job against the
ceiling, and tells every harness in the room, once per job … At the ceiling the same event
comes with "threshold": 100, "action": "pause", after an exchange.set by the system … A
person's next act in the room (a message, or Let them carry on …) begins a new job with the
whole ceiling, and context.spend.since_seq moves on."
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, Socket, key


async def spend(api: Api, who: Identity, room: str) -> dict[str, Any]:
    r = await api.http.get(f"/v1/spaces/{room}/spend", headers=api.auth(who))
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def used(api: Api, harness: Identity, run: str, cost: float | None) -> int:
    event: dict[str, Any] = {"type": "usage", "run_id": run, "tokens_in": 10, "tokens_out": 5}
    if cost is not None:
        event["cost_usd"] = cost
    return await api.append(harness, event)


def of(sock: Socket, kind: str) -> list[dict[str, Any]]:
    return [e for e in sock.events() if e["type"] == kind]


def warning(threshold: int, since: int | None = None) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        events = [frame["event"]] if frame["frame"] == "event" else frame.get("events", [])
        return any(
            e["type"] == "budget.warning"
            and e["threshold"] == threshold
            and (since is None or e["since_seq"] == since)
            for e in events
        )

    return match


async def test_a_person_in_the_room_sets_its_ceiling_within_range(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    assert (await spend(api, owner, room))["ceiling_usd"] == 3.0

    url = f"/v1/spaces/{room}/spend-ceiling"
    r = await api.http.post(url, json={"usd": 5}, headers=api.auth(owner))
    assert r.status_code == 200, r.text
    assert (await spend(api, owner, room))["ceiling_usd"] == 5.0
    assert (await spend(api, scout, room))["ceiling_usd"] == 5.0  # the harness reads it too

    for usd in (0.1, 101):
        r = await api.http.post(url, json={"usd": usd}, headers=api.auth(owner))
        assert r.status_code == 422 and r.json()["code"] == "invalid_event", r.text
        assert "$0.25 to $100" in r.json()["message"]
    r = await api.http.post(url, json={"usd": 1}, headers=api.auth(scout))
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text

    r = await api.http.post(url, json={"usd": None}, headers={**api.auth(owner)})
    assert r.status_code == 200, r.text
    assert (await spend(api, owner, room))["ceiling_usd"] == 3.0


async def test_80_and_100_are_told_once_per_job_and_carrying_on_begins_a_new_one(
    stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    bot = await Socket.open(stack.gateway_a, scout)
    await bot.subscribe(scout.workspace_id)
    await bot.attached()

    begun = await api.say(owner, room, "@Scout draw up the PO")
    assert await spend(api, owner, room) == {
        "ceiling_usd": 3.0,
        "spent_usd": 0.0,
        "since_seq": begun,
        "uncounted_runs": 0,
        "paused": None,
    }
    run = "run_po_1"
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "the PO"}
    )
    for cost in (1.0, 1.0, 0.5):  # 2.50 of 3.00: past 80%
        await used(api, scout, run, cost)
    warned = await bot.wait_for(warning(80), timeout=20)
    warn = warned["event"] if warned["frame"] == "event" else None
    assert warn is not None
    assert warn["actor"]["kind"] == "system" and warn["space_id"] == room
    assert (warn["action"], warn["scope"], warn["since_seq"]) == ("warn", "job", begun)
    assert warn["budget"] == {"limit_usd": 3.0, "spent_usd": 2.5}

    await used(api, scout, run, 0.1)
    await api.append(
        scout, {"type": "run.started", "run_id": "run_po_2", "space_id": room, "goal": "check"}
    )
    await used(api, scout, "run_po_2", None)  # a run that reported no cost
    await used(api, scout, run, 0.5)  # 3.10: the ceiling
    await bot.wait_for(warning(100), timeout=20)
    paused = of(bot, "exchange.set")
    assert len(paused) == 1
    assert paused[0]["actor"]["kind"] == "system"
    assert (paused[0]["state"], paused[0]["why"]) == ("paused", "spend")
    assert paused[0]["spend"] == {
        "ceiling_usd": 3.0,
        "spent_usd": 3.1,
        "since_seq": begun,
        "uncounted_runs": 1,
    }
    stop = of(bot, "budget.warning")[-1]
    assert stop["seq"] > paused[0]["seq"]
    assert (stop["action"], stop["since_seq"]) == ("pause", begun)
    now = await spend(api, owner, room)
    assert (now["spent_usd"], now["uncounted_runs"], now["since_seq"]) == (3.1, 1, begun)
    # The people's banner reads the pause from here when the room is opened (ADR 0100).
    assert now["paused"]["why"] == "spend" and now["paused"]["seq"] == paused[0]["seq"]
    assert now["paused"]["spend"]["spent_usd"] == 3.1

    await used(api, scout, run, 0.2)  # still this job: told nothing more

    # Let them carry on: a new job with the whole ceiling.
    r = await api.post_event(
        owner,
        {"type": "exchange.set", "space_id": room, "state": "running", "idempotency_key": key()},
    )
    assert r.status_code == 200, r.text
    carried_on = int(r.json()["seq"])
    assert await spend(api, owner, room) == {
        "ceiling_usd": 3.0,
        "spent_usd": 0.0,
        "since_seq": carried_on,
        "uncounted_runs": 0,
        "paused": None,
    }
    last = await used(api, scout, run, 2.9)
    await bot.wait_for(warning(80, since=carried_on), timeout=20)
    told = [(e["threshold"], e["since_seq"]) for e in of(bot, "budget.warning")]
    assert told == [(80, begun), (100, begun), (80, carried_on)]
    assert len(of(bot, "exchange.set")) == 2  # the pause, and the carry on

    # The harness's own spend keeps counting across jobs and the pause: every report of it.
    r = await api.http.get(
        f"/v1/harnesses/{scout.participant_id}/usage",
        params={"after_seq": last},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    mine = r.json()["usage"]
    assert (mine["cost_usd"], mine["reports"], mine["uncosted"]) == (6.2, 8, 1), mine
    await bot.close()


async def test_a_turn_carries_the_jobs_spend_and_says_it_in_the_note(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [scout.participant_id, ledger.participant_id])
    bot = await Socket.open(stack.gateway_b, scout)
    await bot.subscribe(scout.workspace_id)
    await bot.attached()
    begun = await api.say(owner, room, "@Scout @Ledger price the PO between you")
    await api.append(
        ledger, {"type": "run.started", "run_id": "run_l1", "space_id": room, "goal": "price"}
    )
    await used(api, ledger, "run_l1", 0.42)
    seq = await api.say(ledger, room, "@Scout the unit price is 4.10")
    await bot.wait_for_seq(seq)
    turn = next(e for e in bot.events() if e["seq"] == seq)
    assert turn["type"] == "message.new"
    assert turn["context"]["spend"] == {
        "ceiling_usd": 3.0,
        "spent_usd": 0.42,
        "since_seq": begun,
        "uncounted_runs": 0,
    }
    note = turn["room"]["notes"][scout.participant_id]
    assert "This job has spent $0.42 of the $3.00" in note
    assert "Most of it is spent" not in note
    assert note.endswith(turn["room"]["rules"][scout.participant_id])

    await used(api, ledger, "run_l1", 2.0)
    seq = await api.say(ledger, room, "@Scout and the freight is 80")
    await bot.wait_for_seq(seq)
    turn = next(e for e in bot.events() if e["seq"] == seq)
    assert turn["context"]["spend"]["spent_usd"] == 2.42
    assert "Most of it is spent" in turn["room"]["notes"][scout.participant_id]

    # A replay hands over the same.
    again = await Socket.open(stack.gateway_a, scout)
    await again.subscribe(scout.workspace_id, since=seq - 1)
    await again.wait_for_seq(seq)
    replayed = next(e for e in again.events() if e["seq"] == seq)
    assert replayed["context"]["spend"] == turn["context"]["spend"]
    assert replayed["room"] == turn["room"]
    await again.close()
    await bot.close()
