"""Prefixed ULID identifiers.

Every id Chips hands out is ``<prefix>_<ULID>``: sortable by creation time, unique
without coordination, and telling at a glance what it names (docs/architecture/design.md §2, §7).
A message's id is its event's ULID with the ``msg_`` prefix, so ``reply_to`` can
name the event that carried the words.
"""

from __future__ import annotations

import os
import secrets
import time

PREFIXES = {
    "event": "evt",
    "message": "msg",
    "workspace": "ws",
    "person": "usr",
    "harness": "hrn",
    "agent": "agt",
    "space": "spc",
    "credential": "crd",
    "invite": "inv",
    "request": "req",
}


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Every 10-bit value as its two Crockford digits: a ULID's 26 digits are 13 such pairs.
_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]
_SHIFTS = tuple(range(120, -1, -10))


def new_ulid() -> str:
    """A fresh ULID as text: 48 bits of Unix milliseconds, then 80 random bits.

    Ids are made for every request and event, so this is on the hot path: two digits
    at a time from a table, several times cheaper than encoding digit by digit.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


def new_id(prefix: str) -> str:
    """Return a fresh ``prefix_ULID`` identifier."""
    return f"{prefix}_{new_ulid()}"


def ulid_part(identifier: str) -> str:
    """Return the ULID behind a prefixed id (``evt_01H…`` → ``01H…``)."""
    _, _, tail = identifier.partition("_")
    return tail


def message_id_for(event_id: str) -> str:
    """The id of the message a ``message.post`` event carries."""
    return f"msg_{ulid_part(event_id)}"


def event_id_for_message(message_id: str) -> str:
    """The id of the event that carried a message."""
    return f"evt_{ulid_part(message_id)}"


def new_token(kind: str) -> str:
    """A fresh bearer token: ``chips_at_…`` for a harness, ``chips_pt_…`` for a person."""
    return f"chips_{kind}_{secrets.token_urlsafe(32)}"
