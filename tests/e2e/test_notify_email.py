"""Email of what waits for a person (docs/notifications.md; docs/adr/0132).

The stack's notifier mails two seconds after a notification (CHIPS_NOTIFY_EMAIL_DELAY_SECONDS
in conftest.py) to a real SMTP server the test runs on 127.0.0.1. With the app closed, an
approval arrives as one email after the delay, with a link that opens its line; approved
before the delay ran out, it is not mailed at all. "Not at all" is shown by a later
approval's email, which the sender takes in a later round than the first's would be.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, key
from tests.e2e.smtp_box import Box, Received, smtp_port
from tests.e2e.test_agents_given import given_agents

ADDRESS = "olive@example.test"


@pytest.fixture(scope="module")
def box(stack: Stack) -> Iterator[Box]:
    started = Box(smtp_port(stack)).start()
    yield started
    started.stop()


@dataclass
class Desk:
    olive: Identity
    harness: Identity
    room: str
    run: str


@pytest.fixture
async def desk(api: Api) -> Desk:
    olive = await api.create_workspace(owner="Olive")
    r = await api.http.put(
        "/v1/notification-preferences", json={"email_address": ADDRESS}, headers=api.auth(olive)
    )
    assert r.status_code == 200 and r.json()["email"] == "delayed", r.text
    harness, _ = await api.connect_harness(olive, "Ledger")
    room = await api.open_space(olive, "Payments", members=[harness.participant_id])
    run = key("run_e")
    await api.append(
        harness, {"type": "run.started", "run_id": run, "space_id": room, "goal": "pay"}
    )
    return Desk(olive, harness, room, run)


async def ask(api: Api, desk: Desk, action: str) -> tuple[str, int]:
    approval = key("apv")
    seq = await api.append(
        desk.harness,
        {"type": "approval.request", "approval_id": approval, "run_id": desk.run, "action": action},
    )
    return approval, seq


def about(action: str) -> object:
    return lambda r: action in r.text and ADDRESS in r.to


async def test_an_approval_is_mailed_once_after_the_delay(api: Api, box: Box, desk: Desk) -> None:
    action = f"pay.{key('a')}"
    asked_at = time.monotonic()
    _, seq = await ask(api, desk, action)
    mailed: Received = await box.wait_for(about(action))  # type: ignore[arg-type]
    assert mailed.at - asked_at >= 1.5, "mailed before the delay ran out"
    # Asked by the agent Chips gave Ledger in the room, named after it and numbered, as
    # people see it there (docs/adr/0154): its first agent is in its direct room.
    given = await given_agents(api, desk.olive, desk.harness)
    assert given[desk.room]["name"] == "Ledger 2"
    assert mailed.message["Subject"] == "Ledger 2 asks for your approval in Payments"
    assert f"/#/room/{desk.room}/at/{seq}" in mailed.text
    assert mailed.message["Message-ID"].startswith("<ntf_")
    # A later approval's email comes; the first was still sent only once.
    later = f"pay.{key('b')}"
    await ask(api, desk, later)
    await box.wait_for(about(later))  # type: ignore[arg-type]
    assert len(box.matching(about(action))) == 1  # type: ignore[arg-type]


async def test_approved_before_the_delay_it_is_not_mailed(api: Api, box: Box, desk: Desk) -> None:
    action = f"pay.{key('c')}"
    approval, _ = await ask(api, desk, action)
    await api.append(
        desk.olive, {"type": "approval.resolved", "approval_id": approval, "decision": "approve"}
    )
    # Two later approvals, each mailed: the second is asked once the first's email came,
    # so it is taken in a later round of the sender than the approved one would have been.
    for name in ("d", "e"):
        later = f"pay.{key(name)}"
        await ask(api, desk, later)
        await box.wait_for(about(later))  # type: ignore[arg-type]
    assert box.matching(about(action)) == []  # type: ignore[arg-type]


async def test_read_in_the_app_it_is_not_mailed(api: Api, box: Box, desk: Desk) -> None:
    action = f"pay.{key('f')}"
    _, seq = await ask(api, desk, action)
    r = await api.http.get(
        "/v1/notifications", params={"after_seq": seq}, headers=api.auth(desk.olive)
    )
    (seen,) = [n for n in r.json()["notifications"] if action in n["body"]]
    r = await api.http.post(
        "/v1/notifications/read", json={"ids": [seen["id"]]}, headers=api.auth(desk.olive)
    )
    assert r.status_code == 200, r.text
    for name in ("g", "h"):
        later = f"pay.{key(name)}"
        await ask(api, desk, later)
        await box.wait_for(about(later))  # type: ignore[arg-type]
    assert box.matching(about(action)) == []  # type: ignore[arg-type]


async def test_an_smtp_server_that_is_down_is_tried_again(
    api: Api, stack: Stack, box: Box, desk: Desk
) -> None:
    """A server that drops every connection: the notifier tries, fails, and tries again
    once it is back; the inbox never waits on it."""
    box.stop()
    tries = 0

    async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal tries
        tries += 1
        writer.close()

    down = await asyncio.start_server(hang_up, "127.0.0.1", smtp_port(stack))
    try:
        action = f"pay.{key('i')}"
        _, seq = await ask(api, desk, action)
        r = await api.http.get(
            "/v1/notifications", params={"after_seq": seq}, headers=api.auth(desk.olive)
        )
        assert any(action in n["body"] for n in r.json()["notifications"])
        deadline = time.monotonic() + 60
        while tries == 0:
            assert time.monotonic() < deadline, "the notifier never tried to mail"
            await asyncio.sleep(0.05)
    finally:
        down.close()
        await down.wait_closed()
        box.start()
    mailed = await box.wait_for(about(action), timeout=90)  # type: ignore[arg-type]
    assert f"/at/{seq}" in mailed.text
    later = f"pay.{key('j')}"
    await ask(api, desk, later)
    await box.wait_for(about(later), timeout=90)  # type: ignore[arg-type]
    assert len(box.matching(about(action))) == 1  # type: ignore[arg-type]
