"""Erasing a room also erases what was done to its words and the runs worked in it.

Edits, take-backs, pins, hides, feedback, runs, steps, cards and lanes into it go with the
room; what its runs spent stays on the harness's account (docs/product/spaces.md, Deleting one).
"""

from __future__ import annotations

import secrets

from tests.e2e.client import Api
from tests.e2e.test_changing_words import about, said
from tests.e2e.test_erase import search_caught_up, tables_holding
from tests.e2e.test_runs import start


async def test_erase_takes_edits_feedback_runs_and_leaves_the_harness_s_spend(
    stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    words = {name: f"{name}-{secrets.token_hex(6)}" for name in "abcdef"}
    _, theirs = await said(api, scout, room, words["a"])
    _, mine = await said(api, owner, room, words["b"])
    await api.append(owner, about("message.edited", room, mine, text=words["c"]))
    await api.append(owner, about("message.pinned", room, theirs))
    await api.append(owner, about("message.hidden", room, theirs))
    await api.append(owner, about("feedback", room, theirs, kind="correction", note=words["d"]))
    await api.append(owner, about("feedback", room, theirs, kind="reaction", emoji="🎯"))
    run = await start(api, scout, room)
    await api.append(
        scout,
        {"type": "step.log", "run_id": run, "step_id": "s1", "status": "done", "title": words["e"]},
    )
    await api.append(
        scout,
        {"type": "usage", "run_id": run, "tokens_in": 5, "tokens_out": 1, "cost_usd": 0.5},
    )

    r = await api.http.delete(f"/v1/spaces/{room}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    erased = r.json()["seq"]
    usage = await api.http.get(
        f"/v1/harnesses/{scout.participant_id}/usage",
        params={"after_seq": erased},
        headers=api.auth(owner),
    )
    assert usage.json()["usage"]["cost_usd"] == 0.5  # the spend stays on its account
    for word in words.values():
        await search_caught_up(api, owner, word, erased)
        assert tables_holding(stack, word) == [], word
    gone = await api.http.get(f"/v1/runs/{run}", headers=api.auth(owner))
    assert gone.status_code == 404
    await api.refused(
        scout,
        {"type": "run.completed", "run_id": run, "summary": "done"},
        "not_found",
        "no run",
    )
    before = stack.run_module("chips_projector", "digest").strip()
    stack.run_module("chips_projector", "rebuild")
    assert stack.run_module("chips_projector", "digest").strip() == before
    again = await api.http.get(
        f"/v1/harnesses/{scout.participant_id}/usage", headers=api.auth(owner)
    )
    assert again.json()["usage"]["cost_usd"] == 0.5


async def test_a_thread_is_not_opened_from_a_message_taken_back(stack, api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [scout.participant_id])
    _, mid = await said(api, owner, room, "soon gone")
    await api.append(owner, about("message.deleted", room, mid))
    await api.refused(
        owner,
        {
            "type": "space.created",
            "kind": "thread",
            "parent_space_id": room,
            "root_message_id": mid,
        },
        "invalid_event",
        "taken back",
    )
