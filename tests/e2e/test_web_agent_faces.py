"""The people's app draws an agent's face (issues #28, #34; docs/adr/0153).

In Debian's chromium against the real stack, as test_web_app.py does: an agent its harness
registered with an emoji is drawn with it beside its lines and in the room sheet's members;
registered again with a picture the harness uploaded, the open room draws the picture live
(loaded from Chips, so the fetch is allowed and the page's policy takes it); an agent with
no face is drawn by its name alone, as before.
"""

from __future__ import annotations

from io import BytesIO

from PIL import Image
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_agents_rooms import added, declare, new_agent, register
from tests.e2e.test_web_app import sign_in

built_app = web.built_app
browser = web.browser

PICTURE_LOADED = """img => img.complete && img.naturalWidth > 0"""


def picture() -> bytes:
    out = BytesIO()
    Image.new("RGB", (64, 64), (40, 140, 220)).save(out, format="PNG")
    return out.getvalue()


async def test_an_agent_s_face_is_drawn_beside_its_lines_and_in_the_sheet(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    await declare(api, owner, scout, "agents")
    fox = await new_agent(api, scout, "fox", "Fox", face="🦊")
    plain = await new_agent(api, scout, "owl", "Owl")
    room = await api.open_space(owner, "Den")
    for agent in (fox, plain):
        await api.append(owner, added(room, agent))
    for agent, words in ((fox, "I found the PO."), (plain, "And I read it.")):
        said = {"type": "message.post", "space_id": room, "text": words}
        await api.append(scout, {**said, "actor": {"kind": "agent", "id": agent}})

    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    foxes = page.get_by_test_id("line").filter(has_text="I found the PO.")
    await expect(foxes.get_by_test_id("face")).to_have_attribute("data-face", "🦊")
    await expect(foxes.get_by_test_id("face")).to_have_text("🦊")
    # An agent with no face is its name alone, as before.
    owls = page.get_by_test_id("line").filter(has_text="And I read it.")
    await expect(owls.locator(".author")).to_have_text("Owl")
    await expect(owls.get_by_test_id("face")).to_have_count(0)
    # The room sheet's members draw it too.
    await page.get_by_test_id("room-name").click()
    members = page.get_by_role("dialog").get_by_test_id("members")
    await expect(
        members.locator(f'[data-participant="{fox}"]').get_by_test_id("face")
    ).to_have_text("🦊")
    await expect(
        members.locator(f'[data-participant="{plain}"]').get_by_test_id("face")
    ).to_have_count(0)
    await arjun.shot("agent-face-emoji")
    await page.keyboard.press("Escape")

    # Registered again with a picture: the open room draws it live, loaded from Chips.
    uploaded = await api.http.post(
        "/v1/uploads",
        params={"name": "fox.png"},
        content=picture(),
        headers=api.auth(scout),
    )
    assert uploaded.status_code == 201, uploaded.text
    upload_id = uploaded.json()["upload_id"]
    r = await register(api, scout, key="fox", name="Fox", face=upload_id)
    assert r.status_code == 200 and r.json()["face"] == upload_id, r.text
    face = foxes.get_by_test_id("face")
    await expect(face).to_have_attribute("data-face", upload_id)
    img = face.locator("img")
    await expect(img).to_have_count(1)
    await page.wait_for_function(PICTURE_LOADED, arg=await img.element_handle())
    await arjun.shot("agent-face-picture")
    assert arjun.csp_errors() == []
