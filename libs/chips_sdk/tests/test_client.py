"""The client's own logic against an in-process stand-in (see conftest.py).

Resume with no gap and no repeat, writes kept until answered and resent with their key,
a withdrawn token stopping the client, refusals raised with their code, and a run
reported from start to end. tests/e2e/test_sdk.py does the same against the real stack.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest

from chips_sdk import Client, InvalidEvent, Unauthorized

pytestmark = pytest.mark.unit


def client_for(*urls: str, **kwargs: Any) -> Client:
    return Client(list(urls), "chips_at_good", tickets=False, backoff=(0.01, 0.05), **kwargs)


async def until(condition: Any, timeout: float = 5) -> None:
    """Poll a condition on what handlers collected (they run as tasks of their own)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the condition never held"
        await asyncio.sleep(0.005)


async def test_resumes_on_the_other_gateway_with_nothing_missed_or_repeated(log, gateways) -> None:
    a, b = gateways
    for i in range(3):
        log.append({"type": "message.post", "space_id": "spc_1", "text": f"before {i}"})
    seen: list[int] = []
    client = client_for(a.url, b.url)

    @client.on("*")
    async def keep(event: dict[str, Any]) -> None:
        seen.append(event["seq"])

    hello = await client.start()
    assert hello["head_seq"] == 3 and client.last_seq == 3  # from now: nothing before
    assert a.received[-1] == {"frame": "subscribe", "workspace_id": "ws_1", "since": 3}
    for i in range(4):
        log.append({"type": "message.post", "space_id": "spc_1", "text": f"live {i}"})
    await until(lambda: len(seen) == 4)

    await a.drop_all()  # the gateway dies; three more events land while the client is away
    for i in range(3):
        log.append({"type": "message.post", "space_id": "spc_1", "text": f"away {i}"})
    await until(lambda: len(seen) == 7)
    assert seen == list(range(4, 11))
    assert client.reconnects == 1 and client.skipped == 0
    assert b.received[-1] == {"frame": "subscribe", "workspace_id": "ws_1", "since": 7}
    await client.close()


async def test_a_seq_sent_twice_is_handed_over_once(log, gateways) -> None:
    a, b = gateways
    b.repeat_on_subscribe = True
    seen: list[int] = []
    client = client_for(a.url, b.url)
    client.on("*")(lambda e: _append(seen, e["seq"]))
    await client.start()
    log.append({"type": "message.post", "space_id": "spc_1", "text": "one"})
    await until(lambda: seen == [1])
    await a.drop_all()
    log.append({"type": "message.post", "space_id": "spc_1", "text": "two"})
    await until(lambda: seen == [1, 2])
    assert client.skipped == 1  # b sent seq 1 again; the client dropped it
    await client.close()


async def _append(seen: list[int], seq: int) -> None:
    seen.append(seq)


async def test_an_unanswered_write_is_sent_again_with_its_key_and_applied_once(
    log, gateways
) -> None:
    a, b = gateways
    client = client_for(a.url, b.url)
    await client.start()
    a.swallow_next_write = True  # a applies it, then dies before answering
    ack = await asyncio.wait_for(client.post("spc_1", "exactly once", idempotency_key="k-once"), 5)
    assert ack["duplicate"] is True and ack["seq"] == 1  # b answered for the same key
    assert [e["text"] for e in log.events] == ["exactly once"]
    assert client.resent == 1
    resent = [f for f in b.received if f["frame"] == "event"]
    assert resent and resent[0]["event"]["idempotency_key"] == "k-once"
    # The write went before the subscribe on the new socket.
    kinds = [f["frame"] for f in b.received]
    assert kinds.index("event") < kinds.index("subscribe")
    await client.close()


