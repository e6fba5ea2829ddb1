"""What waits for a person, in the app (issue #29): the inbox, its badge and the tab's
title, read and done agreed across two browsers of the same person, a room muted from its
menu, and Web Push through the app's service worker.

Chromium's own push service cannot be reached from here, so its ``pushManager.subscribe``
fails: the test registers a subscription of its own (keys it made, an endpoint of its own
on 127.0.0.1 that checks the VAPID signature and decrypts; tests/e2e/push_endpoint.py) over the
API, and hands what arrived there to the app's service worker with the DevTools protocol's
``ServiceWorker.deliverPushMessage``; the notification the worker shows is then clicked
(a ``notificationclick`` dispatched in the worker, as the browser dispatches it), and the
app opens the line.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, Worker, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Identity, key
from tests.e2e.push_endpoint import Endpoint
from tests.e2e.test_web_app import PHONE, Person, axe_violations, room_with, sign_in

built_app = web.built_app
browser = web.browser

SHELL = "jacobian.shell.execute"


@pytest.fixture
async def push(api: Api) -> AsyncIterator[Endpoint]:
    """The test's own push service, checking VAPID against the key the server publishes."""
    reader = await api.create_workspace(owner="Key reader")
    r = await api.http.get("/v1/push/vapid-public-key", headers=api.auth(reader))
    assert r.status_code == 200, r.text
    started = Endpoint(r.json()["public_key"])
    yield started
    started.stop()


async def ask_approval(api: Api, harness: Identity, room: str, args: str) -> str:
    run = key("run_ntf")
    await api.append(
        harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Tidy"}
    )
    approval_id = key("perm")
    await api.append(
        harness,
        {
            "type": "approval.request",
            "approval_id": approval_id,
            "run_id": run,
            "action": SHELL,
            "args": args,
            "preview": args,
        },
    )
    return approval_id


async def open_inbox(person: Person) -> None:
    await person.page.get_by_test_id("inbox-link").click()
    await expect(person.page.get_by_role("heading", name="Inbox")).to_be_visible()


async def worker_of(context: BrowserContext) -> Worker:
    """The app's service worker in this browser (registered when the app signs in)."""
    deadline = time.monotonic() + 15
    while not context.service_workers:
        assert time.monotonic() < deadline, "the app registered no service worker"
        await asyncio.sleep(0.05)
    return context.service_workers[0]


async def deliver_push(page: Page, origin: str, data: str) -> None:
    """DevTools' own push: the registration's id, then the data as a push event."""
    cdp = await page.context.new_cdp_session(page)
    found: list[dict[str, Any]] = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda p: found.extend(p["registrations"]))
    await cdp.send("ServiceWorker.enable")
    deadline = time.monotonic() + 10
    while not any(r["scopeURL"] == origin + "/" and not r["isDeleted"] for r in found):
        assert time.monotonic() < deadline, f"no registration for {origin}/: {found}"
        await asyncio.sleep(0.05)
    reg = next(r for r in found if r["scopeURL"] == origin + "/" and not r["isDeleted"])
    await cdp.send(
        "ServiceWorker.deliverPushMessage",
        {"origin": origin, "registrationId": reg["registrationId"], "data": data},
    )


async def shown_notifications(worker: Worker, want: str) -> list[dict[str, Any]]:
    """The notifications the worker shows, once one of them says ``want``."""
    deadline = time.monotonic() + 15
    while True:
        shown: list[dict[str, Any]] = await worker.evaluate(
            """async () => (await self.registration.getNotifications()).map(
                 (n) => ({title: n.title, body: n.body, tag: n.tag, data: n.data}))"""
        )
        if any(want in (n["title"] + " " + n["body"]) for n in shown):
            return shown
        assert time.monotonic() < deadline, f"no notification says {want!r}: {shown}"
        await asyncio.sleep(0.05)


