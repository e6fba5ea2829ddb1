"""Prefixed ULID identifiers and bearer tokens.

docs/architecture/design.md §2 and §7: ids are ``<prefix>_<ULID>``, sortable by creation time; a
message's id is its event's ULID with ``msg_`` (docs/product/websocket.md, What a harness hears when
someone speaks); harness tokens are ``chips_at_…`` and stored only as a hash.
"""

from __future__ import annotations

import hashlib
import re
import time

import pytest
from ulid import ULID

from chips_common.ids import (
    PREFIXES,
    event_id_for_message,
    message_id_for,
    new_id,
    new_token,
    ulid_part,
)
from chips_common.tokens import hash_token

pytestmark = pytest.mark.unit

# Crockford base32, 26 characters: the text form of a ULID.
ULID_TEXT = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


@pytest.mark.parametrize("prefix", sorted(PREFIXES.values()))
def test_new_id_is_prefix_and_ulid(prefix: str) -> None:
    """An id is its prefix, an underscore and a ULID (docs/architecture/design.md §2)."""
    identifier = new_id(prefix)
    head, _, tail = identifier.partition("_")
    assert head == prefix
    assert ULID_TEXT.fullmatch(tail)
    assert ulid_part(identifier) == tail
    assert str(ULID.from_str(tail)) == tail


def test_a_new_ulid_carries_the_time_it_was_made() -> None:
    """The first 48 bits are the Unix time in milliseconds, as any ULID reader sees it."""
    before = time.time_ns() // 1_000_000
    made = ULID.from_str(new_id("evt").partition("_")[2])
    after = time.time_ns() // 1_000_000
    assert before <= made.milliseconds <= after


def test_new_ids_are_unique() -> None:
    """Ids are unique without coordination."""
    ids = [new_id("evt") for _ in range(5000)]
    assert len(set(ids)) == len(ids)


def test_new_ids_sort_by_creation_time() -> None:
    """Ids made in different milliseconds sort in the order they were made
    (docs/architecture/design.md §2)."""
    ids = []
    for _ in range(5):
        ids.append(new_id("evt"))
        time.sleep(0.002)
    assert sorted(ids) == ids
    stamp = ULID.from_str(ulid_part(ids[0])).timestamp
    assert abs(stamp - time.time()) < 60


def test_message_id_is_the_events_ulid() -> None:
    """A message's id is its event's ULID with ``msg_``, and back.

    docs/product/websocket.md, What a harness hears when someone speaks: "so reply_to names the
    event".
    """
    event_id = new_id("evt")
    tail = ulid_part(event_id)
    assert message_id_for(event_id) == f"msg_{tail}"
    assert event_id_for_message(f"msg_{tail}") == event_id
    assert event_id_for_message(message_id_for(event_id)) == event_id


@pytest.mark.parametrize("kind", ["at", "pt"])
def test_new_token_names_its_kind(kind: str) -> None:
    """A harness token is ``chips_at_…``, a person's API token ``chips_pt_…``
    (docs/architecture/design.md §7)."""
    token = new_token(kind)
    assert token.startswith(f"chips_{kind}_")
    # 32 random bytes, URL-safe base64 without padding.
    assert len(token) - len(f"chips_{kind}_") == 43


def test_new_tokens_are_unique() -> None:
    """Every token is fresh randomness."""
    tokens = {new_token("at") for _ in range(1000)}
    assert len(tokens) == 1000


def test_hash_token_is_hex_sha256() -> None:
    """Chips keeps only the token's SHA-256, in hex; the same token always hashes the same.

    docs/architecture/design.md §7: tokens are shown once and stored only as a hash.
    """
    token = new_token("at")
    digest = hash_token(token)
    assert digest == hash_token(token)
    assert digest == hashlib.sha256(token.encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert token not in digest


def test_hash_token_tells_tokens_apart() -> None:
    """Different tokens give different hashes."""
    assert hash_token(new_token("at")) != hash_token(new_token("at"))
    assert hash_token("chips_at_a") != hash_token("chips_at_b")
