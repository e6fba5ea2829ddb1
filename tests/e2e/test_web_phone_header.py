"""On a phone the room's header takes three lines at most (issue #30: it took five): its
title, its facts and who is working are each one line, cut short with an ellipsis, and the
sheet still says everything."""

from __future__ import annotations

from playwright.async_api import Browser, Locator, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_web_app import PHONE, sign_in

built_app = web.built_app
browser = web.browser


async def lines_of(element: Locator) -> float:
    """How many lines of text the element's box holds."""
    return float(
        await element.evaluate(
            "e => e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)"
        )
    )


async def test_the_room_header_on_a_phone_is_one_line_each(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout Who Reads Every Invoice Twice")
    atlas, _ = await api.connect_harness(owner, "Atlas The Long-Named Planner")
    room = await api.open_space(
        owner,
        "The fourth-quarter launch of the northern warehouses",
        [scout.participant_id, atlas.participant_id],
    )
    await api.append(
        owner, {"type": "space.lead_set", "space_id": room, "agent_id": atlas.participant_id}
    )
    await api.append(
        scout, {"type": "run.started", "run_id": "run_inv", "space_id": room, "goal": "Check"}
    )
    await api.append(
        scout,
        {
            "type": "step.log",
            "run_id": "run_inv",
            "step_id": "s1",
            "status": "started",
            "title": "Reading every invoice of the quarter against the purchase orders",
        },
    )
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=PHONE)
    await arjun.open_room(room)
    page = arjun.page
    facts = page.get_by_test_id("room-facts")
    working = page.get_by_test_id("working")
    # The lead is the agent Chips gave Atlas here, numbered (docs/adr/0154).
    await expect(facts).to_contain_text("Atlas The Long-Named Planner 2 leads")
    await expect(working).to_contain_text("Working now: Scout Who Reads Every Invoice Twice")
    await arjun.shot("room-head-phone")
    assert await lines_of(facts) < 1.5
    assert await lines_of(working) < 1.5
    assert await lines_of(page.get_by_test_id("room-name")) < 1.5
    await page.context.close()
