"""A team moves in: invites, paired devices, sessions, revoking (docs/adr/0125).

Everything over HTTP and the socket as a client would. A device here is a P-256 key made
by the test, as a browser's WebCrypto makes one; the server only ever sees its public half.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from redis.asyncio import Redis

from chips_common.rules.devices import b64encode, signed_bytes
from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket


class Device:
    """A key pair, paired through an invite: it signs for its sessions."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.device_id = ""
        self.participant_id = ""
        self.workspace_id = ""

    @property
    def public_key(self) -> str:
        spki = self.key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
        return b64encode(spki)

    def sign(self, data: bytes) -> str:
        r, s = decode_dss_signature(self.key.sign(data, ec.ECDSA(hashes.SHA256())))
        return b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def signed(self, ts: int | None = None, nonce: str | None = None) -> dict[str, Any]:
        ts = int(time.time()) if ts is None else ts
        nonce = nonce or secrets.token_urlsafe(16)
        return {
            "device_id": self.device_id,
            "ts": ts,
            "nonce": nonce,
            "signature": self.sign(signed_bytes(self.device_id, ts, nonce)),
        }

    async def accept(self, api: Api, link: str) -> httpx.Response:
        secret = link.split("#/invite/")[1]
        r = await api.http.post(
            "/v1/invites/accept",
            json={"invite": secret, "public_key": self.public_key, "device_name": "Test"},
        )
        if r.status_code == 201:
            data = r.json()
            self.device_id = data["device_id"]
            self.participant_id = data["participant_id"]
            self.workspace_id = data["workspace_id"]
        return r

    async def session(self, api: Api) -> Identity:
        r = await api.http.post("/v1/sessions", json=self.signed())
        assert r.status_code == 201, r.text
        return Identity(self.workspace_id, self.participant_id, r.json()["token"])


