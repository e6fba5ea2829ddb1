"""The people's app in a real browser against the real stack (issue #15; docs/adr/0034).

Debian's chromium, driven by Playwright, loads the app the gateway serves at ``/``, signs
in with a person's token and works the rooms as a person would; harnesses are WebSocket or
HTTP clients of the same stack. Waits are on the page itself (Playwright's ``expect``
polls until the thing is there), never a fixed sleep. Screenshots of the main screens land
in ``tests/e2e/artifacts/`` (git-ignored).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import AsyncIterator
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from PIL import Image
from playwright.async_api import Browser, Page, async_playwright, expect

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket, key
from tests.e2e.test_agents_given import given_agents
from tests.e2e.test_agents_rooms import added, declare, new_agent

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "web" / "dist"
AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"
ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def built_app() -> None:
    """The app is built by `make web` (run by `make test`); built here if it is missing."""
    if not (DIST / "index.html").is_file() or not AXE.is_file():
        subprocess.run([str(ROOT / "scripts" / "build_web.sh")], check=True, timeout=900)
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make browser` (apt-get install chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session")
async def browser(built_app: None) -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        # Never a downloaded browser: the one Debian ships. Root in CI needs --no-sandbox.
        chromium = await pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        await chromium.close()


class Person:
    """One browser (its own context: storage, socket) signed in as one person."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        page.on("console", lambda m: self.console.append(m.text) if m.type == "error" else None)

    async def open_room(self, space_id: str) -> None:
        await self.page.locator(f'a[data-space="{space_id}"]').first.click()
        await expect(self.page.get_by_test_id("composer")).to_be_visible()

    async def say(self, text: str) -> None:
        composer = self.page.get_by_test_id("composer")
        await composer.fill(text)
        await composer.press("Enter")

    def lines(self, text: str) -> Any:
        return self.page.get_by_test_id("line").filter(has_text=text)

    def line(self, text: str) -> Any:
        """The logged line (drawn before any copy still waiting to be sent)."""
        return self.lines(text).first

    async def line_menu(self, text: str) -> None:
        await self.line(text).get_by_role("button", name=re.compile("^Actions for")).click()

    async def shot(self, name: str) -> None:
        await self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def csp_errors(self) -> list[str]:
        return [c for c in self.console if "Content Security Policy" in c]


async def first_screen(page: Page) -> None:
    """Wait for the sign-in screen of a browser with nobody signed in; when it does not
    come, the failure says what the page showed instead (blank, when the app missed its
    own boot: test_web_first_screen)."""
    heading = page.get_by_role("heading", name="Sign in to Chips")
    try:
        await expect(heading).to_be_visible()
    except AssertionError as e:
        shown = await page.evaluate(
            "document.body ? document.body.innerHTML.slice(0, 2000) : '(no body yet)'"
        )
        raise AssertionError(f"{e}\nthe page at {page.url} shows: {shown}") from None


async def use_a_token(page: Page) -> None:
    """Open the first screen's advanced way in: a token rather than an invite link."""
    await first_screen(page)
    await page.get_by_text("Sign in with a token instead").click()


async def sign_in(
    browser: Browser, base_url: str, who: Identity, *, viewport: dict[str, int] = DESKTOP, **kw: Any
) -> Person:
    context = await browser.new_context(viewport=viewport, **kw)  # type: ignore[arg-type]
    page = await context.new_page()
    person = Person(page)
    await page.goto(base_url + "/")
    await use_a_token(page)
    await page.get_by_label("Your token").fill(who.token)
    await page.get_by_role("button", name="Sign in").click()
    # Signed in once the socket's hello has named the person (the foot of the list).
    await expect(page.locator(".side-foot .me")).not_to_have_text("…")
    return person


async def harness_socket(stack: Stack, harness: Identity) -> Socket:
    sock = await Socket.open(stack.gateway_b, harness)
    await sock.subscribe(harness.workspace_id)
    return sock


async def room_with(api: Api, owner: Identity, title: str, *members: Identity) -> str:
    return await api.open_space(owner, title, [m.participant_id for m in members])


# --- signing in, the list, posting, a harness answering live ----------------------------


