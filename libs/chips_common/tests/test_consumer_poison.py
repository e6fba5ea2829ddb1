"""A consumer's failing workspace: tried again alone with a growing delay, and its poison
event set aside on the dead-letter stream once its cap is reached (docs/adr/0148)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import psycopg
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from chips_common.nats.streams import Names
from chips_common.service import poison
from chips_common.service.consumer import settle_batch, settle_together
from chips_common.service.poison import DeadLetter, FoldFailed, Limits, Retry, decide, folding

LIMITS = Limits(max_attempts=4, give_up_seconds=60, first_delay_seconds=0.1, max_delay_seconds=1)


def test_a_named_event_is_tried_again_with_a_doubling_delay_until_its_cap() -> None:
    assert [decide(LIMITS, n, 0, named=True) for n in (1, 2, 3)] == [
        Retry(0.1),
        Retry(0.2),
        Retry(0.4),
    ]
    verdict = decide(LIMITS, 4, 0, named=True)
    assert isinstance(verdict, DeadLetter) and "4 deliveries" in verdict.reason


def test_a_named_event_failing_past_the_time_cap_is_set_aside_early() -> None:
    verdict = decide(LIMITS, 2, 61.5, named=True)
    assert isinstance(verdict, DeadLetter) and "61.5 s" in verdict.reason


def test_the_delay_stops_growing_at_its_max() -> None:
    assert decide(LIMITS, 9, 0, named=False) == Retry(1.0)
    assert poison.backoff(LIMITS, 10_000) == 1.0


def test_a_failure_naming_no_event_is_never_set_aside() -> None:
    """Postgres away, or a write of the whole batch: nothing says which event is at fault."""
    assert decide(LIMITS, 19, 10_000, named=False) == Retry(1.0)


def test_after_an_event_set_aside_the_next_counts_from_there() -> None:
    """The prompt's count is the workspace's: the next event to fail was reached only
    when the one before it was set aside."""
    assert poison.tries(6, 40.0, None, now=100.0) == (6, 40.0)
    aside = poison.Aside(delivered=4, at=90.0)
    assert poison.tries(4, 30.0, aside, now=90.5) == (0, 0.5)
    assert poison.tries(6, 40.0, aside, now=100.0) == (2, 10.0)
    # A prompt handed out fewer times than then is a new one: its own count.
    assert poison.tries(2, 1.0, aside, now=100.0) == (2, 1.0)


def test_folding_names_the_event_its_fold_failed_on() -> None:
    event = {"workspace_id": "ws_a", "seq": 7, "type": "message.post", "space_id": "sp_1"}
    with pytest.raises(FoldFailed) as caught, folding(event):
        raise KeyError("text")
    assert (caught.value.workspace_id, caught.value.seq) == ("ws_a", 7)
    assert caught.value.event_type == "message.post"
    assert isinstance(caught.value.__cause__, KeyError)


def test_postgres_away_is_not_the_event_s_fault() -> None:
    event = {"workspace_id": "ws_a", "seq": 7, "type": "message.post"}
    with pytest.raises(psycopg.OperationalError), folding(event):
        raise psycopg.OperationalError("the server closed the connection")


def test_the_test_hook_fails_every_event_of_its_space_only() -> None:
    poison.arm_test_hook("sp_bad")
    try:
        with (
            pytest.raises(FoldFailed),
            folding({"workspace_id": "w", "seq": 1, "space_id": "sp_bad"}),
        ):
            raise AssertionError("the event's fold does not run")
        ran = []
        with folding({"workspace_id": "w", "seq": 2, "space_id": "sp_ok"}):
            ran.append(2)
        assert ran == [2]
    finally:
        poison.arm_test_hook("")


class FakeMsg:
    """A JetStream message as settling reads it: its delivery count and stream time."""

    def __init__(self, workspace_id: str, seq: int, delivered: int = 1, age: float = 0) -> None:
        body = {"workspace_id": workspace_id, "seq": seq, "type": "message.post"}
        self.data = json.dumps(body).encode()
        self.headers: dict[str, str] = {}
        self.subject = f"chips.events.{workspace_id}"
        self.metadata = SimpleNamespace(
            num_delivered=delivered, timestamp=datetime.now(UTC) - timedelta(seconds=age)
        )
        self.settled: tuple[str, float | None] | None = None

    async def ack(self) -> None:
        self.settled = ("ack", None)

    async def nak(self, delay: float | None = None) -> None:
        self.settled = ("nak", delay)

    async def term(self) -> None:
        self.settled = ("term", None)


class FakeNats:
    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, Any], dict[str, str]]] = []

    async def publish(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        self.published.append((subject, json.loads(data), headers))


class Log:
    """A log of events per workspace, folded from a checkpoint; some events are poison."""

    def __init__(self, heads: dict[str, int], *bad: tuple[str, int]) -> None:
        self.heads, self.bad = heads, set(bad)
        self.checkpoints = dict.fromkeys(heads, 0)

    def fold(self, workspace_id: str) -> None:
        reached = self.checkpoints[workspace_id]
        for seq in range(reached + 1, self.heads[workspace_id] + 1):
            event = {"workspace_id": workspace_id, "seq": seq, "type": "message.post"}
            if poison.set_aside(event):
                continue
            with folding(event):
                if (workspace_id, seq) in self.bad:
                    raise ValueError("a body this fold cannot take")
        self.checkpoints[workspace_id] = self.heads[workspace_id]  # committed

    async def together(self, highest: Mapping[str, int]) -> None:
        start = dict(self.checkpoints)
        try:
            for workspace_id in highest:
                self.fold(workspace_id)
        except Exception:
            self.checkpoints = start  # one transaction: rolled back
            raise


NAMES = Names("CHIPS", "chips")


async def test_together_a_failing_workspace_is_tried_alone_and_the_others_commit() -> None:
    log = Log({"ws_a": 3, "ws_b": 2}, ("ws_a", 2))
    msgs: list[Any] = [FakeMsg("ws_a", 3), FakeMsg("ws_b", 2)]
    nc = FakeNats()
    await settle_together(
        cast(NATS, nc), NAMES, cast(list[Msg], msgs), log.together, "test", limits=LIMITS
    )
    assert log.checkpoints == {"ws_a": 0, "ws_b": 2}
    assert [m.settled for m in msgs] == [("nak", 0.1), ("ack", None)]
    assert nc.published == []


async def test_a_poison_event_at_its_cap_is_dead_lettered_and_its_workspace_goes_on() -> None:
    log = Log({"ws_c": 3, "ws_d": 1}, ("ws_c", 2))
    msgs: list[Any] = [FakeMsg("ws_c", 3, delivered=4), FakeMsg("ws_d", 1)]
    nc = FakeNats()
    await settle_together(
        cast(NATS, nc), NAMES, cast(list[Msg], msgs), log.together, "test", limits=LIMITS
    )
    assert log.checkpoints == {"ws_c": 3, "ws_d": 1}, "read past the poison, to the head"
    assert [m.settled for m in msgs] == [("ack", None), ("ack", None)]
    [(subject, event, headers)] = nc.published
    assert subject == "chips.deadletter"
    assert (event["workspace_id"], event["seq"]) == ("ws_c", 2)
    assert headers["Chips-Deliveries"] == "4" and headers["Chips-Consumer"] == "test"
    assert "ValueError" in headers["Chips-Dead-Reason"]
    assert headers["Chips-Subject"] == "chips.events.ws_c"


async def test_one_at_a_time_a_poison_past_its_time_cap_is_dead_lettered() -> None:
    log = Log({"ws_e": 2, "ws_f": 1}, ("ws_e", 1))
    msgs: list[Any] = [FakeMsg("ws_e", 2, delivered=2, age=90), FakeMsg("ws_f", 1)]
    nc = FakeNats()

    async def handle(workspace_id: str, seq: int) -> None:
        log.fold(workspace_id)

    await settle_batch(cast(NATS, nc), NAMES, cast(list[Msg], msgs), handle, "t", limits=LIMITS)
    assert log.checkpoints == {"ws_e": 2, "ws_f": 1}
    assert [m.settled for m in msgs] == [("ack", None), ("ack", None)]
    assert [(e["workspace_id"], e["seq"]) for _, e, _ in nc.published] == [("ws_e", 1)]
    assert "90" in nc.published[0][2]["Chips-Dead-Reason"]


async def test_one_at_a_time_a_failure_naming_no_event_is_naked_with_its_backoff() -> None:
    msgs: list[Any] = [FakeMsg("ws_g", 5, delivered=3), FakeMsg("ws_h", 1)]
    nc = FakeNats()

    async def handle(workspace_id: str, seq: int) -> None:
        if workspace_id == "ws_g":
            raise RuntimeError("a write of the whole batch failed")

    await settle_batch(cast(NATS, nc), NAMES, cast(list[Msg], msgs), handle, "t", limits=LIMITS)
    assert [m.settled for m in msgs] == [("nak", 0.4), ("ack", None)]
    assert nc.published == []


async def test_a_second_poison_behind_the_first_gets_its_own_tries() -> None:
    log = Log({"ws_i": 4}, ("ws_i", 1), ("ws_i", 3))
    nc = FakeNats()

    async def handle(workspace_id: str, seq: int) -> None:
        log.fold(workspace_id)

    async def deliver(n: int) -> FakeMsg:
        msg = FakeMsg("ws_i", 4, delivered=n)
        await settle_batch(
            cast(NATS, nc), NAMES, cast(list[Msg], [msg]), handle, "t", limits=LIMITS
        )
        return msg

    first = await deliver(4)  # the first poison is at its cap: set aside; the second fails
    assert first.settled == ("nak", 0.1)
    assert [e["seq"] for _, e, _ in nc.published] == [1]
    for n in (5, 6, 7):
        assert (await deliver(n)).settled == ("nak", LIMITS.first_delay_seconds * 2 ** (n - 5))
    last = await deliver(8)  # its own fourth try
    assert last.settled == ("ack", None)
    assert [e["seq"] for _, e, _ in nc.published] == [1, 3]
    assert nc.published[1][2]["Chips-Deliveries"] == "4"
    assert log.checkpoints == {"ws_i": 4}


async def test_together_postgres_away_naks_every_workspace_without_trying_each() -> None:
    calls: list[dict[str, int]] = []

    async def handle(highest: Mapping[str, int]) -> None:
        calls.append(dict(highest))
        raise psycopg.OperationalError("connection refused")

    msgs: list[Any] = [FakeMsg("ws_j", 1, delivered=2), FakeMsg("ws_k", 1, delivered=2)]
    nc = FakeNats()
    await settle_together(cast(NATS, nc), NAMES, cast(list[Msg], msgs), handle, "t", limits=LIMITS)
    assert calls == [{"ws_j": 1, "ws_k": 1}]
    assert [m.settled for m in msgs] == [("nak", 0.2), ("nak", 0.2)]
    assert nc.published == []
