"""The people's app shows agents and the referee (issues #15, #16, #18; docs/adr/0100).

In Debian's chromium against the real stack, as test_web_app.py does: a room's agents paused
by a person or at the spend ceiling draw a banner with Let them carry on, gone live in a
second browser; the room sheet says the job's spend and sets the ceiling; agents are faces
with their harness, moved here when they are elsewhere, copied or made new by their harness
with the room's one-minute wait, and read Restarting… while their harness restarts; words
the referee held say so under them. Harnesses are scripted HTTP and WebSocket clients.
"""

from __future__ import annotations

from typing import Any

from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Identity, Socket, key
from tests.e2e.test_agents_rooms import added, declare, new_agent, register
from tests.e2e.test_web_app import axe_violations, sign_in

# The browser fixtures of the app's own tests: one chromium, the app built once.
built_app = web.built_app
browser = web.browser

# What the room allows a job by default, and the wait for an asked-for agent (spec).
ASK_WAIT_S = 60


def quiet(person: Any, text: str) -> Any:
    return person.page.locator(".system-line", has_text=text)


async def usage(api: Api, harness: Identity, run: str, cost: float) -> None:
    await api.append(
        harness,
        {"type": "usage", "run_id": run, "tokens_in": 10, "tokens_out": 5, "cost_usd": cost},
    )


async def test_a_paused_room_s_banner_goes_live_and_the_sheet_sets_the_ceiling(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [maya.participant_id, scout.participant_id])
    arjun = await sign_in(browser, stack.gateway_a, owner)
    # bypass_csp only so that axe-core can be put into Maya's page (test_web_app.py).
    # Maya is on a phone-sized screen.
    other = await sign_in(browser, stack.gateway_b, maya, viewport=web.PHONE, bypass_csp=True)
    for person in (arjun, other):
        await person.open_room(room)

    # A person pauses the agents: both rooms show the banner and the quiet line.
    await arjun.page.get_by_test_id("room-actions").click()
    await arjun.page.get_by_role("menuitem", name="Pause the agents").click()
    for person in (arjun, other):
        await expect(person.page.get_by_test_id("paused")).to_contain_text(
            "Arjun Rao paused the agents here"
        )
        await expect(quiet(person, "Arjun Rao paused the agents")).to_be_visible()
    # A room opened afresh reads the pause back.
    await other.page.reload()
    await expect(other.page.get_by_test_id("paused")).to_contain_text("Arjun Rao paused")
    assert await axe_violations(other.page) == []
    await other.page.get_by_role("button", name="Let them carry on").click()
    for person in (arjun, other):
        await expect(person.page.get_by_test_id("paused")).to_have_count(0)
        await expect(quiet(person, "Maya Chen let the agents carry on")).to_be_visible()

    # The job spends: a quiet line at 80%, and at the ceiling Chips pauses the room.
    run = "run_web_spend"
    await api.append(
        scout, {"type": "run.started", "run_id": run, "space_id": room, "goal": "the PO"}
    )
    await usage(api, scout, run, 2.5)
    await expect(quiet(arjun, "This job has spent $2.50 of the $3.00")).to_be_visible(
        timeout=30_000
    )
    await usage(api, scout, run, 0.6)
    for person in (arjun, other):
        await expect(person.page.get_by_test_id("paused")).to_contain_text(
            "Chips paused the agents here at the spend ceiling", timeout=30_000
        )
    await expect(
        quiet(arjun, "Chips paused the agents: this job reached the $3.00")
    ).to_be_visible()
    await arjun.shot("room-paused-at-the-ceiling")
    await other.shot("room-paused-at-the-ceiling-phone")

    # The sheet says what the job spent, and sets the ceiling with clear errors.
    page = arjun.page
    await page.get_by_test_id("room-name").click()
    sheet = page.get_by_role("dialog")
    await expect(sheet.get_by_test_id("spend")).to_contain_text("$3.10 of the $3.00")
    field = sheet.get_by_label("Ceiling per job, in dollars")
    for typed, said in (("0.1", "out of range"), ("lots", "is not an amount of dollars")):
        await field.fill(typed)
        await sheet.get_by_role("button", name="Set the ceiling").click()
        await expect(sheet.get_by_test_id("spend-error")).to_contain_text(said)
    await arjun.shot("room-sheet-spend")
    await field.fill("5")
    await field.press("Enter")
    await expect(sheet.get_by_role("status")).to_have_text("The ceiling is $5.00 a job.")
    # Setting it is a person's act: a new job with the whole ceiling, and the pause is over.
    await expect(sheet.get_by_test_id("spend")).to_contain_text("$0.00 of the $5.00")
    for person in (arjun, other):
        await expect(person.page.get_by_test_id("paused")).to_have_count(0)
        await expect(quiet(person, "set this room's spend ceiling to $5.00 a job")).to_be_visible()
    await sheet.get_by_role("button", name="Use the default ($3.00)").click()
    await expect(sheet.get_by_test_id("spend")).to_contain_text("of the $3.00")
    r = await api.http.get(f"/v1/spaces/{room}/spend", headers=api.auth(owner))
    assert (r.json()["ceiling_usd"], r.json()["paused"]) == (3.0, None)
    # Read back, the room draws the referee's lines as it did live.
    await page.reload()
    await expect(arjun.page.get_by_test_id("composer")).to_be_visible()
    for words in (
        "Arjun Rao paused the agents",
        "Maya Chen let the agents carry on",
        "This job has spent $2.50 of the $3.00",
        "Chips paused the agents: this job reached the $3.00",
        "set this room's spend ceiling to $5.00 a job",
        "set this room's spend ceiling back to the default",
    ):
        await expect(quiet(arjun, words)).to_be_visible()
    assert arjun.csp_errors() == []


