"""Question cards in the app (issue #30; ADR 0131): every card
offers a written answer beside its choices, and a multi-select card takes several choices,
logged in the order they were asked — on a desktop and on a phone."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Identity, key
from tests.e2e.test_web_app import DESKTOP, PHONE, axe_violations, room_with, sign_in

built_app = web.built_app
browser = web.browser

OPTIONS = [
    {"label": "Europe", "value": "eu"},
    {"label": "Asia", "value": "ap"},
    {"label": "Americas", "value": "us"},
]


async def answered(api: Api, who: Identity, question_id: str) -> dict[str, Any]:
    for event in reversed(await api.read(who)):
        if event["type"] == "question.answered" and event["question_id"] == question_id:
            return event
    raise AssertionError(f"question {question_id} has no answer in the log")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_a_written_answer_on_a_card_with_choices_and_several_choices_in_order(
    stack: Stack, api: Api, browser: Browser, viewport: dict[str, int]
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Launch", scout)
    run = key("run_q")
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Plan"}
    )
    first, several = key("q_first"), key("q_several")
    await api.append(
        scout,
        {
            "type": "question.ask",
            "question_id": first,
            "run_id": run,
            "prompt": "Which region first?",
            "options": OPTIONS[:2],
        },
    )
    await api.append(
        scout,
        {
            "type": "question.ask",
            "question_id": several,
            "run_id": run,
            "prompt": "Which regions this quarter?",
            "options": OPTIONS,
            "multiple": True,
        },
    )
    arjun = await sign_in(browser, stack.gateway_a, owner, viewport=viewport, bypass_csp=True)
    await arjun.open_room(room)
    page = arjun.page
    cards = page.get_by_test_id("question")
    one = cards.filter(has_text="Which region first?")
    many = cards.filter(has_text="Which regions this quarter?")
    # A card with choices and no free_text still takes words.
    await expect(one.get_by_role("button", name="Europe")).to_be_visible()
    written = one.get_by_role("textbox", name="Your answer")
    await expect(written).to_have_attribute("placeholder", "Or write an answer")
    assert await axe_violations(page) == []
    await written.fill("Both at once, Europe a day early")
    await one.get_by_role("button", name="Send").click()
    await expect(one.get_by_test_id("decided")).to_have_text(
        "Answered “Both at once, Europe a day early” by you"
    )
    logged = await answered(api, owner, first)
    assert logged["text"] == "Both at once, Europe a day early" and "value" not in logged

    # Several choices, ticked out of order, are logged in the order they were asked.
    await many.get_by_role("checkbox", name="Americas").check()
    await many.get_by_role("checkbox", name="Europe").check()
    await many.get_by_role("button", name="Answer with these 2").click()
    await expect(many.get_by_test_id("decided")).to_have_text("Answered “Europe, Americas” by you")
    assert (await answered(api, owner, several))["values"] == ["eu", "us"]
    await arjun.shot(f"questions-{'phone' if viewport is PHONE else 'desktop'}")
    # Read back after a reload, the cards say the same.
    await page.reload()
    await expect(many.get_by_test_id("decided")).to_have_text("Answered “Europe, Americas” by you")
    await expect(one.get_by_test_id("decided")).to_have_text(
        "Answered “Both at once, Europe a day early” by you"
    )
    await page.context.close()
