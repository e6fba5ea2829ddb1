"""A passkey as a device key (docs/adr/0145), in headless Chromium with its virtual
authenticator (the DevTools protocol's WebAuthn domain): a person paired by an invite adds
a passkey from the Devices page, signs in with it later in the same browser with no link
or code, and is refused, in a sentence, once it is revoked. A replayed answer, and an
answer whose signature is over other bytes, are refused with a code and a sentence; none
of it is logged.

A passkey's relying party is a host name, never an IP address: this gateway's public
address is ``http://localhost:<port>`` (a secure context, as https would be).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from chips_devstack.procs import free_port
from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_people import invite
from tests.e2e.test_web_app import ARTIFACTS, DESKTOP, Person

built_app = web.built_app
browser = web.browser

AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


@pytest.fixture(scope="module")
def localhost(stack: Stack) -> Iterator[str]:
    """A gateway whose public address is http://localhost:<port>."""
    name = "gateway_passkeys"
    port = stack.ports[name] = free_port()
    stack.extra_env[name] = {"CHIPS_PUBLIC_URL": f"http://localhost:{port}"}
    stack.start(name)
    try:
        stack.wait_ready(name)
        yield f"http://localhost:{port}"
    finally:
        stack.stop(name)


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


async def passkey_sign_in(page: Page) -> dict[str, Any]:
    """Click the sign-in screen's passkey button; the answer the browser sent."""
    async with page.expect_request(lambda r: r.url.endswith("/v1/passkeys/sign-in")) as sent:
        await page.get_by_test_id("passkey-sign-in").click()
    body: dict[str, Any] = json.loads((await sent.value).post_data or "{}")
    return body


async def test_a_passkey_is_added_then_signs_in_and_is_refused_once_revoked(
    stack: Stack, api: Api, browser: Browser, localhost: str
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    link = (await invite(api, owner, "Dana Ruiz"))["url"]
    secret = link.split("#/invite/")[1]
    context = await browser.new_context(viewport=DESKTOP)
    page = await context.new_page()
    dana = Person(page)
    cdp = await context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable")
    made = await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})

    # Paired by the invite, as any browser; then a passkey from the Devices page.
    await page.goto(f"{localhost}/#/invite/{secret}")
    await page.get_by_role("button", name="Join").click()
    await expect(page.locator(".side-foot .me")).to_have_text("Dana Ruiz")
    await page.get_by_role("link", name="Devices", exact=True).click()
    async with page.expect_response(lambda r: r.url.endswith("/v1/passkeys")) as answered:
        await page.get_by_role("button", name="Add a passkey").click()
    added = await (await answered.value).json()
    await expect(page.get_by_test_id("passkey-added")).to_contain_text("one of your devices now")
    await expect(page.get_by_test_id("devices")).to_contain_text("passkey")
    held = await cdp.send("WebAuthn.getCredentials", {"authenticatorId": made["authenticatorId"]})
    assert [b64(unb64(c["credentialId"])) for c in held["credentials"]] == [added["credential_id"]]
    assert held["credentials"][0]["isResidentCredential"] is True

    # Later, signed out: the passkey signs this browser in, no link or code.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_test_id("passkey-sign-in")).to_be_visible()
    head = await api.head(owner)
    answer = await passkey_sign_in(page)
    await expect(page.locator(".side-foot .me")).to_have_text("Dana Ruiz")
    await page.get_by_role("link", name="Devices", exact=True).click()
    this_one = page.get_by_test_id("devices").locator("li", has_text="(this one)")
    await expect(this_one).to_contain_text("passkey")
    await dana.shot("passkey-signed-in")

    # The same answer sent again, and one whose signature is over other bytes: refused.
    r = await api.http.post(f"{localhost}/v1/passkeys/sign-in", json=answer)
    assert (r.status_code, r.json()["code"]) == (401, "replayed"), r.text
    assert "used already" in r.json()["message"]
    fresh = await api.http.post(f"{localhost}/v1/passkeys/challenge", json={})
    client = json.loads(unb64(answer["credential"]["response"]["clientDataJSON"]))
    client["challenge"] = fresh.json()["options"]["challenge"]
    other = json.loads(json.dumps(answer))
    other["credential"]["response"]["clientDataJSON"] = b64(json.dumps(client).encode())
    r = await api.http.post(f"{localhost}/v1/passkeys/sign-in", json=other)
    assert (r.status_code, r.json()["code"]) == (401, "bad_signature"), r.text
    assert r.json()["message"].startswith("that is not this passkey's answer")
    # A passkey asked for on the suite's own gateway (another address) is not ours there.
    r = await api.http.post(f"{stack.gateway_a}/v1/passkeys/sign-in", json=answer)
    assert r.status_code == 401 and r.json()["message"], r.text
    assert await api.head(owner) == head  # none of it logged

    # Revoked (by the owner, say): the browser is signed out, and the passkey refused.
    r = await api.http.delete(f"/v1/devices/{added['device_id']}", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    await expect(page.get_by_role("alert")).to_contain_text("This device was signed out")
    head = await api.head(owner)
    await passkey_sign_in(page)
    await expect(page.get_by_role("alert")).to_have_text(
        "That passkey is not one Chips knows here, or it was revoked."
    )
    await dana.shot("passkey-revoked")
    assert await api.head(owner) == head
    await context.close()
    assert ARTIFACTS.is_dir()
