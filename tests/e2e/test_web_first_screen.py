"""The first screen is drawn however fast the app finds it has nobody signed in.

The app asks the browser's storage for a paired device before it draws anything. The
components hear of changes once their effects have run, after the first paint; a store
that had finished booting before then told nobody, and the page stayed blank for good. On
a busy machine that happened now and then (the storage answered before the paint); a
browser with no IndexedDB at all (some private modes) makes it happen every time, which is
how this test makes it certain.
"""

from __future__ import annotations

from playwright.async_api import Browser

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.test_web_app import DESKTOP, first_screen

built_app = web.built_app
browser = web.browser

NO_INDEXEDDB = "Object.defineProperty(window, 'indexedDB', { value: undefined });"


async def test_the_sign_in_screen_shows_when_the_app_boots_before_its_first_paint(
    stack: Stack, browser: Browser
) -> None:
    context = await browser.new_context(viewport=DESKTOP)
    try:
        await context.add_init_script(NO_INDEXEDDB)
        page = await context.new_page()
        await page.goto(stack.gateway_a + "/")
        await first_screen(page)
    finally:
        await context.close()