async def test_sign_in_post_and_a_harness_replies_live(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, direct = await api.connect_harness(owner, "Scout")
    ops = await room_with(api, owner, "Ops", scout)
    aside = await room_with(api, owner, "Aside")  # opened after Ops: first until Ops moves
    harness = await harness_socket(stack, scout)

    context = await browser.new_context(viewport=DESKTOP)
    page = await context.new_page()
    await page.goto(stack.gateway_a + "/")
    await first_screen(page)
    await page.screenshot(path=str(ARTIFACTS / "sign-in.png"))
    await use_a_token(page)
    await page.get_by_label("Your token").fill("chips_pt_not-a-real-token")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_contain_text("not known")
    await context.close()

    arjun = await sign_in(browser, stack.gateway_a, owner)
    page = arjun.page
    await expect(page.locator(f'a[data-space="{direct}"]')).to_contain_text("Scout")
    await expect(page.locator(f'a[data-space="{ops}"]')).to_contain_text("Ops")
    await arjun.open_room(direct)
    await arjun.say("Find the **PO** for Northwind, @Scout")

    heard = await harness.wait_for(
        lambda f: (
            f["frame"] == "event"
            and f["event"]["type"] == "message.new"
            and "Northwind" in (f["event"].get("text") or "")
        )
    )
    said = heard["event"]
    reply = await harness.write(
        {
            "type": "message.post",
            "space_id": direct,
            "text": "Found it: **PO-4471**",
            "reply_to": said["message_id"],
        }
    )
    assert (await harness.answer(reply))["frame"] == "ack"
    answer = arjun.line("Found it")
    await expect(answer.locator(".bubble strong")).to_have_text("PO-4471")
    await expect(answer.locator(".quote")).to_contain_text("Arjun Rao")
    mine = arjun.line("Northwind")
    await expect(mine.locator(".bubble strong")).to_have_text("PO")
    await expect(mine.locator(".mention")).to_have_text("@Scout")
    # /wrong in the composer corrects the harness's last message, shown under it.
    await arjun.say("/wrong the PO is 4472")
    await expect(answer.locator(".correction")).to_have_text(
        "Arjun Rao said this is not right: the PO is 4472"
    )
    # The harness says something in another room: it comes first in its section, unread.
    rooms = page.locator('section[aria-labelledby="sec-Rooms"] a[data-space]')
    await expect(rooms.first).to_have_attribute("data-space", aside)
    await harness.write({"type": "message.post", "space_id": ops, "text": "Ops news"})
    await expect(page.locator(f'a[data-space="{ops}"] .unread')).to_have_text("1")
    await expect(rooms.first).to_have_attribute("data-space", ops)
    await expect(rooms.nth(1)).to_have_attribute("data-space", aside)
    await arjun.shot("room-desktop")
    await page.locator(f'a[data-space="{ops}"]').click()
    await expect(arjun.line("Ops news")).to_be_visible()
    await expect(page.locator(f'a[data-space="{ops}"] .unread')).to_have_count(0)
    # Read once, it stays read after a reload (the token and the read marks are kept).
    await page.reload()
    await expect(page.locator(f'a[data-space="{ops}"]')).to_be_visible()
    await expect(page.locator(f'a[data-space="{ops}"] .unread')).to_have_count(0)
    assert arjun.csp_errors() == []
    await harness.close()


async def test_history_loads_backwards_on_scroll(stack: Stack, api: Api, browser: Browser) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await room_with(api, owner, "Long room")
    for n in range(1, 121):
        await api.say(owner, room, f"line number {n}")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    await expect(arjun.line("line number 120")).to_be_visible()
    timeline = arjun.page.get_by_role("log")
    shown = arjun.page.get_by_test_id("line")
    await expect(shown).to_have_count(50)  # the newest page
    for count in (100, 120):  # a page more each time the top is reached
        await timeline.evaluate("el => { el.scrollTop = 0; }")
        await expect(shown).to_have_count(count)
    await expect(arjun.page.get_by_text("This is the beginning of Long room.")).to_be_visible()
    texts = await arjun.page.locator('[data-testid="line"] .bubble').all_inner_texts()
    assert [t.strip() for t in texts] == [f"line number {n}" for n in range(1, 121)]


# --- cards: approvals answered in place, first answer wins -----------------------------


async def test_an_approval_answered_in_one_browser_says_who_in_the_other(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Launch", scout, maya)
    run = key("run_web")
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Ship"}
    )
    approval = key("perm")
    await api.append(
        scout,
        {
            "type": "approval.request",
            "approval_id": approval,
            "run_id": run,
            "action": "deploy.production",
            "preview": "Deploy build 512 to production",
            "risk": "high",
            "answerers": [maya.participant_id],
        },
    )
    arjun = await sign_in(browser, stack.gateway_a, owner)
    desk = await sign_in(browser, stack.gateway_a, maya)
    for person in (arjun, desk):
        await person.open_room(room)
        await expect(person.page.get_by_test_id("approval")).to_contain_text("deploy.production")
    await arjun.shot("approval-card")
    await arjun.page.get_by_test_id("approval").get_by_role("button", name="Approve").click()
    await expect(arjun.page.get_by_test_id("decided")).to_have_text("Approved by you")
    await expect(desk.page.get_by_test_id("decided")).to_have_text("Approved by Arjun Rao")
    await expect(desk.page.get_by_test_id("approval").get_by_role("button")).to_have_count(0)
    # A question asked live is tapped in place, and the other browser says who answered.
    question = key("q")
    await api.append(
        scout,
        {
            "type": "question.ask",
            "question_id": question,
            "run_id": run,
            "prompt": "Which region first?",
            "options": [{"label": "Europe", "value": "eu"}, {"label": "Asia", "value": "ap"}],
        },
    )
    await desk.page.get_by_test_id("question").get_by_role("button", name="Asia").click()
    await expect(arjun.page.get_by_test_id("question").get_by_test_id("decided")).to_have_text(
        "Answered “Asia” by Maya Chen"
    )
    # The run's read model folds the answer a moment after the sockets are sent it.
    wanted = {approval: owner.participant_id, question: maya.participant_id}
    answered: dict[str, Any] = {}
    for _ in range(200):
        cards = (await api.http.get(f"/v1/runs/{run}", headers=api.auth(owner))).json()["cards"]
        answered = {c["id"]: c["answered_by"] for c in cards}
        if answered == wanted:
            break
        await asyncio.sleep(0.05)
    assert answered == wanted


async def test_a_run_s_approval_is_drawn_inside_its_run(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """Two runs asking the same thing: each card sits inside its own run, so they can be
    told apart, and answering one leaves the other's open."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Twins", scout)
    for goal in ("Ship the web build", "Ship the phone build"):
        run = key("run_twin")
        await api.append(
            scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": goal}
        )
        await api.append(
            scout,
            {
                "type": "approval.request",
                "approval_id": key("perm"),
                "run_id": run,
                "action": "deploy.production",
                "preview": "Deploy to production",
            },
        )
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    web = page.get_by_test_id("run").filter(has_text="Ship the web build")
    phone = page.get_by_test_id("run").filter(has_text="Ship the phone build")
    await expect(web.get_by_test_id("approval")).to_have_count(1)
    await expect(phone.get_by_test_id("approval")).to_have_count(1)
    await expect(page.get_by_test_id("approval")).to_have_count(2)  # none drawn twice
    await phone.get_by_test_id("approval").get_by_role("button", name="Approve").click()
    await expect(phone.get_by_test_id("decided")).to_have_text("Approved by you")
    await expect(
        web.get_by_test_id("approval").get_by_role("button", name="Approve")
    ).to_be_visible()


async def test_an_approval_offers_its_buttons_only_to_who_decides_and_none_once_its_run_ended(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """rules/runs.py: an approval is decided by the harness's owner or the people it names,
    and by nobody once its run has ended; the card offers no button the door would refuse."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Release", scout, maya)
    run = key("run_web")
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Release"}
    )
    first, second = key("perm"), key("perm")
    await api.append(
        scout,
        {"type": "approval.request", "approval_id": first, "run_id": run, "action": "tag.v2"},
    )
    arjun = await sign_in(browser, stack.gateway_a, owner)
    desk = await sign_in(browser, stack.gateway_a, maya)
    for person in (arjun, desk):
        await person.open_room(room)
        await expect(person.page.get_by_test_id("approval")).to_contain_text("tag.v2")
        # No risk was given, so none is shown.
        await expect(person.page.get_by_test_id("approval")).not_to_contain_text("risk")
    card = desk.page.get_by_test_id("approval")
    await expect(card.get_by_test_id("decides")).to_have_text("For Arjun Rao to decide.")
    await expect(card.get_by_role("button")).to_have_count(0)
    await desk.shot("approval-not-mine")
    await arjun.page.get_by_test_id("approval").get_by_role("button", name="Approve").click()
    await expect(card.get_by_test_id("decided")).to_have_text("Approved by Arjun Rao")
    # A card still open when its run ends takes no answer, from anyone.
    await api.append(
        scout,
        {"type": "approval.request", "approval_id": second, "run_id": run, "action": "push.v2"},
    )
    open_card = arjun.page.get_by_test_id("approval").filter(has_text="push.v2")
    await expect(open_card.get_by_role("button", name="Approve")).to_be_visible()
    await api.append(scout, {"type": "run.completed", "run_id": run, "summary": "Tagged"})
    for person in (arjun, desk):
        ended = person.page.get_by_test_id("approval").filter(has_text="push.v2")
        await expect(ended.get_by_test_id("closed")).to_have_text(
            "The run ended before anyone decided."
        )
        await expect(ended.get_by_role("button")).to_have_count(0)


async def test_a_run_s_steps_live_and_my_words_queued(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, direct = await api.connect_harness(owner, "Scout")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(direct)
    run = key("run_web")
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": direct, "goal": "Order the PO"}
    )
    block = arjun.page.get_by_test_id("run")
    await expect(block).to_contain_text("Order the PO")
    await expect(block).to_contain_text("working")
    await api.append(
        scout,
        {
            "type": "step.log",
            "run_id": run,
            "step_id": "stp_1",
            "status": "started",
            "title": "Read the PO",
        },
    )
    await expect(block.get_by_test_id("step")).to_contain_text("Read the PO")
    await arjun.say("also attach the invoice")
    await expect(arjun.line("attach the invoice").get_by_test_id("receipt")).to_contain_text(
        "queued"
    )
    await api.append(
        scout, {"type": "step.log", "run_id": run, "step_id": "stp_1", "status": "done"}
    )
    await expect(block.get_by_test_id("step")).to_contain_text("(done)")
    await api.append(scout, {"type": "run.completed", "run_id": run, "summary": "PO sent"})
    await expect(block).to_contain_text("done")
    await expect(block).to_contain_text("PO sent")
    await arjun.shot("run")