async def test_agents_are_faces_moved_copied_asked_for_and_restarting(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    await declare(api, owner, scout, "agents", "forks", "new_agents", "restarts")
    j1 = await new_agent(api, scout, "j1", "J1")
    j2 = await new_agent(api, scout, "j2", "J2")
    alpha = await api.open_space(owner, "Alpha", [maya.participant_id])
    beta = await api.open_space(owner, "Beta", [maya.participant_id])
    for agent in (j1, j2):
        await api.append(owner, added(alpha, agent))
    harness = await Socket.open(stack.gateway_a, scout, accepts=["restart"])
    await harness.subscribe(scout.workspace_id)

    arjun = await sign_in(browser, stack.gateway_a, owner)
    other = await sign_in(browser, stack.gateway_b, maya, bypass_csp=True)
    await arjun.open_room(beta)
    page = arjun.page
    await page.get_by_test_id("room-name").click()
    sheet = page.get_by_role("dialog")
    members = sheet.get_by_test_id("members")

    # New: Arjun owns Scout, so he may ask it for an agent here. Scout never makes it.
    await sheet.get_by_label("Name (optional)").fill("Nova")
    await sheet.get_by_role("button", name="Ask for a new agent").click()
    await harness.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "agent.asked", timeout=15
    )

    # An agent in another room is offered to be moved here.
    await sheet.get_by_label("Add").select_option(label="J1 (Scout agent, in Alpha)")
    await sheet.get_by_role("button", name="Add", exact=True).click()
    offer = sheet.get_by_test_id("move-offer")
    await expect(offer).to_contain_text("J1 is in Alpha")
    await offer.get_by_role("button", name="Move J1 here").click()
    await expect(members.locator(f'li[data-participant="{j1}"]')).to_contain_text("Scout agent")
    await expect(offer).to_have_count(0)

    # Or its harness is asked for a copy of it here, and the room waits for it.
    await sheet.get_by_label("Add").select_option(label="J2 (Scout agent, in Alpha)")
    await sheet.get_by_role("button", name="Add", exact=True).click()
    await offer.get_by_role("button", name="Ask Scout for a copy of J2 here").click()
    await sheet.get_by_role("button", name="Close").click()
    asks = page.get_by_test_id("ask")
    await expect(asks.filter(has_text="copy of J2")).to_contain_text("Waiting for Scout")
    await expect(asks.filter(has_text="new agent called Nova")).to_contain_text("Waiting for Scout")
    await harness.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "agent.fork", timeout=15
    )
    copy = await register(api, scout, key="j2-copy", name="J2 copy", forked_from=j2, space_id=beta)
    assert copy.status_code == 201, copy.text
    await expect(asks.filter(has_text="copy of J2")).to_contain_text("J2 copy joined.")
    await arjun.shot("room-agents-asked")

    # The @ picker offers the room's agents with their harness.
    composer = page.get_by_test_id("composer")
    await composer.fill("@J")
    picker = page.get_by_role("listbox")
    await expect(picker).to_contain_text("J1")
    await expect(picker).to_contain_text("Scout agent")
    await composer.fill("")

    # Maya, who neither owns Scout nor runs the workspace, is not offered to ask it.
    await other.open_room(beta)
    await other.page.get_by_test_id("room-name").click()
    her_sheet = other.page.get_by_role("dialog")
    j1_there = her_sheet.get_by_test_id("members").locator(f'li[data-participant="{j1}"]')
    await expect(j1_there).to_contain_text("Scout agent")
    await expect(her_sheet.get_by_role("button", name="Ask for a new agent")).to_have_count(0)
    assert await axe_violations(other.page) == []

    # Restart: every face of Scout reads Restarting… for everybody until it is back.
    await page.get_by_test_id("room-name").click()
    j1_here = members.locator(f'li[data-participant="{j1}"]')
    await j1_here.get_by_role("button", name="Restart Scout").click()
    await harness.wait_for(lambda f: f["frame"] == "restart", timeout=15)
    await expect(j1_here.get_by_test_id("face-status")).to_have_text("Restarting…")
    await expect(j1_there.get_by_test_id("face-status")).to_have_text("Restarting…")
    await arjun.shot("room-sheet-agents-restarting")
    back = await Socket.open(stack.gateway_b, scout, accepts=["restart"])
    for face in (j1_here, j1_there):
        await expect(face.get_by_test_id("face-status")).to_have_count(0)
    await sheet.get_by_role("button", name="Close").click()

    # A minute after the ask, the room says Scout didn't make the new agent.
    await expect(asks.filter(has_text="new agent called Nova")).to_contain_text(
        "Scout didn't make the agent", timeout=(ASK_WAIT_S + 15) * 1000
    )
    # Read back, the asks say the same.
    await page.reload()
    await expect(asks.filter(has_text="copy of J2")).to_contain_text("J2 copy joined.")
    await expect(asks.filter(has_text="new agent called Nova")).to_contain_text("didn't make")
    assert arjun.csp_errors() == []
    for sock in (harness, back):
        await sock.close()