async def test_an_approval_reaches_the_inbox_and_a_push_and_is_approved_from_the_inbox(
    stack: Stack, api: Api, browser: Browser, push: Endpoint
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Builds", scout)
    # Arjun's phone, as far as Chips knows: a push subscription at the test's endpoint.
    r = await api.http.post(
        "/v1/push/subscriptions", json=push.subscription("phone"), headers=api.auth(owner)
    )
    assert r.status_code == 201, r.text

    # Two browsers of Arjun's: the laptop watches the inbox, the desk has opened nothing.
    laptop = await sign_in(browser, stack.gateway_a, owner, permissions=["notifications"])
    desk = await sign_in(browser, stack.gateway_a, owner)
    await open_inbox(laptop)
    await expect(laptop.page.get_by_test_id("inbox-empty")).to_have_text("Nothing waits for you.")
    await expect(laptop.page).to_have_title("Chips")

    approval_id = await ask_approval(api, scout, room, "rm -rf build/")

    # The laptop's inbox has it live: the room, what is asked; the badge and the title count it.
    item = laptop.page.get_by_test_id("notification").filter(has_text="rm -rf build/")
    await expect(item).to_have_count(1)
    await expect(item).to_have_attribute("data-kind", "approval")
    await expect(item).to_have_attribute("data-state", "unread")
    await expect(item.get_by_test_id("notification-room")).to_have_text("Builds")
    await expect(laptop.page.get_by_test_id("inbox-badge")).to_have_text("1")
    await expect(laptop.page).to_have_title("(1) Chips")
    await expect(desk.page.get_by_test_id("inbox-badge")).to_have_text("1")
    await expect(desk.page).to_have_title("(1) Chips")
    await expect(item.locator("a")).to_have_attribute("href", f"#/room/{room}/at/{approval_id}")

    # The push reached the test's endpoint (signed with the server's VAPID key, decrypted
    # with the test's keys), and is the notification the inbox lists.
    pushed = await push.wait_for("phone", lambda p: p.payload.get("ref_id") == approval_id)
    listed = await item.get_attribute("data-id")
    assert pushed.payload["id"] == listed
    assert (pushed.payload["space_id"], pushed.payload["kind"]) == (room, "approval")
    assert "rm -rf build/" in pushed.payload["body"], pushed.payload
    text = json.dumps(pushed.payload)

    # Handed to the laptop's service worker, it is a notification naming the room; a click
    # on it opens the app at the approval's card.
    worker = await worker_of(laptop.page.context)
    await deliver_push(laptop.page, stack.gateway_a, text)
    shown = await shown_notifications(worker, "Builds")
    assert len([n for n in shown if "Builds" in n["title"] + n["body"]]) == 1, shown
    await worker.evaluate(
        """async () => {
             const [n] = await self.registration.getNotifications();
             self.dispatchEvent(new NotificationEvent("notificationclick", {notification: n}));
           }"""
    )
    await expect(laptop.page).to_have_url(
        re.compile(re.escape(f"#/room/{room}/at/{approval_id}") + "$")
    )
    card = laptop.page.get_by_test_id("approval").filter(has_text="rm -rf build/")
    await expect(card).to_be_in_viewport()
    assert (
        await worker.evaluate("async () => (await self.registration.getNotifications()).length")
        == 0
    )

    # The desk opens the room: the card waits there. The laptop approves from its inbox.
    await desk.open_room(room)
    desk_card = desk.page.get_by_test_id("approval").filter(has_text="rm -rf build/")
    await expect(desk_card.get_by_role("button", name="Approve")).to_be_visible()
    await open_inbox(laptop)
    await item.get_by_role("button", name="Approve").click()

    # The card closes in the room, and the notification is done on both browsers.
    await expect(desk_card.get_by_role("button", name="Approve")).to_have_count(0)
    await expect(desk_card).to_contain_text("Approved")
    await expect(item).to_have_attribute("data-state", "done")
    await expect(item.get_by_role("button", name="Approve")).to_have_count(0)
    await open_inbox(desk)
    desk_item = desk.page.get_by_test_id("notification").filter(has_text="rm -rf build/")
    await expect(desk_item).to_have_attribute("data-state", "done")
    await expect(desk.page.get_by_test_id("inbox-badge")).to_have_count(0)
    await expect(desk.page).to_have_title("Chips")
    await laptop.shot("inbox-desktop")
    assert laptop.csp_errors() == [] and desk.csp_errors() == []
    assert push.problems == []
    await laptop.page.context.close()
    await desk.page.context.close()


async def test_mark_all_read_everything_and_a_muted_room(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    builds = await room_with(api, owner, "Builds", scout)
    # bypass_csp only so that axe-core can be put into the page (the desk keeps the policy).
    laptop = await sign_in(browser, stack.gateway_a, owner, bypass_csp=True)
    desk = await sign_in(browser, stack.gateway_a, owner)
    for args in ("ls -la", "make clean"):
        await ask_approval(api, scout, builds, args)
    await open_inbox(laptop)
    items = laptop.page.get_by_test_id("notification")
    # Newest first.
    await expect(items).to_have_count(2)
    await expect(items.nth(0)).to_contain_text("make clean")
    await expect(items.nth(1)).to_contain_text("ls -la")
    await expect(desk.page).to_have_title("(2) Chips")
    assert await axe_violations(laptop.page) == []

    # Mark all read on the laptop: read on the desk too, and nothing counted.
    await laptop.page.get_by_test_id("mark-all-read").click()
    await expect(items.nth(0)).to_have_attribute("data-state", "read")
    await expect(items.nth(1)).to_have_attribute("data-state", "read")
    await expect(desk.page).to_have_title("Chips")
    await expect(desk.page.get_by_test_id("inbox-badge")).to_have_count(0)
    await open_inbox(desk)
    await expect(desk.page.get_by_test_id("notification")).to_have_count(2)
    await expect(desk.page.get_by_test_id("notification").nth(0)).to_have_attribute(
        "data-state", "read"
    )

    # Everything: the same two (read, still waiting for me).
    await laptop.page.get_by_test_id("filter-all").click()
    await expect(laptop.page.get_by_test_id("filter-all")).to_have_attribute("aria-pressed", "true")
    await expect(items).to_have_count(2)

    # Mute the room from its menu: the server keeps it; the menu then offers to unmute.
    await laptop.open_room(builds)
    await laptop.page.get_by_test_id("room-actions").click()
    await laptop.page.get_by_role("menuitem", name="Mute notifications").click()
    await expect(laptop.page.locator(".toast").filter(has_text="Muted")).to_be_visible()
    r = await api.http.get(f"/v1/spaces/{builds}/notifications", headers=api.auth(owner))
    assert r.status_code == 200 and r.json()["muted"] is True, r.text
    await laptop.page.get_by_test_id("room-actions").click()
    await expect(laptop.page.get_by_role("menuitem", name="Unmute notifications")).to_be_visible()
    await laptop.page.keyboard.press("Escape")
    assert desk.csp_errors() == []
    await laptop.page.context.close()
    await desk.page.context.close()


async def test_notification_settings_are_kept(stack: Stack, api: Api, browser: Browser) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    # On a phone; bypass_csp only so that axe-core can be put into the page.
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=PHONE, bypass_csp=True)
    page = arjun.page
    await page.get_by_role("link", name="Notifications").click()
    form = page.get_by_test_id("notification-settings")
    await expect(form).to_be_visible()
    assert await axe_violations(page) == []
    await form.get_by_label("When I have not seen it in the app after a while").check()
    await form.get_by_label("After (minutes)").fill("25")
    await form.get_by_test_id("quiet-toggle").check()
    await form.get_by_label("From").fill("21:30")
    await form.get_by_label("to", exact=True).fill("06:45")
    # A zone the server does not know is refused in its words, and nothing is kept.
    await form.get_by_label("Time zone").fill("Mars/Olympus")
    await form.get_by_role("button", name="Save").click()
    await expect(form.get_by_role("alert")).to_contain_text("time zone")
    await form.get_by_label("Time zone").fill("Europe/Paris")
    await form.get_by_role("button", name="Save").click()
    await expect(page.locator(".toast").filter(has_text="saved")).to_be_visible()
    r = await api.http.get("/v1/notification-preferences", headers=api.auth(owner))
    assert r.status_code == 200, r.text
    prefs = r.json()
    assert prefs["email"] == "delayed"
    assert prefs["email_delay_seconds"] == 25 * 60
    assert prefs["quiet_hours"] == {"start": "21:30", "end": "06:45"}
    assert prefs["time_zone"] == "Europe/Paris"
    # Read back after a reload: what the server keeps.
    await page.reload()
    await expect(form.get_by_label("After (minutes)")).to_have_value("25")
    await expect(form.get_by_label("From")).to_have_value("21:30")
    # A delay out of range is said before anything is sent.
    await form.get_by_label("After (minutes)").fill("0")
    await expect(form.get_by_role("alert")).to_contain_text("between 1 minute and 7 days")
    await expect(form.get_by_role("button", name="Save")).to_be_disabled()
    await arjun.shot("notification-settings-phone")
    # Back to the list of rooms, with the inbox at its head.
    await page.get_by_role("link", name="Back to rooms").click()
    await expect(page.get_by_test_id("inbox-link")).to_be_visible()
    await page.context.close()
