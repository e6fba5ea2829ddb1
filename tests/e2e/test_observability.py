"""Tracing one message end to end, and the metrics every service serves.

Issue 6; docs/architecture/design.md §8: one trace per client frame, carried in NATS headers from
gateway to eventlog to every consumer and to each delivering gateway.
"""

from __future__ import annotations

import asyncio

import httpx

from tests.e2e.client import Api, Socket
from tests.e2e.otlp import OtlpReceiver, ReceivedSpan


async def wait_for_spans(
    otlp: OtlpReceiver, trace_id: str, wanted: set[tuple[str, str | None]], timeout: float = 15
) -> list[ReceivedSpan]:
    """The trace's spans once it has one span of each (name, instance) wanted."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        spans = otlp.trace(trace_id)
        have = {(s.name, s.instance) for s in spans} | {(s.name, None) for s in spans}
        if wanted <= have or asyncio.get_running_loop().time() > deadline:
            return spans
        await asyncio.sleep(0.2)


async def test_one_trace_follows_a_message_from_gateway_a_to_a_harness_on_gateway_b(
    stack, api: Api, otlp: OtlpReceiver
) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id)
    await bot.attached()
    person = await Socket.open(stack.gateway_a, owner)
    k = await person.write({"type": "message.post", "space_id": space_id, "text": "trace me"})
    ack = await person.answer(k)
    trace_id = ack["trace_id"]
    assert len(trace_id) == 32
    await bot.wait_for_seq(ack["seq"])

    wanted = {
        ("gateway.receive event", "gateway_a"),
        ("eventlog.append", None),
        ("eventlog.commit", None),
        ("projector.apply", None),
        ("gateway.deliver", "gateway_b"),
    }
    spans = await wait_for_spans(otlp, trace_id, wanted)
    by_name = {(s.name, s.instance): s for s in spans}
    receive = by_name[("gateway.receive event", "gateway_a")]
    append = next(s for s in spans if s.name == "eventlog.append")
    commit = next(s for s in spans if s.name == "eventlog.commit")
    project = next(s for s in spans if s.name == "projector.apply")
    deliver = by_name[("gateway.deliver", "gateway_b")]

    # Causal order: each span is a child of the one before, and starts after it did.
    assert append.parent_id == receive.span_id
    assert commit.parent_id == append.span_id
    assert project.parent_id == append.span_id and deliver.parent_id == append.span_id
    assert receive.start_ns <= append.start_ns <= commit.start_ns
    assert commit.end_ns <= project.start_ns and commit.end_ns <= deliver.start_ns

    for span in (receive, append, project, deliver):
        assert span.attributes["chips.workspace_id"] == owner.workspace_id
        assert span.attributes["chips.seq"] == ack["seq"]
        assert span.attributes["chips.event_type"] == "message.post"
    await person.close()
    await bot.close()


async def test_requests_committed_together_each_have_their_commit_in_their_trace(
    stack, api: Api, otlp: OtlpReceiver
) -> None:
    """Several requests committed in one transaction share one commit span, linked to each
    one's append span: each trace still has it, under its append (docs/adr/0170)."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    person = await Socket.open(stack.gateway_a, owner)
    stack.pause("eventlog")  # the writes wait in the stream, to be pulled as one batch
    try:
        keys = [
            await person.write({"type": "message.post", "space_id": space_id, "text": f"t{i}"})
            for i in range(4)
        ]
        await asyncio.sleep(0.5)  # the gateway has sent them all on
    finally:
        stack.resume("eventlog")
    acks = [await person.answer(k) for k in keys]
    commits = []
    for ack in acks:
        wanted = {("eventlog.append", None), ("eventlog.commit", None)}
        spans = await wait_for_spans(otlp, ack["trace_id"], wanted)
        append = next(s for s in spans if s.name == "eventlog.append")
        commit = next(s for s in spans if s.name == "eventlog.commit")
        assert commit.parent_id == append.span_id
        assert append.start_ns <= commit.start_ns <= commit.end_ns <= append.end_ns
        commits.append(commit)
    assert {c.span_id for c in commits} == {commits[0].span_id}, "one commit span for the batch"
    assert commits[0].attributes["chips.batch_size"] == 4
    await person.close()


