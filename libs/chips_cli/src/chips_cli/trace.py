"""``chips trace ID``: a trace as a tree with timings, found by what a person has in hand.

The id is a message's (``msg_…``, as ``chips say`` prints it), a trace's (32 hex digits,
the ``trace_id`` of an ack) or a seq (digits, as ``chips say`` and ``chips tail`` print
it: read back through the API to the event, in the caller's workspace). Spans come from
the JSON lines file the services write in development (``CHIPS_TRACE_FILE``, which
``make up`` sets to ``traces.jsonl`` in its run directory, ``.run/`` of the checkout), or
from a Jaeger query API (``--jaeger URL``) where traces are exported over OTLP. A trace
whose spans are not all written yet is said to be incomplete; an id with no span yet is
said to be still arriving while it is young, and unknown once it is not."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

Span = dict[str, Any]

# Services export spans in batches (every five seconds by default), each on its own
# schedule: an id made less than this long ago may have spans still on their way.
ARRIVAL_SECONDS = 30.0
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class Wanted:
    """What to trace: a message, a trace, or the event at a seq of one workspace."""

    kind: Literal["message", "trace", "seq"]
    id: str
    workspace_id: str | None = None  # for a seq
    message_id: str | None = None  # for a seq whose event is a message
    made_at: float | None = None  # Unix seconds, when the id tells (a ULID) or the log did

    def says(self) -> str:
        return {"message": self.id, "trace": f"trace {self.id}", "seq": f"seq {self.id}"}[self.kind]


def made_at(identifier: str) -> float | None:
    """When a ``prefix_ULID`` id was made (its first 48 bits are Unix milliseconds)."""
    _, _, ulid = identifier.partition("_")
    if len(ulid) != 26 or any(c not in _CROCKFORD for c in ulid.upper()):
        return None
    millis = 0
    for c in ulid[:10].upper():
        millis = millis * 32 + _CROCKFORD.index(c)
    return millis / 1000


def parse_id(raw: str) -> Wanted:
    """A message id, a trace id or a seq; anything else is refused in one sentence."""
    text = raw.strip()
    if text.startswith("msg_"):
        return Wanted("message", text, made_at=made_at(text))
    if TRACE_ID.match(text.lower()):
        return Wanted("trace", text.lower())
    if text.isdigit() and int(text) > 0:
        return Wanted("seq", str(int(text)))
    raise ValueError(
        f"{raw!r} is not something to trace: give a message id (msg_…), a trace id "
        "(32 hex digits, an ack's trace_id) or a seq"
    )


def of_event(wanted: Wanted, event: dict[str, Any], when: float | None) -> Wanted:
    """A seq's Wanted once its event was read from the log."""
    return Wanted(
        "seq",
        wanted.id,
        workspace_id=event.get("workspace_id"),
        message_id=event.get("message_id"),
        made_at=when,
    )


def names(wanted: Wanted, span: Span) -> bool:
    """Whether this span belongs to what is wanted (by its trace, message or seq)."""
    attrs = span.get("attributes", {})
    if wanted.kind == "trace":
        return bool(span.get("trace_id") == wanted.id)
    if wanted.kind == "message":
        return bool(attrs.get("chips.message_id") == wanted.id)
    if wanted.message_id is not None:
        return bool(attrs.get("chips.message_id") == wanted.message_id)
    return (
        str(attrs.get("chips.seq")) == wanted.id
        and attrs.get("chips.workspace_id") == wanted.workspace_id
    )


def traces_for(wanted: Wanted, spans: Iterable[Span]) -> dict[str, list[Span]]:
    """The traces the wanted thing took part in: every span of each, by trace id."""
    spans = list(spans)
    ids = {s["trace_id"] for s in spans if names(wanted, s)}
    return {tid: [s for s in spans if s["trace_id"] == tid] for tid in sorted(ids)}


def still_arriving(wanted: Wanted, now: float) -> bool | None:
    """Whether spans of it may still be on their way: None when nothing tells its age."""
    if wanted.made_at is None:
        return None
    return now - wanted.made_at < ARRIVAL_SECONDS


def keep_waiting(wanted: Wanted, traces: dict[str, list[Span]], now: float) -> bool:
    """Whether more spans may yet come: none found for an id that is not too old to have
    them on their way, or an incomplete trace whose first span is that young."""
    if not traces:
        return still_arriving(wanted, now) is not False
    return any(
        incomplete(spans) and now - min(s["start_ns"] for s in spans) / 1e9 < ARRIVAL_SECONDS
        for spans in traces.values()
    )


def not_found(wanted: Wanted, now: float, waited: float, source: str) -> tuple[str, str]:
    """Why no span was found, as a code and one sentence: still arriving, or unknown."""
    arriving = still_arriving(wanted, now)
    if arriving:
        age = max(0.0, now - (wanted.made_at or now))
        return (
            "not_ready",
            f"the spans of {wanted.says()} are still arriving (it is {age:.0f} s old, and "
            "services write spans in batches every few seconds): run `chips trace "
            f"{wanted.id}` again in a moment",
        )
    if arriving is None:
        return (
            "not_found",
            f"no span of {wanted.says()} is in {source}, after waiting {waited:.0f} s: "
            "it is not a trace this stack wrote (or its spans went elsewhere)",
        )
    return (
        "not_found",
        f"no span names {wanted.says()} in {source}, and it is too old for its spans to "
        "be on their way: they were written elsewhere, or before this trace file began",
    )


def spans_from_file(path: Path) -> list[Span]:
    spans: list[Span] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if line:
                spans.extend(unfold_links(json.loads(line)))
    return spans


def unfold_links(span: Span) -> list[Span]:
    """A span as each trace it takes part in sees it: a consumer's batch span (one per
    batch, linked to every event's append span, docs/adr/0138) is drawn in each linked
    trace under the span it links to, with that event's attributes; any other span is
    itself."""
    links = span.get("links")
    if not links:
        return [span]
    return [
        {
            **span,
            "trace_id": link["trace_id"],
            "parent_id": link["span_id"],
            "attributes": {**span.get("attributes", {}), **link.get("attributes", {})},
        }
        for link in links
    ]


def spans_from_jaeger(base_url: str, wanted: Wanted) -> list[Span]:
    """Every span of the traces Jaeger holds for what is wanted, in the file's shape."""
    found: list[Span] = []
    base = base_url.rstrip("/")
    if wanted.kind == "trace":
        response = httpx.get(f"{base}/api/traces/{wanted.id}", timeout=30)
        if response.status_code == 404:
            return []
    else:
        if wanted.kind == "message" or wanted.message_id is not None:
            tags = {"chips.message_id": wanted.message_id or wanted.id}
        else:
            tags = {"chips.seq": wanted.id, "chips.workspace_id": wanted.workspace_id or ""}
        params = {"service": "chips-gateway", "tags": json.dumps(tags)}
        response = httpx.get(f"{base}/api/traces", params=params, timeout=30)
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


# Every consumer of CHIPS_EVENTS writes a span of each batch it receives, linked to each
# committed event's append span (unfold_links puts it in each event's trace).
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
