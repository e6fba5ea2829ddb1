"""The room's "Working now" stays while a run is not finished (issue #30: it went away while
runs still waited on an approval): the referee stops counting a turn gone silent and tells
the room it is idle, but a run waiting on a card, or gone quiet, is still going until it
ends. A harness's several runs are said once, with their count ("Scout · 2 runs"), as a chip
that opens the list of them, each leading to its run in the room."""

from __future__ import annotations

import re

from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Socket
from tests.e2e.test_lead import of_type
from tests.e2e.test_web_app import DESKTOP, PHONE, Person, axe_violations, sign_in

built_app = web.built_app
browser = web.browser


async def test_working_now_stays_while_a_run_waits_and_goes_when_it_ends(
    stack: Stack, api: Api, browser: Browser
) -> None:
    # The ten minutes of silence are four seconds here: the referee is restarted with them.
    stack.extra_env["referee"] = {
        **stack.extra_env.get("referee", {}),
        "CHIPS_TURN_SILENT_SECONDS": "4",
    }
    try:
        stack.restart("referee")
        owner = await api.create_workspace(owner="Arjun Rao")
        scout, _ = await api.connect_harness(owner, "Scout")
        atlas, _ = await api.connect_harness(owner, "Atlas")
        # People see Scout's runs as the agent Chips gave it in the room, numbered: its
        # first is in its direct room (docs/adr/0154).
        room = await api.open_space(owner, "Ledger", [scout.participant_id, atlas.participant_id])
        told = await Socket.open(stack.gateway_b, owner)
        await told.subscribe(owner.workspace_id)
        for run in ("run_pay", "run_tag"):
            await api.append(
                scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": run}
            )
        await api.append(
            scout,
            {
                "type": "approval.request",
                "approval_id": "apr_pay",
                "run_id": "run_pay",
                "action": "payments.send",
                "preview": "Pay Initech $1,200",
            },
        )
        desk = await sign_in(browser, stack.gateway_a, owner, viewport=DESKTOP)
        phone = await sign_in(browser, stack.gateway_a, owner, viewport=PHONE)
        for person in (desk, phone):
            await person.open_room(room)
            await expect(person.page.get_by_test_id("working")).to_contain_text(
                "Working now: Scout 2 · 2 runs", timeout=20_000
            )
        # Nothing more is heard: the referee tells the room it is idle. The runs still go.
        await told.wait_for(of_type("room.idle", room), timeout=30)
        for person in (desk, phone):
            working = person.page.get_by_test_id("working")
            await expect(working).to_have_text(
                "Working now: Scout 2 · 2 runs, waiting on an approval"
            )
        await desk.shot("working-waiting")
        # Read back, the same.
        await desk.page.reload()
        await expect(desk.page.get_by_test_id("working")).to_have_text(
            "Working now: Scout 2 · 2 runs, waiting on an approval", timeout=20_000
        )
        # Approved and both runs ended: nothing is working.
        await (
            desk.page.get_by_test_id("approval")
            .get_by_role("button", name="Approve", exact=True)
            .click()
        )
        await expect(desk.page.get_by_test_id("working")).to_have_text(
            "Working now: Scout 2 · 2 runs, still going"
        )
        for run in ("run_pay", "run_tag"):
            await api.append(scout, {"type": "run.completed", "run_id": run, "summary": "done"})
        for person in (desk, phone):
            await expect(person.page.get_by_test_id("working")).to_have_count(0)
        await told.close()
        for person in (desk, phone):
            await person.page.context.close()
    finally:
        stack.extra_env["referee"] = {
            k: v for k, v in stack.extra_env["referee"].items() if k != "CHIPS_TURN_SILENT_SECONDS"
        }
        stack.restart("referee")


