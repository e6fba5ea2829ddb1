"""Reading runs over HTTP: a run as its receipt, a room's runs, approvals waiting, usage."""

from __future__ import annotations

from tests.e2e.client import Api
from tests.e2e.test_run_cards import approval, decide
from tests.e2e.test_runs import harness_room, start
from tests.e2e.test_threads import message_id


async def test_usage_is_kept_per_run_space_and_harness(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    for tokens, cost in ((100, 0.1), (50, None), (10, 0.05)):
        seq = await api.append(
            jacobian,
            {
                "type": "usage",
                "run_id": run,
                "tokens_in": tokens,
                "tokens_out": 1,
                **({"cost_usd": cost} if cost is not None else {}),
            },
        )
    r = await api.http.get(f"/v1/runs/{run}", params={"after_seq": seq}, headers=api.auth(owner))
    assert r.json()["usage"] == {"tokens_in": 160, "tokens_out": 3, "cost_usd": 0.15, "uncosted": 1}
    space = await api.http.get(f"/v1/spaces/{room}/runs", headers=api.auth(owner))
    assert space.json()["usage"] == {
        "tokens_in": 160,
        "tokens_out": 3,
        "cost_usd": 0.15,
        "reports": 3,
        "uncosted": 1,
    }


async def test_approvals_waiting_are_those_nobody_decided(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    first = await approval(api, jacobian, run)
    second = await approval(api, jacobian, run)
    await approval(api, jacobian, run, expires_at="2020-01-01T00:00:00Z")
    seq = await api.append(owner, decide(first))
    r = await api.http.get(
        "/v1/approvals", params={"waiting": "true", "after_seq": seq}, headers=api.auth(owner)
    )
    assert [a["id"] for a in r.json()["approvals"]] == [second]
    assert r.json()["approvals"][0]["card"]["action"] == "jacobian.shell.execute"
    every = await api.http.get(
        "/v1/approvals", params={"waiting": "false"}, headers=api.auth(owner)
    )
    assert len(every.json()["approvals"]) == 3


async def test_approvals_asked_in_a_thread_are_listed_with_its_room(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    maya = await api.add_person(owner, "Maya Chen")
    root = await message_id(api, owner, room, await api.say(owner, room, "order the PO?"))
    thread = await api.open_thread(owner, room, root)
    run = await start(api, jacobian, thread)
    card = await approval(api, jacobian, run)
    asked = {"after_seq": await api.head(owner)}
    r = await api.http.get("/v1/approvals", params=asked, headers=api.auth(owner))
    assert [(a["id"], a["space_id"]) for a in r.json()["approvals"]] == [(card, thread)]
    # Somebody not in the room is not in its threads, nor shown what they ask.
    r = await api.http.get("/v1/approvals", params=asked, headers=api.auth(maya))
    assert r.json()["approvals"] == []


async def test_a_run_in_another_room_is_not_found(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    maya = await api.add_person(owner, "Maya Chen")
    run = await start(api, jacobian, room)
    r = await api.http.get(f"/v1/runs/{run}", headers=api.auth(maya))
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await api.http.get(f"/v1/spaces/{room}/runs", headers=api.auth(maya))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    r = await api.http.get("/v1/approvals", headers=api.auth(maya))
    assert r.json()["approvals"] == []


async def test_a_harness_s_usage_adds_up_its_runs_in_every_room(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    other = await api.open_space(owner, "Shopping", [jacobian.participant_id])
    maya = await api.add_person(owner, "Maya Chen")
    seq = 0
    for where, cost in ((room, 0.25), (other, 0.5)):
        run = await start(api, jacobian, where)
        seq = await api.append(
            jacobian,
            {"type": "usage", "run_id": run, "tokens_in": 10, "tokens_out": 2, "cost_usd": cost},
        )
    for who in (jacobian, owner):
        r = await api.http.get(
            f"/v1/harnesses/{jacobian.participant_id}/usage",
            params={"after_seq": seq},
            headers=api.auth(who),
        )
        assert r.status_code == 200, r.text
        assert r.json()["usage"] == {
            "tokens_in": 20,
            "tokens_out": 4,
            "cost_usd": 0.75,
            "reports": 2,
            "uncosted": 0,
        }
    r = await api.http.get(f"/v1/harnesses/{jacobian.participant_id}/usage", headers=api.auth(maya))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
