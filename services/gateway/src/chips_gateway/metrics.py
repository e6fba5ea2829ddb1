"""The gateway's Prometheus metrics (served on /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

FRAMES_IN = Counter("chips_ws_frames_in_total", "Frames received from clients", ["frame"])
FRAMES_OUT = Counter("chips_ws_frames_out_total", "Frames sent to clients", ["frame"])
SOCKETS_OPEN = Gauge("chips_ws_sockets_open", "Sockets open on this gateway")
TOO_FAR_BEHIND = Counter(
    "chips_ws_slow_consumer_cutoffs_total", "Sockets closed for being too far behind"
)
APPENDS = Counter("chips_gateway_appends_total", "Append requests answered", ["outcome"])
APPEND_LATENCY = Histogram(
    "chips_gateway_append_seconds",
    "From publishing an append request to the eventlog's answer",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
DELIVERED = Counter("chips_gateway_events_delivered_total", "Events handed to live feeds")
GAPS_HEALED = Counter("chips_gateway_gaps_healed_total", "Events read from Postgres to heal a gap")
SHAPED = Counter(
    "chips_gateway_turns_shaped_total",
    "message.new deliveries shaped, by where their context and room came from",
    ["source"],
)
RATE_LIMITED = Counter(
    "chips_gateway_rate_limited_total", "Writes refused with rate_limited", ["via"]
)
RATE_LIMIT_TAKES = Counter(
    "chips_gateway_rate_limit_takes_total", "Takes from a credential's write bucket in Redis"
)
RATE_LIMIT_CLOSES = Counter(
    "chips_ws_rate_limit_closes_total", "Sockets closed for writing through rate_limited"
)
SPEND_READS = Counter(
    "chips_gateway_spend_reads_total",
    "A room's job (job) and the held posts a person's act hands on (held), as shaped for a"
    " harness, by where they came from: the feed's window or the log",
    ["read", "source"],
)
SEARCH_WAITS = Counter(
    "chips_gateway_search_waits_total",
    "Searches that waited for the index, by what ended the wait (docs/adr/0111)",
    ["ended"],
)
SEARCH_WAIT_READS = Counter(
    "chips_gateway_search_wait_checkpoint_reads_total",
    "Reads of the index's checkpoint made while searches waited (no notice in time, or "
    "not listening)",
)
WS_BYTES_IN = Counter(
    "chips_ws_bytes_in_total",
    "Bytes read from sockets, by their fate: parsed into frames, or dropped unparsed after"
    " the gateway's close frame (docs/adr/0149)",
    ["fate"],
)
PRINCIPALS = Counter(
    "chips_gateway_principals_total",
    "Who a request's token is: remembered by this replica, or asked of Postgres (docs/adr/0169)",
    ["answer"],
)
