"""A line breaks into dust as it goes (issue #30): hidden for me or deleted for everyone, a
wipe crosses the bubble and its specks drift away; Undo runs it backwards; under Reduce
Motion the bubble simply fades, with no specks."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_web_app import DESKTOP, PHONE, room_with, sign_in

built_app = web.built_app
browser = web.browser

WATCH = """() => {
  window.seen = [];
  new MutationObserver((changes) => {
    for (const c of changes) {
      if (c.type === "attributes" && c.attributeName === "data-motion" && c.target.dataset.motion)
        window.seen.push(c.target.dataset.motion);
      for (const n of c.addedNodes)
        if (n.classList && n.classList.contains("dust"))
          window.seen.push(`specks:${n.children.length}`);
    }
  }).observe(document.body, { subtree: true, childList: true, attributes: true });
}"""


async def seen(page: Page) -> list[str]:
    out: Any = await page.evaluate("() => window.seen")
    return list(out)


@pytest.mark.parametrize(
    ("viewport", "motion"),
    [(DESKTOP, "no-preference"), (PHONE, "reduce")],
    ids=["desktop", "phone-reduced-motion"],
)
async def test_a_line_goes_as_dust_and_undo_brings_it_back_the_same_way(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int], motion: str
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await room_with(api, owner, "Dust")
    await api.say(owner, room, "a line to hide for me")
    await api.say(owner, room, "a line to take back")
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport, reduced_motion=motion)
    await arjun.open_room(room)
    page = arjun.page
    how = "fade" if motion == "reduce" else "dust"
    await page.evaluate(WATCH)

    await arjun.line_menu("a line to hide for me")
    await page.get_by_role("menuitem", name="Delete for me").click()
    await expect(arjun.lines("a line to hide for me")).to_have_count(0)
    went = await seen(page)
    assert went[0] == f"{how}-out", went
    if how == "dust":
        assert any(s.startswith("specks:") and int(s.split(":")[1]) > 0 for s in went), went
    else:
        assert not any(s.startswith("specks:") for s in went), went

    # Undo: the line is drawn again, its dust run backwards (or faded in).
    await page.get_by_role("button", name="Undo").click()
    back = arjun.line("a line to hide for me")
    await expect(back).to_have_attribute("data-motion", f"{how}-in")
    await expect(back.locator(".bubble")).to_be_visible()
    await expect(back.locator(".dust")).to_have_count(0)
    await page.wait_for_function(
        "e => e.getAnimations({ subtree: true }).length === 0", arg=await back.element_handle()
    )

    # Delete for everyone goes the same way, and leaves its tombstone standing.
    await arjun.line_menu("a line to take back")
    await page.get_by_role("menuitem", name="Delete for everyone…").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete for everyone").click()
    tomb = page.get_by_test_id("line").filter(has_text="This message was taken back.")
    await expect(tomb).to_be_visible()
    await expect(tomb).not_to_have_attribute("data-motion", f"{how}-out")
    assert f"{how}-out" in (await seen(page))[1:]
    clip = await tomb.locator(".bubble").evaluate("e => getComputedStyle(e).clipPath")
    assert clip in ("none", ""), clip
    await page.context.close()
