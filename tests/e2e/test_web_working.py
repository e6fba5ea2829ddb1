"""The room's "Working now" stays while a run is not finished (issue #30: it went away while
runs still waited on an approval): the referee stops counting a turn gone silent and tells
the room it is idle, but a run waiting on a card, or gone quiet, is still going until it
ends. A harness's several runs are said once, with their count ("Scout · 2 runs")."""

from __future__ import annotations

from playwright.async_api import Browser, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api, Socket
from tests.e2e.test_lead import of_type
from tests.e2e.test_web_app import DESKTOP, PHONE, sign_in

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
                "Working now: Scout · 2 runs", timeout=20_000
            )
        # Nothing more is heard: the referee tells the room it is idle. The runs still go.
        await told.wait_for(of_type("room.idle", room), timeout=30)
        for person in (desk, phone):
            working = person.page.get_by_test_id("working")
            await expect(working).to_have_text(
                "Working now: Scout · 2 runs, waiting on an approval"
            )
        await desk.shot("working-waiting")
        # Read back, the same.
        await desk.page.reload()
        await expect(desk.page.get_by_test_id("working")).to_have_text(
            "Working now: Scout · 2 runs, waiting on an approval", timeout=20_000
        )
        # Approved and both runs ended: nothing is working.
        await (
            desk.page.get_by_test_id("approval")
            .get_by_role("button", name="Approve", exact=True)
            .click()
        )
        await expect(desk.page.get_by_test_id("working")).to_have_text(
            "Working now: Scout · 2 runs, still going"
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
