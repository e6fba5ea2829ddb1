"""OpenTelemetry: one tracer provider per process, W3C trace context in NATS headers.

Spans go to an OTLP endpoint when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, and to a JSON
lines file when ``CHIPS_TRACE_FILE`` is (what ``make up`` does, for ``chips trace``).
With neither, nothing is recorded (docs/adr/0173): every span still has its ids, so trace
context goes on from process to process and answers name their trace, but no attribute,
link or timing is kept, and a batch's links are not even made (:func:`recording`).
A process that exports records every span, whatever an unrecorded caller's flags say.

Span attributes follow docs/architecture/design.md §8: ``chips.workspace_id``, ``chips.seq``,
``chips.event_type``, and ``chips.message_id`` on a message's spans.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

import orjson
from fastapi.telemetry import TelemetryConfig
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, Sampler
from opentelemetry.trace import Span, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

PROPAGATOR = TraceContextTextMapPropagator()
# OpenTelemetry's default cap on a span's links: more events get a span per this many.
LINKS_PER_SPAN = 128
TRACEPARENT = "traceparent"

WORKSPACE_ID = "chips.workspace_id"
SEQ = "chips.seq"
EVENT_TYPE = "chips.event_type"
MESSAGE_ID = "chips.message_id"

# FastAPI's own telemetry (on by default wherever the OpenTelemetry SDK is installed) made
# four spans of every request (the request, its dependencies, its endpoint, its
# serialization), each the root of a trace of its own that no message's trace reaches,
# and counted every request in metrics nobody reads: a tenth of the gateway's CPU per
# post. The services trace what they do themselves (docs/architecture/design.md §8) and count
# requests in their Prometheus metrics, so every app is built with it off.
FASTAPI_TELEMETRY_OFF: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "operation_spans": False,
}


class JsonLinesExporter(SpanExporter):
    """Appends finished spans to a file, one JSON object per line (development only)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        # orjson: this runs in the exporter's thread, holding the GIL the service needs.
        lines = [orjson.dumps(span_record(span), default=str) + b"\n" for span in spans]
        with self.lock, open(self.path, "ab") as out:
            out.writelines(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class LinkRecord(TypedDict):
    trace_id: str
    span_id: str
    attributes: dict[str, AttributeValue]


class SpanRecord(TypedDict):
    """A span as the file exporter writes it, one JSON line each."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    service: AttributeValue | None
    instance: AttributeValue | None
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, AttributeValue]
    links: NotRequired[list[LinkRecord]]


def span_record(span: ReadableSpan) -> SpanRecord:
    ctx = span.get_span_context()
    assert ctx is not None
    record: SpanRecord = {
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
        "name": span.name,
        "service": span.resource.attributes.get("service.name"),
        "instance": span.resource.attributes.get("service.instance.id"),
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "attributes": dict(span.attributes or {}),
    }
    if span.links:
        record["links"] = [
            {
                "trace_id": format(link.context.trace_id, "032x"),
                "span_id": format(link.context.span_id, "016x"),
                "attributes": dict(link.attributes or {}),
            }
            for link in span.links
        ]
    return record


def setup_tracing(service: str, instance: str | None = None) -> TracerProvider:
    """Install this process's tracer provider and return it (to flush on shutdown)."""
    attributes: dict[str, str] = {"service.name": f"chips-{service}"}
    if instance:
        attributes["service.instance.id"] = instance
    otlp = bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    path = os.environ.get("CHIPS_TRACE_FILE")
    # One named in OTEL_TRACES_SAMPLER is the SDK's to read.
    sampler = None if os.environ.get("OTEL_TRACES_SAMPLER") else sampler_for(otlp or bool(path))
    provider = TracerProvider(resource=Resource.create(attributes), sampler=sampler)
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if path:
        provider.add_span_processor(BatchSpanProcessor(JsonLinesExporter(path)))
    trace.set_tracer_provider(provider)
    return provider


# Whatever the caller's trace context says: a process that exports records every span,
# also under a caller that records nothing (a process with no exporter, a client's flags).
EVERY_SPAN = ParentBased(ALWAYS_ON, remote_parent_not_sampled=ALWAYS_ON)


def sampler_for(exporting: bool) -> Sampler:
    """What a process records: every span when its spans go somewhere, none when they go
    nowhere (docs/adr/0173). Spans not recorded still have their ids."""
    return EVERY_SPAN if exporting else ALWAYS_OFF


def recording(provider: trace.TracerProvider | None = None) -> bool:
    """Whether this process (``provider``'s tracers) records spans: when it does not, what
    only a span would keep (a batch's links to its events' traces) need not be made."""
    chosen = provider if provider is not None else trace.get_tracer_provider()
    return getattr(chosen, "sampler", None) is not ALWAYS_OFF


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def inject(headers: dict[str, str] | None = None, span: Span | None = None) -> dict[str, str]:
    """Headers carrying the current (or the given span's) W3C trace context."""
    carrier = dict(headers or {})
    ctx = trace.set_span_in_context(span) if span is not None else None
    PROPAGATOR.inject(carrier, context=ctx)
    return carrier


# A version-00 ``traceparent`` as Chips writes it: the propagator's pattern without its
# optional blanks and tail, so what it matches the propagator reads the same way.
_TRACEPARENT_00 = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_NO_TRACE = "0" * 32
_NO_SPAN = "0" * 16


def extract(carrier: Mapping[str, str] | None) -> otel_context.Context:
    """A context whose parent is the trace context in ``carrier`` (or none).

    A plain version-00 ``traceparent`` with no ``tracestate`` beside it is read here, as
    the propagator would read it (docs/adr/0167); anything else goes through it.
    """
    if carrier and "tracestate" not in carrier:
        raw = carrier.get(TRACEPARENT)
        found = _TRACEPARENT_00.fullmatch(raw) if isinstance(raw, str) else None
        if found is not None:
            trace_id, span_id, flags = found.groups()
            if trace_id != _NO_TRACE and span_id != _NO_SPAN:
                remote = SpanContext(
                    trace_id=int(trace_id, 16),
                    span_id=int(span_id, 16),
                    is_remote=True,
                    trace_flags=TraceFlags(int(flags, 16)),
                )
                return trace.set_span_in_context(
                    trace.NonRecordingSpan(remote), otel_context.Context()
                )
    return PROPAGATOR.extract(dict(carrier or {}))


def span_context_of(carrier: Mapping[str, str] | None) -> SpanContext | None:
    """The remote span context of a ``traceparent`` header (version 00), or None: what a
    link to the sender's span needs, read without the propagator's machinery (a consumer
    reads one per event it receives)."""
    return span_context_from(carrier.get(TRACEPARENT) if carrier else None)


def linked_spans(
    tracer: trace.Tracer,
    name: str,
    links: Sequence[trace.Link],
    *,
    start_time: int | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
    kind: trace.SpanKind = trace.SpanKind.INTERNAL,
) -> list[Span]:
    """Spans started for work done on behalf of many traces: one per ``LINKS_PER_SPAN``
    links, each linked to its share, with ``chips.batch_size`` (its share's count) beside
    ``attributes``. ``chips trace`` draws a linked span under each span it links to. The
    caller ends them."""
    spans = []
    for i in range(0, len(links), LINKS_PER_SPAN):
        chunk = links[i : i + LINKS_PER_SPAN]
        spans.append(
            tracer.start_span(
                name,
                kind=kind,
                links=chunk,
                start_time=start_time,
                attributes={**(attributes or {}), "chips.batch_size": len(chunk)},
            )
        )
    return spans


def span_context_from(raw: str | None) -> SpanContext | None:
    """The remote span context of a ``traceparent`` (version 00), or None."""
    if raw is None or len(raw) != 55 or raw[:3] != "00-":
        return None
    try:
        trace_id, span_id, flags = int(raw[3:35], 16), int(raw[36:52], 16), int(raw[53:], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))


def from_traceparent(traceparent: str | None) -> otel_context.Context:
    """The context of a stored ``traceparent`` (version 00 read directly, as a consumer
    reads one per event it applies; anything else through the propagator)."""
    if traceparent:
        ctx = span_context_from(traceparent)
        if ctx is not None:
            return trace.set_span_in_context(trace.NonRecordingSpan(ctx))
    return extract({TRACEPARENT: traceparent} if traceparent else None)


def traceparent_of(span: Span) -> str | None:
    """The span's ``traceparent``, written as the propagator's ``inject`` writes it."""
    ctx: SpanContext = span.get_span_context()
    if ctx == trace.INVALID_SPAN_CONTEXT:
        return None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"


def trace_id_of(span: Span) -> str | None:
    ctx: SpanContext = span.get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def current_trace_id() -> str | None:
    return trace_id_of(trace.get_current_span())
