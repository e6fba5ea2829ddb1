"""What a process records: every span when its spans go somewhere, none when they go
nowhere, with trace context carried on either way (docs/adr/0173)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chips_common import otel


def exporting() -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider(sampler=otel.sampler_for(True))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_a_process_that_exports_nothing_records_nothing_but_still_has_ids() -> None:
    provider = TracerProvider(sampler=otel.sampler_for(False))
    span = provider.get_tracer("t").start_span("post", attributes={otel.SEQ: 3})
    assert not span.is_recording()
    assert span.get_span_context().is_valid
    assert not span.get_span_context().trace_flags.sampled
    assert otel.traceparent_of(span) is not None
    assert not otel.recording(provider)


def test_a_process_that_exports_records_under_a_caller_that_did_not() -> None:
    quiet = TracerProvider(sampler=otel.sampler_for(False))
    post = quiet.get_tracer("gateway").start_span("post")
    provider, exporter = exporting()
    assert otel.recording(provider)
    child = provider.get_tracer("eventlog").start_span(
        "append", context=otel.from_traceparent(otel.traceparent_of(post))
    )
    assert child.is_recording()
    child.end()
    (finished,) = exporter.get_finished_spans()
    assert finished.context.trace_id == post.get_span_context().trace_id
    assert finished.parent is not None
    assert finished.parent.span_id == post.get_span_context().span_id


def test_a_process_that_exports_records_every_root_and_local_child() -> None:
    provider, exporter = exporting()
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root"), tracer.start_as_current_span("child"):
        pass
    assert [s.name for s in exporter.get_finished_spans()] == ["child", "root"]


def test_recording_reads_the_process_provider_by_default() -> None:
    assert otel.recording() == otel.recording(trace.get_tracer_provider())
