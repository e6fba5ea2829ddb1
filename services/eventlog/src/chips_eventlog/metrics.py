"""The eventlog's Prometheus metrics (served on /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

APPENDS = Counter("chips_eventlog_appends_total", "Events answered by the eventlog", ["outcome"])
BATCH_SECONDS = Histogram(
    "chips_eventlog_append_seconds",
    "Time to append one workspace's batch (lock, rules, insert, commit)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
BATCH_SIZE = Histogram(
    "chips_eventlog_batch_requests",
    "Requests appended in one transaction",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
LEASES_LOST = Counter(
    "chips_eventlog_leases_lost_total",
    "Partition leases this replica found taken over or could not renew in time",
)
FENCED = Counter(
    "chips_eventlog_fenced_total",
    "Append transactions refused because the partition's lease had moved on",
)
SLOW_PATH = Counter(
    "chips_eventlog_slow_path_total",
    "Batches decided from memory whose guarded write did not hold (the head moved, or a key"
    " was in the table), written again under the head row's lock",
)
PRINCIPALS_UNCONFIRMED = Counter(
    "chips_eventlog_principals_unconfirmed_total",
    "Gateways that did not reply to a principals notice within the cap: the change's writer"
    " was answered without their word that they had forgotten (docs/adr/0172)",
)


# ``APPENDS``' children by outcome, made the first time each is counted: ``labels()`` looks
# its child up under a lock with a tuple of validated strings on every call, once per
# append otherwise. A child is the same series ``labels()`` returns.
_APPENDS_BY: dict[str, Counter] = {}


def appended(outcome: str, events: int) -> None:
    """Count ``events`` answered with ``outcome`` (``APPENDS.labels(outcome).inc(events)``)."""
    child = _APPENDS_BY.get(outcome)
    if child is None:
        child = _APPENDS_BY[outcome] = APPENDS.labels(outcome)
    child.inc(events)
