"""A team moves in, in the browser (docs/adr/0125): an owner invites a colleague from the
People page; the colleague opens the link in a browser of their own, is in the workspace
with a paired device and no token ever shown, and posts in a room; the owner revokes that
device and the colleague's open socket closes within a second."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from playwright.async_api import Browser, WebSocket, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_people import Device, invite
from tests.e2e.test_web_app import ARTIFACTS, DESKTOP, PHONE, Person, axe_violations, sign_in

# The browser fixtures of the app's own tests: one chromium, the app built once.
built_app = web.built_app
browser = web.browser

# What a browser keeps of its device: the record in IndexedDB, and whether its private
# key could be exported (it must not be).
READ_DEVICE = """() => new Promise((done, fail) => {
  const req = indexedDB.open("chips", 1);
  req.onsuccess = () => {
    const get = req.result.transaction("device").objectStore("device").get("current");
    get.onsuccess = () => {
      const rec = get.result;
      done(rec ? {
        device_id: rec.device_id,
        extractable: rec.keys.privateKey.extractable,
        algorithm: rec.keys.privateKey.algorithm,
      } : null);
    };
    get.onerror = () => fail(get.error);
  };
  req.onerror = () => fail(req.error);
})"""


async def test_an_invited_colleague_joins_posts_and_is_revoked(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    page = arjun.page
    await page.get_by_role("link", name="People").click()
    await page.get_by_label("Name").fill("Dana Lee")
    await page.get_by_label("Email (optional)").fill("dana@example.com")
    await page.get_by_label("Role").select_option("member")
    await page.get_by_role("button", name="Invite", exact=True).click()
    link = await page.get_by_test_id("invite-link").input_value()
    assert "#/invite/chips_iv_" in link
    await expect(page.get_by_test_id("invites")).to_contain_text("Dana Lee")
    await arjun.shot("people-invite")

    # The colleague, in a browser of their own.
    context = await browser.new_context(viewport=DESKTOP)
    dana_page = await context.new_page()
    dana = Person(dana_page)
    sockets: list[WebSocket] = []
    closed_at: dict[str, float] = {}

    def watch(ws: WebSocket) -> None:
        sockets.append(ws)
        ws.on("close", lambda _: closed_at.setdefault(ws.url, time.monotonic()))

    dana_page.on("websocket", watch)
    await dana_page.goto(link)
    await expect(dana_page.get_by_role("heading", name="Join Acme")).to_be_visible()
    await expect(dana_page.get_by_test_id("invite")).to_contain_text("invited as Dana Lee")
    assert await axe_violations(dana_page) == []
    await dana.shot("invite-accept")
    await dana_page.get_by_role("button", name="Join").click()
    await expect(dana_page.locator(".side-foot .me")).to_have_text("Dana Lee")

    device: Any = await dana_page.evaluate(READ_DEVICE)
    assert device["extractable"] is False
    assert device["algorithm"]["namedCurve"] == "P-256"
    # No token was ever shown or kept: nothing in local storage, nothing on the page.
    assert "chips.token" not in await dana_page.evaluate("() => Object.keys(localStorage)")
    assert "chips_" not in await dana_page.content()
    assert await dana_page.evaluate("() => location.hash") in ("", "#")

    people = (await api.http.get("/v1/participants", headers=api.auth(owner))).json()
    dana_id = next(p["participant_id"] for p in people["participants"] if p["name"] == "Dana Lee")
    room = await api.open_space(owner, "Launch", [dana_id])
    await dana.open_room(room)
    await dana.say("hello from Dana's browser")
    await expect(dana.line("hello from Dana's browser")).to_be_visible()
    await arjun.open_room(room)
    await expect(arjun.line("hello from Dana's browser")).to_be_visible()

    # Dana's own Devices page lists this browser.
    await dana_page.get_by_role("link", name="Devices").click()
    await expect(dana_page.get_by_test_id("devices")).to_contain_text("(this one)")

    # The owner revokes it from the People page: her socket closes within a second.
    open_now = [ws for ws in sockets if not ws.is_closed()]
    assert len(open_now) == 1
    await page.get_by_role("link", name="People").click()
    # An owner changes her role there; the list says so once the log has it.
    await page.get_by_label("Role of Dana Lee").select_option("guest")
    await expect(page.locator(f'[data-person="{dana_id}"]')).to_contain_text("guest")
    await page.get_by_role("button", name="Devices of Dana Lee").click()
    async with page.expect_response(
        lambda r: "/v1/devices/" in r.url and r.request.method == "DELETE"
    ) as answered:
        await page.get_by_role("button", name="Revoke").first.click()
    assert (await answered.value).status == 200
    revoked_at = time.monotonic()
    for _ in range(100):
        if open_now[0].url in closed_at:
            break
        await asyncio.sleep(0.02)
    assert open_now[0].url in closed_at, "the revoked device's socket is still open"
    assert closed_at[open_now[0].url] - revoked_at < 1.0
    await expect(dana_page.get_by_role("alert")).to_contain_text("This device was signed out")
    await dana.shot("device-revoked")
    assert await dana_page.evaluate(READ_DEVICE) is None
    await context.close()
    assert ARTIFACTS.is_dir()


async def test_on_a_phone_an_admin_deactivates_a_person_and_names_who_takes_their_rooms(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """The People and Devices pages take the phone's screen (the list of rooms hid them),
    and deactivating asks who takes over the rooms the person owns (docs/adr/0144)."""
    owner = await api.create_workspace(owner="Arjun Rao")
    dana, lee = Device(), Device()
    await dana.accept(api, (await invite(api, owner, "Dana Ruiz"))["url"])
    await lee.accept(api, (await invite(api, owner, "Lee Park"))["url"])
    dana_me = await dana.session(api)
    hers = await api.open_space(dana_me, "Dana's plans", [owner.participant_id])
    await api.say(dana_me, hers, "the plan Lee inherits")

    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=PHONE)
    page = arjun.page
    for link, heading in (("Devices", "Your devices"), ("People", "People")):
        await page.get_by_role("link", name=link, exact=True).click()
        await expect(page.get_by_role("heading", name=heading)).to_be_visible()
        await expect(page.locator(".sidebar")).to_be_hidden()
        width = await page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the {link} page is wider than the phone: {width}"
        if link == "Devices":
            await page.get_by_role("link", name="Back to rooms").click()
            await expect(page.locator(".sidebar")).to_be_visible()

    row = page.locator(f'[data-person="{dana.participant_id}"]')
    await row.get_by_role("button", name="Deactivate").click()
    form = page.get_by_role("form", name="Deactivate Dana Ruiz")
    heirs = form.get_by_label("Their rooms go to")
    # The other active people, Dana herself not among them; Arjun (who asks) first chosen.
    assert await heirs.locator("option").all_inner_texts() == ["Arjun Rao (you)", "Lee Park"]
    await heirs.select_option(lee.participant_id)
    await arjun.shot("people-deactivate-phone")
    async with page.expect_response(
        lambda r: "/v1/people/" in r.url and r.request.method == "PATCH"
    ) as answered:
        await form.get_by_role("button", name="Deactivate Dana Ruiz").click()
    answer = await answered.value
    assert answer.status == 200
    assert (await answer.json())["rooms_handed"] == [hers]
    await expect(row).to_contain_text("deactivated")
    await expect(form).to_be_hidden()
    sheet = await api.http.get(
        f"/v1/spaces/{hers}",
        params={"after_seq": (await answer.json())["seq"]},
        headers=api.auth(owner),
    )
    standing = {m["participant_id"]: m["standing"] for m in sheet.json()["members"]}
    assert standing == {
        dana.participant_id: "member",
        owner.participant_id: "member",
        lee.participant_id: "owner",
    }
    await arjun.page.context.close()
