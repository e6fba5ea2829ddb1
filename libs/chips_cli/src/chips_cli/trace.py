"""``chips trace MESSAGE_ID``: a message's trace as a tree with timings.

Spans come from the JSON lines file the services write in development
(``CHIPS_TRACE_FILE``, which ``make up`` sets to ``traces.jsonl`` in its run directory,
``.run/`` of the checkout), or from a Jaeger query API (``--jaeger URL``) where traces are
exported over OTLP. A trace whose spans are not all written yet is said to be incomplete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

Span = dict[str, Any]


def spans_from_file(path: Path) -> list[Span]:
    spans: list[Span] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if line:
                spans.append(json.loads(line))
    return spans


def spans_from_jaeger(base_url: str, message_id: str) -> list[Span]:
    """Every span of the traces Jaeger holds for the message, in the file's shape."""
    found: list[Span] = []
    params = {"service": "chips-gateway", "tags": json.dumps({"chips.message_id": message_id})}
    response = httpx.get(f"{base_url.rstrip('/')}/api/traces", params=params, timeout=30)
    response.raise_for_status()
    for trace in response.json().get("data", []):
        processes = trace.get("processes", {})
        for span in trace.get("spans", []):
            process = processes.get(span.get("processID"), {})
            tags = {t["key"]: t["value"] for t in process.get("tags", [])}
            parent = next(
                (r["spanID"] for r in span.get("references", []) if r.get("refType") == "CHILD_OF"),
                None,
            )
            start_ns = int(span["startTime"]) * 1000
            found.append(
                {
                    "trace_id": span["traceID"],
                    "span_id": span["spanID"],
                    "parent_id": parent,
                    "name": span["operationName"],
                    "service": process.get("serviceName"),
                    "instance": tags.get("service.instance.id"),
                    "start_ns": start_ns,
                    "end_ns": start_ns + int(span["duration"]) * 1000,
                    "attributes": {t["key"]: t["value"] for t in span.get("tags", [])},
                }
            )
    return found


def traces_of(message_id: str, spans: Iterable[Span]) -> dict[str, list[Span]]:
    """The traces a message took part in: every span of each, by trace id."""
    spans = list(spans)
    ids = {
        s["trace_id"]
        for s in spans
        if s.get("attributes", {}).get("chips.message_id") == message_id
    }
    return {tid: [s for s in spans if s["trace_id"] == tid] for tid in sorted(ids)}


# Every consumer of CHIPS_EVENTS writes a span for each committed event it receives.
CONSUMERS = ("projector", "search", "referee", "attachments")


def incomplete(spans: list[Span]) -> list[str]:
    """What shows that a trace's spans are not all written yet (empty when none is missing).

    Services export spans in batches, each on its own schedule, so a trace read at once
    may lack its root (a gateway's receive span ends last), the parent of a span, or the
    consumers' spans of the event it committed.
    """
    ids = {s["span_id"] for s in spans}
    names = {str(s["name"]) for s in spans}
    notes: list[str] = []
    # A gateway's receive span begins the trace; its parent, if any, is the client's own.
    waiting = sorted(
        {
            str(s["name"])
            for s in spans
            if s.get("parent_id") not in ids and not str(s["name"]).startswith("gateway.receive")
        }
    )
    if waiting:
        notes.append(f"the parent of {', '.join(waiting)} is not written yet")
    if "eventlog.commit" in names:
        absent = [c for c in CONSUMERS if not any(n.startswith(f"{c}.") for n in names)]
        if absent:
            notes.append(f"no span yet from {', '.join(absent)}")
    return notes


def render(trace_id: str, spans: list[Span]) -> str:
    """One line per span, children under their parent, with offset and duration."""
    start = min(s["start_ns"] for s in spans)
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        parent = span.get("parent_id") if span.get("parent_id") in ids else None
        children.setdefault(parent, []).append(span)
    for siblings in children.values():
        siblings.sort(key=lambda s: s["start_ns"])
    lines = [f"trace {trace_id}"]

    def walk(parent: str | None, depth: int) -> None:
        for span in children.get(parent, []):
            who = span.get("service") or "?"
            if span.get("instance"):
                who += f" ({span['instance']})"
            offset = (span["start_ns"] - start) / 1e6
            took = (span["end_ns"] - span["start_ns"]) / 1e6
            attrs = span.get("attributes", {})
            seq = f"  seq {attrs['chips.seq']}" if "chips.seq" in attrs else ""
            lines.append(
                f"{'  ' * depth}{span['name']}  [{who}]  +{offset:.1f} ms  {took:.1f} ms{seq}"
            )
            walk(span["span_id"], depth + 1)

    walk(None, 1)
    return "\n".join(lines)
