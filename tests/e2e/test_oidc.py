"""Sign-in with the team's identity provider (docs/adr/0135), against a real one.

The provider is npm's ``oidc-provider`` (tests/e2e/oidc/provider.js) on 127.0.0.1, run as
a process; the gateways that trust it are of their own, beside the suite's two. A
"browser" here is an httpx client with its cookie jar: it starts the sign-in with its
device's public key, follows the provider's redirects, signs in at the provider's own
page, and is sent back through the gateway's callback to the app.
"""

from __future__ import annotations

import contextlib
import filecmp
import html
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

import httpx
import pytest
from playwright.async_api import Browser as PlaywrightBrowser
from playwright.async_api import Page, expect

from chips_devstack.procs import free_port, wait_until
from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Identity
from tests.e2e.test_people import Device, invite
from tests.e2e.test_web_people import READ_DEVICE

HERE = Path(__file__).parent / "oidc"
CLIENT_ID, CLIENT_SECRET = "chips-test", "a-client-secret-of-the-test"
ACCOUNTS = {
    "dana": {"email": "Dana@Acme.test", "email_verified": True, "name": "Dana Ruiz"},
    "nobody": {"email": "nobody@acme.test", "email_verified": True},
    "unverified": {"email": "unverified@acme.test", "email_verified": False},
    "eve": {"email": "eve@elsewhere.test", "email_verified": True},
    "newcomer": {"email": "newcomer@acme.test", "email_verified": True, "name": "Nia Cole"},
    # The browser test's own colleague: the workspace is shared by this file's tests.
    "rosa": {"email": "rosa@acme.test", "email_verified": True, "name": "Rosa Diaz"},
}


def install_provider() -> None:
    """``npm ci`` in tests/e2e/oidc when its lock changed since the last install, so a
    clean clone gets the provider the first time these tests run."""
    stamp = HERE / "node_modules" / ".chips-lock"
    lock = HERE / "package-lock.json"
    if stamp.exists() and filecmp.cmp(lock, stamp, shallow=False):
        return
    if shutil.which("npm") is None:
        pytest.skip("npm (Node 20) is needed to run the test identity provider")
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True
    )
    shutil.copyfile(lock, stamp)


@dataclass
class Provider:
    issuer: str
    gateways: dict[str, str]  # the new-people setting -> that gateway's URL
    workspace: Identity


