"""A harness's page in the app (issue #30; ADR 0130): its owner turns the autonomy dial and
writes the rules there, and the door decides the next approvals by them — a matching one
allowed at once and shown as such, the same action with other arguments asked — on a
desktop and on a phone. Somebody else sees the page without the dial."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, key
from tests.e2e.test_web_app import DESKTOP, PHONE, axe_violations, room_with, sign_in

built_app = web.built_app
browser = web.browser

SHELL = "jacobian.shell.execute"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_the_owner_sets_the_dial_and_a_rule_in_the_app_and_the_door_follows_them(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    bea = await api.add_person(owner, "Bea Lund")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Builds", scout, bea)
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport, bypass_csp=True)
    page = arjun.page
    await page.get_by_role("link", name="Agents").click()
    await page.get_by_test_id("harnesses").get_by_role("link", name="Scout").click()
    form = page.get_by_test_id("policy-form")
    await expect(page.get_by_role("radio", name="L1 · Allow what your rules allow")).to_be_checked()
    await page.get_by_role("radio", name="L2 · Allow what your rules allow", exact=False).check()
    await expect(page.get_by_test_id("dial-words")).to_have_text(
        "An allow rule allows what it matches the moment the card goes up."
    )
    # A rule with arguments and no action can't be sent: the row says why.
    await page.get_by_role("button", name="Add a rule").click()
    await page.get_by_role("textbox", name="Arguments", exact=True).fill("ls *")
    await page.get_by_role("button", name="Save the dial and rules").click()
    await expect(page.get_by_test_id("policy-error")).to_contain_text(
        "Rule 1 has arguments but no action"
    )
    await page.get_by_role("textbox", name="Action", exact=True).fill(SHELL)
    await page.get_by_role("button", name="Add a rule").click()
    await page.get_by_role("textbox", name="Action", exact=True).nth(1).fill("jacobian.mail.*")
    await page.get_by_role("combobox", name="Rule 2", exact=True).select_option("deny")
    await page.get_by_role("button", name="Save the dial and rules").click()
    await expect(page.get_by_test_id("policy-saved")).to_have_text(
        "Saved: Scout is at L2, with 2 rules."
    )
    await expect(form.get_by_test_id("rule").first).to_have_attribute(
        "aria-label", f"Rule 1: Allow {SHELL} with ls *"
    )
    assert await axe_violations(page) == []
    await arjun.shot(f"harness-page-{'phone' if viewport is PHONE else 'desktop'}")
    r = await api.http.get(f"/v1/harnesses/{scout.participant_id}/policy", headers=api.auth(owner))
    assert r.json()["autonomy"] == "L2"
    assert r.json()["rules"] == [
        {"action": SHELL, "args": "ls *", "effect": "allow"},
        {"action": "jacobian.mail.*", "effect": "deny"},
    ]
    # Read back after a reload, as saved.
    await page.reload()
    await expect(page.get_by_role("textbox", name="Action", exact=True).first).to_have_value(SHELL)
    await expect(page.get_by_role("textbox", name="Arguments", exact=True).first).to_have_value(
        "ls *"
    )
    await expect(page.get_by_role("combobox", name="Rule 2", exact=True)).to_have_value("deny")

    # The door decides by them: ls -la allowed by the rule at once, rm asked, mail denied.
    run = key("run_web")
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Tidy"}
    )
    for approval_id, action, args in (
        ("perm-ls", SHELL, "ls -la"),
        ("perm-rm", SHELL, "rm -rf build/"),
        ("perm-mail", "jacobian.mail.send", "to=all"),
    ):
        await api.append(
            scout,
            {
                "type": "approval.request",
                "approval_id": key(approval_id),
                "run_id": run,
                "action": action,
                "args": args,
                "preview": args,
            },
        )
    await page.goto(f"{stack.gateway_a}/#/room/{room}")
    cards = page.get_by_test_id("approval")
    allowed = cards.filter(has_text="ls -la")
    await expect(allowed.get_by_test_id("decided")).to_have_text(
        f"Allowed by your rule: allow {SHELL} ls * (L2)"
    )
    await expect(
        cards.filter(has_text="rm -rf build/").get_by_role("button", name="Approve")
    ).to_be_visible()
    await expect(cards.filter(has_text="to=all").get_by_test_id("decided")).to_have_text(
        "Denied by your rule: deny jacobian.mail.* (L2)"
    )
    await page.context.close()


async def test_somebody_else_sees_the_harness_without_its_dial(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    bea = await api.add_person(owner, "Bea Lund")
    await api.connect_harness(owner, "Scout")
    person = await sign_in(browser, stack.gateway_a, bea)
    page = person.page
    await page.get_by_role("link", name="Agents").click()
    await expect(page.get_by_test_id("harnesses").locator("li")).to_contain_text("Arjun Rao's")
    await page.get_by_test_id("harnesses").get_by_role("link", name="Scout").click()
    await expect(page.get_by_test_id("policy-not-yours")).to_have_text(
        "Its autonomy dial and its rules are Arjun Rao's to set, as its owner."
    )
    await expect(page.get_by_test_id("policy-form")).to_have_count(0)
    await page.context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_the_harness_page_draws_its_usage_and_spend_day_by_day(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    """Issue #30: a harness's page with its usage and spend over time, a small chart the app
    draws from the usage read's days; a cost under a cent reads as itself, not "$0.00"."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Builds", scout)
    run = key("run_spend")
    await api.append(scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "x"})
    last = await api.append(
        scout,
        {"type": "usage", "run_id": run, "tokens_in": 900, "tokens_out": 100, "cost_usd": 0.002},
    )
    r = await api.http.get(
        f"/v1/harnesses/{scout.participant_id}/usage",
        params={"after_seq": last},
        headers=api.auth(owner),
    )
    days = r.json()["days"]
    today = datetime.now(UTC).date()
    assert [d["day"] for d in days] == [
        (today - timedelta(days=n)).isoformat() for n in range(29, -1, -1)
    ]
    assert days[-1]["cost_usd"] == 0.002 and days[-1]["tokens_in"] == 900
    assert all(d["reports"] == 0 for d in days[:-1])
    week = await api.http.get(
        f"/v1/harnesses/{scout.participant_id}/usage",
        params={"days": 7},
        headers=api.auth(owner),
    )
    assert len(week.json()["days"]) == 7

    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport)
    page = arjun.page
    await page.goto(f"{stack.gateway_a}/#/harness/{scout.participant_id}")
    await expect(page.get_by_test_id("harness-usage")).to_contain_text("Spent $0.002 over 1 report")
    day = f"{today.day} {today.strftime('%b')}"
    spend = page.get_by_test_id("chart-spend")
    await expect(spend.get_by_test_id("chart-words")).to_have_text(
        f"$0.002 in the last 30 days; the most on {day}, $0.002."
    )
    await expect(page.get_by_test_id("chart-tokens").get_by_test_id("chart-words")).to_have_text(
        f"1,000 tokens in the last 30 days; the most on {day}, 1,000 tokens."
    )
    # A bar a day; today's is drawn, the others are empty.
    bars = spend.locator("rect.bar")
    await expect(bars).to_have_count(30)
    assert float(await bars.last.get_attribute("height") or 0) > 0
    assert float(await bars.first.get_attribute("height") or 0) == 0
    await expect(spend.locator("svg")).to_have_attribute("role", "img")
    assert await axe_violations(page) == []
    await arjun.shot(f"harness-usage-{'phone' if viewport is PHONE else 'desktop'}")
    await page.context.close()
