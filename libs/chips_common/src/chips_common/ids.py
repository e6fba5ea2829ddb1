"""Prefixed ULID identifiers.

Every id Chips hands out is ``<prefix>_<ULID>``: sortable by creation time, unique
without coordination, and telling at a glance what it names (DESIGN.md §2, §7).
A message's id is its event's ULID with the ``msg_`` prefix, so ``reply_to`` can
name the event that carried the words.
"""

from __future__ import annotations

import secrets

from ulid import ULID

PREFIXES = {
    "event": "evt",
    "message": "msg",
    "workspace": "ws",
    "person": "usr",
    "harness": "hrn",
    "agent": "agt",
    "space": "spc",
    "credential": "crd",
    "request": "req",
}


def new_id(prefix: str) -> str:
    """Return a fresh ``prefix_ULID`` identifier."""
    return f"{prefix}_{ULID()}"


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
