"""The + asks a room of one or several harness faces (issue #30): every harness that takes
new spaces is offered; the first tap chooses a face, each tap after adds or removes one; the
room is asked of the first face picked and every face picked is put in it; the + opens on
whoever was asked last. On a desktop and on a phone, with no serious axe violations."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Socket
from tests.e2e.test_agents_given import given_agents
from tests.e2e.test_agents_rooms import declare
from tests.e2e.test_web_app import DESKTOP, PHONE, axe_violations, sign_in

built_app = web.built_app
browser = web.browser


def created_asking(harness_id: str) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        events = [frame["event"]] if frame["frame"] == "event" else frame.get("events", [])
        return any(e["type"] == "space.created" and e.get("asked_of") == harness_id for e in events)

    return match


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_the_plus_asks_a_room_of_the_faces_picked_and_opens_on_them_next_time(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    atlas, _ = await api.connect_harness(owner, "Atlas")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    await declare(api, owner, scout, "new_spaces")
    await declare(api, owner, atlas, "new_spaces")
    told = await Socket.open(stack.gateway_b, atlas)
    await told.subscribe(atlas.workspace_id)
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport)
    page = arjun.page
    await page.get_by_role("button", name="+ New room").click()
    dialog = page.get_by_role("dialog")
    faces = dialog.get_by_test_id("faces")
    # Only the harnesses that take new spaces are offered; nobody is picked the first time.
    await expect(faces.get_by_role("button")).to_have_count(2)
    await expect(faces.get_by_role("button", name="Ledger")).to_have_count(0)
    await expect(faces.get_by_role("button", pressed=True)).to_have_count(0)
    # First tap chooses Atlas; the next adds Scout; a tap on a third face and again drops it.
    await faces.get_by_role("button", name="Atlas").click()
    await faces.get_by_role("button", name="Scout").click()
    await expect(dialog.get_by_test_id("asked-words")).to_have_text(
        "The room is asked of Atlas; Scout is put in it too."
    )
    assert await axe_violations(page) == []
    await arjun.shot(f"new-room-faces-{'phone' if viewport == PHONE else 'desktop'}")
    await dialog.get_by_label("Title (optional)").fill("Invoices for March")
    await dialog.get_by_role("button", name="Open it and ask Atlas").click()
    # The room opens with both faces in it, and the harness asked is sent the event.
    await expect(page.get_by_role("heading", name="Invoices for March")).to_be_visible()
    frame = await told.wait_for(created_asking(atlas.participant_id), timeout=15)
    events = [frame["event"]] if frame["frame"] == "event" else frame["events"]
    (created,) = [e for e in events if e["type"] == "space.created"]
    room = created["space_id"]
    sheet = await api.http.get(f"/v1/spaces/{room}", headers=api.auth(owner))
    assert sheet.json()["asked_of"] == atlas.participant_id
    members = {m["participant_id"] for m in sheet.json()["members"]}
    # Scout, put in it, stands there as the agent Chips gave it; Atlas, asked, as itself
    # until it claims the room (docs/adr/0154).
    scout_here = (await given_agents(api, owner, scout))[room]["participant_id"]
    assert {scout_here, atlas.participant_id} <= members
    assert ledger.participant_id not in members

    # The + opens on whoever was asked last: Atlas first, Scout with it.
    if viewport == PHONE:
        await page.get_by_role("link", name="Back to rooms").click()
    await page.get_by_role("button", name="+ New room").click()
    faces = page.get_by_role("dialog").get_by_test_id("faces")
    await expect(faces.get_by_role("button", pressed=True)).to_have_count(2)
    await expect(faces.get_by_role("button", name="Atlas · asked")).to_have_attribute(
        "aria-pressed", "true"
    )
    # Dropping both leaves a room of one's own, which needs a title.
    await faces.get_by_role("button", name="Atlas · asked").click()
    await faces.get_by_role("button", name="Scout · asked").click()
    await expect(page.get_by_role("dialog").get_by_test_id("asked-words")).to_have_text(
        "Nobody is asked: a room of your own."
    )
    await expect(page.get_by_role("button", name="Open the room")).to_be_disabled()
    await told.close()
    await page.context.close()
