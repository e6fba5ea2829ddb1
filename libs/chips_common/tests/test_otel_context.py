"""``otel.extract`` and ``otel.traceparent_of`` read and write what the W3C propagator does
(docs/adr/0167)."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from chips_common import otel

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

CARRIERS: list[dict[str, str] | None] = [
    None,
    {},
    {"traceparent": TP},
    {"traceparent": TP.replace("-01", "-00")},
    {"traceparent": TP, "Nats-Msg-Id": "x", "Chips-Reply": "_INBOX.1"},
    {"traceparent": TP, "tracestate": "a=1,b=2"},
    {"traceparent": " " + TP},
    {"traceparent": TP + "-extra"},
    {"traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-tail"},
    {"traceparent": "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    {"traceparent": TP.upper()},
    {"traceparent": "00-" + "0" * 32 + "-b7ad6b7169203331-01"},
    {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-" + "0" * 16 + "-01"},
    {"traceparent": ""},
    {"traceparent": "garbage"},
    {"other": "x"},
]


@pytest.mark.parametrize("carrier", CARRIERS)
def test_extract_reads_what_the_propagator_reads(carrier: dict[str, str] | None) -> None:
    ours = trace.get_current_span(otel.extract(carrier)).get_span_context()
    theirs = trace.get_current_span(otel.PROPAGATOR.extract(dict(carrier or {}))).get_span_context()
    assert ours == theirs
    assert ours.trace_state == theirs.trace_state
    assert ours.is_remote == theirs.is_remote


def propagated(span: trace.Span) -> str | None:
    carrier: dict[str, str] = {}
    otel.PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent")


def test_traceparent_of_writes_what_the_propagator_writes() -> None:
    tracer = TracerProvider().get_tracer("test")
    spans = [
        tracer.start_span("a"),
        NonRecordingSpan(SpanContext(1, 2, is_remote=True, trace_flags=TraceFlags(0))),
        NonRecordingSpan(SpanContext(2**128 - 1, 2**64 - 1, is_remote=False)),
        trace.INVALID_SPAN,
    ]
    for span in spans:
        assert otel.traceparent_of(span) == propagated(span)
    assert otel.traceparent_of(trace.INVALID_SPAN) is None
