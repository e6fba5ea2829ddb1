"""The workspace's settings in the app (issue #30): the referee's stop, hold and circles and
the caps on files per kind, changed by an owner or admin and then decided by the door —
a cap refuses a file, the referee stops and holds at the new numbers — on a desktop and on
a phone; a member sees them and cannot change them; a setting that can't be sent says why.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, key
from tests.e2e.test_web_app import DESKTOP, PHONE, axe_violations, room_with, sign_in

built_app = web.built_app
browser = web.browser


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_an_admin_sets_the_referee_and_the_caps_and_the_door_decides_by_them(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    admin = await api.add_person(owner, "Maya Chen", role="admin")
    bea = await api.add_person(owner, "Bea Lund")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await room_with(api, owner, "Planning", admin, bea, scout, ledger)
    # bypass_csp only so that axe-core can be put into the page (test_web_app.py).
    maya = await sign_in(browser, stack.gateway_a, admin, viewport=viewport, bypass_csp=True)
    page = maya.page
    await page.get_by_role("link", name="Settings").click()
    settings = page.get_by_test_id("settings")
    await expect(settings.get_by_role("heading", name="Workspace settings")).to_be_visible()
    await expect(page.get_by_test_id("referee-now")).to_have_text(
        "Now: Agents are told to stop after 16 messages to each other, held after 48; "
        "going in a circle stops them too."
    )
    # What can't be sent says why, at the field, and nothing is sent.
    stop = page.get_by_label("Tell them to stop after (messages)")
    await stop.fill("1")
    await page.get_by_role("button", name="Save the referee").click()
    await expect(page.get_by_test_id("referee-error")).to_have_text(
        "The stop is a whole number of messages from 2 to 1000, or never."
    )
    await expect(stop).to_have_attribute("aria-invalid", "true")
    await stop.fill("4")
    await page.get_by_label("Hold their messages after (messages)").fill("6")
    await page.get_by_role("checkbox", name="Stop them when they go in a circle").uncheck()
    await page.get_by_role("button", name="Save the referee").click()
    await expect(page.get_by_test_id("referee-saved")).to_have_text(
        "Saved. Agents are told to stop after 4 messages to each other, held after 6."
    )
    r = await api.http.get("/v1/referee", headers=api.auth(bea))
    assert r.json() | {"seq": None} == {"stop": 4, "hold": 6, "circles": False, "seq": None}

    # The caps: one over the server's ceiling is refused before it is sent.
    caps = (await api.http.get("/v1/uploads/caps", headers=api.auth(admin))).json()
    files = page.get_by_label("Other files")
    await files.fill("900 GB")
    await page.get_by_role("button", name="Save the caps").click()
    await expect(page.get_by_test_id("caps-error")).to_contain_text("Other files: nothing over")
    await files.fill("2 KB")
    await page.get_by_role("button", name="Save the caps").click()
    await expect(page.get_by_test_id("caps-saved")).to_be_visible()
    await expect(files).to_have_value("2 KB")
    assert await axe_violations(page) == []
    await maya.shot(f"settings-{'phone' if viewport is PHONE else 'desktop'}")
    now = (await api.http.get("/v1/uploads/caps", headers=api.auth(bea))).json()
    assert now == {**caps, "files_bytes": 2_000}

    # The door decides by them. A file over the new cap is refused, in the app and at the
    # upload itself.
    r = await api.http.post(
        "/v1/uploads",
        params={"name": "big.txt"},
        content=b"x" * 5_000,
        headers={**api.auth(bea), "Content-Type": "text/plain"},
    )
    assert r.status_code == 413, r.text
    assert r.json()["message"] == "Files here are capped at 2 KB, and this one is 5 KB."
    await page.goto(f"{stack.gateway_a}/#/room/{room}")
    await expect(page.get_by_test_id("composer")).to_be_visible()
    await page.get_by_test_id("file-input").set_input_files(
        files=[{"name": "big.txt", "mimeType": "text/plain", "buffer": b"x" * 5_000}]
    )
    await expect(page.get_by_test_id("tray").get_by_role("alert")).to_have_text(
        "Files here are capped at 2 KB, and this one is 5 KB."
    )
    # The referee: the fourth message between the agents is told to stop, and the seventh
    # is held (past the hold of 6), where the defaults would have let them all through.
    acks = []
    for i in range(7):
        sender, to = (scout, "Ledger") if i % 2 == 0 else (ledger, "Scout")
        r = await api.post_event(
            sender,
            {
                "type": "message.post",
                "space_id": room,
                "text": f"@{to} part {i}",
                "idempotency_key": key(),
            },
        )
        assert r.status_code == 200, r.text
        acks.append(r.json())
    assert [a.get("held", False) for a in acks] == [False] * 6 + [True]
    assert acks[6]["exchange"] == {"count": 7, "allowance": 6}
    r = await api.http.get(
        f"/v1/spaces/{room}/messages",
        params={"limit": 50, "after_seq": acks[-1]["seq"]},
        headers=api.auth(owner),
    )
    facts = {m["text"]: m.get("exchange") for m in r.json()["messages"] if m.get("text")}
    fourth = facts["@Scout part 3"]
    assert fourth["count"] == 4 and fourth["stop"] == 4 and "Stop now" in fourth["note"]
    assert "Stop now" not in facts["@Ledger part 2"]["note"]
    await page.context.close()


async def test_a_member_sees_the_settings_and_cannot_change_them(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    bea = await api.add_person(owner, "Bea Lund")
    await api.append(owner, {"type": "workspace.referee_set", "stop": "never", "hold": 30})
    person = await sign_in(browser, stack.gateway_a, bea)
    page = person.page
    await page.get_by_role("link", name="Settings").click()
    await expect(page.get_by_test_id("settings-readonly")).to_have_text(
        "Only an owner or admin of the workspace changes these; here they are as they are set."
    )
    await expect(page.get_by_test_id("referee-now")).to_have_text(
        "Now: Agents are never told to stop, held after 30; going in a circle stops them too."
    )
    await expect(page.get_by_label("Hold their messages after (messages)")).to_have_value("30")
    await expect(page.get_by_label("Hold their messages after (messages)")).to_be_disabled()
    await expect(page.get_by_role("button", name="Save the referee")).to_have_count(0)
    await expect(page.get_by_role("button", name="Save the caps")).to_have_count(0)
    # The door says the same to anybody who tries anyway.
    r = await api.post_event(
        bea, {"type": "workspace.referee_set", "stop": 4, "idempotency_key": "try-1"}
    )
    assert r.status_code == 403, r.text
    await page.context.close()
