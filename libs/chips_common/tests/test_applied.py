"""A fold's events traced by one span linked to each event's append (docs/adr/0170)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chips_common import otel
from chips_common.service.fold import Applied, applying
from chips_common.service.poison import FoldFailed


def traced() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def event(seq: int, **more: object) -> dict[str, object]:
    return {"workspace_id": "ws_1", "seq": seq, "type": "message.post", **more}


def parent(seq: int) -> str:
    return f"00-{seq:032x}-{seq:016x}-01"


async def test_a_page_is_one_span_linked_to_each_event_s_append() -> None:
    exporter, provider = traced()
    with Applied(provider.get_tracer("t"), "projector.apply") as applied:
        for seq in (1, 2, 3):
            with applying(applied, event(seq, message_id=f"msg_{seq}"), parent(seq)):
                pass
        with applying(applied, event(4), None):  # logged without a trace: not linked
            pass
    (span,) = exporter.get_finished_spans()
    assert span.name == "projector.apply"
    assert span.attributes == {"chips.batch_size": 3}
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (1, 1),
        (2, 2),
        (3, 3),
    ]
    assert dict(span.links[1].attributes or {}) == {
        otel.WORKSPACE_ID: "ws_1",
        otel.SEQ: 2,
        otel.EVENT_TYPE: "message.post",
        otel.MESSAGE_ID: "msg_2",
    }
    assert span.start_time is not None and span.end_time is not None
    assert span.start_time <= span.end_time


async def test_many_events_are_spread_over_spans_of_at_most_the_links_allowed() -> None:
    exporter, provider = traced()
    with Applied(provider.get_tracer("t"), "search.apply") as applied:
        for seq in range(1, otel.LINKS_PER_SPAN + 3):
            with applying(applied, event(seq), parent(seq)):
                pass
    sizes = [len(span.links) for span in exporter.get_finished_spans()]
    assert sizes == [otel.LINKS_PER_SPAN, 2]


async def test_a_fold_that_fails_is_named_and_not_linked_and_nothing_traced_writes_no_span() -> (
    None
):
    exporter, provider = traced()
    applied = Applied(provider.get_tracer("t"), "projector.apply")
    with applied, pytest.raises(FoldFailed), applying(applied, event(7), parent(7)):
        raise RuntimeError("the fold broke")
    assert exporter.get_finished_spans() == ()


def test_linked_spans_share_the_links_and_keep_the_attributes_and_kind() -> None:
    exporter, provider = traced()
    links = [
        otel.trace.Link(otel.span_context_from(parent(seq)))  # type: ignore[arg-type]
        for seq in range(1, 2 * otel.LINKS_PER_SPAN + 2)
    ]
    spans = otel.linked_spans(
        provider.get_tracer("t"),
        "eventlog.commit",
        links,
        start_time=5,
        attributes={otel.WORKSPACE_ID: "ws_1"},
        kind=otel.trace.SpanKind.CONSUMER,
    )
    for span in spans:
        span.end(end_time=9)
    finished = exporter.get_finished_spans()
    assert [len(s.links) for s in finished] == [otel.LINKS_PER_SPAN, otel.LINKS_PER_SPAN, 1]
    assert [s.attributes for s in finished] == [
        {otel.WORKSPACE_ID: "ws_1", "chips.batch_size": n}
        for n in (otel.LINKS_PER_SPAN, otel.LINKS_PER_SPAN, 1)
    ]
    assert {(s.kind, s.start_time, s.end_time) for s in finished} == {
        (otel.trace.SpanKind.CONSUMER, 5, 9)
    }
    assert finished[2].links[0].context.trace_id == 2 * otel.LINKS_PER_SPAN + 1
    assert otel.linked_spans(provider.get_tracer("t"), "none", []) == []