@pytest.fixture(scope="module")
def provider(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    install_provider()
    root = tmp_path_factory.mktemp("oidc")
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    made = httpx.post(
        f"{stack.gateway_a}/v1/workspaces",
        json={"name": "Acme", "owner_name": "Arjun Rao"},
        headers={"X-Chips-Operator-Secret": "chips-dev-operator-secret"},
    ).json()
    owner = Identity(made["workspace_id"], made["owner_id"], made["token"])
    names = {"invite": "gateway_oidc", "member": "gateway_oidc_open"}
    for name in names.values():
        stack.ports[name] = free_port()
    config = {
        "port": port,
        "clients": [
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": [f"{stack.url(n)}/v1/oidc/callback" for n in names.values()],
            }
        ],
        "accounts": ACCOUNTS,
    }
    (root / "config.json").write_text(json.dumps(config))
    log = (root / "provider.log").open("w")
    proc = subprocess.Popen(
        ["node", str(HERE / "provider.js"), str(root / "config.json")],
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def answers() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{issuer}/.well-known/openid-configuration").status_code == 200
        return False

    try:
        wait_until(answers, 30, "the OpenID provider")
        for new_people, name in names.items():
            stack.extra_env[name] = {
                "CHIPS_PUBLIC_URL": stack.url(name),
                "CHIPS_OIDC_ISSUER": issuer,
                "CHIPS_OIDC_CLIENT_ID": CLIENT_ID,
                "CHIPS_OIDC_CLIENT_SECRET": CLIENT_SECRET,
                "CHIPS_OIDC_WORKSPACE": owner.workspace_id,
                "CHIPS_OIDC_ALLOWED_DOMAINS": "acme.test",
                "CHIPS_OIDC_NEW_PEOPLE": new_people,
            }
            stack.start(name)
        stack.wait_ready(*names.values())
        yield Provider(issuer, {k: stack.url(n) for k, n in names.items()}, owner)
    finally:
        for name in names.values():
            if name in stack.procs:
                stack.stop(name)
        proc.terminate()
        proc.wait(10)
        log.close()


def form_of(page: str) -> tuple[str, dict[str, str]]:
    """The provider page's form: where it posts, and its hidden fields."""
    action = re.search(r'<form[^>]*action="([^"]+)"', page)
    assert action, page[:2000]
    fields = {
        m.group(1): html.unescape(m.group(2))
        for m in re.finditer(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
    }
    return html.unescape(action.group(1)), fields


class Browser:
    """One browser: a cookie jar, a device key, and where the sign-in left it."""

    def __init__(self, gateway: str) -> None:
        self.gateway = gateway
        self.http = httpx.AsyncClient(timeout=30)
        self.device = Device()

    async def close(self) -> None:
        await self.http.aclose()

    async def to_callback(self, login: str) -> str:
        """Start a sign-in and sign in at the provider as ``login``: the callback URL the
        provider sends the browser to (not followed yet)."""
        r = await self.http.post(
            f"{self.gateway}/v1/oidc/start", json={"public_key": self.device.public_key}
        )
        assert r.status_code == 201, r.text
        url: str = r.json()["url"]
        assert url.startswith(url.split("/auth")[0]) and "code_challenge=" in url
        method, data = "GET", None
        while True:
            r = await self.http.request(method, url, data=data)
            if r.status_code in (302, 303):
                url = urljoin(url, r.headers["location"])
                method, data = "GET", None
                if url.startswith(f"{self.gateway}/v1/oidc/callback"):
                    return url
                continue
            assert r.status_code == 200, (r.status_code, r.text[:2000])
            action, data = form_of(r.text)
            if data.get("prompt") == "login":
                data.update(login=login, password="any password")
            method, url = "POST", urljoin(url, action)

    async def finish(self, callback: str) -> list[str]:
        """Follow the callback: where the app is sent, as its fragment's parts."""
        r = await self.http.get(callback)
        assert r.status_code == 303, r.text
        location = r.headers["location"]
        assert location.startswith(f"{self.gateway}/#/"), location
        parts = [unquote(p) for p in location.split("/#/", 1)[1].split("/")]
        if parts[0] == "signed-in":
            self.device.device_id, self.device.participant_id = parts[1], parts[2]
            self.device.workspace_id = parts[3]
        return parts

    async def sign_in(self, login: str) -> list[str]:
        return await self.finish(await self.to_callback(login))


@pytest.fixture
async def browsers(provider: Provider) -> Any:
    made: list[Browser] = []

    def new(mode: str = "invite") -> Browser:
        made.append(Browser(provider.gateways[mode]))
        return made[-1]

    yield new
    for b in made:
        await b.close()


async def test_an_invited_email_signs_in_and_pairs_this_browser(
    provider: Provider, api: Api, browsers: Any
) -> None:
    owner = provider.workspace
    await invite(api, owner, "Dana", email="dana@acme.test", role="admin")
    first = browsers()
    signed = await first.sign_in("dana")
    assert signed[0] == "signed-in", signed
    assert (signed[3], signed[4], signed[5]) == (owner.workspace_id, "Dana", "Acme")
    # The browser's key is the device's: it signs for sessions like any paired device.
    me = await first.device.session(api)
    assert (await api.http.get("/v1/spaces", headers=api.auth(me))).status_code == 200
    people = (await api.http.get("/v1/participants", headers=api.auth(owner))).json()
    dana = [p for p in people["participants"] if p["participant_id"] == me.participant_id]
    assert [(p["name"], p["role"]) for p in dana] == [("Dana", "admin")]
    # The invite is used; the same email signing in from another browser is the same
    # person, with a second device.
    assert (await api.http.get("/v1/invites", headers=api.auth(owner))).json()["invites"] == []
    second = browsers()
    again = await second.sign_in("dana")
    assert again[0] == "signed-in" and again[2] == me.participant_id and again[1] != signed[1]
    devices = (await api.http.get("/v1/devices", headers=api.auth(me))).json()["devices"]
    assert sorted(d["id"] for d in devices) == sorted([signed[1], again[1]])


async def test_sign_ins_that_are_refused(provider: Provider, api: Api, browsers: Any) -> None:
    owner = provider.workspace
    head = await api.head(owner)
    cases = {
        "nobody": "not_invited",
        "unverified": "email_unverified",
        "eve": "domain_not_allowed",
    }
    for login, code in cases.items():
        parts = await browsers().sign_in(login)
        assert parts[:2] == ["sign-in-refused", code], (login, parts)
        assert len(parts[2]) > 20, parts  # a sentence
    # The provider's callback opened in another browser (no cookie of this sign-in), or
    # with a state that was never given out, or a second time.
    thief, victim = browsers(), browsers()
    callback = await victim.to_callback("nobody")
    assert (await thief.finish(callback))[:2] == ["sign-in-refused", "invalid_state"]
    assert (await victim.finish(callback))[:2] == ["sign-in-refused", "invalid_state"]
    forged = re.sub(r"state=[^&]+", "state=forged", callback)
    assert (await victim.finish(forged))[:2] == ["sign-in-refused", "invalid_state"]
    # None of it was logged.
    assert await api.head(owner) == head


async def test_a_deactivated_person_cannot_sign_in(
    provider: Provider, api: Api, browsers: Any
) -> None:
    owner = provider.workspace
    await invite(api, owner, "Nobody", email="NOBODY@acme.test")
    first = browsers()
    assert (await first.sign_in("nobody"))[0] == "signed-in"
    r = await api.http.patch(
        f"/v1/people/{first.device.participant_id}",
        json={"active": False},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    parts = await browsers().sign_in("nobody")
    assert parts[:2] == ["sign-in-refused", "deactivated"], parts


async def test_a_workspace_that_lets_its_domain_in_makes_a_member(
    provider: Provider, api: Api, browsers: Any
) -> None:
    owner = provider.workspace
    parts = await browsers("member").sign_in("newcomer")
    assert parts[0] == "signed-in" and parts[4] == "Nia Cole", parts
    # The other domain stays out, in this workspace too.
    eve = await browsers("member").sign_in("eve")
    assert eve[:2] == ["sign-in-refused", "domain_not_allowed"]
    # A member, by the name the provider gave.
    people = (await api.http.get("/v1/participants", headers=api.auth(owner))).json()
    nia = [p for p in people["participants"] if p["participant_id"] == parts[2]]
    assert [(p["name"], p["role"]) for p in nia] == [("Nia Cole", "member")]


# The app's own browser (headless Chromium), for the sign-in through its button.
built_app = web.built_app
browser = web.browser


async def provider_sign_in(page: Page, gateway: str, login: str) -> None:
    """In the app: the provider's button, the provider's own sign-in page as ``login``,
    and back to the app through the gateway's callback."""
    await page.goto(gateway)
    button = page.get_by_test_id("provider-sign-in")
    await expect(button).to_be_visible()
    async with page.expect_request(lambda r: "/auth?" in r.url) as asked:
        await button.click()
    url = (await asked.value).url
    # The authorization-code flow with PKCE, as the app started it.
    for field in ("response_type=code", "code_challenge=", "code_challenge_method=S256"):
        assert field in url, url
    await page.locator('input[name="login"]').fill(login)
    await page.locator('input[name="password"]').fill("any password")
    await page.locator('button[type="submit"]').click()


async def test_the_app_signs_in_through_the_provider_in_a_browser(
    provider: Provider, api: Api, browser: PlaywrightBrowser
) -> None:
    """Headless Chromium, the app's sign-in button, the real provider's page, and back:
    the browser is paired, its key kept where the page cannot read it out; a sign-in from
    the wrong email domain is refused on the sign-in screen in a sentence."""
    owner = provider.workspace
    await invite(api, owner, "Rosa Diaz", email="rosa@acme.test")
    head = await api.head(owner)
    context = await browser.new_context(viewport=web.DESKTOP)
    page = await context.new_page()
    gateway = provider.gateways["invite"]

    await provider_sign_in(page, gateway, "eve")
    refusal = page.get_by_role("alert")
    await expect(refusal).to_have_text(
        "This workspace takes sign-ins from acme.test only, not elsewhere.test."
    )
    assert page.url.startswith(gateway)
    await expect(page.get_by_test_id("provider-sign-in")).to_be_visible()
    await page.screenshot(path=str(web.ARTIFACTS / "oidc-wrong-domain.png"))
    assert await api.head(owner) == head  # the refusal logged nothing

    # Signed out of the provider (its session cookie gone), the colleague invited by email.
    await context.clear_cookies()
    await provider_sign_in(page, gateway, "rosa")
    await expect(page.locator(".side-foot .me")).to_have_text("Rosa Diaz")
    assert await page.evaluate("() => location.hash") in ("", "#", "#/")
    device: Any = await page.evaluate(READ_DEVICE)
    assert device["extractable"] is False
    people = (await api.http.get("/v1/participants", headers=api.auth(owner))).json()
    rosa = next(p for p in people["participants"] if p["name"] == "Rosa Diaz")
    devices = (
        await api.http.get(
            "/v1/devices",
            params={"participant_id": rosa["participant_id"]},
            headers=api.auth(owner),
        )
    ).json()["devices"]
    assert [d["id"] for d in devices] == [device["device_id"]]
    await page.screenshot(path=str(web.ARTIFACTS / "oidc-signed-in.png"))
    await context.close()
