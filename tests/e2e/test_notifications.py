"""The inbox over the API (docs/notifications.md, docs/adr/0132): who is notified of what,
read and done synced to every socket of the person, muted rooms, preferences and push
subscriptions, and nothing of a room to anybody not in it.

A harness owned by Olive asks an approval and a question in a room of Olive, Bea and the
harness; Stan is in the workspace but not the room.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket, key


@dataclass
class Scene:
    olive: Identity  # owns the harness
    bea: Identity  # in the room
    stan: Identity  # not in the room
    harness: Identity
    room: str
    run: str
    approval: str
    question: str
    head: int


async def inbox(api: Api, who: Identity, after: int, which: str = "all") -> dict[str, Any]:
    r = await api.http.get(
        "/v1/notifications",
        params={"filter": which, "after_seq": after},
        headers=api.auth(who),
    )
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["as_of_seq"] >= after, "the notifier did not fold the log in time"
    return data


@pytest.fixture
async def scene(api: Api) -> Scene:
    olive = await api.create_workspace(owner="Olive")
    bea = await api.add_person(olive, "Bea")
    stan = await api.add_person(olive, "Stan")
    harness, _ = await api.connect_harness(olive, "Ledger")
    room = await api.open_space(
        olive, "Launch", members=[bea.participant_id, harness.participant_id]
    )
    run, approval, question = key("run_n"), key("apv"), key("q")
    await api.append(
        harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "pay"}
    )
    await api.append(
        harness,
        {
            "type": "approval.request",
            "approval_id": approval,
            "run_id": run,
            "action": "ledger.pay",
            "preview": "pay the invoice",
        },
    )
    head = await api.append(
        harness,
        {
            "type": "question.ask",
            "question_id": question,
            "run_id": run,
            "prompt": "Which supplier?",
            "options": [{"label": "Acme", "value": "acme"}, {"label": "Globex", "value": "globex"}],
        },
    )
    return Scene(olive, bea, stan, harness, room, run, approval, question, head)


async def test_who_is_told_and_nobody_outside_the_room(api: Api, scene: Scene) -> None:
    mine = await inbox(api, scene.olive, scene.head)
    kinds = {n["kind"]: n for n in mine["notifications"]}
    assert set(kinds) == {"approval", "question"}
    approval = kinds["approval"]
    assert approval["ref_id"] == scene.approval and approval["space_id"] == scene.room
    assert approval["space_name"] == "Launch" and "Ledger" in approval["title"]
    assert "ledger.pay" in approval["body"] and approval["seq"] < scene.head
    assert approval["read_at"] is None and approval["done_at"] is None
    assert (mine["unread"], mine["needs_me"]) == (2, 2)
    # Newest first.
    assert [n["kind"] for n in mine["notifications"]] == ["question", "approval"]
    # Bea is asked the question, not the approval: only the owner decides it.
    bea = await inbox(api, scene.bea, scene.head)
    assert [n["kind"] for n in bea["notifications"]] == ["question"]
    # Stan is in no room of it; a harness has no notifications.
    stan = await inbox(api, scene.stan, scene.head)
    assert stan["notifications"] == [] and stan["unread"] == 0
    r = await api.http.get(f"/v1/spaces/{scene.room}/notifications", headers=api.auth(scene.stan))
    assert r.status_code == 403, r.text
    r = await api.http.get("/v1/notifications", headers=api.auth(scene.harness))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    # Bea leaves the room: she no longer lists what it said.
    r = await api.remove_from_room(scene.bea, scene.room, scene.bea.participant_id)
    assert r.status_code == 200, r.text
    assert (await inbox(api, scene.bea, scene.head))["notifications"] == []


async def test_done_and_read_reach_every_socket(api: Api, stack: Stack, scene: Scene) -> None:
    phone = await Socket.open(stack.gateway_a, scene.olive)
    laptop = await Socket.open(stack.gateway_b, scene.olive)
    try:
        seq = await api.append(
            scene.olive,
            {"type": "approval.resolved", "approval_id": scene.approval, "decision": "approve"},
        )

        def done(frame: dict[str, Any]) -> bool:
            n = frame.get("notification") or {}
            return frame["frame"] == "notification" and n.get("done_reason") == "answered"

        for sock in (phone, laptop):
            frame = await sock.wait_for(done)
            assert frame["notification"]["ref_id"] == scene.approval
            assert frame["unread"] == 1  # the question is still unread
        mine = await inbox(api, scene.olive, seq, "needs_me")
        assert [n["kind"] for n in mine["notifications"]] == ["question"]
        assert mine["needs_me"] == 1

        r = await api.http.post(
            "/v1/notifications/read", json={"all": True}, headers=api.auth(scene.olive)
        )
        assert r.status_code == 200 and r.json() == {"unread": 0}, r.text
        for sock in (phone, laptop):
            frame = await sock.wait_for(
                lambda f: (
                    f["frame"] == "notification"
                    and f["notification"]["read_at"]
                    and f["notification"]["kind"] == "question"
                )
            )
            assert frame["unread"] == 0
        # A question read still needs me until it is answered.
        assert (await inbox(api, scene.olive, seq, "needs_me"))["needs_me"] == 1
        ended = await api.append(scene.harness, {"type": "run.completed", "run_id": scene.run})
        after = await inbox(api, scene.olive, ended)
        assert after["needs_me"] == 0
        assert {n["done_reason"] for n in after["notifications"]} == {"answered", "run_ended"}
    finally:
        await phone.close()
        await laptop.close()


async def test_a_muted_room_shows_only_what_only_i_answer(api: Api, scene: Scene) -> None:
    path = f"/v1/spaces/{scene.room}/notifications"
    r = await api.http.put(path, json={"muted": 1}, headers=api.auth(scene.olive))
    assert r.status_code == 400 and r.json()["code"] == "invalid_request", r.text
    r = await api.http.put(path, json={"muted": True}, headers=api.auth(scene.olive))
    assert r.status_code == 200 and r.json() == {"space_id": scene.room, "muted": True}, r.text
    r = await api.http.get(path, headers=api.auth(scene.olive))
    assert r.json()["muted"] is True
    muted = await inbox(api, scene.olive, scene.head, "needs_me")
    # The approval is Olive's alone; the question is Bea's too.
    assert [n["kind"] for n in muted["notifications"]] == ["approval"]
    assert (muted["unread"], muted["needs_me"]) == (1, 1)
    assert len((await inbox(api, scene.olive, scene.head, "all"))["notifications"]) == 2
    r = await api.http.put(path, json={"muted": False}, headers=api.auth(scene.olive))
    assert (await inbox(api, scene.olive, scene.head, "needs_me"))["needs_me"] == 2


async def test_read_marks_are_one_s_own_and_paging_goes_back(api: Api, scene: Scene) -> None:
    bea = await inbox(api, scene.bea, scene.head)
    theirs = bea["notifications"][0]["id"]
    r = await api.http.post(
        "/v1/notifications/read", json={"ids": [theirs]}, headers=api.auth(scene.olive)
    )
    assert r.json() == {"unread": 2}  # nothing of Olive's was marked
    assert (await inbox(api, scene.bea, scene.head))["unread"] == 1
    first = await api.http.get(
        "/v1/notifications", params={"filter": "all", "limit": 1}, headers=api.auth(scene.olive)
    )
    (newest,) = first.json()["notifications"]
    older = await api.http.get(
        "/v1/notifications",
        params={"filter": "all", "limit": 1, "before": newest["id"]},
        headers=api.auth(scene.olive),
    )
    (next_one,) = older.json()["notifications"]
    assert next_one["id"] < newest["id"] and next_one["kind"] == "approval"
    r = await api.http.post("/v1/notifications/read", json={}, headers=api.auth(scene.olive))
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"


async def test_preferences(api: Api, scene: Scene) -> None:
    who = api.auth(scene.bea)
    r = await api.http.get("/v1/notification-preferences", headers=who)
    assert r.status_code == 200, r.text
    assert r.json()["email"] == "delayed" and r.json()["push"] is True
    assert r.json()["quiet_hours"] is None and r.json()["time_zone"] == "UTC"
    wanted = {
        "email": "digest",
        "email_delay_seconds": 120,
        "push": False,
        "quiet_hours": {"start": "22:00", "end": "07:00"},
    }
    r = await api.http.put("/v1/notification-preferences", json=wanted, headers=who)
    assert r.status_code == 200, r.text
    again = (await api.http.get("/v1/notification-preferences", headers=who)).json()
    assert {k: again[k] for k in wanted} == wanted
    r = await api.http.put("/v1/notification-preferences", json={"email": "never"}, headers=who)
    assert r.status_code == 400 and r.json()["field"] == "email", r.text
    # null is no value of these (the document says so); it is not "keep" either.
    r = await api.http.put("/v1/notification-preferences", json={"email": None}, headers=who)
    assert r.status_code == 400 and r.json()["code"] == "invalid_request", r.text
    # Well formed, and still no time zone anyone has: refused as a preference, 422.
    r = await api.http.put(
        "/v1/notification-preferences", json={"time_zone": "Mars/Olympus"}, headers=who
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_preference", r.text
    assert r.json()["field"] == "time_zone"
    # Olive's are her own.
    olive = await api.http.get("/v1/notification-preferences", headers=api.auth(scene.olive))
    assert olive.json()["email"] == "delayed"


async def test_push_key_and_subscriptions(api: Api, scene: Scene) -> None:
    r = await api.http.get("/v1/push/vapid-public-key", headers=api.auth(scene.bea))
    assert r.status_code == 200, r.text
    point = base64.urlsafe_b64decode(r.json()["public_key"] + "==")
    assert len(point) == 65 and point[0] == 4  # an uncompressed P-256 point
    body = {
        "endpoint": "https://push.example.test/send/abc",
        "keys": {
            "p256dh": base64.urlsafe_b64encode(b"x" * 65).decode(),
            "auth": "c2VjcmV0c2VjcmV0",
        },
    }
    r = await api.http.post("/v1/push/subscriptions", json=body, headers=api.auth(scene.bea))
    assert r.status_code == 201, r.text
    r = await api.http.request(
        "DELETE",
        "/v1/push/subscriptions",
        json={"endpoint": body["endpoint"]},
        headers=api.auth(scene.bea),
    )
    assert r.status_code == 200 and r.json() == {"deleted": True}, r.text
    bad = {**body, "endpoint": "ftp://push.example.test/x"}
    r = await api.http.post("/v1/push/subscriptions", json=bad, headers=api.auth(scene.bea))
    assert r.status_code == 400, r.text


async def test_words_tell_whom_they_name_and_a_direct_space_whoever_else_is_in_it(
    api: Api, scene: Scene
) -> None:
    """What the notifier skips without a fold (a group room's words naming nobody, a
    harness named, a person's words to nobody else in a direct space) tells nobody, and
    what names a person, or is said to somebody else in a direct space, tells them; a
    person added to a direct space is told of the next words in it (ADR 0132)."""
    olive, bea = scene.olive, scene.bea

    def kinds(page: dict[str, Any]) -> list[str]:
        return [n["kind"] for n in page["notifications"]]

    plain = await api.say(olive, scene.room, "words for the room")
    harness_named = await api.say(olive, scene.room, "@Ledger go on")
    assert kinds(await inbox(api, bea, harness_named)) == ["question"], "named nobody"
    named = await api.say(olive, scene.room, "@Bea have a look")
    mine = await inbox(api, bea, named)
    assert kinds(mine) == ["mention", "question"]
    assert mine["notifications"][0]["seq"] == named and plain < named

    # A direct space of Olive and her harness: her words there tell nobody; its tell her.
    r = await api.post_event(
        olive,
        {
            "type": "space.created",
            "kind": "direct",
            "title": "Olive and Ledger",
            "members": [scene.harness.participant_id],
            "idempotency_key": key("direct"),
        },
    )
    assert r.status_code == 200, r.text
    direct = str(
        r.json().get("space_id")
        or (await api.read(olive, r.json()["seq"] - 1, limit=1))[0]["space_id"]
    )
    before = len((await inbox(api, olive, scene.head))["notifications"])
    to_nobody = await api.say(olive, direct, "a note to my harness")
    assert len((await inbox(api, olive, to_nobody))["notifications"]) == before
    told = await api.say(scene.harness, direct, "done, Olive")
    page = await inbox(api, olive, told)
    assert page["notifications"][0]["kind"] == "direct"
    assert page["notifications"][0]["seq"] == told

    # Bea added: Olive's next words there tell her.
    r = await api.add_to_room(olive, direct, bea.participant_id)
    assert r.status_code == 200, r.text
    to_bea = await api.say(olive, direct, "Bea, this is where Ledger reports")
    page = await inbox(api, bea, to_bea)
    assert page["notifications"][0]["kind"] == "direct"
    assert page["notifications"][0]["seq"] == to_bea
