"""Poison events: a consumer's fold that fails on one event, told apart and set aside.

A consumer's handler folds a workspace's events from its checkpoint (``consumer.py``); an
event it cannot fold fails that workspace on every try. Each fold applies each event under
:func:`folding`, which turns what the event's fold raised into :class:`FoldFailed`, naming
the event. The runtime then decides with :func:`decide` (pure, unit-tested): try the
workspace again after :func:`backoff`, or, once the event has failed ``max_attempts``
deliveries or for ``give_up_seconds``, set it aside: it goes to the dead-letter stream
with why (the append path's, docs/adr/0025), the fold reads past it (:func:`set_aside`)
and the workspace goes on. A failure no event is named for (Postgres away, a write of the
whole batch) is never set aside: nothing says which event is at fault, and skipping one
would leave a read model short of it; it is tried again with the same backoff
(docs/adr/0148).

The test hook: ``CHIPS_TEST_FOLD_FAILS_IN`` names a space; every event in it fails its
fold, in every consumer that acts on it, as a poison event would. Empty (the default) in
any real deployment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nats.aio.msg import Msg

from chips_common.db.away import database_away


class FoldFailed(Exception):
    """A consumer's fold failed on this event (the ``__cause__`` says how)."""

    def __init__(self, workspace_id: str, seq: int, event_type: str, event: Mapping[str, Any]):
        super().__init__(f"folding {event_type} at {workspace_id}/{seq} failed")
        self.workspace_id, self.seq, self.event_type = workspace_id, seq, event_type
        self.event = dict(event)


class TestHookFailure(Exception):
    """What the test hook raises for an event of the space it names."""


@dataclass(frozen=True)
class Limits:
    """How a consumer retries a failing workspace and when it gives up on an event."""

    # Deliveries of a failing event's prompt after which it is set aside.
    max_attempts: int = 10
    # Seconds a failing event's prompt has waited in the stream after which it is set aside.
    give_up_seconds: float = 300.0
    # The first retry's delay; it doubles with each delivery, up to ``max_delay_seconds``.
    first_delay_seconds: float = 0.1
    max_delay_seconds: float = 10.0
    # The test hook (above): a space whose every event fails its fold. Empty: off.
    fails_in: str = ""

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(
            max_attempts=settings.consumer_max_attempts,
            give_up_seconds=settings.consumer_give_up_seconds,
            first_delay_seconds=settings.consumer_first_delay_seconds,
            max_delay_seconds=settings.consumer_max_delay_seconds,
            fails_in=settings.test_fold_fails_in,
        )


@dataclass(frozen=True)
class Retry:
    delay: float


@dataclass(frozen=True)
class DeadLetter:
    reason: str


def backoff(limits: Limits, delivered: int) -> float:
    """The delay before a failed workspace's next try: doubling with each delivery."""
    exponent = min(max(0, delivered - 1), 30)
    return float(min(limits.first_delay_seconds * 2**exponent, limits.max_delay_seconds))


def decide(limits: Limits, delivered: int, age: float, named: bool) -> Retry | DeadLetter:
    """Try a failed workspace again, or set its failing event aside.

    ``delivered``: how many times the prompt has been handed out (1 the first time);
    ``age``: seconds since it entered the stream; ``named``: whether the failure names
    an event (:class:`FoldFailed`). Only a named event is ever set aside.
    """
    if named:
        if delivered >= limits.max_attempts:
            return DeadLetter(f"its fold failed on each of {delivered} deliveries")
        if age >= limits.give_up_seconds:
            return DeadLetter(f"its fold still failed {age:.1f} s after it was logged")
    return Retry(backoff(limits, delivered))


@dataclass(frozen=True)
class Aside:
    """When this process last set an event of a workspace aside: the prompt's delivery
    count then, and the time (``time.monotonic``)."""

    delivered: int
    at: float


def tries(delivered: int, age: float, aside: Aside | None, now: float) -> tuple[int, float]:
    """The deliveries and the age to judge a failing event by.

    The prompt's count and age are the workspace's, not the event's: once an event was set
    aside, the next one to fail was only reached then, and counts from there (a prompt
    handed out fewer times than then is a new one, and counts from its own start).
    """
    if aside is None or delivered < aside.delivered:
        return delivered, age
    return delivered - aside.delivered, min(age, now - aside.at)


def deliveries(msg: Msg) -> int:
    """How many times JetStream has handed this message out (1 the first time)."""
    try:
        return int(msg.metadata.num_delivered)
    except Exception:  # not a JetStream message (a unit test's)
        return 1


def age_seconds(msg: Msg, now: datetime | None = None) -> float:
    """Seconds since the message entered its stream."""
    try:
        stored = msg.metadata.timestamp
    except Exception:
        return 0.0
    return ((now or datetime.now(UTC)) - stored).total_seconds()


# The events this process has set aside, by (workspace, seq): its fold reads past them.
# Once the fold that read past one commits, its checkpoint is past it for good.
_SET_ASIDE: set[tuple[str, int]] = set()
# The test hook's space (``Limits.fails_in``), set when a consumer starts.
_FAILS_IN: list[str] = []


def set_aside(event: Mapping[str, Any]) -> bool:
    """Whether the fold is to read past ``event``: it was dead-lettered."""
    return bool(_SET_ASIDE) and (str(event["workspace_id"]), int(event["seq"])) in _SET_ASIDE


# By workspace, when this process last set one of its events aside (``tries``).
_LAST_ASIDE: dict[str, Aside] = {}


def put_aside(workspace_id: str, seq: int, delivered: int, now: float) -> None:
    _SET_ASIDE.add((workspace_id, seq))
    _LAST_ASIDE[workspace_id] = Aside(delivered, now)


def last_aside(workspace_id: str) -> Aside | None:
    return _LAST_ASIDE.get(workspace_id)


def went_on(workspace_id: str) -> None:
    """The workspace was folded: what was set aside is behind its checkpoint."""
    _LAST_ASIDE.pop(workspace_id, None)


def arm_test_hook(space_id: str) -> None:
    """Make every event of ``space_id`` fail its fold (the test hook; empty: off)."""
    _FAILS_IN.clear()
    if space_id:
        _FAILS_IN.append(space_id)


@contextmanager
def folding(event: Mapping[str, Any]) -> Iterator[None]:
    """Fold one event: what its fold raises becomes :class:`FoldFailed`, naming it.

    Postgres away is not the event's fault: it is raised as it is (``database_away``).
    """
    try:
        if _FAILS_IN and event.get("space_id") == _FAILS_IN[0]:
            raise TestHookFailure(f"CHIPS_TEST_FOLD_FAILS_IN names {_FAILS_IN[0]}")
        yield
    except FoldFailed:
        raise
    except Exception as exc:
        if database_away(exc):
            raise
        raise FoldFailed(
            str(event["workspace_id"]), int(event["seq"]), str(event.get("type")), event
        ) from exc