async def test_a_client_may_bring_its_own_trace(stack, api: Api, otlp: OtlpReceiver) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    theirs = "4bf92f3577b34da6a3ce929d0e0e4736"
    sock = await Socket.open(stack.gateway_a, owner)
    await sock.send(
        {
            "frame": "event",
            "traceparent": f"00-{theirs}-00f067aa0ba902b7-01",
            "event": {
                "type": "message.post",
                "space_id": space_id,
                "text": "mine",
                "idempotency_key": "traced-1",
            },
        }
    )
    ack = await sock.answer("traced-1")
    assert ack["trace_id"] == theirs
    spans = await wait_for_spans(
        otlp, theirs, {("gateway.receive event", None), ("eventlog.append", None)}
    )
    receive = next(s for s in spans if s.name == "gateway.receive event")
    assert receive.parent_id == "00f067aa0ba902b7"
    await sock.close()


async def test_an_http_post_makes_only_chips_own_spans(stack, api: Api, otlp: OtlpReceiver) -> None:
    """FastAPI's own telemetry is off: a post over HTTP traces the message, and makes no
    trace of its own for the request, its dependencies or its serialization."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    trace_ids = []
    for n in range(2):
        r = await api.post_event(
            owner,
            {
                "type": "message.post",
                "space_id": space_id,
                "text": f"plain {n}",
                "idempotency_key": f"plain-http-{n}",
            },
        )
        assert r.status_code == 200, r.text
        trace_ids.append(r.json()["trace_id"])
    # Spans are exported in the order they end: once the second post's gateway span is
    # here, any span the first request made around it (it ended before) is here too.
    await wait_for_spans(otlp, trace_ids[1], {("gateway.receive event", None)})
    assert otlp.trace(trace_ids[1]), "the second post's spans never came"
    with otlp.lock:
        names = {s.name for s in otlp.spans}
    assert "gateway.receive event" in names
    assert not {n for n in names if n.startswith(("fastapi.", "POST ", "GET "))}, names


async def test_every_service_serves_health_readiness_and_metrics(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_a, owner)
    await sock.subscribe(owner.workspace_id)
    k = await sock.write({"type": "message.post", "space_id": space_id, "text": "count me"})
    await sock.answer(k)

    async with httpx.AsyncClient(timeout=10) as http:
        # The consumers read their lag every five seconds: wait for the projector's.
        lag = 'chips_consumer_lag{consumer="chips_projector",stream="CHIPS_EVENTS"}'
        for _ in range(100):
            if lag in (await http.get(f"{stack.url('projector')}/metrics")).text:
                break
            await asyncio.sleep(0.2)
        for name in (
            "gateway_a",
            "gateway_b",
            "eventlog",
            "projector",
            "search",
            "referee",
            "attachments",
        ):
            base = stack.url(name)
            health = await http.get(f"{base}/healthz")
            assert health.status_code == 200
            # Every service's work is built (one still to come would say "not built: …").
            assert health.json()["work"] == "built", health.json()
            ready = await http.get(f"{base}/readyz")
            assert ready.status_code == 200 and ready.json()["ready"] is True
            assert ready.json()["work"] == health.json()["work"]
            assert (await http.get(f"{base}/metrics")).status_code == 200
        gateway = (await http.get(f"{stack.gateway_a}/metrics")).text
        for metric in (
            "chips_ws_frames_in_total",
            "chips_ws_frames_out_total",
            "chips_ws_sockets_open",
            "chips_ws_slow_consumer_cutoffs_total",
            "chips_gateway_append_seconds_bucket",
            "chips_gateway_appends_total",
        ):
            assert metric in gateway, metric
        assert 'chips_ws_frames_in_total{frame="event"}' in gateway
        eventlog = (await http.get(f"{stack.url('eventlog')}/metrics")).text
        assert 'chips_eventlog_appends_total{outcome="ok"}' in eventlog
        assert "chips_eventlog_append_seconds_bucket" in eventlog
        assert 'chips_consumer_lag{consumer="chips_eventlog_p' in eventlog
        assert 'stream="CHIPS_APPEND"}' in eventlog
        projector = (await http.get(f"{stack.url('projector')}/metrics")).text
        assert 'chips_consumer_lag{consumer="chips_projector",stream="CHIPS_EVENTS"}' in projector
    await sock.close()


async def test_chips_trace_prints_a_messages_trace_as_a_tree(stack, api: Api) -> None:
    """`chips trace MESSAGE_ID` reads the development span file and draws the tree."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id)
    await bot.attached()
    seq = await api.say(owner, space_id, "where did I go?")
    await bot.wait_for_seq(seq)
    message_id = next(e for e in bot.events() if e["seq"] == seq)["message_id"]

    chips = str(Path(sys.executable).parent / "chips")
    for _ in range(30):
        await asyncio.sleep(0.5)
        done = await asyncio.to_thread(
            subprocess.run,
            [chips, "trace", message_id],
            capture_output=True,
            text=True,
            env={**os.environ, "CHIPS_TRACE_FILE": stack.env["CHIPS_TRACE_FILE"]},
        )
        if (
            done.returncode == 0
            and "gateway.deliver" in done.stdout
            and "incomplete" not in done.stdout
        ):
            break
    assert done.returncode == 0, done.stderr
    assert "incomplete" not in done.stdout, done.stdout
    lines = done.stdout.splitlines()
    assert any("projector.apply" in line for line in lines)
    assert lines[0].startswith("trace ")
    receive = next(i for i, line in enumerate(lines) if "gateway.receive event" in line)
    append = next(i for i, line in enumerate(lines) if "eventlog.append" in line)
    assert receive < append
    indent = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    assert indent(lines[append]) > indent(lines[receive]), "the append is drawn under the receive"
    assert any("gateway_b" in line and "gateway.deliver" in line for line in lines)
    assert all(" ms" in line for line in lines[1:])
    await bot.close()


