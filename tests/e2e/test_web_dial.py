"""The dial's decisions and an expired question on the cards in the app (ADR 0130, ADR
0131), on a desktop and on a phone."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, key
from tests.e2e.test_question_cards import soon
from tests.e2e.test_web_app import DESKTOP, PHONE, room_with, sign_in

# The browser fixtures of the app's own tests: one chromium, the app built once.
built_app = web.built_app
browser = web.browser

SHELL = "jacobian.shell.execute"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_a_card_says_the_rule_that_allowed_it_and_a_question_that_expired(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Builds", scout)
    rules = [{"action": SHELL, "args": "ls *", "effect": "allow"}]
    r = await api.http.put(
        f"/v1/harnesses/{scout.participant_id}/policy",
        json={"autonomy": "L2", "rules": rules},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    run = key("run_web")
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Tidy"}
    )
    for approval_id, args in (("perm-ls", "ls -la"), ("perm-rm", "rm -rf build/")):
        await api.append(
            scout,
            {
                "type": "approval.request",
                "approval_id": key(approval_id),
                "run_id": run,
                "action": SHELL,
                "args": args,
                "preview": args,
            },
        )
    await api.append(
        scout,
        {
            "type": "question.ask",
            "question_id": key("q"),
            "run_id": run,
            "prompt": "Which region first?",
            "options": [{"label": "Europe", "value": "eu"}, {"label": "Asia", "value": "ap"}],
            "default": "ap",
            "expires_at": soon(1),
        },
    )
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport)
    await arjun.open_room(room)
    cards = arjun.page.get_by_test_id("approval")
    allowed = cards.filter(has_text="ls -la")
    asked = cards.filter(has_text="rm -rf build/")
    await expect(allowed.get_by_test_id("decided")).to_have_text(
        f"Allowed by your rule: allow {SHELL} ls * (L2)"
    )
    await expect(allowed.get_by_role("button")).to_have_count(0)
    await expect(asked.get_by_role("button", name="Approve")).to_be_visible()
    await expect(arjun.page.get_by_test_id("question").get_by_test_id("decided")).to_have_text(
        "Nobody answered in time, so the default was taken: Asia."
    )
    await arjun.page.context.close()