async def test_words_the_referee_held_say_so_until_a_person_speaks(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    room = await api.open_space(owner, "Planning", [scout.participant_id, ledger.participant_id])
    r = await api.post_event(
        owner,
        {"type": "workspace.referee_set", "stop": "never", "hold": 3, "idempotency_key": key()},
    )
    assert r.status_code == 200, r.text
    await api.say(owner, room, "@Scout @Ledger reconcile the PO between you")
    arjun = await sign_in(browser, stack.gateway_a, owner)
    await arjun.open_room(room)
    for i in range(4):  # past the hold of 3: the fourth is held
        await api.say(
            scout if i % 2 == 0 else ledger,
            room,
            f"@{'Ledger' if i % 2 == 0 else 'Scout'} part {i}",
        )
    # What Scout and Ledger say to each other is one row: faces, the count, the latest line.
    # Each harness is given an agent in each room, named after it and numbered once the
    # name is taken: its home holds "Scout", this room "Scout 2" (docs/adr/0154).
    fold = arjun.page.get_by_test_id("fold")
    await expect(fold).to_have_count(1)
    await expect(fold.get_by_role("button")).to_contain_text("Scout 2 ⇄ Ledger 2")
    await expect(fold.get_by_test_id("fold-count")).to_have_text("4 messages")
    await expect(fold.get_by_test_id("fold-latest")).to_have_text("Ledger 2: @Scout part 3")
    await expect(arjun.lines("part 1")).to_have_count(0)  # folded, not in the flow
    note = fold.get_by_test_id("held-note")  # in the margin under the fold
    await expect(note).to_contain_text("have sent each other 4 messages.")
    await expect(note).to_contain_text("They'll pick up when you say something.")
    await arjun.shot("room-held")
    # A tap opens it: every line is there, the held one marked and the note under it.
    await fold.get_by_role("button").click()
    held = arjun.line("part 3")
    await expect(held.get_by_test_id("held")).to_be_visible()
    await expect(arjun.line("part 0")).to_be_visible()
    await expect(arjun.line("part 2").get_by_test_id("held")).to_have_count(0)
    note = held.get_by_test_id("held-note")
    await expect(note).to_contain_text("They'll pick up when you say something.")
    await arjun.say("Carry on, both of you")
    await expect(note).to_contain_text("Arjun Rao's message let them go on.")
    # Read back, the fold and the held line read as they did live.
    await arjun.page.reload()
    fold = arjun.page.get_by_test_id("fold")
    await expect(fold.get_by_test_id("held-note")).to_contain_text(
        "Arjun Rao's message let them go on."
    )
    await fold.get_by_role("button").click()
    await expect(arjun.line("part 3").get_by_test_id("held")).to_be_visible()
    await expect(arjun.line("part 3").get_by_test_id("held-note")).to_contain_text(
        "Arjun Rao's message let them go on."
    )


async def test_a_person_chooses_the_lead_and_the_room_says_what_it_took(
    stack: Stack, api: Api, browser: Browser
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    atlas, _ = await api.connect_harness(owner, "Atlas")
    room = await api.open_space(owner, "Alphabet", [scout.participant_id, atlas.participant_id])
    arjun = await sign_in(browser, stack.gateway_a, owner, bypass_csp=True)
    await arjun.open_room(room)
    page = arjun.page
    facts = page.get_by_test_id("room-facts")
    await expect(facts).not_to_contain_text("leads")

    # The room sheet chooses the lead; the sheet, the room's facts and a quiet line say so.
    # Each harness is given an agent in each room, named after it and numbered once the
    # name is taken: its home holds "Scout", this room "Scout 2" (docs/adr/0154).
    await page.get_by_test_id("room-name").click()
    sheet = page.get_by_role("dialog")
    await sheet.get_by_label("Lead").select_option(label="Atlas 2")
    members = sheet.get_by_test_id("members")
    await expect(members.locator("li").filter(has_text="Atlas 2")).to_contain_text("leads")
    await expect(members.locator("li").filter(has_text="Scout 2")).not_to_contain_text("leads")
    assert await axe_violations(page) == []
    await arjun.shot("room-sheet-lead")
    await sheet.get_by_role("button", name="Close").click()
    await expect(facts).to_contain_text("Atlas 2 leads")
    await expect(quiet(arjun, "Arjun Rao made Atlas 2 the room’s lead")).to_be_visible()

    # Who is working is said while a turn goes.
    await api.append(
        scout, {"type": "run.started", "run_id": "run_draw", "space_id": room, "goal": "A-Z"}
    )
    await api.append(
        scout,
        {
            "type": "step.log",
            "run_id": "run_draw",
            "step_id": "s1",
            "status": "started",
            "title": "Editing ascii-alphabet.html",
        },
    )
    working = page.get_by_test_id("working")
    await expect(working).to_have_text(
        "Working now: Scout 2, less than a minute in (last step: Editing ascii-alphabet.html)",
        timeout=20_000,
    )
    await page.reload()  # read back, too
    await expect(working).to_contain_text("Working now: Scout 2", timeout=20_000)
    await api.append(scout, {"type": "run.completed", "run_id": "run_draw", "summary": "A-Z"})
    await expect(working).to_have_count(0, timeout=20_000)

    # Words that reached nobody go to the lead after the quiet spell: the room says so.
    await api.say(scout, room, "The alphabet is drawn, A to Z.")
    took = quiet(arjun, "Atlas 2 took it as the lead: it was nobody’s turn")
    await expect(took).to_be_visible(timeout=30_000)
    await arjun.shot("room-lead-took-it")
    # Read back, the same.
    await page.reload()
    await expect(took).to_be_visible()
    await expect(facts).to_contain_text("Atlas 2 leads")

    # No lead.
    await page.get_by_test_id("room-name").click()
    await sheet.get_by_label("Lead").select_option(label="No lead")
    await expect(members).not_to_contain_text("leads")
    await sheet.get_by_role("button", name="Close").click()
    await expect(quiet(arjun, "Arjun Rao left the room without a lead")).to_be_visible()
    await expect(facts).not_to_contain_text("leads")