async def test_an_agent_s_run_is_named_after_the_agent_and_its_thinking_shows(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    await declare(api, owner, scout, "agents")
    j1 = await new_agent(api, scout, "j1", "ASCII Art")
    room = await room_with(api, owner, "Alphabet")
    await api.append(owner, added(room, j1))
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    run = key("run_web_agent")
    started = {"type": "run.started", "run_id": run, "space_id": room, "goal": "Draw the A"}
    await api.append(scout, {**started, "actor": {"kind": "agent", "id": j1}})
    # Jacobian's thinking bubble: a phase and the reasoning's last line, and no verb.
    thinking = "Looking at the letters.\nComparing the serifs of A"
    await api.append(
        scout, {"type": "run.status", "run_id": run, "phase": "thinking", "text": thinking}
    )
    block = arjun.page.get_by_test_id("run")
    status = block.get_by_test_id("run-status")
    for _ in ("live", "read back"):
        await expect(block.locator(".run-head .author")).to_have_text("ASCII Art")
        await expect(block).to_have_attribute("aria-label", "Run by ASCII Art: Draw the A")
        await expect(status).to_have_text("thinking · Comparing the serifs of A")
        await arjun.page.reload()
        await expect(arjun.page.get_by_test_id("composer")).to_be_visible()


# --- changing words: edit, take back, pin; reactions others sent ---------------------------


async def test_edit_take_back_and_pin_and_reactions_are_drawn_not_sent(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """A line's menu edits, pins, replies and takes back; it offers no emoji to send (the app
    sends no reactions: docs/adr/0152), and a reaction sent over the API is drawn under its
    line as words, not as a button that would send one."""
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await room_with(api, owner, "Plans")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    await arjun.say("teh plan is ready")
    await expect(arjun.line("teh plan")).to_contain_text(re.compile(r"\d"))  # logged: a time

    await arjun.line_menu("teh plan")
    await page.get_by_role("menuitem", name="Edit").click()
    composer = page.get_by_test_id("composer")
    await expect(composer).to_have_value("teh plan is ready")
    await composer.fill("the plan is ready")
    await composer.press("Enter")
    edited = arjun.line("the plan is ready")
    await expect(edited).to_contain_text("edited")

    await arjun.line_menu("the plan is ready")
    menu = page.get_by_role("menu")
    await expect(menu.get_by_role("menuitem", name="Pin")).to_be_visible()
    await expect(menu.get_by_role("menuitem", name=re.compile("^React"))).to_have_count(0)
    await expect(menu.get_by_role("group", name="React")).to_have_count(0)
    await page.keyboard.press("Escape")
    # Sent over the API (an older client would): drawn, with who sent it, and nothing to press.
    planned = next(
        ln["id"] for ln in await api.lines(owner, room) if ln["text"] == "the plan is ready"
    )
    await api.append(
        owner,
        {
            "type": "feedback",
            "space_id": room,
            "message_id": planned,
            "kind": "reaction",
            "emoji": "🎉",
        },
    )
    drawn = edited.get_by_test_id("reaction")
    await expect(drawn).to_have_text("🎉 1")
    await expect(edited.get_by_role("img", name="🎉 1: Arjun Rao")).to_be_visible()
    await expect(edited.get_by_role("button", name=re.compile("🎉"))).to_have_count(0)
    await drawn.click()  # takes nothing back
    await arjun.line_menu("the plan is ready")
    await page.get_by_role("menuitem", name="Pin").click()
    await expect(page.get_by_label("Pinned", exact=True)).to_contain_text("the plan is ready")

    # A reply from the line's menu carries the quote of the line it answers.
    await arjun.line_menu("the plan is ready")
    await page.get_by_role("menuitem", name="Reply", exact=True).click()
    await expect(page.get_by_text("Replying to")).to_contain_text("the plan is ready")
    await arjun.say("ship it Friday")
    await expect(arjun.line("ship it Friday").locator(".quote")).to_contain_text(
        "the plan is ready"
    )

    await arjun.say("only for me")
    await arjun.line_menu("only for me")
    await page.get_by_role("menuitem", name="Delete for me").click()
    await expect(arjun.lines("only for me")).to_have_count(0)
    await page.get_by_role("button", name="Undo").click()
    await expect(arjun.line("only for me")).to_be_visible()

    await arjun.say("a second thought")
    await arjun.line_menu("a second thought")
    await page.get_by_role("menuitem", name="Delete for everyone…").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_contain_text("keep what they read")
    await dialog.get_by_role("button", name="Delete for everyone").click()
    await expect(page.get_by_text("This message was taken back.")).to_be_visible()

    lines = await api.lines(owner, room)
    said = {ln["text"] or "": ln for ln in lines if ln["kind"] == "text"}
    assert said["the plan is ready"]["edited"] and said["the plan is ready"]["pinned"]
    assert said["the plan is ready"]["feedback"] == [
        {"from": owner.participant_id, "kind": "reaction", "emoji": "🎉"}
    ]
    assert said["ship it Friday"]["reply_to"] == said["the plan is ready"]["id"]
    assert [ln["deleted"] for ln in lines if ln["kind"] == "text"] == [False, False, False, True]

    # A tombstone takes nothing more but Delete for me (rules/words.py).
    await arjun.line_menu("This message was taken back.")
    await expect(page.get_by_role("menu").get_by_role("menuitem")).to_have_text(["Delete for me"])
    await page.get_by_role("menuitem", name="Delete for me").click()
    await expect(page.get_by_text("This message was taken back.")).to_have_count(0)
    texts = [ln for ln in await api.lines(owner, room) if ln["kind"] == "text"]
    assert [ln["deleted"] for ln in texts] == [False, False, False]


async def test_a_line_offers_what_the_door_takes_and_leaving_closes_the_room(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """rules/words.py: a guest does not pin; an archived room has no composer, so no Reply or
    Edit; docs/product/spaces.md, Leaving one: a room left is off the list, and off the screen."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    gus = await api.add_person(owner, "Gus Hale")
    room = await room_with(api, owner, "Rota", maya)
    assert (await api.add_to_room(owner, room, gus.participant_id, "guest")).status_code == 200
    await api.say(owner, room, "Friday is yours")
    await api.say(maya, room, "Then Monday is mine")

    guss = await sign_in(browser, stack.gateway_a, gus)
    await guss.open_room(room)
    await guss.line_menu("Friday is yours")
    await expect(guss.page.get_by_role("menuitem", name="Reply", exact=True)).to_be_visible()
    await expect(guss.page.get_by_role("menuitem", name="Pin")).to_have_count(0)

    mayas = await sign_in(browser, stack.gateway_b, maya)
    await mayas.open_room(room)
    # The room archived under her eyes stays drawn as it was (its lines are not read again
    # from nothing once the list no longer holds it as open, which closed a menu just opened).
    await mayas.line("Then Monday is mine").evaluate("el => { el.dataset.seen = 'before' }")
    assert (await api.change_room(owner, room, state="closed")).status_code == 200
    await expect(mayas.page.get_by_text("This room is archived.")).to_be_visible()
    await expect(mayas.page.get_by_test_id("archived-toggle")).to_contain_text("Archived 1")
    await expect(mayas.page.get_by_text("No rooms yet.")).to_be_visible()
    await expect(mayas.line("Then Monday is mine")).to_have_attribute("data-seen", "before")
    await mayas.line_menu("Then Monday is mine")
    await expect(mayas.page.get_by_role("menuitem", name="Pin")).to_be_visible()
    await expect(mayas.page.get_by_role("menuitem", name="Reply", exact=True)).to_have_count(0)
    await expect(mayas.page.get_by_role("menuitem", name="Edit")).to_have_count(0)
    await mayas.page.keyboard.press("Escape")

    # Gus leaves from the sheet: the room goes from his list and his screen.
    await guss.page.keyboard.press("Escape")
    await guss.page.get_by_test_id("room-actions").click()
    await guss.page.get_by_role("menuitem", name="People…").click()
    await guss.page.get_by_role("dialog").get_by_role("button", name="Leave").click()
    await expect(guss.page.locator(f'a[data-space="{room}"]')).to_have_count(0)
    await expect(guss.page.get_by_test_id("composer")).to_have_count(0)
    await expect(guss.page.get_by_text("Friday is yours")).to_have_count(0)


async def test_escape_closes_a_line_s_menu_and_one_menu_is_open_at_a_time(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """A line's ⋯ menu closes on Escape with the focus still on its button (it closed only
    from inside the menu), and the room's menu opening closes it (it opened on top)."""
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await room_with(api, owner, "Menus")
    await api.say(owner, room, "one line to act on")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    await arjun.line_menu("one line to act on")
    await expect(page.get_by_role("menuitem", name="Reply", exact=True)).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("menu")).to_have_count(0)
    await expect(
        arjun.line("one line to act on").get_by_role("button", name=re.compile("^Actions for"))
    ).to_be_focused()

    await arjun.line_menu("one line to act on")
    await page.get_by_test_id("room-actions").click()
    await expect(page.get_by_role("menu")).to_have_count(1)
    await expect(page.get_by_role("menuitem", name="Reply", exact=True)).to_have_count(0)
    await page.mouse.click(5, 5)  # a press outside closes it
    await expect(page.get_by_role("menu")).to_have_count(0)


async def test_search_hits_are_walked_with_the_arrows_and_show_words_not_markup(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await room_with(api, owner, "Ledger")
    await api.say(owner, room, "the **overdue** bill from Initech")
    last = await api.say(owner, room, "an overdue *reminder* for Globex")
    await api.lines(owner, room, after_seq=last)
    arjun = await sign_in(browser, stack.gateway_a, owner)
    page = arjun.page
    search = page.get_by_role("searchbox", name="Search messages")
    await search.fill("overdue")
    hits = page.get_by_test_id("hit")
    await expect(hits).to_have_count(2)
    await expect(hits.nth(1)).to_contain_text("the overdue bill from Initech")
    await expect(page.get_by_test_id("hits")).not_to_contain_text("*")
    await search.press("ArrowDown")
    await expect(hits.first).to_be_focused()
    await page.keyboard.press("ArrowDown")
    await expect(hits.nth(1)).to_be_focused()
    await page.keyboard.press("ArrowUp")
    await page.keyboard.press("ArrowUp")
    await expect(search).to_be_focused()
    await search.press("ArrowDown")
    await page.keyboard.press("Enter")
    found = page.locator('[data-testid="line"][aria-current="true"]')
    await expect(found).to_contain_text("an overdue reminder for Globex")


# --- threads, and the room's life: rename, lock, archive, delete, the sheet --------------


async def test_a_thread_opened_elsewhere_is_read_and_answered_and_none_is_opened_here(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """The app opens no thread (docs/adr/0152): no line's menu offers one. A thread a harness
    opened is reached from its line's menu and from under the line, and answered in."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Launch", scout)
    asked = await api.say(owner, room, "Which day do we launch?")
    await api.say(owner, room, "And who writes the notes?")
    said = await api.lines(owner, room, after_seq=asked)
    root = next(ln["id"] for ln in said if ln["seq"] == asked)
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    await arjun.say("Friday, I think")
    for text in ("Which day", "And who writes", "Friday, I think"):
        await arjun.line_menu(text)
        await expect(page.get_by_role("menuitem", name="Reply", exact=True)).to_be_visible()
        await expect(page.get_by_role("menu")).not_to_contain_text("thread")
        await page.keyboard.press("Escape")
    # Scout opens one on the first line (as a harness may): the line leads to it.
    await api.open_thread(scout, room, root)
    await expect(arjun.line("Which day").get_by_role("link", name="Thread →")).to_be_visible()
    await expect(arjun.line("And who writes").get_by_role("link")).to_have_count(0)
    await arjun.line_menu("Which day")
    await page.get_by_role("menuitem", name="Open thread").click()
    # Named by the words it was opened on, not "Thread in Launch" for every thread.
    await expect(page.get_by_role("heading", name="Which day do we launch?")).to_be_visible()
    await expect(page.get_by_test_id("room-facts")).to_contain_text("Thread in Launch")
    await expect(page.get_by_text("In reply to Arjun Rao: Which day do we launch?")).to_be_visible()
    await arjun.say("Tuesday works")
    await expect(arjun.line("Tuesday works")).to_contain_text(re.compile(r"\d"))
    await expect(page.get_by_role("heading", name="Threads")).to_be_visible()
    listed = page.locator("nav a.room-link").filter(has_text="Which day do we launch?")
    await expect(listed).to_contain_text("in Launch")
    await arjun.shot("thread")
    await page.get_by_role("link", name="Back to the room").click()
    await arjun.line("Which day").get_by_role("link", name="Thread →").click()
    await expect(arjun.line("Tuesday works")).to_be_visible()


async def test_rename_lock_archive_and_find_it_in_archived(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    page = arjun.page
    # Opened from the list's New room: the app goes into it.
    await page.get_by_role("button", name="+ New room").click()
    await page.get_by_role("dialog").get_by_label("Title").fill("Q3 planning")
    await page.get_by_role("button", name="Open the room").click()
    await expect(page.get_by_role("heading", name="Q3 planning")).to_be_visible()
    await expect(page.get_by_test_id("composer")).to_be_visible()
    room = unquote(page.url.rsplit("#/room/", 1)[1])
    await expect(page.locator(f'a[data-space="{room}"]')).to_contain_text("Q3 planning")
    listed = (await api.spaces(owner))["spaces"]
    groups = [(s["id"], s["title"]) for s in listed if s["kind"] == "group"]
    assert groups == [(room, "Q3 planning")]

    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Rename…").click()
    await page.get_by_label("New title").fill("Q4 planning")
    await page.get_by_role("button", name="Rename", exact=True).click()
    await expect(page.get_by_role("heading", name="Q4 planning")).to_be_visible()
    await expect(page.get_by_text("Arjun Rao renamed the room to “Q4 planning”")).to_be_visible()

    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Lock changes").click()
    await expect(page.get_by_test_id("room-facts")).to_contain_text("Locked")
    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Unlock changes").click()
    await expect(page.get_by_test_id("room-facts")).not_to_contain_text("Locked")

    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Archive…").click()
    await page.get_by_role("dialog").get_by_role("button", name="Archive the room").click()
    await expect(page.get_by_text("This room is archived.")).to_be_visible()
    await expect(
        page.locator(f'nav section:not([aria-label="Archived"]) a[data-space="{room}"]')
    ).to_have_count(0)
    toggle = page.get_by_test_id("archived-toggle")
    await expect(toggle).to_contain_text("Archived 1")
    await toggle.click()
    await expect(
        page.get_by_test_id("archived-list").locator(f'a[data-space="{room}"]')
    ).to_contain_text("Q4 planning")
    await arjun.shot("archived")
    await page.get_by_role("button", name="Unarchive").click()
    await expect(page.get_by_test_id("composer")).to_be_visible()
    await expect(toggle).to_contain_text("Archived 0")


async def test_the_room_s_menu_offers_only_what_the_door_would_take(
    stack: Stack, api: Api, browser: Browser
) -> None:
    # rules/spaces.py, erase.py and threads.py: a member renames and archives but neither
    # locks nor deletes; a guest does none of these; while locked nobody renames, archives
    # or deletes, and the owner may unlock; a thread has no title, lock or members of its own.
    # Muting is one's own, so everyone here is offered it.
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    gus = await api.add_person(owner, "Gus Hale")
    room = await room_with(api, owner, "Rota", maya)
    assert (await api.add_to_room(owner, room, gus.participant_id, "guest")).status_code == 200
    said = await api.say(maya, room, "Who takes Friday?")
    root = next(e for e in await api.read(maya, space_id=room) if e["seq"] == said)["message_id"]
    thread = await api.open_thread(maya, room, root)
    arjun = await sign_in(browser, stack.gateway_a, owner)
    mayas = await sign_in(browser, stack.gateway_b, maya)
    guss = await sign_in(browser, stack.gateway_a, gus)

    async def menu(who: Person) -> Any:
        await who.page.get_by_test_id("room-actions").click()
        return who.page.get_by_role("menu").get_by_role("menuitem")

    async def shut(who: Person) -> None:
        await who.page.get_by_test_id("room-actions").click()
        await expect(who.page.get_by_role("menu")).to_have_count(0)

    for who in (arjun, mayas, guss):
        await who.open_room(room)
    await expect(await menu(arjun)).to_have_text(
        ["Rename…", "Archive…", "Lock changes", "People…", "Mute notifications", "Delete…"]
    )
    await shut(arjun)
    await expect(await menu(mayas)).to_have_text(
        ["Rename…", "Archive…", "People…", "Mute notifications"]
    )
    await shut(mayas)
    await expect(await menu(guss)).to_have_text(["People…", "Mute notifications"])
    # The guest's sheet adds nobody; the member's takes nobody else out, and she may leave.
    await guss.page.get_by_role("menuitem", name="People…").click()
    await expect(guss.page.get_by_role("dialog").get_by_test_id("members")).to_contain_text("guest")
    await expect(guss.page.get_by_role("dialog").get_by_label("Add")).to_have_count(0)
    await mayas.page.get_by_test_id("room-name").click()
    rows = mayas.page.get_by_role("dialog").get_by_test_id("members").locator("li")
    await expect(rows.filter(has_text="Arjun Rao").get_by_role("button")).to_have_count(0)
    await expect(rows.filter(has_text="Maya Chen").get_by_role("button")).to_have_text("Leave")
    await mayas.page.get_by_role("dialog").get_by_role("button", name="Close").click()

    assert (await api.lock(owner, room)).status_code == 200
    await expect(arjun.page.get_by_test_id("room-facts")).to_contain_text("Locked")
    await expect(await menu(arjun)).to_have_text(
        ["Changes are locked.", "Unlock changes", "People…", "Mute notifications"]
    )
    assert await axe_violations(arjun.page) == []
    await shut(arjun)
    await expect(mayas.page.get_by_test_id("room-facts")).to_contain_text("Locked")
    await expect(await menu(mayas)).to_have_text(
        [
            "Changes are locked; the room's owner or an admin can unlock them.",
            "People…",
            "Mute notifications",
        ]
    )
    await shut(mayas)
    await (await menu(arjun)).filter(has_text="Unlock changes").click()
    await expect(arjun.page.get_by_test_id("room-facts")).not_to_contain_text("Locked")

    # A thread: its room's owner and the workspace's owner is offered nothing of its own.
    await arjun.open_room(thread)
    await expect(arjun.page.get_by_role("link", name="Back to the room")).to_be_visible()
    await expect(await menu(arjun)).to_have_text(["People…", "Mute notifications"])
    await arjun.page.get_by_role("menuitem", name="People…").click()
    members = arjun.page.get_by_role("dialog").get_by_test_id("members")
    await expect(members).to_contain_text("Maya Chen")
    await expect(members.get_by_role("button")).to_have_count(0)
    await expect(arjun.page.get_by_role("dialog").get_by_label("Add")).to_have_count(0)


async def test_the_room_sheet_adds_and_removes_and_delete_asks_first(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Suppliers")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    await page.get_by_test_id("room-name").click()
    sheet = page.get_by_role("dialog")
    members = sheet.get_by_test_id("members")
    await expect(members).to_contain_text("Arjun Rao (you)")
    for who, kind in (("Maya Chen", "person"), ("Scout", "harness")):
        await sheet.get_by_label("Add").select_option(label=f"{who} ({kind})")
        await sheet.get_by_role("button", name="Add", exact=True).click()
        await expect(members).to_contain_text(who)
    # Scout stands in the room as the agent Chips gave it there (docs/adr/0154).
    await expect(members.locator("li").filter(has_text="Scout")).to_contain_text("Scout agent")
    await arjun.shot("room-sheet")
    await (
        members.locator("li")
        .filter(has_text="Maya Chen")
        .get_by_role("button", name="Remove")
        .click()
    )
    await expect(members).not_to_contain_text("Maya Chen")
    await sheet.get_by_role("button", name="Close").click()
    await expect(page.get_by_text("Arjun Rao removed Maya Chen")).to_be_visible()
    sheet_now = await api.sheet(owner, room)
    scout_here = (await given_agents(api, owner, scout))[room]["participant_id"]
    assert {m["participant_id"] for m in sheet_now["members"]} == {
        owner.participant_id,
        scout_here,  # Scout as the agent Chips gave it in the room (docs/adr/0154)
    }
    del maya

    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Delete…").click()
    confirm = page.get_by_role("dialog")
    await expect(confirm).to_contain_text("cannot be undone")
    await expect(confirm).to_contain_text("its files and its search entries")
    await confirm.get_by_role("button", name="Cancel").click()
    await expect(page.locator(f'a[data-space="{room}"]')).to_have_count(1)
    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Delete…").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete the room").click()
    await expect(page.locator(f'a[data-space="{room}"]')).to_have_count(0)


def frame_events(frame: dict[str, Any]) -> list[dict[str, Any]]:
    """The events a socket frame carries: one, a batch, or none."""
    if frame["frame"] == "event":
        return [frame["event"]]
    return list(frame.get("events", [])) if frame["frame"] == "events" else []


async def test_archive_and_delete_ask_first_and_say_what_a_following_harness_does(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """docs/product/spaces.md, Retitling and archiving: "Archive asks first; Unarchive only puts a
    room back"; Deleting one: the sheet that asks first promises what a harness does on its
    side only for one that declared follows_rooms, "and says nothing on behalf of one that
    did not", and a harness's home "is never deleted or archived". Scout follows rooms and is
    here as its agent S1 (the sheet shows the agent; its harness is what follows); Ledger
    declared nothing."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, scout_home = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    await declare(api, owner, scout, "follows_rooms", "agents")
    s1 = await new_agent(api, scout, "s1", "S1")
    room = await room_with(api, owner, "Suppliers", ledger)
    await api.append(owner, added(room, s1))
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    dialog = page.get_by_role("dialog")
    follows = dialog.get_by_test_id("follows")

    # Archive from the menu asks first, and says what Scout does; Cancel leaves it open.
    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Archive…").click()
    await expect(dialog).to_contain_text("Archive Suppliers?")
    await expect(follows).to_have_text(
        "Scout archives its side too, and brings it back if the room is unarchived."
    )
    await expect(dialog).not_to_contain_text("Ledger")
    assert (await api.sheet(owner, room))["state"] == "open"
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_have_count(0)
    await expect(page.get_by_test_id("composer")).to_be_visible()

    # /archive from the composer asks the same; confirming archives the room.
    await arjun.say("/archive")
    await expect(follows).to_contain_text("Scout archives its side too")
    assert (await api.sheet(owner, room))["state"] == "open"
    await dialog.get_by_role("button", name="Archive the room").click()
    await expect(page.get_by_text("This room is archived.")).to_be_visible()
    assert (await api.sheet(owner, room))["state"] == "closed"
    # Unarchive only puts it back.
    await page.get_by_role("button", name="Unarchive").click()
    await expect(page.get_by_test_id("composer")).to_be_visible()
    assert (await api.sheet(owner, room))["state"] == "open"
    # S1 came back with the room, and Scout behind it: its own row draws no line, live as
    # on a reload (S1's second add is drawn after Scout's, so it is there by then).
    system = page.locator(".system-line")
    await expect(system.filter(has_text="Arjun Rao added S1")).to_have_count(2)
    assert not [t for t in await system.all_inner_texts() if "Scout" in t]

    # Delete names Scout alone: Arjun owns it, so it deletes its side too. The log's
    # space.erased says the same of it.
    head = await api.head(owner)
    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Delete…").click()
    await expect(dialog).to_contain_text("cannot be undone")
    await expect(follows).to_have_text("Scout deletes its side too.")
    await expect(dialog).not_to_contain_text("Ledger")
    await arjun.shot("delete-asks-first")
    await dialog.get_by_role("button", name="Delete the room").click()
    await expect(page.locator(f'a[data-space="{room}"]')).to_have_count(0)
    told = await Socket.open(stack.gateway_a, scout)
    await told.subscribe(scout.workspace_id, since=head)
    await told.wait_for(lambda f: any(e["type"] == "space.erased" for e in frame_events(f)))
    erased = next(e for e in told.events() if e["type"] == "space.erased")
    assert erased["follows"] == [{"harness_id": scout.participant_id, "delete": True}]
    await told.close()

    # Scout's home is offered neither; /archive there is the door's refusal.
    await arjun.open_room(scout_home)
    await page.get_by_test_id("room-actions").click()
    await expect(page.get_by_role("menuitem", name="Rename…")).to_be_visible()
    await expect(page.get_by_role("menuitem", name="Archive…")).to_have_count(0)
    await expect(page.get_by_role("menuitem", name="Delete…")).to_have_count(0)
    await page.get_by_test_id("room-actions").click()
    await arjun.say("/archive")
    await expect(page.locator("form.composer [role=alert]")).to_contain_text("never archived")
    await expect(dialog).to_have_count(0)


async def test_deleting_a_direct_room_nobody_could_open_again_says_it_archives_it(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """docs/product/spaces.md, Deleting one: "a direct space nobody can open again ... is archived
    instead", so its sheet does not say it is erased."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    seq = await api.append(
        owner, {"type": "space.created", "kind": "direct", "members": [maya.participant_id]}
    )
    dm = (await api.read(owner, since=seq - 1, limit=1))[0]["space_id"]
    await api.say(maya, dm, "between us")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(dm)
    page = arjun.page
    dialog = page.get_by_role("dialog")
    await page.get_by_test_id("room-actions").click()
    await page.get_by_role("menuitem", name="Delete…").click()
    await expect(dialog).to_contain_text("archived rather than deleted")
    await expect(dialog).not_to_contain_text("cannot be undone")
    await dialog.get_by_role("button", name="Archive the room").click()
    await expect(page.get_by_text("This room is archived.")).to_be_visible()
    assert (await api.sheet(owner, dm))["state"] == "closed"
    assert "between us" in [e.get("text") for e in await api.read(maya, space_id=dm)]
    # Archived, it is offered no Delete: there is nothing more it could do.
    await page.get_by_test_id("room-actions").click()
    await expect(page.get_by_role("menuitem", name="Rename…")).to_be_visible()
    await expect(page.get_by_role("menuitem", name="Delete…")).to_have_count(0)


# --- files, search, and who a message is for ---------------------------------------------


def png(width: int = 48, height: int = 32, colour: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    out = BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "PNG")
    return out.getvalue()


async def test_a_photo_and_a_file_posted_from_the_composer_reach_the_others(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """docs/product/messages.md, Attachments: the client asks for an upload slot and sends the
    bytes, the message names the uploads; a photo renders inline, anything else is a
    download; a file over its kind's cap is refused at the chip, before a byte of it is
    uploaded, with the sentence the server would have used. docs/product/websocket.md: the room's
    Files list them for anybody in the room."""
    owner = await api.create_workspace(owner="Arjun Rao")
    bea = await api.add_person(owner, "Bea Lund")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await room_with(api, owner, "Shop floor", bea, scout)
    await api.append(owner, {"type": "attachment.caps_set", "files_bytes": 2_000})
    harness = await harness_socket(stack, scout)
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    page = arjun.page
    attach = page.get_by_role("button", name="Attach files")
    await expect(attach).to_be_visible()
    files = page.get_by_test_id("file-input")
    tray = page.get_by_test_id("tray")
    # Over the files' cap: refused in the tray with the server's sentence, nothing sent.
    await files.set_input_files(
        files=[{"name": "big.txt", "mimeType": "text/plain", "buffer": b"x" * 5_000}]
    )
    await expect(tray.get_by_role("alert")).to_have_text(
        "Files here are capped at 2 KB, and this one is 5 KB."
    )
    await tray.get_by_role("button", name="Take big.txt off").click()
    await expect(tray).to_have_count(0)
    photo = png()
    await files.set_input_files(
        files=[
            {"name": "machine.png", "mimeType": "image/png", "buffer": photo},
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"torque 12 Nm\n"},
        ]
    )
    await expect(tray.locator("li").filter(has_text="machine.png")).to_contain_text("ready")
    await expect(tray.locator("li").filter(has_text="notes.txt")).to_contain_text("ready")
    await arjun.say("The press, and my notes")
    line = arjun.line("The press, and my notes")
    image = line.get_by_test_id("photo")
    await expect(image).to_have_attribute("alt", "machine.png")
    await expect(image).to_have_js_property("naturalWidth", 48)
    await expect(line.get_by_role("link", name=re.compile("^Download notes.txt"))).to_be_visible()
    await expect(tray).to_have_count(0)
    await arjun.shot("attachments")

    # The harness is handed both files, each with a link of its own.
    heard = await harness.wait_for(
        lambda f: (
            f["frame"] == "event"
            and f["event"]["type"] == "message.new"
            and f["event"].get("text") == "The press, and my notes"
        )
    )
    names = [(a["name"], a["kind"]) for a in heard["event"]["attachments"]]
    assert names == [("machine.png", "photo"), ("notes.txt", "file")]
    async with httpx.AsyncClient() as http:
        got = await http.get(heard["event"]["attachments"][1]["url"])
    assert got.status_code == 200 and got.content == b"torque 12 Nm\n"

    # Another person's browser draws the photo too, read back from the room's lines.
    # (bypass_csp only so that axe-core can be put into the page; Arjun's page above ran
    # under the app's policy, and loaded the photo through it.)
    other = await sign_in(browser, stack.gateway_b, bea, bypass_csp=True)
    await other.open_room(room)
    theirs = other.line("The press, and my notes").get_by_test_id("photo")
    await expect(theirs).to_have_js_property("naturalWidth", 48)
    assert await axe_violations(other.page) == []
    # The room's Files, in its sheet: the current version of each, newest first.
    await other.page.get_by_test_id("room-name").click()
    listed = other.page.get_by_role("dialog").get_by_test_id("room-files")
    await expect(listed.locator("li")).to_have_count(2)
    await expect(listed).to_contain_text("machine.png")
    await expect(listed).to_contain_text("notes.txt")
    await expect(listed).to_contain_text("Arjun Rao")
    await other.shot("room-files")
    assert await axe_violations(other.page) == []
    await other.page.get_by_role("dialog").get_by_role("button", name="Close").click()
    # A photo with no words, the other way: Arjun's room draws it live.
    await other.page.get_by_test_id("file-input").set_input_files(
        files=[{"name": "gauge.png", "mimeType": "image/png", "buffer": png(30, 60, (20, 90, 200))}]
    )
    await expect(other.page.get_by_test_id("tray")).to_contain_text("ready")
    await other.page.get_by_role("button", name="Send").click()
    gauge = page.get_by_role("img", name="gauge.png")
    await expect(gauge).to_have_js_property("naturalWidth", 30)
    assert arjun.csp_errors() == []
    await harness.close()


async def test_search_as_typed_marks_the_match_and_opens_the_room_at_the_line(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """docs/product/messages.md, Search: every word is required and the last is a prefix, so a
    search narrows as it is typed; a hit carries a snippet with the match marked, and
    opens the room at the line."""
    owner = await api.create_workspace(owner="Arjun Rao")
    room = await room_with(api, owner, "Accounts")
    await api.say(owner, room, "The invoice from Acme is late again")
    for n in range(60):  # the line is far older than the newest page the room reads first
        await api.say(owner, room, f"filler {n}")
    last = await api.say(owner, room, "an invoice from Globex")
    await api.lines(owner, room, after_seq=last)
    arjun = await sign_in(browser, stack.gateway_a, owner)
    page = arjun.page
    search = page.get_by_role("searchbox", name="Search messages")
    await search.press_sequentially("invoice ac", delay=30)
    hits = page.get_by_test_id("hit")
    await expect(hits).to_have_count(1)
    await expect(hits.first.locator("mark")).to_have_text(["invoice", "Acme"])
    await expect(hits.first).to_contain_text("Accounts")
    await arjun.shot("search")
    # One word fewer finds both, newest first.
    await search.fill("invoice")
    await expect(hits).to_have_count(2)
    await expect(hits.first).to_contain_text("Globex")
    await search.fill("invoice acm")
    await expect(hits).to_have_count(1)
    await hits.first.click()
    found = page.locator('[data-testid="line"][aria-current="true"]')
    await expect(found).to_contain_text("The invoice from Acme is late again")
    await expect(found).to_be_in_viewport()
    await arjun.shot("search-opened")
    await search.fill("zebra")
    await expect(page.get_by_test_id("hits")).to_contain_text("Nothing found.")


async def test_the_composer_says_and_picks_who_a_message_is_for(
    stack: Stack, api: Api, browser: Browser
) -> None:
    """docs/product/spaces.md, Several harnesses and people in one space: the faces at the front of
    the field say where the next message goes, the empty field says it in words (Message
    Everyone), a tap opens a list that picks a harness or Everyone, and the pick goes with
    the message as to; the room draws the route over a message whose address changed."""
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await room_with(api, owner, "Crew", scout, ledger)
    s_sock = await harness_socket(stack, scout)
    l_sock = await harness_socket(stack, ledger)
    # bypass_csp only so that axe-core can be put into the page (as on the phone, below).
    arjun = await sign_in(browser, stack.gateway_a, owner, bypass_csp=True)
    await arjun.open_room(room)
    page = arjun.page
    to = page.get_by_test_id("to")
    await expect(to).to_contain_text("Everyone")
    # It says "To" and the names, not their first letters ("S L"), and says agents.
    await expect(to).to_have_text(re.compile(r"^To\s+Everyone$"))
    await expect(page.get_by_test_id("composer")).to_have_attribute(
        "placeholder", "Message Everyone"
    )
    await arjun.say("morning, both of you")
    for sock in (s_sock, l_sock):
        await sock.wait_for(
            lambda f: f["frame"] == "event" and f["event"].get("text") == "morning, both of you"
        )
    await to.click()
    choices = page.get_by_role("menu", name="Who the message is for")
    await expect(
        choices.get_by_role("menuitemradio", name=re.compile("^Everyone"))
    ).to_have_attribute("aria-checked", "true")
    assert await axe_violations(page) == []
    await choices.get_by_role("menuitemradio", name=re.compile("^Ledger")).click()
    await expect(to).to_contain_text("Ledger")
    # Ledger's agent in this room, numbered: its first is in its direct room (ADR 0154).
    await expect(page.get_by_test_id("composer")).to_have_attribute(
        "placeholder", "Message Ledger 2"
    )
    await arjun.say("what is the total?")
    heard = await l_sock.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("text") == "what is the total?"
    )
    assert heard["event"]["type"] == "message.new"
    assert heard["event"]["to"] == [ledger.participant_id]
    assert heard["event"]["addressed_to"] == [ledger.participant_id]
    overheard = await s_sock.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("text") == "what is the total?"
    )
    assert overheard["event"]["type"] == "message.overheard"
    route = arjun.line("what is the total?").get_by_test_id("route")
    await expect(route).to_have_text("You → Ledger 2")  # Ledger's agent here (ADR 0154)
    await expect(arjun.line("morning, both of you").get_by_test_id("route")).to_have_count(0)
    await arjun.shot("to-picker")
    # Read back after a reload, the room draws the same route, and the field says where
    # the next message goes: where the last one went.
    await page.reload()
    await arjun.open_room(room)
    await expect(arjun.line("what is the total?").get_by_test_id("route")).to_have_text(
        "You → Ledger 2"
    )
    await expect(page.get_by_test_id("to")).to_contain_text("Ledger")
    # From the keyboard: the menu opens on the choice that stands, Escape closes it.
    await page.get_by_test_id("to").press("Enter")
    menu = page.get_by_role("menu", name="Who the message is for")
    await expect(menu.get_by_role("menuitemradio", name=re.compile("^Ledger"))).to_be_focused()
    await expect(menu).to_contain_text("only this agent takes a turn")
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("Escape")
    await expect(menu).to_have_count(0)
    # On a phone too the field reads "To Ledger 2" (its agent here), not a letter in a circle.
    phone = await sign_in(browser, stack.gateway_a, owner, viewport=PHONE)
    await phone.open_room(room)
    await expect(phone.page.get_by_test_id("to")).to_have_text(re.compile(r"^To\s+Ledger 2$"))
    await expect(phone.page.get_by_test_id("to").locator(".to-words")).to_be_visible()
    await s_sock.close()
    await l_sock.close()


# --- the message kinds as cards, on a phone; accessibility -------------------------------

CARDS: dict[str, dict[str, Any]] = {
    "status": {"phase": "working", "verb": "Reading the PO", "progress": 0.5},
    "approval": {"action": "send_po", "preview": "PO 4471", "risk": "high"},
    "question": {"prompt": "Which supplier?", "options": [{"label": "Acme", "value": "a"}]},
    "receipt": {"steps": [{"title": "Read the PO", "status": "done"}], "cost_usd": 0.12},
    "artifact": {"name": "po.csv", "form": "table", "version": 2},
    "checkpoint": {"milestone": "PO drafted", "next": "Send it"},
    "summary": {"outcome": "PO sent", "follow_ups": ["Chase Friday"]},
}


async def axe_violations(page: Page) -> list[dict[str, Any]]:
    """Serious and critical axe-core violations on the page as it stands."""
    await page.evaluate(AXE.read_text())
    result = await page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result
        if v["impact"] in ("serious", "critical")
    ]


async def test_the_kinds_as_cards_on_a_phone_with_no_serious_accessibility_violations(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await room_with(api, owner, "Purchasing", scout, ledger)
    for kind, card in CARDS.items():
        await api.append(
            scout, {"type": "message.post", "space_id": room, "kind": kind, kind: card}
        )
    await api.append(
        scout,
        {
            "type": "message.post",
            "space_id": room,
            "kind": "handoff",
            "handoff": {"recipient": ledger.participant_id, "summary": "PO drafted"},
        },
    )
    await api.append(
        owner,
        {"type": "message.post", "space_id": room, "kind": "task", "task": {"goal": "Buy paper"}},
    )
    await api.say(owner, room, "Thanks @Scout, see https://example.org")
    run = key("run_web")
    await api.append(scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "Buy"})
    await api.append(
        scout,
        {"type": "approval.request", "approval_id": key("perm"), "run_id": run, "action": "pay"},
    )
    # bypass_csp only so that axe-core can be put into the page; every other test runs
    # the app under its Content-Security-Policy.
    phone = await sign_in(browser, stack.gateway_a, owner, viewport=PHONE, bypass_csp=True)
    page = phone.page
    await expect(page.locator(f'a[data-space="{room}"]')).to_be_visible()
    await phone.shot("rooms-phone")
    assert await axe_violations(page) == []
    await phone.open_room(room)
    for kind in (*CARDS, "handoff", "task"):
        await expect(page.locator(f'[data-kind="{kind}"]').first).to_be_visible()
    await expect(page.locator('[data-kind="handoff"]')).to_contain_text("Hand-off to Ledger")
    await expect(page.get_by_test_id("approval")).to_contain_text("pay")
    await phone.shot("cards-phone")
    assert await axe_violations(page) == []
    await page.get_by_test_id("room-name").click()
    await expect(page.get_by_role("dialog")).to_be_visible()
    assert await axe_violations(page) == []
    await page.get_by_role("dialog").get_by_role("button", name="Close").click()
    # The composer's pickers: @ offers the room's members, / the commands.
    composer = page.get_by_test_id("composer")
    await composer.fill("@le")
    await composer.press("End")
    await expect(page.get_by_role("option").first).to_contain_text("Ledger")
    await composer.press("Enter")
    await expect(composer).to_have_value("@Ledger2 ")  # its agent here (docs/adr/0154)
    # The pick puts the caret after the name on the next frame; typing before that frame
    # had its selection collapsed under it (fill's select-all), so "/arc" was appended.
    await page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done(null)))")
    await composer.fill("/arc")
    await composer.press("End")
    await expect(page.get_by_role("option").first).to_contain_text("/archive")
    await phone.shot("composer-phone")
    signed_out = await browser.new_page(bypass_csp=True, viewport=PHONE)
    await signed_out.goto(stack.gateway_a + "/")
    await first_screen(signed_out)
    assert await axe_violations(signed_out) == []


async def test_the_gateway_serves_the_app_with_its_policy(stack: Stack, api: Api) -> None:
    index = await api.http.get("/")
    assert index.status_code == 200 and '<div id="app">' in index.text
    policy = index.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    asset = re.search(r'src="(/assets/[^"]+\.js)"', index.text)
    assert asset is not None
    js = await api.http.get(asset.group(1))
    assert js.status_code == 200 and "immutable" in js.headers["cache-control"]
    missing = await api.http.get("/v1/no-such-thing")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert (await api.http.get("/healthz")).json()["web"] == "built"


# --- a reconnect after the gateway is killed loses nothing -------------------------------


async def test_a_reconnect_after_the_gateway_is_killed_loses_nothing(
    stack: Stack, api_b: Api, browser: Browser
) -> None:
    owner = await api_b.create_workspace(owner="Arjun Rao")
    scout, direct = await api_b.connect_harness(owner, "Scout")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(direct)
    await api_b.append(scout, {"type": "message.post", "space_id": direct, "text": "before 0"})
    await expect(arjun.line("before 0")).to_be_visible()
    page = arjun.page

    stack.kill("gateway_a")
    try:
        await expect(page.get_by_test_id("reconnecting")).to_be_visible()
        await arjun.shot("reconnecting")
        for n in range(1, 4):
            await api_b.append(
                scout, {"type": "message.post", "space_id": direct, "text": f"away {n}"}
            )
        await arjun.say("typed while away")
        await expect(arjun.line("typed while away")).to_contain_text("sending…")
    finally:
        stack.start("gateway_a")
        stack.wait_ready("gateway_a")
    await expect(page.get_by_test_id("reconnecting")).to_have_count(0)
    for n in range(1, 4):
        await expect(arjun.lines(f"away {n}")).to_have_count(1)
    await expect(arjun.lines("typed while away")).to_have_count(1)
    await expect(arjun.line("typed while away")).not_to_contain_text("sending…")
    # Once more, live, after the reconnect: nothing repeats, nothing is missing.
    await api_b.append(scout, {"type": "message.post", "space_id": direct, "text": "after 1"})
    await expect(arjun.lines("after 1")).to_have_count(1)
    texts = [
        ln.strip() for ln in await page.locator('[data-testid="line"] .bubble').all_inner_texts()
    ]
    assert texts == ["before 0", "away 1", "away 2", "away 3", "typed while away", "after 1"]
    logged = [ln["text"] for ln in await api_b.lines(owner, direct) if ln["kind"] == "text"]
    assert logged == texts, json.dumps(logged)


# --- the two reads the app added to the API ------------------------------------------------


async def test_lines_read_back_with_before_and_the_list_holds_threads(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    room = await room_with(api, owner, "Launch")
    seqs = [await api.say(owner, room, f"n{n}") for n in range(5)]
    head = (await api.lines(owner, room, after_seq=seqs[-1]))[-1]["seq"]
    page = await api.http.get(
        f"/v1/spaces/{room}/messages",
        params={"before": seqs[3], "limit": 2},
        headers=api.auth(owner),
    )
    assert [ln["text"] for ln in page.json()["messages"]] == ["n1", "n2"]
    newest = await api.http.get(
        f"/v1/spaces/{room}/messages",
        params={"before": head + 1, "limit": 2},
        headers=api.auth(owner),
    )
    assert [ln["text"] for ln in newest.json()["messages"]] == ["n3", "n4"]

    root = next(ln for ln in await api.lines(owner, room) if ln["text"] == "n0")
    opened = await api.append(
        owner,
        {
            "type": "space.created",
            "kind": "thread",
            "parent_space_id": room,
            "root_message_id": root["id"],
        },
    )
    plain = await api.spaces(owner, after_seq=opened)
    assert all(s["kind"] != "thread" for s in plain["spaces"])
    listed = await api.http.get(
        "/v1/spaces", params={"after_seq": opened, "threads": "true"}, headers=api.auth(owner)
    )
    threads = [s for s in listed.json()["spaces"] if s["kind"] == "thread"]
    assert [(t["parent_space_id"], t["root_message_id"]) for t in threads] == [(room, root["id"])]
    # A thread is named by the words it was opened on; a room has none.
    assert threads[0]["root_text"] == "n0"
    assert all(s["root_text"] is None for s in listed.json()["spaces"] if s["kind"] != "thread")
    # Somebody in no room of it is told of no thread.
    other = await api.http.get("/v1/spaces", params={"threads": "true"}, headers=api.auth(maya))
    assert other.json()["spaces"] == []


async def test_the_app_has_an_icon_and_favicon_ico_answers_it(
    stack: Stack, api: Api, built_app: None
) -> None:
    index = await api.http.get("/")
    assert '<link rel="icon" href="/favicon.svg" type="image/svg+xml"' in index.text
    svg = await api.http.get("/favicon.svg")
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    assert svg.text.startswith("<svg")
    # The browser's own guess, whatever the page links.
    ico = await api.http.get("/favicon.ico")
    assert ico.status_code == 200 and ico.headers["content-type"] == "image/svg+xml"
    assert ico.content == svg.content
