"""A change's answers wait for every gateway's reply to its notice, and no longer than the
cap (docs/adr/0172)."""

from __future__ import annotations

import asyncio

from chips_common.nats.streams import Names
from chips_eventlog import metrics
from chips_eventlog.heard import Heard, Waiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def heard_with(*gateways: str, cap: float = 2.0) -> Heard:
    heard = Heard(None, Names("CHIPS", "chips", 1), cap=cap, clock=Clock())  # type: ignore[arg-type]
    heard.inbox = "_INBOX.test"
    for gateway in gateways:
        heard.listeners.heard(gateway, 0.0)
    return heard


def unconfirmed_count() -> float:
    return metrics.PRINCIPALS_UNCONFIRMED._value.get()


def test_before_start_nothing_is_waited_for() -> None:
    heard = heard_with("gw_a")
    heard.inbox = ""
    assert heard.ask() == ("", None)


def test_a_notice_with_no_gateway_known_waits_for_nothing() -> None:
    heard = heard_with()
    reply, waiter = heard.ask()
    assert waiter is not None and waiter.done.is_set()
    assert reply == "_INBOX.test.1"


def test_each_notice_has_its_own_reply_subject() -> None:
    heard = heard_with("gw_a")
    assert heard.ask()[0] != heard.ask()[0]


def test_a_waiter_is_done_once_every_expected_gateway_replied() -> None:
    waiter = Waiter(frozenset({"gw_a", "gw_b"}))
    waiter.reply("gw_a")
    waiter.reply("gw_new")  # one that started since: not waited for, welcome
    assert not waiter.done.is_set()
    waiter.reply("gw_b")
    assert waiter.done.is_set()


async def test_the_answers_wait_for_the_replies() -> None:
    heard = heard_with("gw_a", "gw_b")
    asked = [heard.ask() for _ in range(2)]
    waited = asyncio.create_task(heard.wait(asked))  # type: ignore[arg-type]
    for _, waiter in asked:
        waiter.reply("gw_a")  # type: ignore[union-attr]
    await asyncio.sleep(0)
    assert not waited.done()
    before = unconfirmed_count()
    for _, waiter in asked:
        waiter.reply("gw_b")  # type: ignore[union-attr]
    await waited
    assert unconfirmed_count() == before
    assert heard.waiting == {}


async def test_a_silent_gateway_holds_the_answers_for_the_cap_and_is_counted() -> None:
    heard = Heard(None, Names("CHIPS", "chips", 1), cap=0.05)  # type: ignore[arg-type]
    heard.inbox = "_INBOX.test"
    heard.listeners.heard("gw_a", heard.clock())
    heard.listeners.heard("gw_silent", heard.clock())
    reply, waiter = heard.ask()
    assert waiter is not None
    waiter.reply("gw_a")
    before = unconfirmed_count()
    await heard.wait([(reply, waiter)])
    assert unconfirmed_count() == before + 1
    assert heard.waiting == {}
    # Not waited for again until it is heard from.
    assert heard.ask()[1].expected == {"gw_a"}  # type: ignore[union-attr]
    heard.listeners.heard("gw_silent", heard.clock())
    assert heard.ask()[1].expected == {"gw_a", "gw_silent"}  # type: ignore[union-attr]