async def invite(api: Api, by: Identity, name: str = "Colleague", **more: Any) -> dict[str, Any]:
    r = await api.http.post("/v1/invites", json={"name": name, **more}, headers=api.auth(by))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def test_an_invited_colleague_pairs_a_device_posts_and_is_revoked(
    stack: Stack, api: Api, api_b: Api
) -> None:
    owner = await api.create_workspace()
    sent = await invite(api, owner, "Dana", email="dana@example.com", role="member")
    assert sent["url"].startswith(stack.gateway_a) or "/#/invite/chips_iv_" in sent["url"]
    listed = (await api.http.get("/v1/invites", headers=api.auth(owner))).json()["invites"]
    assert [(i["name"], i["email"]) for i in listed] == [("Dana", "dana@example.com")]
    preview = await api.http.post(
        "/v1/invites/preview", json={"invite": sent["url"].split("#/invite/")[1]}
    )
    assert preview.json()["name"] == "Dana" and preview.json()["workspace_name"] == "Acme"

    dana = Device()
    assert (await dana.accept(api, sent["url"])).status_code == 201
    again = await Device().accept(api, sent["url"])
    assert again.json()["code"] == "invite_used", again.text

    me = await dana.session(api_b)  # any gateway checks a session alone
    room = await api.open_space(owner, "Launch", [dana.participant_id])
    await api_b.say(me, room, "hello from Dana's device")
    devices = (await api.http.get("/v1/devices", headers=api.auth(me))).json()["devices"]
    assert [(d["kind"], d["current"]) for d in devices] == [("browser", True)]
    assert devices[0]["last_seen"]

    sock = await Socket.open(stack.gateway_b, me)
    await sock.subscribe(owner.workspace_id)
    await sock.attached()
    r = await api.http.delete(f"/v1/devices/{dana.device_id}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    started = time.monotonic()
    await sock.wait_closed(timeout=5)
    assert time.monotonic() - started < 1.0
    refused = await api.http.get("/v1/spaces", headers=api.auth(me))
    assert refused.status_code == 401 and "revoked" in refused.json()["message"]
    signed = await api.http.post("/v1/sessions", json=dana.signed())
    assert signed.status_code == 401 and "revoked" in signed.json()["message"]


async def test_signed_exchanges_that_are_refused(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    dev = Device()
    await dev.accept(api, (await invite(api, owner))["url"])
    head = await api.head(owner)
    good = dev.signed()
    assert (await api.http.post("/v1/sessions", json=good)).status_code == 201
    cases = {
        "replayed": good,
        "clock_skew": dev.signed(ts=int(time.time()) - 600),
        "bad_signature": {**dev.signed(), "nonce": secrets.token_urlsafe(16)},
    }
    other = Device()
    other.device_id = dev.device_id
    cases["bad_signature "] = other.signed()  # another key over the right bytes
    for code, body in cases.items():
        r = await api.http.post("/v1/sessions", json=body)
        assert (r.status_code, r.json().get("code")) == (401, code.strip()), (code, r.text)
        assert r.json()["message"]
    # None of it was logged.
    assert await api.head(owner) == head


async def test_invites_that_are_refused(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    guest = await api.add_person(owner, "Gus", "guest")
    head = await api.head(owner)
    r = await api.http.post("/v1/invites", json={"name": "X"}, headers=api.auth(guest))
    assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    assert "owner or admin" in r.json()["message"]
    r = await api.http.get("/v1/invites", headers=api.auth(guest))
    assert r.status_code == 403
    assert await api.head(owner) == head
    sent = await invite(api, owner)
    secret = sent["url"].split("#/invite/")[1]
    tampered = await Device().accept(api, sent["url"].replace(secret, secret[:-2] + "xx"))
    assert (tampered.status_code, tampered.json()["code"]) == (404, "invalid_invite")
    r = await api.http.delete(f"/v1/invites/{sent['invite_id']}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    withdrawn = await Device().accept(api, sent["url"])
    assert withdrawn.json()["code"] == "invite_withdrawn"
    assert (await api.http.get("/v1/invites", headers=api.auth(owner))).json()["invites"] == []


async def test_a_pairing_code_pairs_a_further_device(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    first = Device()
    await first.accept(api, (await invite(api, owner, "Dana"))["url"])
    me = await first.session(api)
    r = await api.http.post("/v1/pairing-codes", headers=api.auth(me))
    assert r.status_code == 201, r.text
    code = r.json()["code"]
    assert len(code) == 9 and code[4] == "-"
    second = Device()
    r = await api.http.post(
        "/v1/invites/accept",
        json={"invite": code.lower(), "public_key": second.public_key, "kind": "cli"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["participant_id"] == first.participant_id
    second.device_id, second.participant_id = r.json()["device_id"], first.participant_id
    second.workspace_id = first.workspace_id
    await second.session(api)
    devices = (await api.http.get("/v1/devices", headers=api.auth(me))).json()["devices"]
    assert sorted(d["kind"] for d in devices) == ["browser", "cli"]


async def test_api_keys_are_named_expiring_and_revocable(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    r = await api.http.post(
        "/v1/api-keys",
        json={"name": "nightly report", "expires_in_days": 30},
        headers=api.auth(owner),
    )
    assert r.status_code == 201, r.text
    key = Identity(owner.workspace_id, owner.participant_id, r.json()["token"])
    assert (await api.http.get("/v1/spaces", headers=api.auth(key))).status_code == 200
    listed = (await api.http.get("/v1/devices", headers=api.auth(owner))).json()["devices"]
    assert "nightly report" in [d["name"] for d in listed]
    r = await api.http.delete(f"/v1/devices/{r.json()['id']}", headers=api.auth(owner))
    assert r.status_code == 200
    assert (await api.http.get("/v1/spaces", headers=api.auth(key))).status_code == 401


async def test_a_role_change_and_a_deactivation(stack: Stack, api: Api, api_b: Api) -> None:
    owner = await api.create_workspace()
    dana = Device()
    await dana.accept(api, (await invite(api, owner, "Dana"))["url"])
    me = await dana.session(api)
    harness, _ = await api.connect_harness(me, "Dana's helper")
    room = await api.open_space(owner, "Launch", [dana.participant_id])
    await api.say(me, room, "words that stay")
    # Two group rooms of Dana's own: one with Lee in it, one without.
    lee = Device()
    await lee.accept(api, (await invite(api, owner, "Lee"))["url"])
    lee_me = await lee.session(api)
    hers = await api.open_space(me, "Dana's plans", [lee.participant_id])
    alone = await api.open_space(me, "Dana's notes", [owner.participant_id])
    await api.say(me, hers, "the plan Lee inherits")
    await api.say(me, alone, "notes nobody loses")

    r = await api.http.patch(
        f"/v1/people/{dana.participant_id}", json={"role": "guest"}, headers=api.auth(me)
    )
    assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    r = await api.http.patch(
        f"/v1/people/{dana.participant_id}", json={"role": "guest"}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text

    sockets = [await Socket.open(stack.gateway_b, who) for who in (me, harness)]
    for sock in sockets:
        await sock.subscribe(owner.workspace_id)
        await sock.attached()
    # Deactivating her asks who takes her rooms; somebody not active here is refused.
    head = await api.head(owner)
    off = f"/v1/people/{dana.participant_id}"
    r = await api.http.patch(off, json={"active": False}, headers=api.auth(owner))
    assert (r.status_code, r.json()["code"], r.json()["field"]) == (
        422,
        "invalid_event",
        "rooms_to",
    ), r.text
    assert r.json()["message"] == "Dana owns 2 rooms: name the active person who takes them over"
    for heir in ("usr_nobody", harness.participant_id, dana.participant_id):
        r = await api.http.patch(
            off, json={"active": False, "rooms_to": heir}, headers=api.auth(owner)
        )
        assert (r.status_code, r.json()["code"]) == (422, "invalid_event"), r.text
        assert r.json()["field"] == "rooms_to" and r.json()["message"]
    assert await api.head(owner) == head  # none of it logged

    r = await api.http.patch(
        off, json={"active": False, "rooms_to": lee.participant_id}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    assert r.json()["disconnected"] == [harness.participant_id]
    assert r.json()["rooms_handed"] == [hers, alone]
    assert r.json()["rooms_to"] == lee.participant_id
    for sock in sockets:
        await sock.wait_closed(timeout=5)
    for who in (me, harness):
        assert (await api.http.get("/v1/spaces", headers=api.auth(who))).status_code == 401
    assert (await api_b.http.post("/v1/sessions", json=dana.signed())).status_code == 401
    # What she said is kept.
    lines = await api.lines(owner, room)
    assert "words that stay" in [line.get("text") for line in lines]
    # Lee owns her rooms now, the one he was not in too; she stays in them, a member.
    seq = r.json()["seq"]
    for space_id, said in ((hers, "the plan Lee inherits"), (alone, "notes nobody loses")):
        sheet = await api.http.get(
            f"/v1/spaces/{space_id}", params={"after_seq": seq}, headers=api.auth(lee_me)
        )
        assert sheet.status_code == 200, sheet.text
        standing = {m["participant_id"]: m["standing"] for m in sheet.json()["members"]}
        assert standing[lee.participant_id] == "owner", standing
        assert standing[dana.participant_id] == "member", standing
        assert said in [line.get("text") for line in await api.lines(lee_me, space_id)]
    # As the owner, Lee takes somebody out of the room he was handed.
    r = await api.http.delete(
        f"/v1/spaces/{alone}/members/{owner.participant_id}", headers=api.auth(lee_me)
    )
    assert r.status_code == 200, r.text
    # The room Dana did not own is as it was.
    sheet = (await api.http.get(f"/v1/spaces/{room}", headers=api.auth(owner))).json()
    assert {m["participant_id"]: m["standing"] for m in sheet["members"]}[
        owner.participant_id
    ] == "owner"

    # Reactivated, and invited back in: a new device of the same person.
    r = await api.http.patch(
        f"/v1/people/{dana.participant_id}", json={"active": True}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    back = await invite(api, owner, "Dana", participant_id=dana.participant_id)
    again = Device()
    assert (await again.accept(api, back["url"])).status_code == 201
    assert again.participant_id == dana.participant_id
    assert (
        await api.http.get("/v1/spaces", headers=api.auth(await again.session(api)))
    ).status_code == 200


async def test_a_person_renames_themselves_and_sets_their_time_zone(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    dana = Device()
    await dana.accept(api, (await invite(api, owner, "Dana"))["url"])
    me = await dana.session(api)
    r = await api.http.get("/v1/me", headers=api.auth(me))
    assert r.status_code == 200, r.text
    assert (r.json()["name"], r.json()["time_zone"]) == ("Dana", None)

    r = await api.http.patch(
        "/v1/me", json={"name": "Dana Ruiz", "time_zone": "America/Bogota"}, headers=api.auth(me)
    )
    assert r.status_code == 200, r.text
    assert (r.json()["name"], r.json()["previous_name"]) == ("Dana Ruiz", "Dana")
    # Logged, with the name it replaces; the directory and the profile say the new one.
    r2 = await api.http.get(
        "/v1/events", params={"since": 0, "limit": 500}, headers=api.auth(owner)
    )
    logged = [e for e in r2.json()["events"] if e["type"] == "person.updated"]
    assert (logged[-1]["name"], logged[-1]["previous_name"]) == ("Dana Ruiz", "Dana")
    assert logged[-1]["time_zone"] == "America/Bogota"
    profile = (await api.http.get("/v1/me", headers=api.auth(me))).json()
    assert (profile["name"], profile["time_zone"]) == ("Dana Ruiz", "America/Bogota")
    people = (await api.http.get("/v1/participants", headers=api.auth(owner))).json()
    assert "Dana Ruiz" in [p["name"] for p in people["participants"]]

    head = await api.head(owner)
    for body in ({"time_zone": "Mars/Olympus_Mons"}, {"name": "   "}, {}):
        r = await api.http.patch("/v1/me", json=body, headers=api.auth(me))
        assert (r.status_code, r.json()["code"]) == (422, "invalid_event"), (body, r.text)
        assert r.json()["message"]
    assert (
        "IANA"
        in (
            await api.http.patch("/v1/me", json={"time_zone": "Nowhere"}, headers=api.auth(me))
        ).json()["message"]
    )
    # Nobody renames somebody else, an admin neither.
    r = await api.http.patch(
        f"/v1/people/{dana.participant_id}", json={"name": "X"}, headers=api.auth(owner)
    )
    assert (r.status_code, r.json()["code"]) == (403, "forbidden"), r.text
    assert "their own name" in r.json()["message"]
    assert await api.head(owner) == head


async def test_a_replay_is_refused_on_another_gateway_though_redis_forgot_the_nonce(
    stack: Stack, api: Api, api_b: Api
) -> None:
    """The device's newest signed time is kept in Postgres: the same signed bytes sent
    again, to another gateway, after Redis lost what it remembered of the nonce, are
    refused; so is an older time, though its nonce was never seen (docs/adr/0125)."""
    owner = await api.create_workspace()
    dev = Device()
    await dev.accept(api, (await invite(api, owner))["url"])
    now = int(time.time())
    good = dev.signed(ts=now)
    assert (await api.http.post("/v1/sessions", json=good)).status_code == 201
    redis = Redis.from_url(stack.env["CHIPS_REDIS_URL"])
    try:
        prefix = stack.env["CHIPS_REDIS_PREFIX"]
        forgot = await redis.delete(f"{prefix}:nonce:{dev.device_id}:{good['nonce']}")
        assert forgot == 1  # Redis did hold it: what follows is not its doing
    finally:
        await redis.aclose()
    head = await api.head(owner)
    for body in (good, dev.signed(ts=now - 5), dev.signed(ts=now)):
        r = await api_b.http.post("/v1/sessions", json=body)
        assert (r.status_code, r.json()["code"]) == (401, "replayed"), r.text
        assert "newer" in r.json()["message"]
    assert await api.head(owner) == head
    # A later time is a fresh exchange.
    assert (await api_b.http.post("/v1/sessions", json=dev.signed(ts=now + 1))).status_code == 201
