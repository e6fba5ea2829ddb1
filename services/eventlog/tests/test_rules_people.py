"""The door's rules for invites and devices (rules/people.py, docs/adr/0125): each
refusal with its code and words, and what a refusal leaves (nothing)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chips_common.append import Actor, AppendRequest, InviteSecret, IssuedCredential
from chips_common.tokens import hash_token
from chips_eventlog.refused import Refused

from .conftest import World, snapshot

pytestmark = pytest.mark.unit

SECRET = "s3cret-of-the-invite"
KEY = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE-public-key"


def at(w: World, delta: timedelta) -> str:
    return (w.now + delta).isoformat()


def request(
    w: World,
    actor: Actor,
    events: list[Any],
    *,
    secret: str | None = SECRET,
    email: str | None = None,
    credentials: list[IssuedCredential] | None = None,
) -> AppendRequest:
    return AppendRequest(
        request_id="req",
        workspace_id=w.state.workspace_id,
        credential_id=f"crd_{actor.id}",
        actor=actor,
        idempotency_key=f"k-{len(events)}-{actor.id}-{w.state.head_seq}",
        events=events,
        invite=InviteSecret(secret_hash=hash_token(secret), email=email) if secret else None,
        credentials=credentials or [],
    )


def invite(
    w: World, by: str, role: str = "member", *, days: int = 7, secret: str = SECRET, **more: Any
) -> str:
    invite_id = f"inv_{w.state.head_seq}"
    event = {
        "type": "invite.created",
        "invite_id": invite_id,
        "name": "Colleague",
        "role": role,
        "expires_at": at(w, timedelta(days=days)),
        **more,
    }
    w.send(w.p(by), request=request(w, w.p(by), [event], secret=secret, email="c@example.com"))
    return invite_id


def accept(
    w: World, invite_id: str, *, secret: str = SECRET, person_id: str = "usr_new"
) -> list[Any]:
    actor = w.p(person_id)
    events = [
        {
            "type": "participant.joined",
            "participant_id": person_id,
            "kind": "person",
            "name": "whatever they typed",
            "invite_id": invite_id,
        },
        {
            "type": "device.paired",
            "device_id": f"crd_dev_{person_id}",
            "participant_id": person_id,
            "kind": "browser",
            "invite_id": invite_id,
        },
    ]
    cred = IssuedCredential(
        credential_id=f"crd_dev_{person_id}",
        participant_id=person_id,
        kind="browser",
        public_key=KEY,
        name="Chromium",
    )
    return w.send(actor, request=request(w, actor, events, secret=secret, credentials=[cred]))


def refused(w: World, fn: Any) -> Refused:
    before = snapshot(w.state)
    with pytest.raises(Refused) as caught:
        fn()
    assert snapshot(w.state) == before
    return caught.value


def test_an_invite_is_logged_without_its_secret_or_email(w: World) -> None:
    invite_id = invite(w, w.ADM)
    found = w.state.invites[invite_id]
    assert (found.state, found.role, found.email) == ("pending", "member", "c@example.com")
    assert found.secret_hash == hash_token(SECRET)


def test_using_an_invite_brings_the_person_in_with_a_device(w: World) -> None:
    invite_id = invite(w, w.OWN, "guest")
    joined, paired = accept(w, invite_id)
    # Named and placed as the invite said, whatever the request asked.
    assert (joined["name"], joined["role"]) == ("Colleague", "guest")
    assert paired["type"] == "device.paired"
    assert w.state.participants["usr_new"].role == "guest"
    assert w.state.devices["crd_dev_usr_new"].kind == "browser"
    assert w.state.invites[invite_id].state == "used"


@pytest.mark.parametrize(
    ("who", "role", "code", "words"),
    [
        ("MEM", "member", "forbidden", "only a workspace owner or admin invites people"),
        ("GST", "member", "forbidden", "only a workspace owner or admin invites people"),
        ("ADM", "owner", "forbidden", "a workspace has one owner"),
    ],
)
def test_who_may_invite(w: World, who: str, role: str, code: str, words: str) -> None:
    refusal = refused(w, lambda: invite(w, getattr(w, who), role))
    assert (refusal.code, words in refusal.message) == (code, True)


def test_an_invite_lives_thirty_days_at_most(w: World) -> None:
    refusal = refused(w, lambda: invite(w, w.OWN, days=31))
    assert "30 days at most" in refusal.message


def test_a_tampered_invite_is_refused(w: World) -> None:
    invite_id = invite(w, w.OWN)
    refusal = refused(w, lambda: accept(w, invite_id, secret="another secret"))
    assert refusal.code == "invalid_invite"


def test_an_invite_is_used_once(w: World) -> None:
    invite_id = invite(w, w.OWN)
    accept(w, invite_id)
    refusal = refused(w, lambda: accept(w, invite_id, person_id="usr_second"))
    assert refusal.code == "invite_used"


def test_an_expired_invite_is_refused(w: World) -> None:
    invite_id = invite(w, w.OWN, days=1)
    w.now = w.now + timedelta(days=1, seconds=1)
    refusal = refused(w, lambda: accept(w, invite_id))
    assert (refusal.code, "expired" in refusal.message) == ("invite_expired", True)


def test_a_withdrawn_invite_is_refused(w: World) -> None:
    invite_id = invite(w, w.ADM)
    w.ok(w.p(w.ADM), {"type": "invite.withdrawn", "invite_id": invite_id})
    refusal = refused(w, lambda: accept(w, invite_id))
    assert refusal.code == "invite_withdrawn"


def test_a_guest_does_not_withdraw_an_invite(w: World) -> None:
    invite_id = invite(w, w.ADM)
    w.says_no(
        w.p(w.GST), {"type": "invite.withdrawn", "invite_id": invite_id}, "forbidden", "withdrawn"
    )


def test_a_pairing_code_pairs_a_further_device_of_its_person(w: World) -> None:
    code = invite(w, w.MEM, participant_id=w.MEM, days=0, expires_at=at(w, timedelta(minutes=5)))
    cred = IssuedCredential(
        credential_id="crd_laptop", participant_id=w.MEM, kind="cli", public_key=KEY
    )
    event = {
        "type": "device.paired",
        "device_id": "crd_laptop",
        "participant_id": w.MEM,
        "kind": "cli",
        "invite_id": code,
    }
    w.send(w.p(w.MEM), request=request(w, w.p(w.MEM), [event], credentials=[cred]))
    assert w.state.devices["crd_laptop"].participant_id == w.MEM
    # Another person's code pairs nothing of theirs; a code lives 15 minutes at most.
    other = invite(w, w.OWN, participant_id=w.OWN, expires_at=at(w, timedelta(minutes=5)))
    theirs = {**event, "device_id": "crd_x", "invite_id": other}
    cred_x = cred.model_copy(update={"credential_id": "crd_x"})
    refusal = refused(
        w,
        lambda: w.send(w.p(w.MEM), request=request(w, w.p(w.MEM), [theirs], credentials=[cred_x])),
    )
    assert refusal.code == "invalid_invite"
    refusal = refused(
        w, lambda: invite(w, w.MEM, participant_id=w.MEM, expires_at=at(w, timedelta(hours=1)))
    )
    assert "15 minutes" in refusal.message


def test_revoking_a_device(w: World) -> None:
    accept(w, invite(w, w.OWN))
    revoke = {"type": "device.revoked", "device_id": "crd_dev_usr_new", "participant_id": "usr_new"}
    w.says_no(w.p(w.GST), revoke, "forbidden", "revoked by its person")
    w.says_no(w.p(w.MEM), revoke, "forbidden", "revoked by its person")
    w.ok(w.p(w.OWN), revoke)
    assert w.state.devices["crd_dev_usr_new"].revoked
    w.says_no(w.p(w.OWN), revoke, "invalid_event", "revoked already")


def test_a_person_revokes_their_own_device(w: World) -> None:
    accept(w, invite(w, w.OWN))
    w.ok(
        w.p("usr_new"),
        {"type": "device.revoked", "device_id": "crd_dev_usr_new", "participant_id": "usr_new"},
    )


def test_invites_are_not_written_by_a_client(w: World) -> None:
    event = {
        "type": "invite.created",
        "invite_id": "inv_x",
        "name": "X",
        "expires_at": at(w, timedelta(days=1)),
    }
    w.says_no(w.p(w.OWN), event, "invalid_event", "POST /v1/invites")


def update(_: World, pid: str, **change: Any) -> dict[str, Any]:
    return {"type": "person.updated", "participant_id": pid, **change}


def test_an_admin_changes_a_role(w: World) -> None:
    w.ok(w.p(w.ADM), update(w, w.MEM, role="guest"))
    assert w.state.participants[w.MEM].role == "guest"


@pytest.mark.parametrize(
    ("who", "target", "change", "code", "words"),
    [
        ("GST", "MEM", {"role": "admin"}, "forbidden", "only a workspace owner or admin"),
        ("MEM", "GST", {"active": False}, "forbidden", "only a workspace owner or admin"),
        ("ADM", "OWN", {"role": "member"}, "forbidden", "owner keeps their role"),
        ("ADM", "ADM", {"active": False}, "forbidden", "cannot deactivate yourself"),
        ("ADM", "H1", {"role": "member"}, "not_found", "no such person"),
        ("ADM", "MEM", {}, "invalid_event", "say the new role"),
    ],
)
def test_who_may_change_a_person(
    w: World, who: str, target: str, change: dict[str, Any], code: str, words: str
) -> None:
    w.says_no(w.p(getattr(w, who)), update(w, getattr(w, target), **change), code, words)


def test_deactivating_revokes_devices_and_disconnects_harnesses(w: World) -> None:
    accept(w, invite(w, w.OWN))
    w.ok(w.p(w.OWN), update(w, "usr_new", role="admin"))
    # Give the new person a harness of their own.
    w.join(w.p("usr_new"), "hrn_new", "harness", "Helper", "member", owner_id="usr_new")
    (event,) = w.ok(w.p(w.ADM), update(w, "usr_new", active=False))
    assert event["disconnected"] == ["hrn_new"]
    assert not w.state.participants["usr_new"].active
    assert w.state.devices["crd_dev_usr_new"].revoked
    # A deactivated person pairs nothing until reactivated; then an admin invites them back.
    back = invite(w, w.ADM, participant_id="usr_new")
    cred = IssuedCredential(
        credential_id="crd_back", participant_id="usr_new", kind="browser", public_key=KEY
    )
    paired = {
        "type": "device.paired",
        "device_id": "crd_back",
        "participant_id": "usr_new",
        "kind": "browser",
        "invite_id": back,
    }
    refusal = refused(
        w,
        lambda: w.send(
            w.p("usr_new"), request=request(w, w.p("usr_new"), [paired], credentials=[cred])
        ),
    )
    assert "deactivated" in refusal.message
    w.ok(w.p(w.ADM), update(w, "usr_new", active=True))
    w.send(w.p("usr_new"), request=request(w, w.p("usr_new"), [paired], credentials=[cred]))
    assert not w.state.devices["crd_back"].revoked


def operator_invite(w: World, role: str = "member", **more: Any) -> str:
    """The operator's invite, as a sign-in through the identity provider makes one for a
    newcomer the workspace lets in (docs/adr/0135)."""
    op = Actor(kind="operator", id="operator")
    invite_id = f"inv_op_{w.state.head_seq}"
    event = {
        "type": "invite.created",
        "invite_id": invite_id,
        "name": "Newcomer",
        "role": role,
        "expires_at": at(w, timedelta(minutes=10)),
        **more,
    }
    w.send(op, request=request(w, op, [event], email="new@acme.test"))
    return invite_id


def test_the_operator_invites_a_newcomer_as_a_member(w: World) -> None:
    invite_id = operator_invite(w)
    assert w.state.invites[invite_id].invited_by == "operator"
    joined, _ = accept(w, invite_id)
    assert (joined["name"], joined["role"]) == ("Newcomer", "member")


@pytest.mark.parametrize("role", ["admin", "owner"])
def test_the_operator_invites_no_admin(w: World, role: str) -> None:
    refusal = refused(w, lambda: operator_invite(w, role))
    assert (refusal.code, "only new members or guests" in refusal.message) == (
        "forbidden",
        True,
    )


def test_the_operator_makes_no_pairing_code(w: World) -> None:
    refusal = refused(w, lambda: operator_invite(w, participant_id=w.MEM))
    assert refusal.code == "forbidden"


def test_a_person_renames_themselves_and_says_their_time_zone(w: World) -> None:
    before = w.state.participants[w.MEM].name
    (logged,) = w.send(
        w.p(w.MEM),
        {
            "type": "person.updated",
            "participant_id": w.MEM,
            "name": "Mo",
            "time_zone": "Asia/Tokyo",
        },
    )
    assert (logged["name"], logged["previous_name"], logged["time_zone"]) == (
        "Mo",
        before,
        "Asia/Tokyo",
    )
    assert w.state.participants[w.MEM].name == "Mo"
    # The owner too: their role and standing stay, their name is theirs.
    (owned,) = w.send(
        w.p(w.OWN), {"type": "person.updated", "participant_id": w.OWN, "name": "Boss"}
    )
    assert owned["previous_name"] != "Boss" and w.state.participants[w.OWN].role == "owner"


def test_nobody_renames_somebody_else(w: World) -> None:
    event = {"type": "person.updated", "participant_id": w.MEM, "name": "Renamed"}
    refusal = refused(w, lambda: w.send(w.p(w.ADM), event))
    assert (refusal.code, "their own name" in refusal.message) == ("forbidden", True)
    refusal = refused(
        w,
        lambda: w.send(
            w.p(w.MEM), {"type": "person.updated", "participant_id": w.MEM, "role": "admin"}
        ),
    )
    assert refusal.code == "forbidden"


def test_deactivating_hands_their_group_rooms_to_whom_the_admin_names(w: World) -> None:
    """Maya owns two group rooms, one with Otto in it and one without, and has a direct
    space with Otto; Ada deactivates her and names Otto (docs/adr/0144)."""
    with_otto = w.space(w.MEM, [w.OUT], title="With Otto")
    without = w.space(w.MEM, [w.ADM], title="Without Otto")
    direct = w.created(w.p(w.MEM), {"type": "space.created", "kind": "direct", "members": [w.OUT]})
    w.say(w.MEM, with_otto, "what Maya said")
    logged = w.ok(w.p(w.ADM), update(w, w.MEM, active=False, rooms_to=w.OUT))
    off, added = logged
    assert off["rooms_handed"] == [with_otto, without]
    assert off["rooms_to"] == w.OUT
    # Otto comes into the room he was not in as its owner, by Ada's act, one event later.
    assert (added["type"], added["space_id"], added["participant_id"], added["standing"]) == (
        "membership.added",
        without,
        w.OUT,
        "owner",
    )
    assert added["actor"]["id"] == w.ADM and added["seq"] == off["seq"] + 1
    for room in (with_otto, without):
        assert w.state.standing(room, w.OUT) == "owner"
        assert w.state.standing(room, w.MEM) == "member"
    # A direct space stays as it was, between those in it; so does Arjun's room.
    assert w.state.standing(direct, w.MEM) == "owner"
    assert w.state.standing(w.room, w.OWN) == "owner"
    # Otto, the room's owner now, takes somebody out of it, as an owner may.
    w.ok(
        w.p(w.OUT),
        {"type": "membership.removed", "space_id": without, "participant_id": w.ADM},
    )


@pytest.mark.parametrize(
    ("heir", "words"),
    [
        (None, "Maya owns 1 room: name the active person who takes them over"),
        ("usr_nobody", "there is no such person"),
        ("hrn_h1", "there is no such person"),
        ("MEM", "Maya is the one being deactivated"),
        ("GST", "Gus is a guest, and a guest owns no room"),
        ("OFF", "Ada was deactivated: the rooms go to an active person"),
    ],
)
def test_the_rooms_go_only_to_an_active_person_of_the_workspace(
    w: World, heir: str | None, words: str
) -> None:
    w.space(w.MEM, [w.OUT], title="Maya's")
    if heir == "OFF":
        w.ok(w.p(w.OWN), update(w, w.ADM, active=False))
        heir = "ADM"
    change: dict[str, Any] = {"active": False}
    if heir is not None:
        change["rooms_to"] = getattr(w, heir, heir)
    refusal = w.says_no(w.p(w.OWN), update(w, w.MEM, **change), "invalid_event", words)
    assert refusal.field == "rooms_to"


def test_rooms_are_handed_on_only_by_a_deactivation(w: World) -> None:
    w.says_no(
        w.p(w.ADM),
        update(w, w.MEM, role="guest", rooms_to=w.OUT),
        "invalid_event",
        "only when their owner is deactivated",
    )
    w.says_no(
        w.p(w.ADM),
        update(w, w.OUT, active=False, rooms_handed=[w.room]),
        "invalid_event",
        "written by Chips",
    )
    # Nobody who owns no group room needs an heir.
    (event,) = w.ok(w.p(w.ADM), update(w, w.OUT, active=False))
    assert event.get("rooms_handed", []) == []


def passkey(w: World, by_device: str, pk: str = "crd_pk") -> AppendRequest:
    """A passkey's device.paired, sent from ``by_device`` (docs/adr/0145)."""
    person = "usr_new"
    cred = IssuedCredential(
        credential_id=pk, participant_id=person, kind="passkey", public_key=KEY, name="Key"
    )
    event = {
        "type": "device.paired",
        "device_id": pk,
        "participant_id": person,
        "kind": "passkey",
    }
    req = request(w, w.p(person), [event], secret=None, credentials=[cred])
    return req.model_copy(update={"credential_id": by_device})


def test_a_passkey_is_added_from_a_device_already_paired(w: World) -> None:
    accept(w, invite(w, w.OWN))
    # From a bearer token, or a revoked device, it is refused.
    for by in ("crd_usr_new", "crd_nothing"):
        refusal = refused(w, lambda by=by: w.send(w.p("usr_new"), request=passkey(w, by)))
        assert refusal.code == "forbidden" and "already paired" in refusal.message
    w.send(w.p("usr_new"), request=passkey(w, "crd_dev_usr_new"))
    assert w.state.devices["crd_pk"].kind == "passkey"
    w.ok(
        w.p("usr_new"),
        {"type": "device.revoked", "device_id": "crd_dev_usr_new", "participant_id": "usr_new"},
    )
    again = passkey(w, "crd_dev_usr_new", "crd_pk2")
    refusal = refused(w, lambda: w.send(w.p("usr_new"), request=again))
    assert refusal.code == "forbidden"