async def test_writes_made_while_disconnected_wait_and_go_in_order(log, gateways) -> None:
    a, b = gateways
    client = client_for(a.url, b.url)
    await client.start()
    await a.drop_all()
    acks = await asyncio.wait_for(
        asyncio.gather(*(client.post("spc_1", f"w{i}") for i in range(5))), 5
    )
    assert [x["seq"] for x in acks] == [1, 2, 3, 4, 5]
    assert [e["text"] for e in log.events] == [f"w{i}" for i in range(5)]
    await client.close()


async def test_a_refusal_is_raised_with_its_code(log, gateways) -> None:
    a, _ = gateways
    a.answer = None
    client = client_for(a.url)
    await client.start()

    original = log.write

    def refuse(event: dict[str, Any]) -> dict[str, Any]:
        return {
            "frame": "error",
            "code": "invalid_event",
            "message": "that run has ended",
            "idempotency_key": event["idempotency_key"],
            "field": "run_id",
        }

    log.write = refuse  # type: ignore[method-assign]
    with pytest.raises(InvalidEvent) as refused:
        await asyncio.wait_for(client.send({"type": "run.status", "run_id": "run_1"}), 5)
    assert refused.value.code == "invalid_event" and refused.value.field == "run_id"
    log.write = original  # type: ignore[method-assign]
    await client.close()


async def test_a_withdrawn_token_stops_the_client_instead_of_retrying(log, gateways) -> None:
    a, b = gateways
    client = client_for(a.url, b.url)
    await client.start()
    a.refuse = b.refuse = {"code": "unauthorized", "message": "Scout was disconnected"}
    with pytest.raises(Unauthorized, match="disconnected"):
        await asyncio.wait_for(client.post("spc_1", "hello?"), 5)
    assert client.closed
    with pytest.raises(Unauthorized):
        await client.run_forever()


async def test_a_refused_token_fails_start(gateways) -> None:
    a, _ = gateways
    client = Client(a.url, "chips_at_wrong", tickets=False)
    with pytest.raises(Unauthorized):
        await asyncio.wait_for(client.start(), 5)


async def test_a_run_is_reported_and_waits_for_its_answers(log, gateways) -> None:
    a, _ = gateways

    def decide(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event["type"] == "approval.request":
            return [{"type": "approval.resolved", "approval_id": event["approval_id"],
                     "decision": "approve"}]  # fmt: skip
        if event["type"] == "question.ask":
            return [{"type": "question.answered", "question_id": event["question_id"],
                     "value": "po"}]  # fmt: skip
        return []

    a.answer = decide
    client = client_for(a.url)
    await client.start()
    message = {"type": "message.new", "space_id": "spc_1", "message_id": "msg_1", "text": "Go"}
    async with client.report_run(message, run_id="run_x") as run:
        async with run.step("Read the PO") as step:
            step.summary = "Three lines"
        decided = await asyncio.wait_for(run.ask_approval("shell.execute", preview="ls"), 5)
        answered = await asyncio.wait_for(
            run.ask_question("Which?", [("The PO", "po"), ("The invoice", "inv")]), 5
        )
        await run.usage(120, 30, cost_usd=0.01, model="m")
        await run.reply("Done: the PO")
    assert decided["decision"] == "approve" and answered["value"] == "po"
    types = [e["type"] for e in log.events]
    assert types == [
        "run.started",
        "step.log",
        "step.log",
        "approval.request",
        "approval.resolved",
        "question.ask",
        "question.answered",
        "usage",
        "message.post",
        "run.completed",
    ]
    started, completed = log.events[0], log.events[-1]
    assert started["goal"] == "Go" and started["message_id"] == "msg_1"
    assert completed == {**completed, "run_id": "run_x", "summary": "Done: the PO"}
    assert log.events[2]["status"] == "done" and log.events[2]["summary"] == "Three lines"
    assert log.events[8]["reply_to"] == "msg_1"
    await client.close()


async def test_a_run_that_raises_is_reported_failed(log, gateways) -> None:
    a, _ = gateways
    client = client_for(a.url)
    await client.start()
    with pytest.raises(RuntimeError):
        async with client.report_run("spc_1", "Fetch", run_id="run_y"):
            raise RuntimeError("the supplier's site is down")
    assert log.events[-1]["type"] == "run.failed"
    assert log.events[-1]["why"] == "the supplier's site is down"
    await client.close()


async def test_stream_hands_events_in_order(log, gateways) -> None:
    a, _ = gateways
    client = client_for(a.url)
    await client.start()
    got: list[int] = []

    async def read() -> None:
        async for event in client.stream():
            got.append(event["seq"])
            if len(got) == 3:
                return

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)
    for i in range(3):
        log.append({"type": "message.post", "space_id": "spc_1", "text": str(i)})
    await asyncio.wait_for(reader, 5)
    assert got == [1, 2, 3]
    await client.close()


