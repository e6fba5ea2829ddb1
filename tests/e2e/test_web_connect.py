"""Agents → Connect a harness in the app (issue #30; docs/product/jacobian-channel.md, Connect
it): what `chips connect custom` does — the four lines shown once, with where to put them
and how to start the harness with them — and the lines work, on a desktop and on a phone."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_web_app import DESKTOP, PHONE, axe_violations, sign_in

built_app = web.built_app
browser = web.browser


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_connect_a_harness_shows_its_four_lines_once_and_they_work(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    await api.connect_harness(owner, "Scout")  # the name is taken: the new one is Scout 2
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport, bypass_csp=True)
    page = arjun.page
    await page.get_by_role("link", name="Agents").click()
    await page.get_by_role("button", name="Connect a harness").click()
    dialog = page.get_by_role("dialog", name="Connect a harness")
    await expect(
        dialog.get_by_role("radio", name="Anything with HTTP", exact=False)
    ).to_be_checked()
    await dialog.get_by_label("Its name").fill("Scout")
    await dialog.get_by_text("Advanced").click()
    await dialog.get_by_role("checkbox", name="Takes the autonomy dial").uncheck()
    assert await axe_violations(page) == []
    await dialog.get_by_role("button", name="Connect", exact=True).click()

    done = page.get_by_role("dialog", name="Scout 2 is connected")
    await expect(done.get_by_test_id("renamed")).to_have_text(
        "Scout is taken in this workspace: this harness is Scout 2."
    )
    lines = (await done.get_by_test_id("connect-lines").input_value()).split("\n")
    env = dict(line.split("=", 1) for line in lines)
    assert list(env) == ["CHIPS_URL", "CHIPS_HARNESS_ID", "CHIPS_HARNESS_TOKEN", "CHIPS_SPACE_ID"]
    assert env["CHIPS_HARNESS_TOKEN"].startswith("chips_at_")
    await expect(done.get_by_test_id("connect-command")).to_have_text(
        "set -a; . ./scout-2.env; set +a   # then start Scout 2 in this shell"
    )
    await expect(done).to_contain_text("chips connect custom --name 'Scout 2' --no-dial")
    await expect(done).to_contain_text("They are shown once")
    assert await axe_violations(page) == []
    await arjun.shot(f"connect-{'phone' if viewport is PHONE else 'desktop'}")

    # The lines work: the token is the harness's, its room is the direct space, no dial.
    harness_id = env["CHIPS_HARNESS_ID"]
    auth = {"Authorization": f"Bearer {env['CHIPS_HARNESS_TOKEN']}"}
    r = await api.http.get(f"/v1/harnesses/{harness_id}/policy", headers=auth)
    assert r.status_code == 200, r.text
    assert r.json()["autonomy"] == "off"
    r = await api.http.get(f"/v1/harnesses/{harness_id}/spaces", headers=auth)
    assert r.status_code == 200, r.text
    r = await api.http.get(f"/v1/spaces/{env['CHIPS_SPACE_ID']}", headers=auth)
    assert r.status_code == 200, r.text

    # Done: it is on the list, and its lines are not shown again anywhere.
    await done.get_by_role("button", name="Done").click()
    harnesses = page.get_by_test_id("harnesses")
    await expect(harnesses.get_by_role("link", name="Scout 2")).to_be_visible()
    await harnesses.get_by_role("link", name="Scout 2").click()
    await expect(page.get_by_test_id("harness-page")).to_be_visible()
    assert env["CHIPS_HARNESS_TOKEN"] not in await page.content()
    await page.context.close()


async def test_a_guest_is_not_offered_connect(stack: Stack, api: Api, browser: Browser) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    guest = await api.add_person(owner, "Gil Guest", role="guest")
    person = await sign_in(browser, stack.gateway_a, guest)
    await person.page.get_by_role("link", name="Agents").click()
    await expect(person.page.get_by_test_id("agents-page")).to_be_visible()
    await expect(person.page.get_by_role("button", name="Connect a harness")).to_have_count(0)
    await person.page.context.close()