async def test_a_harness_s_several_runs_are_one_chip_that_lists_them_and_leads_to_each(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    atlas, _ = await api.connect_harness(owner, "Atlas")
    room = await api.open_space(owner, "Books", [scout.participant_id, atlas.participant_id])
    # Scout's first run is started, then enough is said that it is far above the bottom.
    await api.append(
        scout, {"type": "run.started", "run_id": "run_pay", "space_id": room, "goal": "Pay Initech"}
    )
    for n in range(30):
        await api.say(owner, room, f"note {n}")
    for run, goal in (("run_tag", "Tag the **March** invoices"), ("run_sum", "Sum the quarter")):
        await api.append(
            scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": goal}
        )
    await api.append(scout, {"type": "run.paused", "run_id": "run_tag"})
    await api.append(
        scout,
        {
            "type": "approval.request",
            "approval_id": "apr_pay",
            "run_id": "run_pay",
            "action": "payments.send",
            "preview": "Pay Initech $1,200",
        },
    )
    await api.append(
        atlas, {"type": "run.started", "run_id": "run_atl", "space_id": room, "goal": "Draw"}
    )
    rows = [
        re.compile(r"^Pay Initech\s*· waiting on an approval$"),
        re.compile(r"^Tag the March invoices\s*· paused$"),
        re.compile(r"^Sum the quarter\s*· running$"),
    ]

    async def opened(who: Person) -> None:
        page = who.page
        working = page.get_by_test_id("working")
        await expect(working).to_contain_text("Scout 2 · 3 runs", timeout=20_000)
        await expect(working).to_contain_text("; Atlas 2, ")
        # Only the entry with several runs is a chip; Atlas's one run is words.
        await expect(working.get_by_role("button")).to_have_count(1)
        chip = working.get_by_role("button", name="Scout 2 · 3 runs")
        await expect(chip).to_have_attribute("aria-expanded", "false")
        await expect(page.get_by_test_id("working-runs")).to_have_count(0)

    # On a desktop: a click opens the list, oldest run first, and a run leads to its block.
    desk = await sign_in(browser, stack.gateway_a, owner, viewport=DESKTOP, bypass_csp=True)
    await desk.open_room(room)
    await opened(desk)
    page = desk.page
    chip = page.get_by_test_id("working").get_by_role("button", name="Scout 2 · 3 runs")
    await chip.click()
    runs = page.get_by_role("menu", name="Scout 2's runs").get_by_role("menuitem")
    await expect(runs).to_have_count(3)
    for row, words in zip(await runs.all(), rows, strict=True):
        await expect(row).to_have_text(words)
    await expect(chip).to_have_attribute("aria-expanded", "true")
    assert await axe_violations(page) == []
    await desk.shot("working-runs-list")
    pay = page.locator("#line-run_pay")
    await expect(pay).not_to_be_in_viewport()
    await runs.first.click()
    await expect(page.get_by_role("menu")).to_have_count(0)
    assert page.url.endswith(f"/at/{'run_pay'}")
    await expect(pay).to_be_in_viewport()
    await expect(pay).to_have_attribute("aria-current", "true")
    await expect(pay).to_contain_text("Pay Initech")

    # From the keyboard: Enter opens it, Escape closes it with the focus back on the chip,
    # Space opens it again, and a run is reached with Tab and taken with Enter.
    await chip.focus()
    await page.keyboard.press("Enter")
    await expect(runs).to_have_count(3)
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("menu")).to_have_count(0)
    await expect(chip).to_be_focused()
    await page.keyboard.press(" ")
    await expect(runs).to_have_count(3)
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await expect(runs.nth(1)).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("menu")).to_have_count(0)
    await expect(page.locator("#line-run_tag")).to_have_attribute("aria-current", "true")
    await expect(pay).not_to_have_attribute("aria-current", "true")
    # A press outside closes it too.
    await chip.click()
    await expect(runs).to_have_count(3)
    await page.mouse.click(5, 5)
    await expect(page.get_by_role("menu")).to_have_count(0)

    # On a phone: a tap opens it, and a tap on a run leads there.
    phone = await sign_in(
        browser,
        stack.gateway_b,
        owner,
        viewport=PHONE,
        has_touch=True,
        is_mobile=True,
        bypass_csp=True,
    )
    await phone.open_room(room)
    await opened(phone)
    tapped = phone.page.get_by_test_id("working").get_by_role("button", name="Scout 2 · 3 runs")
    await tapped.tap()
    prunes = phone.page.get_by_role("menu", name="Scout 2's runs").get_by_role("menuitem")
    await expect(prunes).to_have_count(3)
    for row, words in zip(await prunes.all(), rows, strict=True):
        await expect(row).to_be_in_viewport()
        await expect(row).to_have_text(words)
    assert await axe_violations(phone.page) == []
    await phone.shot("working-runs-list-phone")
    await prunes.first.tap()
    await expect(phone.page.get_by_role("menu")).to_have_count(0)
    await expect(phone.page.locator("#line-run_pay")).to_be_in_viewport()
    await expect(phone.page.locator("#line-run_pay")).to_have_attribute("aria-current", "true")

    # A run that ends leaves the list; with one left, Scout is words again.
    for run in ("run_pay", "run_tag"):
        await api.append(scout, {"type": "run.completed", "run_id": run, "summary": "done"})
    for who in (desk, phone):
        working = who.page.get_by_test_id("working")
        await expect(working).to_contain_text("Working now: Scout 2, ")
        await expect(working).not_to_contain_text("runs")
        await expect(working.get_by_role("button")).to_have_count(0)
    for who in (desk, phone):
        await who.page.context.close()