async def test_hello_says_the_client_name_budget_and_batches(gateways) -> None:
    a, _ = gateways
    client = client_for(a.url, name="scout", context={"lines": 10, "chars": 2000})
    await client.start()
    hello = a.received[0]
    assert hello["client"]["name"] == "scout" and hello["accepts"] == ["events"]
    assert hello["context"] == {"lines": 10, "chars": 2000}
    assert client.participant_id == "hrn_1"
    await client.close()


async def test_a_write_refused_for_its_rate_is_sent_again_after_retry_after(log, gateways) -> None:
    a, _ = gateways
    client = client_for(a.url)
    await client.start()
    original = log.write
    refused: list[str] = []

    def limit_once(event: dict[str, Any]) -> dict[str, Any]:
        if not refused:
            refused.append(event["idempotency_key"])
            return {
                "frame": "error",
                "code": "rate_limited",
                "message": "too many writes; send this one again in 0.050 s",
                "idempotency_key": event["idempotency_key"],
                "retry_after": 0.05,
            }
        return original(event)

    log.write = limit_once  # type: ignore[method-assign]
    ack = await asyncio.wait_for(client.post("spc_1", "patience"), 5)
    assert ack["seq"] == 1 and refused == [ack["idempotency_key"]]
    log.write = original  # type: ignore[method-assign]
    await client.close()


async def test_a_since_beyond_the_head_starts_again_from_the_head(log, gateways) -> None:
    a, _ = gateways
    log.append({"type": "message.post", "space_id": "spc_1", "text": "one"})
    a.since_ahead = True
    client = client_for(a.url, since=99)
    seen: list[int] = []
    client.on("*")(lambda e: _append(seen, e["seq"]))
    await client.start()
    await until(lambda: client.last_seq == 1)
    log.append({"type": "message.post", "space_id": "spc_1", "text": "two"})
    await until(lambda: seen == [2])
    subscribes = [f for f in a.received if f["frame"] == "subscribe"]
    assert [f["since"] for f in subscribes] == [99, 1]
    await client.close()


@pytest.mark.parametrize("tickets", [True, False])
async def test_each_failed_attempt_is_logged_with_the_url_and_the_reason_while_backing_off(
    tickets: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # A port bound but not listening: every connection to it is refused.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{taken.getsockname()[1]}"
        client = Client(url, "chips_at_good", tickets=tickets, backoff=(0.05, 0.2))
        with caplog.at_level(logging.WARNING, logger="chips_sdk"):
            starting = asyncio.create_task(client.start())
            await until(lambda: len(caplog.records) >= 4)
            await client.close()
            await asyncio.wait([starting], timeout=5)
    attempts = [r for r in caplog.records if r.name == "chips_sdk"][:4]
    for record in attempts:
        assert record.levelno == logging.WARNING
        said = record.getMessage()
        assert said.startswith(f"could not connect to {url} (connection refused"), said
    waits = [float(r.args[2]) for r in attempts]  # type: ignore[index]
    # Backing off: the fourth wait (0.2 s ± half) is longer than the first (0.05 s ± half),
    # and the attempts are at least the shortest waits apart.
    assert waits[3] > waits[0]
    assert attempts[3].created - attempts[0].created >= 0.5 * (0.05 + 0.1 + 0.2)