async def test_a_gateway_with_nowhere_to_send_spans_records_none_and_the_trace_goes_on(
    stack, api: Api, otlp: OtlpReceiver
) -> None:
    """ADR 0173: the quiet gateway records nothing, yet its ack names a trace, its sockets
    are delivered to, and the eventlog and the projector, which export, record their spans
    of that trace though the gateway's context says "not sampled"."""
    stack.extra_env["gateway_quiet"] = {"OTEL_EXPORTER_OTLP_ENDPOINT": "", "CHIPS_TRACE_FILE": ""}
    stack.start("gateway_quiet")
    try:
        stack.wait_ready("gateway_quiet")
        quiet = stack.url("gateway_quiet")
        owner = await api.create_workspace()
        harness, space_id = await api.connect_harness(owner, "Scout")
        bot = await Socket.open(quiet, harness)
        await bot.subscribe(owner.workspace_id)
        await bot.attached()
        person = await Socket.open(quiet, owner)
        k = await person.write({"type": "message.post", "space_id": space_id, "text": "quiet"})
        ack = await person.answer(k)
        trace_id = ack["trace_id"]
        assert len(trace_id) == 32
        await bot.wait_for_seq(ack["seq"])

        wanted = {("eventlog.append", None), ("projector.apply", None)}
        spans = await wait_for_spans(otlp, trace_id, wanted)
        assert wanted <= {(s.name, None) for s in spans}, spans
        append = next(s for s in spans if s.name == "eventlog.append")
        assert append.parent_id is not None  # the quiet gateway's span, never recorded
        assert append.parent_id not in {s.span_id for s in spans}
        assert not [s for s in spans if s.instance == "gateway_quiet"]
        await person.close()
        await bot.close()
    finally:
        stack.stop("gateway_quiet")
